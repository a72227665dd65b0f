/*
 * tools/commands.c — the command table and the hooks it wires
 * (tools/commands.h).
 */
#include <string.h>

#include "tools/commands.h"
#include "tools/util/paths.h"
#include "tools/util/trace/trace.h"
#include "tools/util/chrome.h"

const struct bareperf_command bareperf_commands[] = {
	{ "record", cmd_record, "run an app on the bareperf kernel (QEMU or a serial line), "
	  "sampling and/or counting, and write what it streams into a capture" },
	{ "bench", cmd_bench, "measure an x86-64 snippet nanoBench's way on the bareperf kernel "
	  "(-asm \"add rax, rbx\")" },
	{ "report", cmd_report, "the hottest functions, source lines, CPUs or apps per event; "
	  "call graphs (-g)" },
	{ "stat", cmd_stat, "counter tables per app run and CPU, counted by the kernel "
	  "(count=); benchmark tables" },
	{ "script", cmd_script, "every record of a capture, one line each (text, CSV, JSON); "
	  "-g: perf script's layout" },
	{ "convert", cmd_convert, "a capture to perf.data (kernel samples for perf report), "
	  "folded stacks, Chrome/Perfetto JSON, speedscope JSON or pprof" },
	{ "flamegraph", cmd_flamegraph, "a flame graph (SVG) of a capture's call chains" },
	{ "list", cmd_list, "the events the kernel knows, with their raw encodings" },
	{ "list-apps", cmd_list_apps, "the apps built into a kernel.elf" },
	{ "cflags", cmd_cflags, "the compiler flags of a C file built against the SDK header "
	  "bareperf.h" },
};

const size_t bareperf_ncommands = sizeof(bareperf_commands) / sizeof(bareperf_commands[0]);

const struct bareperf_command *bareperf_command(const char *name)
{
	for (size_t i = 0; i < bareperf_ncommands; i++)
		if (!strcmp(bareperf_commands[i].name, name))
			return &bareperf_commands[i];
	return NULL;
}

/* convert --to chrome's instruction-trace slices, from the trace decoder
 * (tools/util/chrome.h explains why this is a hook). */
struct slice_adapter {
	convert_slice_emit emit;
	void *ctx;
};

static void adapt_slice(void *ctx, const struct trace_slice *s)
{
	struct slice_adapter *a = ctx;

	a->emit(a->ctx, s->cpu, s->name, s->start_tsc, s->dur_tsc);
}

static int trace_slices(const char *capture, const char *kernel, convert_slice_emit emit,
			void *ctx, char *err, size_t n)
{
	/* convert has already checked (or was told to --force) the kernel. */
	struct trace_opts o = { .kernel_elf = kernel ? kernel : paths_kernel(), .force = true,
				.cpu = -1 };
	struct slice_adapter a = { emit, ctx };

	return trace_call_slices(capture, &o, adapt_slice, &a, err, n);
}

void bareperf_commands_init(void)
{
	convert_trace_slices = trace_slices;
}

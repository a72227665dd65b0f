/*
 * tools/bareperf.c — the host tool's entry point: `bareperf CMD ...`
 * dispatches to the cmd_* functions of tools/commands.h.
 */
#include <stdio.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/convert.h"
#include "tools/util/trace/trace.h"
#include "uapi/perf_ring.h"
#include "uapi/wire.h"

#define BAREPERF_VERSION "0.1"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
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
	  "folded stacks or Chrome/Perfetto JSON" },
	{ "flamegraph", cmd_flamegraph, "a flame graph (SVG) of a capture's call chains" },
	{ "list", cmd_list, "the events the kernel knows, with their raw encodings" },
	{ "list-apps", cmd_list_apps, "the apps built into a kernel.elf" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: bareperf COMMAND [options]\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		/* the description wrapped at 78 columns, under itself */
		const char *p = commands[i].help;
		int col = fprintf(f, "  %-11s", commands[i].name);
		while (*p) {
			size_t w = strcspn(p, " ");
			if (col + 1 + (int)w > 78 && col > 14)
				col = fprintf(f, "\n%13s", "") - 1;
			col += fprintf(f, " %.*s", (int)w, p);
			p += w + (p[w] == ' ');
		}
		fputc('\n', f);
	}
	fprintf(f, "\n  bareperf help COMMAND (or bareperf COMMAND --help) for its options;\n"
		"  bareperf --version\n"
		"\ntypical session:\n"
		"  bareperf record --qemu -o capture.bpc -- loopnest\n"
		"  bareperf report -i capture.bpc\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* convert --to chrome's instruction-trace slices, from the trace decoder
 * (tools/convert.h explains why this is a hook). */
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
	struct trace_opts o = { .kernel_elf = kernel, .force = true, .cpu = -1 };
	struct slice_adapter a = { emit, ctx };

	return trace_call_slices(capture, &o, adapt_slice, &a, err, n);
}

int main(int argc, char **argv)
{
	const struct command *c;

	convert_trace_slices = trace_slices;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("bareperf %s (capture format %d, wire format %d, ring ABI %d)\n",
		       BAREPERF_VERSION, WIRE_CAPTURE_VERSION, WIRE_VERSION, BP_RING_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help")) {
		char help[] = "--help";
		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		if (!(c = find(argv[2]))) {
			fprintf(stderr, "bareperf: no command '%s' (bareperf --help lists them)\n", argv[2]);
			return 2;
		}
		char *av[] = { argv[2], help, NULL };
		return c->fn(2, av);
	}
	if (!(c = find(argv[1]))) {
		fprintf(stderr, "bareperf: no command '%s' (bareperf --help lists them)\n", argv[1]);
		return 2;
	}
	return c->fn(argc - 1, argv + 1);
}

/*
 * fuzz_cmd — libFuzzer target for every command that reads a capture:
 * report, script, stat, convert and flamegraph, called through their
 * public entry points (tools/commands.h) exactly as `bareperf CMD ...`
 * calls them, ASan + UBSan. The input is
 *
 *	byte 0     which command line (cmds[] below: the command and its
 *	           options, e.g. report -g, script --json, convert --to chrome)
 *	byte 1     the capture header's flags: bit 0 COMPLETE, bit 1
 *	           INTERRUPTED, bit 2 a data_size beyond the file (truncated);
 *	           bit 3: leave the frames' CRCs as they are (otherwise
 *	           test/fuzz/fuzz_frames.c recomputes them, so that mutated
 *	           payloads reach the parsers)
 *	the rest   the stream, as record wrote it after the capture header
 *
 * The target writes a valid capture header and the stream into a memfd
 * and runs the command on it, with the kernel.elf the build made
 * (-k KERNEL --force: any RUN_META build-id is accepted), so symbols and
 * source lines are looked up as in real use. Seeds: real captures of the
 * kernel under QEMU and synthetic ones (test/fuzz/cmd_seeds.sh).
 *
 * Checked: no sanitizer report, no leak; the exit status is 0 or 1 (2, a
 * usage error, means cmds[] no longer matches the commands' options); a
 * command that says it succeeded wrote what it promised (a perf.data
 * starts with PERFILE2, an SVG with "<?xml" or "<svg", a folded or JSON
 * file is text, a pprof profile is gzip). stdout goes to /dev/null; run with -close_fd_mask=2 to
 * silence the commands' error lines as well.
 *
 * The kernel: $BP_FUZZ_KERNEL, else FUZZ_KERNEL (the build's kernel.elf,
 * set when this file is compiled). BP_FUZZ_LIST=1: print the command
 * lines, "cmd INDEX WORDS...", and exit (test/fuzz/stream_seeds.sh).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test/fuzz/fuzz_frames.h"
#include "tools/commands.h"
#include "uapi/wire.h"

#ifndef FUZZ_KERNEL
#define FUZZ_KERNEL "build/kernel.elf"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum out_kind { OUT_NONE, OUT_PERFDATA, OUT_SVG, OUT_TEXT, OUT_GZIP };

/* "@C" is the capture, "@K" the kernel, "@O" the output file. */
static const struct {
	enum out_kind out;
	const char *argv[16];
} cmds[] = {
	{ OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "--stdio" } },
	{ OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "-g" } },
	{ OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "--sort", "srcline",
		      "-q" } },
	{ OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "--sort",
		      "cpu,comm,pid,sym", "-F", "overhead,sample,period,cpu,sym" } },
	{ OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "-g",
		      "--no-children", "-n" } },
	{ OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "--header-only" } },
	{ OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "-C", "0,2-3",
		      "--app", "loopnest", "--percent-limit", "1" } },
	{ OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "--aux",
		      "--max-rows", "5" } },
	{ OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force" } },
	{ OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "-g",
		      "--header" } },
	{ OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "--csv" } },
	{ OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "--json" } },
	{ OUT_NONE, { "script", "-i", "@C", "--console" } },
	{ OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "--aux" } },
	{ OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "--aux",
		      "--range", "tt_cwork" } },
	{ OUT_NONE, { "script", "-i", "@C", "--no-symbols", "--json" } },
	{ OUT_NONE, { "stat", "-i", "@C" } },
	{ OUT_NONE, { "stat", "-i", "@C", "-i", "@C" } },
	{ OUT_SVG, { "stat", "-i", "@C", "--bench", "--plot", "@O" } },
	{ OUT_PERFDATA, { "convert", "-i", "@C", "-k", "@K", "--force", "--to",
			  "perf.data", "--no-buildid-cache", "-o", "@O" } },
	{ OUT_TEXT, { "convert", "-i", "@C", "-k", "@K", "--force", "--to", "folded",
		      "-o", "@O" } },
	{ OUT_TEXT, { "convert", "-i", "@C", "-k", "@K", "--force", "--to", "chrome",
		      "-o", "@O" } },
	{ OUT_SVG, { "flamegraph", "-i", "@C", "-k", "@K", "--force", "-o",
		     "@O" } },
	{ OUT_SVG, { "flamegraph", "-i", "@C", "-k", "@K", "--force", "--event",
		     "instructions", "--width", "300", "-o", "@O" } },
	{ OUT_TEXT, { "convert", "-i", "@C", "-k", "@K", "--force", "--to", "speedscope",
		      "-o", "@O" } },
	{ OUT_GZIP, { "convert", "-i", "@C", "-k", "@K", "--force", "--to", "pprof",
		      "-o", "@O" } },
	{ OUT_SVG, { "flamegraph", "-i", "@C", "-k", "@K", "--force", "--reverse",
		     "--inverted", "--minwidth", "1%", "--colors", "io", "-o", "@O" } },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char *kernel;
static int cap_fd = -1, out_fd = -1;
static char cap_path[64], out_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int null = open("/dev/null", O_WRONLY);

	(void)argc, (void)argv;
	bareperf_commands_init();
	for (size_t i = 0; i < NCMDS; i++)
		if (!bareperf_command(cmds[i].argv[0])) {
			fprintf(stderr, "fuzz_cmd: no command '%s' in tools/commands.c: update cmds[]\n",
				cmds[i].argv[0]);
			exit(1);
		}
	if (getenv("BP_FUZZ_LIST")) {
		for (size_t i = 0; i < NCMDS; i++) {
			printf("cmd %zu", i);
			for (const char *const *a = cmds[i].argv; *a; a++)
				printf(" %s", *a);
			printf("\n");
		}
		exit(0);
	}
	kernel = getenv("BP_FUZZ_KERNEL");
	if (!kernel)
		kernel = FUZZ_KERNEL;
	if (access(kernel, R_OK)) {
		fprintf(stderr, "fuzz_cmd: cannot read the kernel %s (set BP_FUZZ_KERNEL)\n", kernel);
		exit(1);
	}
	cap_fd = memfd_create("capture", 0);
	out_fd = memfd_create("out", 0);
	if (cap_fd < 0 || out_fd < 0 || null < 0 || dup2(null, STDOUT_FILENO) < 0)
		exit(1);
	close(null);
	snprintf(cap_path, sizeof(cap_path), "/proc/self/fd/%d", cap_fd);
	snprintf(out_path, sizeof(out_path), "/proc/self/fd/%d", out_fd);
	return 0;
}

/* What a successful command wrote to @O must look like its format. */
static void check_output(enum out_kind k)
{
	char head[8] = { 0 };
	off_t n = lseek(out_fd, 0, SEEK_END);
	ssize_t got;

	if (k == OUT_NONE)
		return;
	got = pread(out_fd, head, sizeof(head), 0);
	if (n < 0 || got < 0)
		abort();
	switch (k) {
	case OUT_PERFDATA:
		if (got < 8 || memcmp(head, "PERFILE2", 8))
			abort();
		break;
	case OUT_SVG:	/* stat --plot writes nothing when there is no memlat sweep */
		if (n && memcmp(head, "<?xml", 5) && memcmp(head, "<svg", 4))
			abort();
		break;
	case OUT_TEXT:
		if (memchr(head, 0, (size_t)got))
			abort();
		break;
	case OUT_GZIP:
		if (got < 2 || memcmp(head, "\x1f\x8b", 2))
			abort();
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_capture_header h;
	const uint8_t *stream = data + 2;
	size_t n = size - 2;
	char *argv[16];
	int argc = 0, rc;
	unsigned which;

	if (size < 2)
		return 0;
	if (!(data[1] & 8))
		stream = fuzz_fixed_stream(stream, &n);
	which = data[0] % NCMDS;
	fuzz_capture_header(&h, (data[1] & 1 ? WIRE_CAPF_COMPLETE : 0) |
				(data[1] & 2 ? WIRE_CAPF_INTERRUPTED : 0),
			    n + (data[1] & 4 ? 100 : 0));
	h.link_kind = WIRE_LINK_QEMU_SERIAL;
	if (ftruncate(cap_fd, 0) || ftruncate(out_fd, 0) ||
	    pwrite(cap_fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    (n && pwrite(cap_fd, stream, n, sizeof(h)) != (ssize_t)n))
		abort();

	for (const char *const *a = cmds[which].argv; *a; a++)
		argv[argc++] = (char *)(!strcmp(*a, "@C") ? cap_path : !strcmp(*a, "@K") ? kernel :
					!strcmp(*a, "@O") ? out_path : *a);
	argv[argc] = NULL;
	rc = bareperf_command(cmds[which].argv[0])->fn(argc, argv);
	fflush(stdout);
	if (rc < 0 || rc > 2)
		abort();
	/* 2 is a usage error: the command line here went stale (an option
	 * renamed or removed), and every input would test nothing. */
	if (rc == 2) {
		fprintf(stderr, "fuzz_cmd: '%s' is a usage error: update cmds[]\n",
			cmds[which].argv[0]);
		abort();
	}
	if (rc == 0)
		check_output(cmds[which].out);
	return 0;
}

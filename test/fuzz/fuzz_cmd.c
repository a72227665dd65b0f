/*
 * fuzz_cmd — libFuzzer target for every command that reads a capture:
 * report, script, stat, convert and flamegraph, called through their
 * public entry points (tools/commands.h) exactly as `bareperf CMD ...`
 * calls them, ASan + UBSan. The input is
 *
 *	byte 0     which command line (cmds[] below: the command and its
 *	           options, e.g. report -g, script --json, convert --to chrome)
 *	byte 1     the capture header's flags: bit 0 COMPLETE, bit 1
 *	           INTERRUPTED, bit 2 a data_size beyond the file (truncated)
 *	the rest   the stream, as record wrote it after the capture header
 *
 * The target writes a valid capture header and the stream into a memfd
 * and runs the command on it, with the kernel.elf the build made
 * (-k KERNEL --force: any RUN_META build-id is accepted), so symbols and
 * source lines are looked up as in real use. Seeds: real captures of the
 * kernel under QEMU and synthetic ones (test/fuzz/cmd_seeds.sh).
 *
 * Checked: no sanitizer report, no leak; the exit status is 0, 1 or 2; a
 * command that says it succeeded wrote what it promised (a perf.data
 * starts with PERFILE2, an SVG with "<?xml" or "<svg", a folded or JSON
 * file is text). stdout goes to /dev/null; run with -close_fd_mask=2 to
 * silence the commands' error lines as well.
 *
 * The kernel: $BP_FUZZ_KERNEL, else FUZZ_KERNEL (the build's kernel.elf,
 * set when this file is compiled).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tools/commands.h"
#include "uapi/wire.h"

#ifndef FUZZ_KERNEL
#define FUZZ_KERNEL "build/kernel.elf"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum out_kind { OUT_NONE, OUT_PERFDATA, OUT_SVG, OUT_TEXT };

/* "@C" is the capture, "@K" the kernel, "@O" the output file. */
static const struct {
	int (*fn)(int argc, char **argv);
	enum out_kind out;
	const char *argv[12];
} cmds[] = {
	{ cmd_report, OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "--stdio" } },
	{ cmd_report, OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "-g" } },
	{ cmd_report, OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "--sort", "line",
				  "-q" } },
	{ cmd_report, OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "-C", "0,2-3",
				  "--app", "loopnest", "--percent-limit", "1" } },
	{ cmd_report, OUT_NONE, { "report", "-i", "@C", "-k", "@K", "--force", "--aux",
				  "-n", "5" } },
	{ cmd_script, OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force" } },
	{ cmd_script, OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "-g",
				  "--header" } },
	{ cmd_script, OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "--csv" } },
	{ cmd_script, OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "--json" } },
	{ cmd_script, OUT_NONE, { "script", "-i", "@C", "--console" } },
	{ cmd_script, OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "--aux" } },
	{ cmd_script, OUT_NONE, { "script", "-i", "@C", "-k", "@K", "--force", "--aux",
				  "--range", "tt_cwork" } },
	{ cmd_script, OUT_NONE, { "script", "-i", "@C", "--no-symbols", "--json" } },
	{ cmd_stat, OUT_NONE, { "stat", "-i", "@C" } },
	{ cmd_stat, OUT_NONE, { "stat", "-i", "@C", "-i", "@C" } },
	{ cmd_stat, OUT_SVG, { "stat", "-i", "@C", "--bench", "--plot", "@O" } },
	{ cmd_convert, OUT_PERFDATA, { "convert", "-i", "@C", "-k", "@K", "--force", "--to",
				       "perf.data", "-o", "@O" } },
	{ cmd_convert, OUT_TEXT, { "convert", "-i", "@C", "-k", "@K", "--force", "--to", "folded",
				   "-o", "@O" } },
	{ cmd_convert, OUT_TEXT, { "convert", "-i", "@C", "-k", "@K", "--force", "--to", "chrome",
				   "-o", "@O" } },
	{ cmd_flamegraph, OUT_SVG, { "flamegraph", "-i", "@C", "-k", "@K", "--force", "-o",
				     "@O" } },
	{ cmd_flamegraph, OUT_SVG, { "flamegraph", "-i", "@C", "-k", "@K", "--force", "--event",
				     "instructions", "--width", "300", "-o", "@O" } },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char *kernel;
static int cap_fd = -1, out_fd = -1;
static char cap_path[64], out_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int null = open("/dev/null", O_WRONLY);

	(void)argc, (void)argv;
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
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t magic[] = WIRE_CAPTURE_MAGIC;
	struct wire_capture_header h;
	char *argv[12];
	int argc = 0, rc;
	unsigned which;

	if (size < 2)
		return 0;
	which = data[0] % NCMDS;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, magic, sizeof(h.magic));
	h.version = WIRE_CAPTURE_VERSION;
	h.compat_version = WIRE_CAPTURE_COMPAT_VERSION;
	h.header_size = sizeof(h);
	h.wire_version = WIRE_VERSION;
	h.link_kind = WIRE_LINK_QEMU_SERIAL;
	h.flags = (data[1] & 1 ? WIRE_CAPF_COMPLETE : 0) | (data[1] & 2 ? WIRE_CAPF_INTERRUPTED : 0);
	h.data_size = size - 2 + (data[1] & 4 ? 100 : 0);
	if (ftruncate(cap_fd, 0) || ftruncate(out_fd, 0) ||
	    pwrite(cap_fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    pwrite(cap_fd, data + 2, size - 2, sizeof(h)) != (ssize_t)(size - 2))
		abort();

	for (const char *const *a = cmds[which].argv; *a; a++)
		argv[argc++] = (char *)(!strcmp(*a, "@C") ? cap_path : !strcmp(*a, "@K") ? kernel :
					!strcmp(*a, "@O") ? out_path : *a);
	argv[argc] = NULL;
	rc = cmds[which].fn(argc, argv);
	fflush(stdout);
	if (rc < 0 || rc > 2)
		abort();
	if (rc == 0)
		check_output(cmds[which].out);
	return 0;
}

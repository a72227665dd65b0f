/*
 * tools/bareperf.c — the host tool's entry point: `bareperf CMD ...`
 * dispatches through the command table (tools/commands.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/commands.h"
#include "uapi/perf_ring.h"
#include "uapi/wire.h"

#define BAREPERF_VERSION "0.1"

static void usage(FILE *f)
{
	fprintf(f, "usage: bareperf COMMAND [options]\n\ncommands:\n");
	for (size_t i = 0; i < bareperf_ncommands; i++) {
		/* the description wrapped at 78 columns, under itself */
		const char *p = bareperf_commands[i].help;
		int col = fprintf(f, "  %-11s", bareperf_commands[i].name);
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

/* Edits (insert, delete, replace, swap two neighbours) from a to b. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[32][32];

	if (la >= 32 || lb >= 32)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		for (size_t j = 0; j <= lb; j++) {
			if (!i || !j) {
				d[i][j] = i + j;
				continue;
			}
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

/* No command called name: say so, and name the closest ones (within two
 * edits, or a third of the word) as git and perf do. */
static int no_command(const char *name)
{
	size_t best = SIZE_MAX, limit = strlen(name) / 3 > 2 ? strlen(name) / 3 : 2;

	for (size_t i = 0; i < bareperf_ncommands; i++) {
		size_t d = edit_distance(name, bareperf_commands[i].name);
		best = d < best ? d : best;
	}
	fprintf(stderr, "bareperf: no command '%s' (bareperf --help lists them)", name);
	if (best <= limit) {
		const char *sep = "; did you mean ";
		for (size_t i = 0; i < bareperf_ncommands; i++)
			if (edit_distance(name, bareperf_commands[i].name) == best) {
				fprintf(stderr, "%s'%s'", sep, bareperf_commands[i].name);
				sep = " or ";
			}
		fputc('?', stderr);
	}
	fputc('\n', stderr);
	return 2;
}

int main(int argc, char **argv)
{
	const struct bareperf_command *c;

	bareperf_commands_init();

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
		if (!(c = bareperf_command(argv[2])))
			return no_command(argv[2]);
		char *av[] = { argv[2], help, NULL };
		return c->fn(2, av);
	}
	if (!(c = bareperf_command(argv[1])))
		return no_command(argv[1]);
	return c->fn(argc - 1, argv + 1);
}

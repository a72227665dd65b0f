/*
 * tools/builtin-flamegraph.c — `bareperf flamegraph`: the samples of one
 * event merged into a tree of stacks (tools/util/stack.c), drawn as a
 * self-contained interactive SVG (tools/util/flamegraph.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/util/cli.h"
#include "tools/util/evlist.h"
#include "tools/util/flamegraph.h"

/* ---- the command ---------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: bareperf flamegraph [-i CAPTURE] [-o OUT.svg] [-k KERNEL] [--force]\n"
	      "                           [--event NAME] [--title TEXT] [--width PX]\n"
	      "  -i, --input FILE     the capture (default capture.bpc; - reads standard input)\n"
	      "  -o, --output FILE    the SVG (default flamegraph.svg; - for stdout)\n"
	      "  -k, --kernel PATH    the kernel.elf that ran (default: kernel.elf next to the\n"
	      "                       capture, or LIBDIR's (bareperf record -h); its build-id\n"
	      "                       must match)\n"
	      "  -f, --force          use the kernel even if its build-id differs\n"
	      "  -e, --event NAME     the event to draw (default: the first with samples)\n"
	      "      --title TEXT     the graph's title (default Flame Graph)\n"
	      "      --width PX       200 to 100000 (default 1200)\n"
	      "Open the SVG in a browser: hover for names and percentages, click to zoom,\n"
	      "Ctrl-F or the Search button to highlight functions by regular expression.\n",
	      f);
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input",  required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "event",  required_argument, NULL, 'e' },
		{ "force",  no_argument,       NULL, 'f' },
		{ "title",  required_argument, NULL, 'T' },
		{ "width",  required_argument, NULL, 'w' },
		{ "help",   no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in = "capture.bpc", *outp = "flamegraph.svg", *kernel = NULL;
	const char *event = NULL, *title = NULL, *ev_name = NULL;
	char kpath[PATH_MAX], err[512], subtitle[512];
	struct flamegraph_opts fo = { 0 };
	struct session *s;
	struct symtab *t = NULL;
	struct stack_tree tr;
	bool multiple, force = false;
	uint64_t id;
	FILE *out;
	int c, rc = 1;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:k:e:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': outp = optarg; break;
		case 'k': kernel = optarg; break;
		case 'e': event = optarg; break;
		case 'f': force = true; break;
		case 'T': title = optarg; break;
		case 'w': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v < 200 || v > 100000) {
				fprintf(stderr, "bareperf flamegraph: --width %s: not 200 to 100000\n",
					optarg);
				return 2;
			}
			fo.width = (unsigned)v;
			break;
		}
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "bareperf flamegraph: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "bareperf flamegraph: unknown option '%s' (bareperf flamegraph "
				"--help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bareperf flamegraph: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "bareperf flamegraph: out of memory\n");
		return 1;
	}
	if (cli_open_capture("flamegraph", in, kernel, force, s, &t, kpath)) {
		free(s);
		return 1;
	}
	if (convert_pick_event(s, event, &id, &ev_name, &multiple, err, sizeof(err)) ||
	    stack_tree_build(&tr, s, t, false, id, err, sizeof(err))) {
		fprintf(stderr, "bareperf flamegraph: %s\n", err);
		goto done;
	}
	if (multiple && !event)
		fprintf(stderr, "bareperf flamegraph: several events sampled; drawing %s "
			"(choose with --event)\n", ev_name);
	snprintf(subtitle, sizeof(subtitle), "%s, %" PRIu64 " samples, %s", ev_name,
		 tr.nodes[0].total, in);
	fo.title = title;
	fo.subtitle = subtitle;
	out = strcmp(outp, "-") ? fopen(outp, "w") : stdout;
	if (!out) {
		fprintf(stderr, "bareperf flamegraph: %s: %s\n", outp, strerror(errno));
	} else {
		rc = flamegraph_write_svg(&tr, &fo, out) ? 1 : 0;
		if (out != stdout ? fclose(out) : fflush(out))
			rc = 1;
		if (rc)
			fprintf(stderr, "bareperf flamegraph: %s: write failed: %s\n", outp,
				strerror(errno));
	}
	stack_tree_free(&tr);
done:
	symtab_free(t);
	session_free(s);
	free(s);
	return rc;
}

/*
 * tools/builtin-flamegraph.c — `bareperf flamegraph`: the samples of one
 * event merged into a tree of stacks (tools/util/stack.c), or folded stacks
 * read back, drawn as a self-contained interactive SVG
 * (tools/util/flamegraph.c), with flamegraph.pl's common options.
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
	      "                           [--minwidth PX|PCT%] [--reverse] [--inverted]\n"
	      "                           [--colors PALETTE] [--countname TEXT] [--folded]\n"
	      "  -i, --input FILE     the capture (default capture.bpc; - reads standard input)\n"
	      "  -o, --output FILE    the SVG (default flamegraph.svg; - for stdout)\n"
	      "  -k, --kernel PATH    the kernel.elf that ran (default: kernel.elf next to the\n"
	      "                       capture, or LIBDIR's (bareperf record -h); its build-id\n"
	      "                       must match)\n"
	      "  -f, --force          use the kernel even if its build-id differs\n"
	      "  -e, --event NAME     the event to draw (default: the first with samples)\n"
	      "      --title TEXT     the graph's title (default Flame Graph)\n"
	      "      --width PX       200 to 100000 (default 1200)\n"
	      "flamegraph.pl's options:\n"
	      "      --minwidth NUM   omit smaller functions: pixels, or NUM% of the total\n"
	      "                       (default 0.1 pixels)\n"
	      "      --reverse        a stack-reversed flame graph: each stack from the function\n"
	      "                       where the sample was taken out to its callers\n"
	      "      --inverted       an icicle graph: the root at the top\n"
	      "      --colors PALETTE one palette for every frame: hot, mem, io, red, green,\n"
	      "                       blue, aqua, yellow, purple, orange (default: by kind of\n"
	      "                       code, kernel orange, apps green, benchmark bodies blue;\n"
	      "                       hot with --folded)\n"
	      "      --countname TEXT what the counts are (default samples)\n"
	      "      --folded         the input is folded stacks (\"a;b;c 12\" lines, as\n"
	      "                       convert --to folded and stackcollapse-perf.pl write;\n"
	      "                       a count may have a fraction, \"a;b 0.25\", kept to six\n"
	      "                       decimals), -i FILE or standard input\n"
	      "Open the SVG in a browser: hover for names and percentages, click to zoom,\n"
	      "Ctrl-F or the Search button to highlight functions by regular expression.\n",
	      f);
}

struct fg_args {
	const char *in, *outp, *kernel, *event;
	bool force, folded, reverse;
	struct flamegraph_opts fo;
};

/* The options into a; 0, or the exit status (2: bad usage, -1: --help). */
static int parse_args(int argc, char **argv, struct fg_args *a)
{
	static const struct option longopts[] = {
		{ "input",  required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "event",  required_argument, NULL, 'e' },
		{ "force",  no_argument,       NULL, 'f' },
		{ "title",  required_argument, NULL, 'T' },
		{ "width",  required_argument, NULL, 'w' },
		{ "minwidth", required_argument, NULL, 'm' },
		{ "reverse", no_argument,      NULL, 'R' },
		{ "inverted", no_argument,     NULL, 'I' },
		{ "colors", required_argument, NULL, 'C' },
		{ "countname", required_argument, NULL, 'N' },
		{ "folded", no_argument,       NULL, 'F' },
		{ "help",   no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:k:e:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': a->in = optarg; break;
		case 'o': a->outp = optarg; break;
		case 'k': a->kernel = optarg; break;
		case 'e': a->event = optarg; break;
		case 'f': a->force = true; break;
		case 'T': a->fo.title = optarg; break;
		case 'R': a->reverse = true; break;
		case 'I': a->fo.inverted = true; break;
		case 'N': a->fo.countname = optarg; break;
		case 'F': a->folded = true; break;
		case 'w': {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v < 200 || v > 100000) {
				fprintf(stderr, "bareperf flamegraph: --width %s: not 200 to 100000\n",
					optarg);
				return 2;
			}
			a->fo.width = (unsigned)v;
			break;
		}
		case 'm':
			a->fo.minwidth = strtod(optarg, &end);
			a->fo.minwidth_pct = *end == '%';
			if (end == optarg || *(end + a->fo.minwidth_pct) || !(a->fo.minwidth > 0) ||
			    (a->fo.minwidth_pct && a->fo.minwidth > 100)) {
				fprintf(stderr, "bareperf flamegraph: --minwidth %s: not pixels (0.1) "
					"or a percentage (0.5%%)\n", optarg);
				return 2;
			}
			break;
		case 'C':
			if (!flamegraph_palette(optarg)) {
				fprintf(stderr, "bareperf flamegraph: --colors %s: not one of %s\n",
					optarg, flamegraph_palettes);
				return 2;
			}
			a->fo.colors = optarg;
			break;
		case 'h': usage(stdout); return -1;
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
	return 0;
}

/* The tree of folded stacks in a->in (NULL or -: standard input). */
static int read_folded(struct fg_args *a, struct stack_tree *tr)
{
	bool std = !a->in || !strcmp(a->in, "-");
	FILE *in = std ? stdin : fopen(a->in, "r");
	size_t ignored;
	char err[512];
	int rc;

	if (!in) {
		fprintf(stderr, "bareperf flamegraph: %s: %s\n", a->in, strerror(errno));
		return -1;
	}
	rc = stack_tree_read_folded(tr, in, &ignored, err, sizeof(err));
	if (!std)
		fclose(in);
	if (rc) {
		fprintf(stderr, "bareperf flamegraph: %s: %s\n", std ? "stdin" : a->in, err);
		return -1;
	}
	if (ignored)
		fprintf(stderr, "bareperf flamegraph: ignored %zu lines that are not folded "
			"stacks (\"a;b;c 12\")\n", ignored);
	if (!a->fo.colors)
		a->fo.colors = "hot";
	return 0;
}

/* The tree of one event's samples in the capture a->in; the session and
 * the symtab it names its frames from, which the caller frees after it. */
static int read_capture(struct fg_args *a, struct stack_tree *tr, const char **ev_name,
			struct session **sp, struct symtab **tp)
{
	char kpath[PATH_MAX], err[512];
	struct session *s = calloc(1, sizeof(*s));
	bool multiple;
	uint64_t id;

	if (!s) {
		fprintf(stderr, "bareperf flamegraph: out of memory\n");
		return -1;
	}
	if (cli_open_capture("flamegraph", a->in ? a->in : "capture.bpc", a->kernel, a->force, s,
			     tp, kpath)) {
		free(s);
		return -1;
	}
	*sp = s;
	if (convert_pick_event(s, a->event, &id, ev_name, &multiple, err, sizeof(err)) ||
	    stack_tree_build(tr, s, *tp, false, id, err, sizeof(err))) {
		fprintf(stderr, "bareperf flamegraph: %s\n", err);
		return -1;
	}
	if (multiple && !a->event)
		fprintf(stderr, "bareperf flamegraph: several events sampled; drawing %s "
			"(choose with --event)\n", *ev_name);
	return 0;
}

static int write_svg(const struct fg_args *a, const struct stack_tree *tr)
{
	FILE *out = strcmp(a->outp, "-") ? fopen(a->outp, "w") : stdout;
	int rc;

	if (!out) {
		fprintf(stderr, "bareperf flamegraph: %s: %s\n", a->outp, strerror(errno));
		return 1;
	}
	rc = flamegraph_write_svg(tr, &a->fo, out) ? 1 : 0;
	if (out != stdout ? fclose(out) : fflush(out))
		rc = 1;
	if (rc)
		fprintf(stderr, "bareperf flamegraph: %s: write failed: %s\n", a->outp,
			strerror(errno));
	return rc;
}

int cmd_flamegraph(int argc, char **argv)
{
	struct fg_args a = { .outp = "flamegraph.svg" };
	struct stack_tree tr = { 0 }, rev = { 0 };
	struct session *s = NULL;
	struct symtab *t = NULL;
	const char *ev_name = NULL;
	char subtitle[512], err[512], num[32];
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	rc = 1;
	if (a.folded ? read_folded(&a, &tr) : read_capture(&a, &tr, &ev_name, &s, &t))
		goto done;
	if (a.reverse) {
		if (stack_tree_reverse(&tr, &rev, err, sizeof(err))) {
			fprintf(stderr, "bareperf flamegraph: %s\n", err);
			goto done;
		}
	}
	snprintf(subtitle, sizeof(subtitle), "%s%s%s %s, %s%s", ev_name ? ev_name : "",
		 ev_name ? ", " : "", stack_count_text(&tr, tr.nodes[0].total, num, sizeof(num)),
		 a.fo.countname ? a.fo.countname : "samples",
		 a.in ? a.in : a.folded ? "stdin" : "capture.bpc", a.reverse ? ", stacks reversed" : "");
	a.fo.subtitle = subtitle;
	rc = write_svg(&a, a.reverse ? &rev : &tr);
done:
	stack_tree_free(&rev);
	stack_tree_free(&tr);
	symtab_free(t);
	if (s) {
		session_free(s);
		free(s);
	}
	return rc;
}

/*
 * tools/builtin-convert.c — `bareperf convert`: a capture to perf.data (for the
 * real `perf report` / `perf script`: tools/util/convert_perf.c), folded
 * stacks (flamegraph.pl's input: tools/util/stack.c), Chrome trace-event
 * JSON (tools/util/chrome.c), speedscope's file format
 * (tools/util/speedscope.c) or a pprof profile (tools/util/pprof.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/util/buildid_cache.h"
#include "tools/util/program_image.h"
#include "tools/util/chrome.h"
#include "tools/util/cli.h"
#include "tools/util/convert_perf.h"
#include "tools/util/evlist.h"
#include "tools/util/pprof.h"
#include "tools/util/speedscope.h"
#include "tools/util/stack.h"

/* ---- the command ---------------------------------------------------------- */

/* The images convert linked of the programs (program_image.h), into perf's
 * build-id cache beside the kernel. */
static void cache_program_images(const struct symtab *t, const char *outp)
{
	const struct symtab *p;

	for (size_t i = 0; (p = symtab_program_at(t, i)); i++) {
		char path[PATH_MAX], abs[PATH_MAX], dir[PATH_MAX], err[1024];
		const char *name;
		uint64_t start, end;
		uint8_t id[64];
		int n;
		symtab_program_range(p, &name, &start, &end);
		program_image_path(outp, name, path, sizeof(path));
		if (!symtab_is_program_object(p) || !realpath(path, abs))
			continue;
		n = symtab_read_build_id(abs, id, sizeof(id), err, sizeof(err));
		if (n <= 0 || buildid_cache_add(abs, id, (size_t)n, dir, sizeof(dir), err,
						sizeof(err)))
			fprintf(stderr, "bareperf convert: warning: build-id cache: %s: %s\n", abs,
				n <= 0 ? "no build-id" : err);
	}
}

/* The formats written as one stream: the whole capture (chrome,
 * speedscope) or the samples of one event (folded, pprof). */
static int write_stream(const char *to, const struct session *s, const struct symtab *t,
			const char *event, FILE *out, char *err, size_t errlen)
{
	struct stack_tree tr;
	uint64_t id;
	const char *name;
	bool multiple;
	int rc;

	if (!strcmp(to, "chrome"))
		return convert_chrome(s, t, out, err, errlen);
	if (!strcmp(to, "speedscope"))
		return convert_speedscope(s, t, out, err, errlen);
	if (convert_pick_event(s, event, &id, &name, &multiple, err, errlen))
		return -1;
	if (multiple && !event)
		fprintf(stderr, "bareperf convert: several events sampled; %s of %s (choose "
			"with --event)\n", strcmp(to, "pprof") ? "folded stacks" : "the profile",
			name);
	if (!strcmp(to, "pprof"))
		return convert_pprof(s, t, id, out, err, errlen);
	if (stack_tree_build(&tr, s, t, false, id, err, errlen))
		return -1;
	rc = stack_tree_write_folded(&tr, out);
	if (rc)
		snprintf(err, errlen, "write: %s", strerror(errno));
	stack_tree_free(&tr);
	return rc;
}

static void usage(FILE *f)
{
	fputs("usage: bareperf convert [-i CAPTURE] --to FORMAT [-o OUT]\n"
	      "                        [-k KERNEL] [--force] [--event NAME]\n"
	      "  -i, --input FILE     the capture (default capture.bpc; - reads standard input)\n"
	      "  -t, --to FORMAT      perf.data: for perf report / perf script (-o default perf.data)\n"
	      "                       folded: folded stacks for flamegraph.pl (-o default stdout)\n"
	      "                       chrome: Chrome trace-event JSON (-o default stdout)\n"
	      "                       speedscope: speedscope's own JSON format, one sampled\n"
	      "                       profile per event and CPU, weighted by period\n"
	      "                       (-o default stdout)\n"
	      "                       pprof: a gzipped profile.proto for go tool pprof and\n"
	      "                       continuous profilers (-o default profile.pb.gz)\n"
	      "  -k, --kernel PATH    the kernel.elf that ran (default: kernel.elf next to the\n"
	      "                       capture, or LIBDIR's (bareperf record -h); its build-id\n"
	      "                       must match)\n"
	      "  -f, --force          use the kernel even if its build-id differs\n"
	      "  -e, --event NAME     folded, pprof: the event to show (default: the first with\n"
	      "                       samples)\n"
	      "  --no-buildid-cache   perf.data: leave perf's build-id cache (~/.debug) alone\n",
	      f);
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input",  required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "to",     required_argument, NULL, 't' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "event",  required_argument, NULL, 'e' },
		{ "force",  no_argument,       NULL, 'f' },
		{ "no-buildid-cache", no_argument, NULL, 'B' },
		{ "help",   no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in = "capture.bpc", *outp = NULL, *to = NULL, *kernel = NULL, *event = NULL;
	char kpath[PATH_MAX], err[512];
	struct session *s;
	struct symtab *t = NULL;
	bool force = false, cache = true;
	int c, rc = 1;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:t:k:e:fBh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': outp = optarg; break;
		case 't': to = optarg; break;
		case 'k': kernel = optarg; break;
		case 'e': event = optarg; break;
		case 'f': force = true; break;
		case 'B': cache = false; break;
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "bareperf convert: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "bareperf convert: unknown option '%s' (bareperf convert "
				"--help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bareperf convert: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!to) {
		fprintf(stderr, "bareperf convert: --to perf.data|folded|chrome|speedscope|pprof "
			"is required\n");
		usage(stderr);
		return 2;
	}
	if (strcmp(to, "perf.data") && strcmp(to, "folded") && strcmp(to, "chrome") &&
	    strcmp(to, "speedscope") && strcmp(to, "pprof")) {
		fprintf(stderr, "bareperf convert: --to %s: not perf.data, folded, chrome, "
			"speedscope or pprof\n", to);
		return 2;
	}
	if (!outp)
		outp = !strcmp(to, "perf.data") ? "perf.data" :
		       !strcmp(to, "pprof") ? "profile.pb.gz" : "-";
	if (!strcmp(to, "perf.data") && !strcmp(outp, "-")) {
		fprintf(stderr, "bareperf convert: perf.data needs a file (perf reads it with "
			"seeks)\n");
		return 2;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "bareperf convert: out of memory\n");
		return 1;
	}
	if (cli_open_capture("convert", in, kernel, force, s, &t, kpath)) {
		free(s);
		return 1;
	}

	if (!strcmp(to, "perf.data")) {
		/* the file's own build-id: what perf will check (with --force it
		 * may differ from the capture's) */
		size_t idlen;
		const uint8_t *id = symtab_build_id(t, &idlen);
		char dir[PATH_MAX];
		if (convert_perfdata(s, t, kpath, id, idlen, outp, err, sizeof(err))) {
			fprintf(stderr, "bareperf convert: %s\n", err);
		} else {
			fprintf(stderr, "bareperf convert: %zu samples to %s (kernel: %s)\n",
				s->nsamples, outp, kpath);
			rc = 0;
			if (!cache)
				fprintf(stderr, "bareperf convert: perf finds the kernel's symbols "
					"with: perf report -i %s -k %s\n", outp, kpath);
			else if (buildid_cache_add(kpath, id, idlen, dir, sizeof(dir), err,
						   sizeof(err)))
				fprintf(stderr, "bareperf convert: warning: build-id cache: %s; "
					"perf needs: perf report -i %s -k %s\n", err, outp, kpath);
			else
				fprintf(stderr, "bareperf convert: %s is in perf's build-id cache "
					"(%s): perf report -i %s finds it\n", kpath, dir, outp);
			if (cache)
				cache_program_images(t, outp);
		}
	} else {
		FILE *out = strcmp(outp, "-") ? fopen(outp, "w") : stdout;
		if (!out) {
			fprintf(stderr, "bareperf convert: %s: %s\n", outp, strerror(errno));
			goto done;
		}
		rc = write_stream(to, s, t, event, out, err, sizeof(err)) ? 1 : 0;
		if (out != stdout) {
			if (fclose(out) && !rc) {
				snprintf(err, sizeof(err), "%s: %s", outp, strerror(errno));
				rc = 1;
			}
		} else if (fflush(out) && !rc) {
			snprintf(err, sizeof(err), "stdout: %s", strerror(errno));
			rc = 1;
		}
		if (rc)
			fprintf(stderr, "bareperf convert: %s\n", err);
	}
done:
	symtab_free(t);
	session_free(s);
	free(s);
	return rc;
}

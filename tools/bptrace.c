/*
 * tools/bptrace.c — `bptrace`, the trace decoder's own driver
 * (tools/util/trace/trace.h, libbptrace.a): the end-to-end test
 * (test/e2e/trace.sh) and `make bench` use it. Its report and script
 * print what `bareperf report --aux` and `script --aux` do (the test
 * checks report), its chrome the call slices `convert --to chrome` also
 * draws; console and bench are its own. A program apart from bareperf:
 * it links the decoder with the capture loader and the ELF reader alone,
 * and its bench times the decoder without the tool around it.
 *
 *   bptrace report  CAPTURE [-k ELF] [--cpu N] [--top N] [--check]
 *   bptrace script  CAPTURE [-k ELF] [--cpu N] [--range START-END]
 *   bptrace chrome  CAPTURE [-k ELF]    Chrome trace JSON of the call slices
 *   bptrace console CAPTURE             the console text the capture holds
 *   bptrace bench   CAPTURE [-k ELF]    decoder throughput: BENCH line
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/util/paths.h"
#include "tools/util/trace/trace.h"

static int usage(void)
{
	fprintf(stderr, "usage: bptrace report|script|chrome|console|bench CAPTURE [-k kernel.elf] "
		"[--cpu N] [--top N] [--range START-END] [--check]\n");
	return 2;
}

struct chrome {
	FILE *out;
	bool first;
};

static void json_slice(void *ctx, const struct trace_slice *s)
{
	struct chrome *c = ctx;

	/* Time is instructions: one instruction = 1 ns, so ts is in us. */
	fprintf(c->out, "%s\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%u,"
		"\"ts\":%" PRIu64 ".%03" PRIu64 ",\"dur\":%" PRIu64 ".%03" PRIu64 "}",
		c->first ? "" : ",", s->name, s->cpu, s->start / 1000, s->start % 1000,
		s->dur / 1000, s->dur % 1000);
	c->first = false;
}

static uint64_t decoded;

static void count_insn(void *ctx, uint64_t step, const struct trace_insn *ii)
{
	(void)ctx, (void)step, (void)ii;
	decoded++;
}

static int bench(const char *capture, const struct trace_opts *o)
{
	struct trace_capture tc;
	struct trace_image *im;
	char err[256];
	struct trace_sink sink = { count_insn, NULL, NULL };
	struct trace_dec_stats st;
	struct timespec t0, t1;

	if (trace_capture_load(&tc, capture, err, sizeof(err)) ||
	    trace_image_load(&im, o->kernel_elf, NULL, 0, err, sizeof(err))) {
		fprintf(stderr, "bptrace: %s\n", err);
		return 1;
	}
	/* Decode everything a few times; the first pass fills the
	 * instruction cache, as any long trace would. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int rep = 0; rep < 5; rep++)
		for (size_t i = 0; i < tc.ncpus; i++)
			if (tc.cpus[i].format == TF_SSTEP)
				trace_decode_sstep(im, tc.cpus[i].pieces, tc.cpus[i].npieces, &sink,
						   NULL, &st);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("BENCH trace_decode_minsn_per_s %.2f Minsn/s\n", (double)decoded / s / 1e6);
	trace_image_free(im);
	trace_capture_free(&tc);
	return decoded ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct trace_opts o = { .kernel_elf = paths_kernel(), .cpu = -1 };
	const char *range = NULL, *cmd, *capture;

	if (argc < 3)
		return usage();
	cmd = argv[1];
	capture = argv[2];
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "-k") && i + 1 < argc)
			o.kernel_elf = argv[++i];
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			o.cpu = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--top") && i + 1 < argc)
			o.top = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--range") && i + 1 < argc)
			range = argv[++i];
		else if (!strcmp(argv[i], "--check"))
			o.check = true;
		else if (!strcmp(argv[i], "--force"))
			o.force = true;
		else
			return usage();
	}
	if (range) {
		char err[256];
		if (trace_opts_set_range(&o, range, err, sizeof(err))) {
			fprintf(stderr, "bptrace: %s\n", err);
			return 2;
		}
	}
	if (!strcmp(cmd, "report"))
		return trace_report(capture, &o, stdout);
	if (!strcmp(cmd, "script"))
		return trace_script(capture, &o, stdout);
	if (!strcmp(cmd, "chrome")) {
		struct chrome c = { stdout, true };
		char err[256];
		printf("{\"traceEvents\":[");
		if (trace_call_slices(capture, &o, json_slice, &c, err, sizeof(err))) {
			fprintf(stderr, "bptrace: %s\n", err);
			return 1;
		}
		/* ts in us, no "displayTimeUnit": Perfetto takes it for the
		 * unit of ts. */
		printf("\n]}\n");
		return 0;
	}
	if (!strcmp(cmd, "console")) {
		struct trace_capture tc;
		char err[256];
		if (trace_capture_load(&tc, capture, err, sizeof(err))) {
			fprintf(stderr, "bptrace: %s\n", err);
			return 1;
		}
		fputs(tc.console ? tc.console : "", stdout);
		trace_capture_free(&tc);
		return 0;
	}
	if (!strcmp(cmd, "bench"))
		return bench(capture, &o);
	return usage();
}

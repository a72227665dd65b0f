/*
 * bench_check.c — `bareperf bench --check` (tools/builtin-bench.c): the
 * snippets assembled, the event files parsed, and what a run would do
 * printed, with no machine booted. The events go in runs the way the run
 * sends them (tools/util/bench_events.c): -e's first, then -config's and
 * -msr_config's, never multiplexed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/bench_asm.h"
#include "tools/util/bench_check.h"
#include "tools/util/bench_config.h"
#include "tools/util/bench_events.h"

/* Assemble one snippet (or read -code's file) and say its size. */
static int snippet(const char *what, const char *src, bool file, bool nasm)
{
	uint8_t *code = NULL;
	size_t len = 0;
	int rc = file ? bench_read_code(src, &code, &len, what) :
			bench_assemble(what, src, nasm, &code, &len);

	if (!rc)
		printf("%-16s %zu bytes\n", what, len);
	free(code);
	return rc;
}

/* --batch: each line, as the run assembles it. */
static int batch(const char *path, bool nasm)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, what[300];
	size_t cap = 0;
	ssize_t len;
	int ln = 0, n = 0, rc = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		ln++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
			line[--len] = 0;
		char *s = line + strspn(line, " \t");
		if (!*s || *s == '#')
			continue;
		snprintf(what, sizeof(what), "--batch %s:%d", path, ln);
		rc |= snippet(what, s, false, nasm);
		n++;
	}
	free(line);
	fclose(f);
	if (!n)
		fprintf(stderr, "bareperf bench: --batch %s holds no snippet\n", path);
	return n ? rc : -1;
}

static const char *counter(const struct bench_run_event *ev, char *buf, size_t len)
{
	if (ev->ctr < 0)
		return "any";
	if (ev->ctr >= BENCH_CTR_FIXED_BASE)
		snprintf(buf, len, "fixed %d", ev->ctr - BENCH_CTR_FIXED_BASE);
	else
		snprintf(buf, len, "GP %d", ev->ctr);
	return buf;
}

/* One event: its line, run, encoding, counter, name, then what else it asks. */
static void print_event(const struct bench_run_event *ev)
{
	char ctr[24], line[16] = "-e";

	if (ev->line)
		snprintf(line, sizeof(line), "%d", ev->line);
	printf("  %4s  %-4d %-12s %-8s %s", line, ev->run + 1, ev->spec,
	       ev->rdmsr ? "rdmsr" : counter(ev, ctr, sizeof(ctr)), ev->label[0] ? ev->label :
	       ev->line ? "" : "(-e)");
	if (ev->any)
		printf("  [AnyT]");
	if (ev->alone)
		printf("  [TakenAlone]");
	for (int i = 0; i < ev->nmsr; i++)
		printf("  [%s %#x=%#llx]", ev->rdmsr ? "wrmsr" : "MSR", ev->msr[i].msr,
		       (unsigned long long)ev->msr[i].value);
	putchar('\n');
}

int bench_check(const struct bench_check_in *in)
{
	struct bench_events l = { 0 };
	int rc = 0, nrefused = 0;

	printf("bareperf bench --check: nothing is run; runs of at most %d events, the most "
	       "one request measures (no machine asked: its counters and MSRs are the "
	       "kernel's to check)\n", BENCH_RUN_EVENTS);
	if (in->code_init)
		rc |= snippet("-code_init", in->code_init, true, in->nasm);
	if (in->asm_init)
		rc |= snippet("-asm_init", in->asm_init, false, in->nasm);
	if (in->asm_late)
		rc |= snippet("-asm_late_init", in->asm_late, false, in->nasm);
	if (in->code)
		rc |= snippet("-code", in->code, true, in->nasm);
	if (in->asm_body)
		rc |= snippet("-asm", in->asm_body, false, in->nasm);
	if (in->batch)
		rc |= batch(in->batch, in->nasm);
	for (int i = 0; in->events && i < in->events->n; i++)
		*bench_events_insert(&l, l.n, "", "", "") = in->events->ev[i];
	if (in->config)
		rc |= bench_events_load(&l, in->config, false, &nrefused);
	if (in->msr_config)
		rc |= bench_events_load(&l, in->msr_config, true, &nrefused);
	bench_events_runs(&l, BENCH_RUN_EVENTS);

	printf("events (line, run, encoding, counter, name):\n");
	for (int i = 0; i < l.n; i++)
		print_event(&l.ev[i]);
	if (!l.n)
		printf("  (the default: cycles,instructions with a PMU, else tsc)\n");
	printf("%d event%s in %d run%s of the snippet", l.n, l.n == 1 ? "" : "s", l.nruns,
	       l.nruns == 1 ? "" : "s");
	if (nrefused)
		printf(", %d line%s refused", nrefused, nrefused == 1 ? "" : "s");
	printf("\n");
	bench_events_free(&l);
	return rc ? 2 : 0;
}

/*
 * bench_check.c — `bareperf bench --check` (tools/builtin-bench.c): the
 * snippets assembled, the event files parsed, and what a run would do
 * printed, with no machine booted. The events go in runs the way the run
 * sends them: -e's first, then -config's, BENCH_CHECK_GP_COUNTERS to a run
 * (never multiplexed); a line the run cannot send yet is listed with why.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/bench_asm.h"
#include "tools/util/bench_check.h"
#include "tools/util/bench_config.h"

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

static const char *counter(const struct bench_event *ev, char *buf, size_t len)
{
	if (ev->ctr < 0)
		return "any";
	if (ev->ctr >= BENCH_CTR_FIXED_BASE)
		snprintf(buf, len, "fixed %d", ev->ctr - BENCH_CTR_FIXED_BASE);
	else
		snprintf(buf, len, "GP %d", ev->ctr);
	return buf;
}

/* One -config event: run, encoding, counter, name, then what else it asks. */
static void print_event(const struct bench_event *ev, int *k)
{
	char ctr[24], why[128], run[16] = "-";
	bool sent = bench_event_sendable(ev, why, sizeof(why));

	if (sent)
		snprintf(run, sizeof(run), "%d", *k / BENCH_CHECK_GP_COUNTERS + 1);
	*k += sent;
	printf("  %4d  %-4s %-12s %-8s %s", ev->line, run, ev->spec, counter(ev, ctr, sizeof(ctr)),
	       ev->name);
	if (ev->any)
		printf("  [AnyT]");
	if (ev->taken_alone)
		printf("  [TakenAlone]");
	for (int i = 0; i < ev->nmsr; i++)
		printf("  [MSR %#x=%#llx]", ev->msr[i].msr, (unsigned long long)ev->msr[i].value);
	if (!sent)
		printf("  (not run yet: %s)", why);
	putchar('\n');
}

static void print_msr_event(const struct bench_msr_event *m)
{
	printf("  %4d  %-8s rdmsr %#x  %s", m->line, "own", m->rdmsr, m->name);
	for (int i = 0; i < m->nwrite; i++)
		printf("  [wrmsr %#x=%#llx]", m->write[i].msr, (unsigned long long)m->write[i].value);
	printf("  (not run yet: the kernel reads no MSR for bench)\n");
}

int bench_check(const struct bench_check_in *in)
{
	struct bench_config c = { 0 }, m = { 0 };
	int rc = 0, k = 0;

	printf("bareperf bench --check: nothing is run; assumed %d GP counters per run (no "
	       "machine asked)\n", BENCH_CHECK_GP_COUNTERS);
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
	if (in->config)
		rc |= bench_config_read(in->config, false, &c);
	if (in->msr_config)
		rc |= bench_config_read(in->msr_config, true, &m);

	printf("events (line, run, encoding, counter, name):\n");
	for (; k < in->nevents; k++)
		printf("  %4s  %-4d %-12s %-8s (-e)\n", "-e", k / BENCH_CHECK_GP_COUNTERS + 1,
		       in->events[k], "any");
	for (int i = 0; i < c.nev; i++)
		print_event(&c.ev[i], &k);
	if (!k && !c.nev)
		printf("  (the default: cycles,instructions with a PMU, else tsc)\n");
	for (int i = 0; i < m.nmsr; i++)
		print_msr_event(&m.msr[i]);
	if (in->config && k == in->nevents)
		printf("the run refuses -config: no event in it can be sent yet\n");
	printf("%d event%s in %d run%s of the snippet", k, k == 1 ? "" : "s",
	       k ? (k + BENCH_CHECK_GP_COUNTERS - 1) / BENCH_CHECK_GP_COUNTERS : 1,
	       k > BENCH_CHECK_GP_COUNTERS ? "s" : "");
	if (c.nev + m.nmsr > k - in->nevents)
		printf(", %d parsed and not run yet", c.nev + m.nmsr - (k - in->nevents));
	if (c.nrefused + m.nrefused)
		printf(", %d line%s refused", c.nrefused + m.nrefused,
		       c.nrefused + m.nrefused == 1 ? "" : "s");
	printf("\n");
	bench_config_free(&c);
	bench_config_free(&m);
	return rc ? 2 : 0;
}

/*
 * test_bench_config — nanoBench's event files as `bareperf bench` reads
 * them (tools/util/bench_config.c): every field of a -config line and of a
 * -msr_config line, each kind of refused line with its reason, a file
 * whose bad line is refused alone, and files of any length; the run's
 * events (tools/util/bench_events.c): kept with their fields, laid out in
 * runs as nanoBench groups them, and written as RUN_CODE's parameters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test/host/tmpdir.h"
#include "tools/util/bench_config.h"
#include "tools/util/bench_events.h"
#include "uapi/wire.h"

static struct bench_event ev;
static struct bench_msr_event m;
static char why[256];

static int line(const char *s)
{
	free(ev.name);
	why[0] = 0;
	return bench_config_parse_line(s, &ev, why, sizeof(why));
}

static int msr_line(const char *s)
{
	free(m.name);
	why[0] = 0;
	return bench_msr_config_parse_line(s, &m, why, sizeof(why));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void event_fields(void **state)
{
	(void)state;
	assert_int_equal(line("C2.01 UOPS_RETIRED.ALL\n"), 1);
	assert_int_equal(ev.evtsel, 0xc2);
	assert_int_equal(ev.umask, 0x01);
	assert_string_equal(ev.spec, "r1c2");
	assert_string_equal(ev.name, "UOPS_RETIRED.ALL");
	assert_int_equal(ev.ctr, -1);
	assert_int_equal(ev.nmsr, 0);
	/* CMSK is decimal or 0x hex; EDG 18, INV 23, CMSK 31:24. */
	assert_int_equal(line("A3.14.CMSK=20 STALLS"), 1);
	assert_int_equal(ev.cmask, 20);
	assert_string_equal(ev.spec, "r140014a3");
	assert_int_equal(line("C2.01.CMSK=0x10.EDG.INV X"), 1);
	assert_true(ev.edge && ev.inv);
	assert_string_equal(ev.spec, "r108401c2");
	/* AnyT is bit 21 of the spec. */
	assert_int_equal(line("0D.03.CMSK=1.AnyT INT_MISC.RECOVERY_CYCLES_ANY"), 1);
	assert_true(ev.any);
	assert_string_equal(ev.spec, "r120030d");
	/* AMD's 12-bit event select: bits 11:8 at 35:32. */
	assert_int_equal(line("1A0.01 AMD_EVENT"), 1);
	assert_string_equal(ev.spec, "r1000001a0");
	/* No name: the fields name it; a name may hold spaces. */
	assert_int_equal(line("  C0.00  "), 1);
	assert_string_equal(ev.name, "C0.00");
	assert_int_equal(line("C0.00\tinstructions, all of them \r\n"), 1);
	assert_string_equal(ev.name, "instructions, all of them");
	assert_int_equal(line("# a comment"), 0);
	assert_int_equal(line("   \n"), 0);
	assert_int_equal(line(""), 0);
}

static void event_structured(void **state)
{
	(void)state;
	assert_int_equal(line("A4.04.CTR=0 TOPDOWN.BAD_SPEC_SLOTS"), 1);
	assert_int_equal(ev.ctr, 0);
	assert_int_equal(line("00.06.CTR=37 TOPDOWN_FE_BOUND.ALL"), 1);
	assert_int_equal(ev.ctr, BENCH_CTR_FIXED_BASE + 5);
	assert_int_equal(line("C6.01.TakenAlone FRONTEND_RETIRED.DSB_MISS"), 1);
	assert_true(ev.taken_alone);
	/* The MSR fields in line order, each with its MSR. */
	assert_int_equal(line("CD.01.MSR_3F6H=0x10.CTR=1.TakenAlone LOAD_LATENCY_GT_16"), 1);
	assert_int_equal(ev.ctr, 1);
	assert_int_equal(ev.nmsr, 1);
	assert_int_equal(ev.msr[0].msr, BENCH_MSR_PEBS_LD_LAT);
	assert_int_equal(ev.msr[0].value, 0x10);
	assert_int_equal(line("B7.01.MSR_RSP1=0x3F84400001.MSR_PF=0x11.MSR_RSP0=65538 OCR"), 1);
	assert_int_equal(ev.nmsr, 3);
	assert_int_equal(ev.msr[0].msr, BENCH_MSR_OFFCORE_RSP1);
	assert_int_equal(ev.msr[0].value, 0x3F84400001ull);
	assert_int_equal(ev.msr[1].msr, BENCH_MSR_PEBS_FRONTEND);
	assert_int_equal(ev.msr[1].value, 0x11);
	assert_int_equal(ev.msr[2].msr, BENCH_MSR_OFFCORE_RSP0);
	assert_int_equal(ev.msr[2].value, 0x10002);
}

static void event_refused(void **state)
{
	(void)state;
	static const struct { const char *line, *why; } bad[] = {
		{ "C2G.01 X", "event select 'C2G' is not 1 to 3 hex digits" },
		{ "1C2C.01 X", "event select '1C2C' is not 1 to 3 hex digits" },
		{ "C2 X", "'C2' has no unit mask" },
		{ "C2.1G X", "unit mask '1G' is not 1 or 2 hex digits" },
		{ "C2.101 X", "unit mask '101' is not 1 or 2 hex digits" },
		{ "C2.01.CMSK=256 X", "'CMSK=256': the counter mask is 0 to 255" },
		{ "C2.01.CMSK= X", "'CMSK=': the counter mask is 0 to 255" },
		{ "C2.01.CMSK=1.CMSK=2 X", "'CMSK=' given twice" },
		{ "C2.01.CTR=64 X", "'CTR=64': the counter is 0 to 63" },
		{ "C2.01.CTR=1.CTR=2 X", "'CTR=' given twice" },
		{ "C2.01.EDG.EDG X", "'EDG' given twice" },
		{ "C2.01.MSR_RSP0=1.MSR_RSP0=2 X", "'MSR_RSP0=' given twice" },
		{ "C2.01.MSR_PF=zz X", "'MSR_PF=zz': the value is a 64-bit number" },
		{ "C2.01.MSR_3F6H=0x10000000000000000 X", "the value is a 64-bit number" },
		{ "C2.01.Any X", "unknown field 'Any'" },
		{ "C2.01.MSR_FOO=1 X", "unknown field 'MSR_FOO=1'" },
		{ "C2..01 X", "has an empty field" },
		{ "C2.01. X", "has an empty field" },
		{ ".C2.01 X", "has an empty field" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(line(bad[i].line), -1);
		if (!strstr(why, bad[i].why))
			fail_msg("'%s': '%s', not '%s'", bad[i].line, why, bad[i].why);
	}
	char longline[600];
	memset(longline, 'A', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = 0;
	assert_int_equal(line(longline), -1);
	assert_non_null(strstr(why, "longer than"));
}

static void msr_fields_and_refusals(void **state)
{
	(void)state;
	assert_int_equal(msr_line("msr_0xE01=0x20000000.msr_700=0x408F34 msr_706 LLC_LOOKUP_CBO_0\n"), 1);
	assert_int_equal(m.nwrite, 2);
	assert_int_equal(m.write[0].msr, 0xe01);
	assert_int_equal(m.write[0].value, 0x20000000);
	assert_int_equal(m.write[1].msr, 0x700);
	assert_int_equal(m.write[1].value, 0x408f34);
	assert_int_equal(m.rdmsr, 0x706);
	assert_string_equal(m.name, "LLC_LOOKUP_CBO_0");
	/* Only a read; MSR numbers are hex, a trailing h allowed. */
	assert_int_equal(msr_line("msr_611 MSR_PKG_ENERGY_STATUS"), 1);
	assert_int_equal(m.nwrite, 0);
	assert_int_equal(m.rdmsr, 0x611);
	assert_int_equal(msr_line("MSR_639H"), 1);
	assert_int_equal(m.rdmsr, 0x639);
	assert_string_equal(m.name, "MSR_639H");
	assert_int_equal(msr_line("msr_700=5 msr_706"), 1);
	assert_int_equal(m.write[0].value, 5);
	assert_string_equal(m.name, "msr_706");
	assert_int_equal(msr_line("# RAPL"), 0);

	static const struct { const char *line, *why; } bad[] = {
		{ "msr_700=1", "no MSR to read after the writes" },
		{ "msr_700=1 706 X", "'706' is not msr_ and a hex MSR number to read" },
		{ "611 X", "'611' is not msr_ and a hex MSR number to read" },
		{ "msr_xyz=1 msr_706 X", "'msr_xyz' is not msr_ and a hex MSR number" },
		{ "msr_700=0x1.msr_701 msr_706 X", "'msr_701' is not msr_X=V" },
		{ "msr_700=q msr_706 X", "'msr_700=q': the value is a 64-bit number" },
		{ "msr_700=1..msr_701=2 msr_706 X", "has an empty field" },
		{ "msr_100000000=1 msr_706 X", "'msr_100000000' is not msr_" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(msr_line(bad[i].line), -1);
		if (!strstr(why, bad[i].why))
			fail_msg("'%s': '%s', not '%s'", bad[i].line, why, bad[i].why);
	}
	char many[512] = "";
	for (int i = 0; i <= BENCH_MSR_WRITES; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%smsr_%x=%d",
			 i ? "." : "", 0x700 + i, i);
	strcat(many, " msr_706 X");
	assert_int_equal(msr_line(many), -1);
	assert_non_null(strstr(why, "more than 16 MSR writes"));
}

/* A bad line is refused alone; a file with no good line fails. */
static void files(void **state)
{
	(void)state;
	struct bench_config c = { 0 };
	const char *p = tmpdir_path("mixed.cfg");

	write_file(p, "# events\nC2.01 A\nC2.1G BAD\n\nC0.00.CTR=1 B\n");
	assert_int_equal(bench_config_read(p, false, &c), 0);
	assert_int_equal(c.nev, 2);
	assert_int_equal(c.nrefused, 1);
	assert_int_equal(c.ev[0].line, 2);
	assert_int_equal(c.ev[1].line, 5);
	assert_string_equal(c.ev[1].name, "B");
	bench_config_free(&c);

	write_file(p, "C2.1G BAD\nZZ.01 WORSE\n");
	assert_int_equal(bench_config_read(p, false, &c), -1);
	assert_int_equal(c.nrefused, 2);
	bench_config_free(&c);
	write_file(p, "# nothing\n");
	assert_int_equal(bench_config_read(p, false, &c), -1);
	assert_int_equal(bench_config_read(tmpdir_path("absent.cfg"), false, &c), -1);

	write_file(p, "msr_611 PKG\nmsr_639 PP0\n");
	assert_int_equal(bench_config_read(p, true, &c), 0);
	assert_int_equal(c.nmsr, 2);
	assert_int_equal(c.msr[1].rdmsr, 0x639);
	bench_config_free(&c);

}

/* The run's events: -config's fields and -msr_config's lines kept with
 * each, in the order given. */
static void run_events(void **state)
{
	(void)state;
	struct bench_events l = { 0 };
	const char *p = tmpdir_path("run.cfg"), *q = tmpdir_path("run_msr.cfg");
	int refused = 0;

	bench_events_insert(&l, 0, "tsc", "", "-e");
	write_file(p, "C2.01 A\nC2.1G BAD\nC2.01.TakenAlone.CTR=2 B\n"
		   "B7.01.MSR_RSP0=0x10001.MSR_3F6H=4 C\n");
	write_file(q, "msr_10 TSC\nmsr_E01=0x20000000.msr_700=0x408F34 msr_706 LLC\n");
	assert_int_equal(bench_events_load(&l, p, false, &refused), 0);
	assert_int_equal(bench_events_load(&l, q, true, &refused), 0);
	assert_int_equal(refused, 1);
	assert_int_equal(l.n, 6);
	assert_string_equal(l.ev[0].spec, "tsc");
	assert_string_equal(l.ev[1].label, "A");
	assert_true(!strncmp(l.ev[1].origin, "-config ", 8));
	assert_non_null(strstr(l.ev[2].origin, "run.cfg:3"));
	assert_true(l.ev[2].alone);
	assert_int_equal(l.ev[2].ctr, 2);
	assert_int_equal(l.ev[3].nmsr, 2);
	assert_int_equal(l.ev[3].msr[1].msr, 0x3f6);
	assert_string_equal(l.ev[4].spec, "msr:0x10");
	assert_true(l.ev[4].rdmsr);
	assert_string_equal(l.ev[5].spec, "msr:0x706");
	assert_string_equal(l.ev[5].label, "LLC");
	assert_int_equal(l.ev[5].nmsr, 2);
	assert_int_equal(l.ev[5].msr[0].msr, 0xe01);
	assert_int_equal(l.ev[5].msr[1].value, 0x408f34);
	/* a file that fails adds nothing */
	write_file(p, "C2.1G BAD\n");
	assert_int_equal(bench_events_load(&l, p, false, &refused), -1);
	assert_int_equal(l.n, 6);
	bench_events_free(&l);
}

static struct bench_run_event *add(struct bench_events *l, const char *spec)
{
	return bench_events_insert(l, l->n, spec, spec, "-e");
}

/* Runs as nanoBench forms them, in the order given: 4 to a run, a
 * TakenAlone event alone, no counter twice, no MSR with two values. */
static void runs(void **state)
{
	(void)state;
	struct bench_events l = { 0 };

	assert_int_equal(bench_events_runs(&l, 4), 1);	/* the kernel's defaults */
	for (int i = 0; i < 9; i++)
		add(&l, "r1c2");
	assert_int_equal(bench_events_runs(&l, 4), 3);
	assert_int_equal(l.ev[3].run, 0);
	assert_int_equal(l.ev[4].run, 1);
	assert_int_equal(l.ev[8].run, 2);
	assert_int_equal(bench_events_first(&l, 2), 8);
	assert_int_equal(bench_events_first(&l, 3), 9);
	bench_events_free(&l);

	add(&l, "A");
	add(&l, "B")->alone = true;
	add(&l, "C");
	add(&l, "D")->ctr = 1;
	add(&l, "E")->ctr = 1;			/* the same counter: the next run */
	add(&l, "F")->ctr = 2;
	struct bench_run_event *e = add(&l, "G");
	e->nmsr = 1;
	e->msr[0] = (struct bench_msr_write){ 0x1a6, 1 };
	e = add(&l, "H");
	e->nmsr = 1;
	e->msr[0] = (struct bench_msr_write){ 0x1a6, 1 };	/* the same value: shares */
	e = add(&l, "I");
	e->nmsr = 1;
	e->msr[0] = (struct bench_msr_write){ 0x1a6, 2 };	/* another: the next run */
	assert_int_equal(bench_events_runs(&l, 4), 5);
	static const int want[] = { 0, 1, 2, 2, 3, 3, 3, 3, 4 };
	for (int i = 0; i < l.n; i++)
		assert_int_equal(l.ev[i].run, want[i]);
	/* insert at the front (-fixed_counters): the order kept */
	bench_events_insert(&l, 0, "instructions", "Instructions retired", "-fixed_counters");
	assert_string_equal(l.ev[1].spec, "A");
	assert_string_equal(l.ev[0].label, "Instructions retired");
	assert_int_equal(l.ev[0].ctr, -1);
	bench_events_free(&l);
}

/* Walk the RUN_CODE parameters at buf[0, len): each {type, len, value}. */
static int params(const uint8_t *buf, size_t len, uint16_t *type, const uint8_t **val,
		  uint16_t *vlen, int max)
{
	int n = 0;

	for (size_t at = 0; at < len && n < max; n++) {
		struct wire_ctl_msg t;
		memcpy(&t, buf + at, sizeof(t));
		type[n] = t.type;
		vlen[n] = t.len;
		val[n] = buf + at + sizeof(t);
		at += sizeof(t) + t.len;
		assert_true(at <= len);
	}
	return n;
}

/* A run's events as the request carries them: EVENT, then its EVENT_CTR
 * and EVENT_MSRs. */
static void request(void **state)
{
	(void)state;
	struct bench_events l = { 0 };
	uint8_t buf[512];
	uint16_t type[16], vlen[16];
	const uint8_t *val[16];

	add(&l, "r1c2");
	struct bench_run_event *e = add(&l, "r1b7");
	e->ctr = BENCH_CTR_FIXED_BASE + 1;
	e->nmsr = 2;
	e->msr[0] = (struct bench_msr_write){ 0x1a6, 0x10001 };
	e->msr[1] = (struct bench_msr_write){ 0x3f6, 4 };
	add(&l, "msr:0x10")->alone = true;
	bench_events_runs(&l, 4);
	size_t len = bench_events_put(&l, 0, buf, 0, sizeof(buf));
	int n = params(buf, len, type, val, vlen, 16);
	assert_int_equal(n, 5);
	assert_int_equal(type[0], WIRE_CODE_EVENT);
	assert_int_equal(vlen[0], 4);
	assert_memory_equal(val[0], "r1c2", 4);
	assert_int_equal(type[1], WIRE_CODE_EVENT);
	assert_int_equal(type[2], WIRE_CODE_EVENT_CTR);
	uint64_t ctr;
	assert_int_equal(vlen[2], 8);
	memcpy(&ctr, val[2], 8);
	assert_int_equal(ctr, WIRE_CODE_CTR_FIXED + 1);
	struct wire_code_msr m;
	assert_int_equal(type[3], WIRE_CODE_EVENT_MSR);
	assert_int_equal(vlen[3], sizeof(m));
	memcpy(&m, val[3], sizeof(m));
	assert_int_equal(m.msr, 0x1a6);
	assert_int_equal(m.reserved, 0);
	assert_int_equal(m.value, 0x10001);
	memcpy(&m, val[4], sizeof(m));
	assert_int_equal(m.msr, 0x3f6);
	/* run 1: the msr: event alone */
	len = bench_events_put(&l, 1, buf, 0, sizeof(buf));
	assert_int_equal(params(buf, len, type, val, vlen, 16), 1);
	assert_memory_equal(val[0], "msr:0x10", 8);
	/* too little room: cap + 1 */
	assert_int_equal(bench_events_put(&l, 0, buf, 0, 20), 21);
	bench_events_free(&l);
}

/* No limit on a file's events: 200 of them. */
static void many_events(void **state)
{
	(void)state;
	struct bench_config c = { 0 };
	const char *p = tmpdir_path("many.cfg");
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	for (int i = 0; i < 200; i++)
		fprintf(f, "%X.%02X.CMSK=%d EVENT_%d\n", 0x100 + i, i & 0xff, i % 4, i);
	fclose(f);
	assert_int_equal(bench_config_read(p, false, &c), 0);
	assert_int_equal(c.nev, 200);
	assert_int_equal(c.nrefused, 0);
	assert_int_equal(c.ev[199].evtsel, 0x100 + 199);
	assert_string_equal(c.ev[199].name, "EVENT_199");
	bench_config_free(&c);
}

static int setup(void **state)
{
	(void)state;
	return tmpdir_make("test_bench_config");
}

static int teardown(void **state)
{
	(void)state;
	free(ev.name);
	free(m.name);
	return tmpdir_remove();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(event_fields),
		cmocka_unit_test(event_structured),
		cmocka_unit_test(event_refused),
		cmocka_unit_test(msr_fields_and_refusals),
		cmocka_unit_test(files),
		cmocka_unit_test(many_events),
		cmocka_unit_test(run_events),
		cmocka_unit_test(runs),
		cmocka_unit_test(request),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

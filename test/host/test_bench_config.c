/*
 * test_bench_config — nanoBench's event files as `bareperf bench` reads
 * them (tools/util/bench_config.c): every field of a -config line and of a
 * -msr_config line, each kind of refused line with its reason, a file
 * whose bad line is refused alone, and files of any length.
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
	assert_true(bench_event_sendable(&ev, why, sizeof(why)));
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
	assert_true(bench_event_sendable(&ev, why, sizeof(why)));
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
	assert_false(bench_event_sendable(&ev, why, sizeof(why)));
	assert_non_null(strstr(why, "CTR=0"));
	assert_int_equal(line("00.06.CTR=37 TOPDOWN_FE_BOUND.ALL"), 1);
	assert_int_equal(ev.ctr, BENCH_CTR_FIXED_BASE + 5);
	assert_int_equal(line("C6.01.TakenAlone FRONTEND_RETIRED.DSB_MISS"), 1);
	assert_true(ev.taken_alone);
	assert_false(bench_event_sendable(&ev, why, sizeof(why)));
	assert_non_null(strstr(why, "TakenAlone"));
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
	assert_false(bench_event_sendable(&ev, why, sizeof(why)));
	assert_non_null(strstr(why, "MSR 0x1a7"));
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

	/* The run's view: the lines it cannot send yet are skipped. */
	char events[4][32], labels[4][64];
	int n = 0;
	write_file(p, "C2.01 A\nC2.01.TakenAlone B\nC0.00.AnyT C\n");
	assert_int_equal(bench_config_load(p, events, labels, &n, 4), 0);
	assert_int_equal(n, 2);
	assert_string_equal(events[1], "r2000c0");
	assert_string_equal(labels[1], "C");
	n = 0;
	write_file(p, "C2.01.CTR=0 A\n");
	assert_int_equal(bench_config_load(p, events, labels, &n, 4), -1);
	n = 3;
	write_file(p, "C2.01 A\nC2.02 B\n");
	assert_int_equal(bench_config_load(p, events, labels, &n, 4), -1);
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
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

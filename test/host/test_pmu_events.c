/*
 * test_pmu_events — the event-spec parser and the built-in event table:
 * names and aliases per vendor and family, r<hex>, cpu/field=../ with
 * cmask/inv/edge/any, period/freq/pinned terms, and a clear error (with the
 * closest names) for every kind of bad spec.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "pmu/pmu.h"
#include "test/host/pmu_model.h"

static struct pmu_model M;
static struct pmu_caps caps;
static struct pmu_event_attr a;
static char err[256];

static void use(enum model_flavour f, u32 family, u32 model)
{
	struct model_cfg cfg = *model_preset(f);
	if (family) {
		cfg.family = family;
		cfg.model = model;
	}
	model_init(&M, &cfg);
	assert_int_equal(pmu_probe(&caps), 0);
}

static int parse(const char *spec)
{
	err[0] = 0;
	return pmu_event_parse(spec, &caps, &a, err, sizeof(err));
}

static void intel_generic(void **state)
{
	(void)state;
	use(MODEL_INTEL_V5, 0, 0);
	static const struct { const char *name; u64 config; int fixed; } want[] = {
		{ "cycles", 0x003c, 1 }, { "cpu-cycles", 0x003c, 1 }, { "instructions", 0x00c0, 0 },
		{ "bus-cycles", 0x013c, -1 }, { "branches", 0x00c4, -1 },
		{ "branch-instructions", 0x00c4, -1 }, { "branch-misses", 0x00c5, -1 },
		{ "cache-references", 0x4f2e, -1 }, { "cache-misses", 0x412e, -1 },
		{ "topdown-slots", 0x01a4, 3 }, { "slots", 0x01a4, 3 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		assert_int_equal(parse(want[i].name), 0);
		assert_int_equal(a.config, want[i].config);
		assert_int_equal(a.fixed, want[i].fixed);
		assert_int_equal(a.flags, 0);
		assert_int_not_equal(a.generic, PMU_EV_RAW);
	}
	assert_int_equal(parse("cpu-cycles"), 0);
	assert_string_equal(a.name, "cycles");		/* canonical name */
	use(MODEL_INTEL_V2, 0, 0);
	assert_int_equal(parse("ref-cycles"), 0);
	assert_int_equal(a.fixed, 2);
	assert_true(a.flags & PMU_ATTR_FIXED_ONLY);
	assert_int_equal(parse("stalled-cycles-frontend"), -E_NODEV);
	assert_non_null(strstr(err, "no Intel encoding"));
}

static void amd_generic(void **state)
{
	(void)state;
	static const struct { u32 fam, model; const char *name; u64 config; } want[] = {
		{ 0x10, 2, "cycles", 0x76 }, { 0x10, 2, "instructions", 0xc0 },
		{ 0x10, 2, "branches", 0xc2 }, { 0x10, 2, "branch-misses", 0xc3 },
		{ 0x10, 2, "cache-references", 0x077d }, { 0x10, 2, "cache-misses", 0x077e },
		{ 0x15, 2, "stalled-cycles-frontend", 0xd0 }, { 0x15, 2, "stalled-cycles-backend", 0xd1 },
		{ 0x17, 1, "cache-references", 0xff60 }, { 0x17, 1, "cache-misses", 0x0964 },
		{ 0x17, 1, "stalled-cycles-frontend", 0x0287 }, { 0x17, 1, "stalled-cycles-backend", 0x0187 },
		{ 0x17, 0x31, "stalled-cycles-frontend", 0x00a9 }, { 0x19, 0x61, "idle-cycles-frontend", 0x00a9 },
		{ 0x19, 0x61, "cycles", 0x76 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		use(MODEL_AMD_V2, want[i].fam, want[i].model);
		assert_int_equal(parse(want[i].name), 0);
		assert_int_equal(a.config, want[i].config);
		assert_int_equal(a.fixed, -1);
	}
	use(MODEL_AMD_V2, 0x19, 0x61);
	assert_int_equal(parse("stalled-cycles-backend"), -E_NODEV);
	assert_int_equal(parse("ref-cycles"), -E_NODEV);
	assert_non_null(strstr(err, "no AMD encoding"));
	assert_int_equal(parse("topdown-slots"), -E_NODEV);
}

static void raw_fields(void **state)
{
	(void)state;
	use(MODEL_INTEL_V4, 0, 0);
	assert_int_equal(parse("r01c2"), 0);
	assert_int_equal(a.config, 0x01c2);
	assert_int_equal(a.generic, PMU_EV_RAW);
	/* INST_RETIRED.ANY_P:c=2:i, as libpfm4 encodes it: 0x2d300c0 less
	 * its EN/INT/OS/USR bits (0x530000) = 0x28000c0 | inv (bit 23). */
	assert_int_equal(parse("cpu/event=0xc0,umask=0x00,cmask=2,inv/"), 0);
	assert_int_equal(a.config, 0x28000c0);
	assert_int_equal(parse("r28000c0"), 0);
	assert_int_equal(a.config, 0x28000c0);
	assert_int_equal(parse("cpu/event=0xc5,umask=0x1,edge/"), 0);
	assert_int_equal(a.config, 0x401c5);
	assert_int_equal(parse("cpu/event=0x3c,cmask=1,inv,edge/"), 0);
	assert_int_equal(a.config, 0x184003c);
	/* Exact fixed-counter encodings may use the fixed counter. */
	assert_int_equal(parse("r00c0"), 0);
	assert_int_equal(a.fixed, 0);
	assert_int_equal(parse("cpu/event=0xc0,cmask=1/"), 0);
	assert_int_equal(a.fixed, -1);
	/* AMD: EventSelect[11:8] goes to bits 35:32. */
	use(MODEL_AMD_V2, 0, 0);
	assert_int_equal(parse("cpu/event=0x1a0,umask=0x1/"), 0);
	assert_int_equal(a.config, 0x1000001a0ull);
	assert_int_equal(parse("r1000001a0"), 0);
	assert_int_equal(a.config, 0x1000001a0ull);
}

/* AnyThread (bit 21, nanoBench's AnyT): Intel v3 and later, until
 * CPUID.0AH:EDX[15] deprecates it; never AMD, never a named event. */
static void any_thread(void **state)
{
	(void)state;
	use(MODEL_INTEL_V4, 0, 0);
	assert_int_equal(parse("r20003c"), 0);
	assert_int_equal(a.config, 0x20003c);
	assert_int_equal(a.fixed, -1);		/* not fixed counter 1's exact encoding */
	assert_int_equal(parse("cpu/event=0x0d,umask=0x03,cmask=1,any/"), 0);
	assert_int_equal(a.config, 0x120030d);
	assert_int_equal(parse("cycles/any/"), -E_INVAL);
	assert_non_null(strstr(err, "named event"));
	assert_int_equal(parse("cpu/event=0x3c,any=1/"), -E_INVAL);
	caps.anythread_deprecated = true;
	assert_int_equal(parse("r20003c"), -E_NODEV);
	assert_non_null(strstr(err, "AnyThread"));
	assert_non_null(strstr(err, "deprecated"));
	use(MODEL_INTEL_V2, 0, 0);
	assert_int_equal(parse("cpu/event=0x3c,any/"), -E_NODEV);
	assert_non_null(strstr(err, "perfmon v2"));
	use(MODEL_AMD_V2, 0, 0);
	assert_int_equal(parse("r200076"), -E_INVAL);
	assert_non_null(strstr(err, "0x200000"));
}

static void terms(void **state)
{
	(void)state;
	use(MODEL_INTEL_V2, 0, 0);
	assert_int_equal(parse("cycles/period=100000/"), 0);
	assert_int_equal(a.period, 100000);
	assert_true(a.flags & PMU_ATTR_SAMPLE);
	assert_int_equal(parse("instructions/freq=4000,pinned/"), 0);
	assert_int_equal(a.freq, 4000);
	assert_true(a.flags & PMU_ATTR_FREQ);
	assert_true(a.flags & PMU_ATTR_PINNED);
	assert_int_equal(parse("r01c2/period=0x1000/"), 0);
	assert_int_equal(a.period, 0x1000);
	assert_int_equal(a.config, 0x01c2);
	assert_int_equal(parse("cpu/event=0xc0,period=10/"), 0);
	assert_string_equal(a.name, "cpu/event=0xc0,period=10/");
}

static void errors(void **state)
{
	(void)state;
	use(MODEL_INTEL_V2, 0, 0);
	assert_int_equal(parse("cyles"), -E_NOENT);
	assert_string_equal(err, "unknown event 'cyles'; did you mean 'cycles'?");
	assert_int_equal(parse("branch-miss"), -E_NOENT);
	assert_non_null(strstr(err, "'branch-misses'"));
	assert_int_equal(parse("instructons/period=5/"), -E_NOENT);
	assert_non_null(strstr(err, "did you mean 'instructions'"));
	assert_int_equal(parse("cache"), -E_NOENT);
	assert_non_null(strstr(err, "'cache-misses'"));
	assert_non_null(strstr(err, "'cache-references'"));
	assert_int_equal(parse("zzzzzzzzzzzz"), -E_NOENT);
	assert_string_equal(err, "unknown event 'zzzzzzzzzzzz'");
	assert_int_equal(parse(""), -E_INVAL);
	assert_int_equal(parse(NULL), -E_INVAL);
	assert_int_equal(parse("cycles/period=0/"), -E_INVAL);
	assert_non_null(strstr(err, "period must be > 0"));
	assert_int_equal(parse("cycles/freq=0/"), -E_INVAL);
	assert_int_equal(parse("cycles/period=10,freq=10/"), -E_INVAL);
	assert_int_equal(parse("cycles/period=10"), -E_INVAL);
	assert_non_null(strstr(err, "between two slashes"));
	assert_int_equal(parse("cycles/perod=10/"), -E_INVAL);
	assert_non_null(strstr(err, "did you mean 'period'"));
	assert_int_equal(parse("cycles/cmask=2/"), -E_INVAL);
	assert_non_null(strstr(err, "named event"));
	assert_int_equal(parse("cpu/umask=1/"), -E_INVAL);
	assert_non_null(strstr(err, "names no event"));
	assert_int_equal(parse("cpu"), -E_INVAL);
	assert_int_equal(parse("cpu/event=0xc0,cmask=256/"), -E_INVAL);
	assert_int_equal(parse("cpu/event=0xc0,inv=1/"), -E_INVAL);
	assert_int_equal(parse("cpu/event=0xc0,period=x/"), -E_INVAL);
	assert_int_equal(parse("cpu/event=0xc0,,edge/"), -E_INVAL);
	assert_int_equal(parse("cpu/event=0xc0,/"), -E_INVAL);
	/* Bits we own (EN 22, INT 20, OS 17, USR 16) or Intel's reserved ones. */
	assert_int_equal(parse("r4000c0"), -E_INVAL);
	assert_non_null(strstr(err, "0x400000"));
	assert_int_equal(parse("r1000000c0"), -E_INVAL);	/* AMD-only event[11:8] */
	assert_int_equal(parse("rxyz"), -E_NOENT);		/* not hex: a name */
}

static void names_listed(void **state)
{
	(void)state;
	const char *desc;
	int n = 0;

	while (pmu_event_name(n, &desc)) {
		assert_non_null(desc);
		n++;
	}
	assert_int_equal(n, PMU_EV_COUNT);
	assert_null(pmu_event_name(-1, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(intel_generic),
		cmocka_unit_test(amd_generic),
		cmocka_unit_test(raw_fields),
		cmocka_unit_test(any_thread),
		cmocka_unit_test(terms),
		cmocka_unit_test(errors),
		cmocka_unit_test(names_listed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

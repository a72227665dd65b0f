/*
 * test_tsc_refine — the verdict on a TSC rate from CPUID against the rate
 * measured over a window (kernel/platform/tsc_refine.c), on a table of
 * windows: a crystal 0.4% slow (a 24 MHz crystal CPUID states that runs at
 * 23.913 MHz), a hypervisor's exact kHz, disagreements on either side of
 * the threshold, windows too short or too noisy to tell, a reference whose
 * stated rate is wrong, and a long window on a fast reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "kernel/platform/tsc_refine.h"

#define HPET_ICH	14318180ul	/* the PC's HPET: 3x the NTSC colour burst */
#define HPET_100M	100000000ul

struct row {
	const char *what;
	u64 cpuid_hz;			/* what CPUID said */
	u64 true_hz;			/* what the TSC does */
	u64 ref_hz;			/* the reference's stated rate */
	u64 ref_true_hz;		/* and its true one */
	u64 window_us;
	u64 bracket;			/* TSC ticks, both ends */
	enum tsc_refine_verdict want;
	s64 want_ppm;			/* within the window's error */
};

static const struct row rows[] = {
	{ "24 MHz crystal that runs at 23.913 MHz, 1 s", 2400000000ul, 2391300000ul,
	  HPET_ICH, HPET_ICH, 1000000, 2000, TSC_REFINE_ADOPT, -3625 },
	{ "the same over the boot's 30 ms", 2400000000ul, 2391300000ul,
	  HPET_ICH, HPET_ICH, 30000, 2000, TSC_REFINE_ADOPT, -3625 },
	{ "the same over 1 ms: the window cannot tell", 2400000000ul, 2391300000ul,
	  HPET_ICH, HPET_ICH, 1000, 2000, TSC_REFINE_SHORT, -3625 },
	{ "a preempted vCPU stretched a bracket: 4000 ppm of error", 2400000000ul, 2391300000ul,
	  HPET_ICH, HPET_ICH, 100000, 960000, TSC_REFINE_SHORT, -3625 },
	{ "a hypervisor's exact kHz", 2893202000ul, 2893202000ul,
	  HPET_100M, HPET_100M, 200000, 600, TSC_REFINE_AGREE, 0 },
	{ "500 ppm fast: within the threshold", 3000000000ul, 3001500000ul,
	  HPET_ICH, HPET_ICH, 1000000, 3000, TSC_REFINE_AGREE, 500 },
	{ "1500 ppm fast: past it", 3000000000ul, 3004500000ul,
	  HPET_ICH, HPET_ICH, 1000000, 3000, TSC_REFINE_ADOPT, 1500 },
	{ "15H says 2 GHz, the TSC runs at 2.5 GHz (a guest's scaled TSC)", 2000000000ul,
	  2500000000ul, HPET_100M, HPET_100M, 50000, 5000, TSC_REFINE_ADOPT, 250000 },
	{ "an HPET whose period field says twice its rate", 2400000000ul, 2400000000ul,
	  2 * HPET_ICH, HPET_ICH, 1000000, 2000, TSC_REFINE_ODD, 1000000 },
	{ "100 s of a 100 MHz HPET, 5 GHz TSC: no overflow", 5000000000ul, 4990000000ul,
	  HPET_100M, HPET_100M, 100000000, 2000, TSC_REFINE_ADOPT, -2000 },
};

static void table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];
		struct tsc_refine_in in = {
			.cpuid_hz = r->cpuid_hz,
			.tsc_ticks = r->true_hz / 1000 * r->window_us / 1000,
			.ref_ticks = r->ref_true_hz * r->window_us / 1000000,
			.ref_hz = r->ref_hz,
			.bracket_ticks = r->bracket,
		};
		struct tsc_refine_out out;
		enum tsc_refine_verdict v = tsc_refine_decide(&in, &out);

		print_message("%-62s %-9ld ppm +-%-5lu %s\n", r->what, (long)out.ppm,
			      (unsigned long)out.error_ppm, tsc_refine_verdict_name(v));
		assert_int_equal(v, r->want);
		s64 e = (s64)out.error_ppm + 1;
		assert_true(out.ppm >= r->want_ppm - e && out.ppm <= r->want_ppm + e);
		/* The measured rate is the true one, to the reference's tick. */
		u64 diff = out.measured_hz > r->true_hz * r->ref_hz / r->ref_true_hz ?
			   out.measured_hz - r->true_hz * r->ref_hz / r->ref_true_hz :
			   r->true_hz * r->ref_hz / r->ref_true_hz - out.measured_hz;
		assert_true(diff <= r->true_hz / (in.ref_ticks / 2));
	}
}

static void nothing_to_measure(void **state)
{
	struct tsc_refine_in in = { .cpuid_hz = 2400000000ul, .tsc_ticks = 1000000,
				    .ref_ticks = 0, .ref_hz = HPET_ICH };
	struct tsc_refine_out out;

	(void)state;
	assert_int_equal(tsc_refine_decide(&in, &out), TSC_REFINE_NONE);
	assert_int_equal(out.measured_hz, 0);
	in.ref_ticks = 100, in.cpuid_hz = 0;
	assert_int_equal(tsc_refine_decide(&in, &out), TSC_REFINE_NONE);
	in.cpuid_hz = 1, in.tsc_ticks = 0;
	assert_int_equal(tsc_refine_decide(&in, &out), TSC_REFINE_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),
		cmocka_unit_test(nothing_to_measure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_hotspot — an app whose profile has a known shape, for bareperf's
 * end-to-end test (test/e2e/e2e_bareperf.py): 3/4 of its instructions in
 * hot_leaf(), reached through hot_mid(), and 1/4 in warm_leaf(). The two
 * leaves run the same loop (the asm keeps the compiler from reshaping
 * either, and the different constant keeps identical-code folding from
 * merging them), so under QEMU -icount, where the TSC counts retired
 * instructions and the soft PMU samples every 250000 of them, their
 * sample shares are 75% and 25% to within a sample or two.
 *
 * Arguments: [scale=N] multiplies the work (default 1: ~100M instructions).
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "test/guest/report.h"

#define HOT_ITERS	18000000ul	/* 4 instructions each: ~72M */
#define WARM_ITERS	6000000ul	/* ~24M */

/*
 * GCC gives a leaf that touches no stack no frame even with
 * -mno-omit-leaf-frame-pointer; a sample there would then skip its
 * caller in the frame-pointer chain. The volatile slot gives each leaf a
 * frame, so the chain the e2e test checks is complete.
 */
static u64 __attribute__((noinline)) hot_leaf(u64 n)
{
	volatile u64 slot = 1;
	u64 x = slot;

	for (u64 i = 0; i < n; i++)
		asm volatile("add %1, %0; rol $3, %0" : "+r"(x) : "r"(i));
	slot = x;
	return slot;
}

static u64 __attribute__((noinline)) warm_leaf(u64 n)
{
	volatile u64 slot = 2;
	u64 x = slot;

	for (u64 i = 0; i < n; i++)
		asm volatile("add %1, %0; rol $5, %0" : "+r"(x) : "r"(i));
	slot = x;
	return slot;
}

/* A frame between main and the hot leaf, for the call-graph test. */
static u64 __attribute__((noinline)) hot_mid(u64 n)
{
	u64 x = hot_leaf(n);

	asm volatile("" : "+r"(x));
	return x;
}

static int test_hotspot_main(int argc, char **argv)
{
	const char *s = test_arg(argc, argv, "scale");
	u64 scale = 1, x = 0;

	if (s && (parse_u64(s, &scale) || !scale || scale > 100)) {
		kprintf("test_hotspot: scale=%s is not 1..100\n", s);
		return EXIT_USAGE;
	}
	/* Interleaved in slices, so the shares hold in any stretch of the run. */
	for (int slice = 0; slice < 8; slice++) {
		x += hot_mid(HOT_ITERS * scale / 8);
		x += warm_leaf(WARM_ITERS * scale / 8);
	}
	kprintf("test_hotspot: done (%lx)\n", (unsigned long)x);
	return EXIT_OK;
}

APP(test_hotspot, "bareperf e2e: 75% hot_leaf (via hot_mid), 25% warm_leaf",
    test_hotspot_main, APP_TEST);

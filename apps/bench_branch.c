/*
 * bench_branch — branch prediction: one conditional branch per copy of the
 * body, its direction read from a pattern of bytes. Predictable patterns
 * (always taken, alternating) against random ones repeated with a period
 * of L, for L from 2 up: a predictor learns a short period and the cost
 * stays low; once L outgrows its history the branch is a coin toss and
 * each miss costs a pipeline flush. Both directions execute the same
 * number of instructions (7), so under QEMU TCG, where time is
 * instructions, every pattern costs the same: that is the "no PMU, cycles
 * are not real" case made visible. With a PMU, the default events are
 * cycles and branch-misses.
 *
 * Args (after --): pattern=MAX (the longest period, a power of two) and
 * the harness's options.
 */
#include "apps/bench.h"

#define BRANCH_N	32

struct pattern {
	u8 *bytes;			/* 0: taken, 1: not taken */
	u64 mask;			/* length - 1, length a power of two */
};

/*
 * %rdi = bytes, %r8 = mask, %rcx = index, %rdx = a sum that keeps both
 * paths honest. Not taken: movzbl inc and test jz add jmp; taken: movzbl
 * inc and test jz add nop.
 */
BENCH_ASM(branch_blk, BRANCH_N,
	  "mov 8(%rdi), %r8\n mov (%rdi), %rdi\n xor %ecx, %ecx\n xor %edx, %edx",
	  "movzbl (%rdi,%rcx), %eax\n inc %rcx\n and %r8, %rcx\n test %eax, %eax\n"
	  "jz 2f\n add $1, %rdx\n jmp 3f\n 2: add $2, %rdx\n nop\n 3:",
	  "");

int bench_branch(const struct bench_opts *in)
{
	static struct bench_result res[BENCH_MAX_RESULTS];
	struct bench_opts o = *in;
	u64 max = o.max_pattern ? o.max_pattern : o.quick ? 1u << 12 : 1u << 16;
	u32 reps = o.quick ? 5 : 7, warmup = 2;
	u8 *pattern_mem = bench_mem_2m(max);
	struct pattern p = { pattern_mem, 0 };
	const char *why;
	char title[160];
	u64 seed = 0xb4a2c3;
	int rc = EXIT_OK;

	if (!pattern_mem) {
		kprintf("branch: no memory for a %lu-byte pattern\n", max);
		return EXIT_FAIL;
	}

	if (!o.nevents && bench_pmu_usable(&why)) {
		strlcpy(o.events[0], "cycles", BENCH_NAME_MAX);
		strlcpy(o.events[1], "branch-misses", BENCH_NAME_MAX);
		o.nevents = 2;
	}
	ksnprintf(title, sizeof(title), "one conditional branch per copy (7 instructions); "
		  "%s per branch", bench_events_meaning(&o));
	bench_table("branch", title, "pattern, period", &o);

	struct { const char *name; u64 len; } fixed[] = {
		{ "always taken", 64 }, { "never taken", 64 }, { "alternating", 2 },
	};
	for (u32 k = 0; k < ARRAY_SIZE(fixed); k++) {
		for (u64 i = 0; i < fixed[k].len; i++)
			pattern_mem[i] = k == 0 ? 0 : k == 1 ? 1 : i & 1;
		p.mask = fixed[k].len - 1;
		struct bench b = {
			.table = "branch", .name = fixed[k].name,
			.work_unit = BP_BENCH_WORK_BRANCH,
			.loops = 64, .code = &branch_blk, .arg = &p,
		};
		if (bench_run(&b, &o, reps, warmup, res, BENCH_MAX_RESULTS) < 0) {
			rc = EXIT_FAIL;
			goto out;
		}
	}
	for (u64 len = 2; len <= max; len *= 2) {
		for (u64 i = 0; i < len; i++)
			pattern_mem[i] = bench_rand(&seed) >> 63;
		p.mask = len - 1;
		struct bench b = {
			.table = "branch", .name = "random, period",
			.param = len, .param_unit = BP_BENCH_PARAM_LENGTH,
			.work_unit = BP_BENCH_WORK_BRANCH,
			/* each measurement covers at least 4 periods */
			.loops = MAX(4 * len / BRANCH_N, 64ul), .code = &branch_blk, .arg = &p,
		};
		if (bench_run(&b, &o, reps, warmup, res, BENCH_MAX_RESULTS) < 0) {
			rc = EXIT_FAIL;
			goto out;
		}
	}
out:
	bench_mem_2m_free(pattern_mem, max);
	return rc;
}

static int branch_main(int argc, char **argv)
{
	struct bench_opts o;

	if (bench_parse_args(argc, argv, &o))
		return EXIT_USAGE;
	int rc = bench_branch(&o);
	bench_end(&o);
	return rc;
}

APP(bench_branch, "branch prediction: predictable vs random patterns, pattern length sweep",
    branch_main, 0);

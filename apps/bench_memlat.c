/*
 * bench_memlat — memory latency: a pointer chase through one random cycle
 * of 64-byte nodes (Sattolo's algorithm), so every load depends on the one
 * before and no prefetcher can guess the next line. Working sets from
 * 4 KiB up in powers of two, on 2 MiB pages (the kernel's identity map) and
 * on 4 KiB pages (a vmalloc_stack mapping of single pages); where the
 * latency per load jumps from one size to the next, the working set has
 * outgrown a cache level (or the TLB's reach: compare the two page sizes).
 *
 * Args (after --): min=SIZE max=SIZE pages=4k|2m|both, and the harness's
 * cpu= events= reps= warmup= (apps/bench.h).
 */
#include "apps/bench.h"

#define NODE		64ul		/* one cache line */
#define CHASE_N		64		/* loads per unrolled block */
#define MAX_SIZES	32
#define KNEE_RATIO	1300		/* x1000: a rise of 30% or more is a knee */

BENCH_ASM(chase, CHASE_N, "mov %rdi, %rax", "mov (%rax), %rax", "");

/* Set-up: one whole lap, so every node has been touched once before the
 * measurements (which may walk less than a lap on large working sets). */
static int warm_lap(void *start)
{
	void *p = start;

	do
		p = *(void *volatile *)p;
	while (p != start);
	return 0;
}

struct curve {
	u64 size[MAX_SIZES];
	s64 lat[MAX_SIZES];		/* value per load, x1000, first event; 0: noise */
	int n;
};

static void print_knees(const char *pages, const struct curve *c)
{
	struct bench_cache caches[8];
	int nc = bench_caches(caches, 8), found = 0;
	char a[16], b[16], r[16];

	kprintf("memlat: %s pages: ", pages);
	for (int i = 1; i < c->n; i++) {
		if (c->lat[i - 1] <= 0)
			continue;
		s64 ratio = c->lat[i] * 1000 / c->lat[i - 1];
		s64 prev = i > 1 && c->lat[i - 2] > 0 ? c->lat[i - 1] * 1000 / c->lat[i - 2] : 0;
		s64 next = i + 1 < c->n && c->lat[i] > 0 ? c->lat[i + 1] * 1000 / c->lat[i] : 0;
		/* A step spreads over neighbouring sizes: report its steepest one. */
		if (ratio < KNEE_RATIO || ratio < prev || ratio < next)
			continue;
		kprintf("%sknee %s -> %s (latency x%s", found++ ? "; " : "",
			bench_fmt_bytes(c->size[i - 1], a, sizeof(a)),
			bench_fmt_bytes(c->size[i], b, sizeof(b)), bench_fmt_x1000(ratio, r, sizeof(r)));
		for (int k = 0; k < nc; k++)
			if (caches[k].type != 'i' && caches[k].bytes > c->size[i - 1] / 2 &&
			    caches[k].bytes <= c->size[i] * 2)
				kprintf(", near L%u%s %s", caches[k].level,
					caches[k].type == 'd' ? "d" : "",
					bench_fmt_bytes(caches[k].bytes, a, sizeof(a)));
		kprintf(")");
	}
	if (!found)
		kprintf("no knee: latency rises by less than %d%% between any two sizes",
			KNEE_RATIO / 10 - 100);
	if (bench_is_tcg())
		kprintf("\nmemlat: (QEMU TCG models no caches: its knees come from QEMU's own "
			"software TLB and host caches)");
	kprintf("\n");
}

static void print_caches(void)
{
	struct bench_cache caches[8];
	int n = bench_caches(caches, 8);
	char b[16];

	kprintf("memlat: CPUID caches:");
	for (int i = 0; i < n; i++)
		kprintf(" L%u%c %s%s", caches[i].level, caches[i].type,
			bench_fmt_bytes(caches[i].bytes, b, sizeof(b)), i + 1 < n ? "," : "");
	kprintf("%s\n", n ? "" : " none reported");
}

static int sweep(const struct bench_opts *o, bool small_pages, u64 lo, u64 hi, u32 reps,
		 u32 warmup)
{
	static struct bench_result res[BENCH_MAX_RESULTS];
	static struct curve c;
	const char *pages = small_pages ? "4 KiB" : "2 MiB";
	char title[160], sz[16];
	u8 *buf = small_pages ? bench_mem_4k(hi) : bench_mem_2m(hi);
	/* loads in one n-run: a lap of 1M nodes (64 MiB) at ~100 ns a miss
	 * is 0.1 s on hardware; QEMU TCG's software TLB misses are far
	 * slower beyond 2 MiB, so stay shorter there */
	u64 max_loads = bench_is_tcg() ? 1ul << 14 : 1ul << 20;

	if (!buf) {
		kprintf("memlat: no %s of %s pages free; skipping\n",
			bench_fmt_bytes(hi, sz, sizeof(sz)), pages);
		return 0;
	}
	ksnprintf(title, sizeof(title), "pointer chase on %s pages, 64-byte nodes in one "
		  "random cycle; %s per load", pages, bench_events_meaning(o));
	bench_table("memlat", title, "working set", o);
	c.n = 0;
	for (u64 size = lo; size <= hi && c.n < MAX_SIZES; size *= 2) {
		u64 nodes = size / NODE;
		struct bench b = {
			.table = "memlat",
			.name = small_pages ? "chase 4k-pages" : "chase 2m-pages",
			.param = size, .param_unit = BP_BENCH_PARAM_BYTES,
			.work_unit = BP_BENCH_WORK_LOAD,
			/* The n-run walks about one lap (at least 4 blocks), at most
			 * max_loads: the set-up's lap has warmed the rest. */
			.loops = MIN(MAX(nodes / CHASE_N, 4ul), max_loads / CHASE_N),
			.code = &chase,
			.arg = bench_chase_build(buf, nodes, NODE, 0x5eed0000 + size),
			.setup = warm_lap,
		};
		int n = bench_run(&b, o, reps, warmup, res, BENCH_MAX_RESULTS);
		if (n < 0) {
			c.n = n;
			goto out;
		}
		if (n > 0) {
			c.size[c.n] = size;
			/* below its noise floor or disturbed: no latency, no knee (0 is skipped) */
			c.lat[c.n++] = bench_result_trusted(&res[0]) ? res[0].value : 0;
		}
	}
	if (!o->quiet)
		print_knees(pages, &c);
out:
	if (!small_pages)
		bench_mem_2m_free(buf, hi);
	return c.n;
}

int bench_memlat(const struct bench_opts *o)
{
	u64 cap = bench_mem_cap(), lo, hi;
	u32 reps = o->quick ? 5 : 7, warmup = 1;
	/* Under TCG memory has no cache timing and large sweeps only cost
	 * time: default to 16 MiB there, 1 GiB (as RAM allows) elsewhere. */
	u64 def_hi = o->quick ? 4ul << 20 : bench_is_tcg() ? 16ul << 20 : 1ul << 30;

	lo = o->min_bytes ? o->min_bytes : 4096;
	hi = o->max_bytes ? o->max_bytes : def_hi;
	if (lo < 4096 || (lo & (lo - 1)) || (hi & (hi - 1)) || hi < lo) {
		kprintf("memlat: min and max must be powers of two, 4 KiB <= min <= max\n");
		return EXIT_USAGE;
	}
	if (hi > cap) {
		char a[16], b[16];
		kprintf("memlat: capping the sweep at %s (free RAM; asked for %s)\n",
			bench_fmt_bytes(cap, a, sizeof(a)), bench_fmt_bytes(hi, b, sizeof(b)));
		hi = cap;
	}
	if (!o->quiet)
		print_caches();
	/* 2 MiB pages first: that buffer is freed again, the 4 KiB one is not. */
	if (strcmp(o->pages, "4k") && sweep(o, false, lo, hi, reps, warmup) < 0)
		return EXIT_FAIL;
	if (strcmp(o->pages, "2m") && sweep(o, true, lo, hi, reps, warmup) < 0)
		return EXIT_FAIL;
	return EXIT_OK;
}

static int memlat_main(int argc, char **argv)
{
	struct bench_opts o;

	if (bench_parse_args(argc, argv, &o))
		return EXIT_USAGE;
	int rc = bench_memlat(&o);
	bench_end(&o);
	return rc;
}

APP(bench_memlat, "memory latency: pointer chase over 4 KiB..1 GiB working sets, "
    "4 KiB and 2 MiB pages, cache knees", memlat_main, 0);

/*
 * bench_caches.c — the CPU's caches and their sizes from CPUID, for the
 * suite's sweeps (apps/bench.h, bench_caches).
 */
#include "apps/bench.h"

static void add_cache(struct bench_cache *c, int *n, int max, u32 level, char type, u64 bytes)
{
	if (*n < max && bytes) {
		c[*n].level = level;
		c[*n].type = type;
		c[*n].bytes = bytes;
		(*n)++;
	}
}

int bench_caches(struct bench_cache *c, int max)
{
	const struct cpu_features *f = &cpu_features;
	u32 a, b, cx, d, leaf = 0;
	int n = 0;

	if (!strcmp(f->vendor, "GenuineIntel") && f->max_leaf >= 4)
		leaf = 4;
	if (!strcmp(f->vendor, "AuthenticAMD") && f->max_ext_leaf >= 0x8000001d) {
		cpuid(0x80000001, &a, &b, &cx, &d);
		if (cx & (1u << 22))		/* TOPOEXT */
			leaf = 0x8000001d;
	}
	/* Deterministic cache parameters (SDM Vol. 2A CPUID leaf 04H; AMD APM
	 * Vol. 3 CPUID Fn8000_001D: the same layout). */
	for (u32 i = 0; leaf && i < 16; i++) {
		cpuid_count(leaf, i, &a, &b, &cx, &d);
		u32 type = a & 0x1f;
		if (!type)
			break;
		u64 bytes = (u64)((b >> 22) + 1) * (((b >> 12) & 0x3ff) + 1) *
			    ((b & 0xfff) + 1) * ((u64)cx + 1);
		add_cache(c, &n, max, (a >> 5) & 7, type == 1 ? 'd' : type == 2 ? 'i' : 'u', bytes);
	}
	if (!n && f->max_ext_leaf >= 0x80000006) {
		/* AMD's older leaves (APM Vol. 3, Fn8000_0005 and _0006). */
		cpuid(0x80000005, &a, &b, &cx, &d);
		add_cache(c, &n, max, 1, 'd', (u64)(cx >> 24) << 10);
		cpuid(0x80000006, &a, &b, &cx, &d);
		add_cache(c, &n, max, 2, 'u', (u64)(cx >> 16) << 10);
		add_cache(c, &n, max, 3, 'u', (u64)(d >> 18) << 19);
	}
	return n;
}

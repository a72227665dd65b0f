/*
 * idmap.c — the loader's identity map (SDM Vol. 3A 4.5: 4-level paging;
 * PDPTE.PS maps 1 GiB where CPUID.80000001H:EDX[26] says so, PDE.PS 2 MiB).
 *
 * The map follows the ranges it is given, not the highest address the
 * firmware's memory map mentions: a machine whose map ends with MMIO at
 * 64 TiB needs a PDPT and a PD for it, not 64 Ki PDs (256 MiB of tables).
 */
#include "boot/idmap.h"

#define PTE_P		(1ull << 0)
#define PTE_W		(1ull << 1)
#define PTE_PWT		(1ull << 3)
#define PTE_PCD		(1ull << 4)
#define PTE_PS		(1ull << 7)
#define ENTRIES		512u
#define SZ_2M		(1ull << 21)
#define SZ_1G		(1ull << 30)
#define SZ_512G		(1ull << 39)

enum { B_NONE, B_UC, B_WB };

static uint64_t end_of(const struct idmap_range *r)
{
	return r->base + r->len;
}

/* The first GiB at or after g that some range touches, or ~0. */
static uint64_t next_gib(const struct idmap_range *r, size_t n, uint64_t g)
{
	uint64_t best = ~0ull;

	for (size_t i = 0; i < n; i++) {
		if (!r[i].len)
			continue;
		uint64_t first = r[i].base / SZ_1G, last = (end_of(&r[i]) - 1) / SZ_1G;
		if (last < g)
			continue;
		uint64_t c = first > g ? first : g;
		if (c < best)
			best = c;
	}
	return best;
}

/* Block types of GiB g (512 blocks of 2 MiB); returns the type all share,
 * or -1 when they differ. */
static int classify(const struct idmap_range *r, size_t n, uint64_t g, uint8_t blk[ENTRIES])
{
	uint64_t lo = g * SZ_1G, hi = lo + SZ_1G;

	for (unsigned b = 0; b < ENTRIES; b++)
		blk[b] = B_NONE;
	for (size_t i = 0; i < n; i++) {
		if (!r[i].len || end_of(&r[i]) <= lo || r[i].base >= hi)
			continue;
		uint64_t s = r[i].base > lo ? r[i].base : lo;
		uint64_t e = end_of(&r[i]) < hi ? end_of(&r[i]) : hi;
		for (uint64_t b = (s - lo) / SZ_2M; b <= (e - 1 - lo) / SZ_2M; b++)
			if (r[i].wb || blk[b] == B_NONE)
				blk[b] = r[i].wb ? B_WB : B_UC;
	}
	for (unsigned b = 1; b < ENTRIES; b++)
		if (blk[b] != blk[0])
			return -1;
	return blk[0];
}

static int ranges_ok(const struct idmap_range *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].len && (r[i].base >= IDMAP_TOP || r[i].len > IDMAP_TOP - r[i].base))
			return 0;
	return 1;
}

/* One walk serves both counting (tables == NULL) and building. */
static size_t walk(const struct idmap_range *r, size_t n, int gib_pages, uint64_t *tables,
		   size_t pages)
{
	uint8_t blk[ENTRIES];
	uint64_t *pml4 = tables, *pdpt = 0;
	uint64_t cur_512g = ~0ull;
	size_t used = 1;

	if (!ranges_ok(r, n))
		return 0;
	for (uint64_t g = next_gib(r, n, 0); g != ~0ull; g = next_gib(r, n, g + 1)) {
		int type = classify(r, n, g, blk);
		uint64_t attr = PTE_P | PTE_W;
		if (g / ENTRIES != cur_512g) {
			cur_512g = g / ENTRIES;
			if (tables) {
				if (used >= pages)
					return 0;
				pdpt = tables + used * ENTRIES;
				pml4[cur_512g] = (uint64_t)(uintptr_t)pdpt | PTE_P | PTE_W;
			}
			used++;
		}
		if (gib_pages && type > B_NONE) {
			if (tables)
				pdpt[g % ENTRIES] = g * SZ_1G | attr | PTE_PS |
						    (type == B_WB ? 0 : PTE_PCD | PTE_PWT);
			continue;
		}
		if (tables) {
			if (used >= pages)
				return 0;
			uint64_t *pd = tables + used * ENTRIES;
			pdpt[g % ENTRIES] = (uint64_t)(uintptr_t)pd | PTE_P | PTE_W;
			for (unsigned b = 0; b < ENTRIES; b++)
				if (blk[b] != B_NONE)
					pd[b] = (g * SZ_1G + b * SZ_2M) | attr | PTE_PS |
						(blk[b] == B_WB ? 0 : PTE_PCD | PTE_PWT);
		}
		used++;
	}
	return used;
}

size_t idmap_pages(const struct idmap_range *r, size_t n, int gib_pages)
{
	return walk(r, n, gib_pages, 0, 0);
}

size_t idmap_build(const struct idmap_range *r, size_t n, int gib_pages, uint64_t *tables,
		   size_t pages)
{
	return walk(r, n, gib_pages, tables, pages);
}

/*
 * test_idmap — the loader's identity map (boot/idmap.c) on the host: the
 * tables it builds are walked here as the CPU would (SDM Vol. 3A 4.5,
 * 4-level paging, PS at the PDPT and PD levels), for firmware memory maps
 * such as a machine with MMIO at 64 TiB, and for random maps checked
 * block by block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "boot/idmap.h"

#define GIB (1ull << 30)
#define MIB (1ull << 20)
#define P (1ull << 0)
#define PS (1ull << 7)
#define UC ((1ull << 3) | (1ull << 4))
#define ADDR 0x000ffffffffff000ull

/* Walk to addr: 0 = not mapped, else the leaf entry (its PS page). */
static uint64_t walk(const uint64_t *pml4, uint64_t addr)
{
	uint64_t e = pml4[addr >> 39 & 511];
	if (!(e & P))
		return 0;
	e = ((const uint64_t *)(uintptr_t)(e & ADDR))[addr >> 30 & 511];
	if (!(e & P))
		return 0;
	if (e & PS) {
		assert_int_equal(e & ADDR & ~(GIB - 1), addr & ~(GIB - 1));
		return e;
	}
	e = ((const uint64_t *)(uintptr_t)(e & ADDR))[addr >> 21 & 511];
	if (!(e & P))
		return 0;
	assert_true(e & PS);
	assert_int_equal(e & ADDR & ~(2 * MIB - 1), addr & ~(2 * MIB - 1));
	return e;
}

static uint64_t *build(const struct idmap_range *r, size_t n, int gib, size_t *pages)
{
	*pages = idmap_pages(r, n, gib);
	assert_true(*pages > 0);
	uint64_t *t = aligned_alloc(4096, *pages * 4096);
	assert_non_null(t);
	memset(t, 0, *pages * 4096);
	assert_int_equal(idmap_build(r, n, gib, t, *pages), *pages);
	return t;
}

/* RAM, the 32-bit MMIO hole, RAM above 4 GiB, and one 2 MiB BAR at
 * 64 TiB: a handful of tables, where mapping [0, 64 TiB) whole took
 * 1 + 128 + 65536 pages (256 MiB). */
static void mmio_at_64tib(void **state)
{
	(void)state;
	const struct idmap_range r[] = {
		{ 0, 4 * GIB, 0 },			/* the loader always maps the low 4 GiB */
		{ 0, 2 * GIB, 1 },			/* RAM */
		{ 0xfec00000, 0x1000, 0 },		/* IOAPIC */
		{ 4 * GIB, 2 * GIB, 1 },		/* RAM above 4 GiB */
		{ 64ull << 40, 2 * MIB, 0 },		/* a BAR at 64 TiB */
	};
	for (int gib = 0; gib < 2; gib++) {
		size_t pages;
		uint64_t *t = build(r, 5, gib, &pages);
		print_message("# 1 GiB pages %s: %zu pages of tables\n", gib ? "on" : "off", pages);
		assert_int_equal(pages, gib ? 4u : 10u);
		assert_int_equal(walk(t, 0x1000) & UC, 0);		/* RAM: WB */
		assert_int_equal(walk(t, 0xfec00000) & UC, UC);		/* MMIO: UC */
		assert_int_equal(walk(t, 5 * GIB) & UC, 0);
		assert_true(walk(t, 64ull << 40) & P);
		assert_int_equal(walk(t, 64ull << 40) & UC, UC);
		assert_int_equal(walk(t, 7 * GIB), 0);			/* holes: unmapped */
		assert_int_equal(walk(t, 32ull << 40), 0);
		assert_int_equal(walk(t, (64ull << 40) + 2 * MIB), 0);
		if (gib)
			assert_true(walk(t, 5 * GIB) & PS && !(walk(t, 5 * GIB) & UC));
		free(t);
	}
}

/* Random maps: every 2 MiB block is present iff a range touches it, and
 * write-back iff a WB range does, with or without 1 GiB pages. */
static void random_maps(void **state)
{
	(void)state;
	srand(12345);
	for (int iter = 0; iter < 300; iter++) {
		struct idmap_range r[12];
		size_t n = 1 + (size_t)rand() % 12;
		for (size_t i = 0; i < n; i++) {
			uint64_t base = ((uint64_t)rand() % 4096) * 2 * MIB + ((uint64_t)rand() % 3) * 4096;
			if (rand() % 4 == 0)
				base += ((uint64_t)rand() % 200) << 39;	/* far away */
			uint64_t len = rand() % 3 == 0 ? ((uint64_t)rand() % 3 + 1) * GIB
						       : ((uint64_t)rand() % 600 + 1) * 4096;
			r[i] = (struct idmap_range){ base, len, rand() % 2 };
		}
		for (int gib = 0; gib < 2; gib++) {
			size_t pages;
			uint64_t *t = build(r, n, gib, &pages);
			for (int k = 0; k < 400; k++) {
				const struct idmap_range *pick = &r[(size_t)rand() % n];
				uint64_t a = pick->base + (uint64_t)rand() % (pick->len + 8 * MIB);
				if (rand() % 2)
					a = pick->base - ((uint64_t)rand() % (4 * MIB) & -(rand() % 2 ? 1ull : 0));
				uint64_t blk = a & ~(2 * MIB - 1);
				int touched = 0, wb = 0;
				for (size_t i = 0; i < n; i++)
					if (r[i].base < blk + 2 * MIB && r[i].base + r[i].len > blk) {
						touched = 1;
						wb |= r[i].wb;
					}
				uint64_t e = walk(t, a);
				if (!!e != touched || (e && !!(e & UC) == wb))
					fail_msg("map %d (1G %d): 0x%llx: entry 0x%llx, touched %d wb %d", iter,
						 gib, (unsigned long long)a, (unsigned long long)e, touched, wb);
			}
			free(t);
		}
	}
}

static void refusals(void **state)
{
	(void)state;
	struct idmap_range high = { IDMAP_TOP - 4096, 8192, 1 };
	assert_int_equal(idmap_pages(&high, 1, 1), 0);
	struct idmap_range two[] = { { 0, 4 * GIB, 0 }, { 1ull << 40, 4096, 1 } };
	size_t need = idmap_pages(two, 2, 0);
	uint64_t *t = aligned_alloc(4096, need * 4096);
	memset(t, 0, need * 4096);
	assert_int_equal(idmap_build(two, 2, 0, t, need - 1), 0);	/* too few pages */
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mmio_at_64tib),
		cmocka_unit_test(random_maps),
		cmocka_unit_test(refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

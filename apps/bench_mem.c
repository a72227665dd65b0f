/*
 * bench_mem.c — what the suite's memory benchmarks share: random numbers,
 * pointer chases, and working-set buffers on 2 MiB or 4 KiB pages.
 */
#include "apps/bench.h"

#define SZ_2M		(2ul << 20)
#define VMALLOC_MAX	(512ul << 20)	/* 4 KiB-page buffers: the vmalloc area is ~1 GiB */
#define MEM_HEADROOM	(16ul << 20)	/* left free for rings, stacks, page tables */

u64 bench_rand(u64 *s)
{
	/* xorshift64* (Vigna 2016); never seeded with 0. */
	u64 x = *s ? *s : 0x9e3779b97f4a7c15ul;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dul;
}

void *bench_chase_build(void *buf, u64 nodes, u64 stride, u64 seed)
{
	u8 *base = buf;
	u64 s = seed;

	/* Sattolo's algorithm, in place: node i's word holds a[i], starting
	 * from the identity; swapping a[i] with an a[j], j < i, for i from the
	 * top down leaves a cyclic permutation (one cycle through all). */
	for (u64 i = 0; i < nodes; i++)
		*(u64 *)(base + i * stride) = i;
	for (u64 i = nodes - 1; i > 0; i--) {
		u64 j = (u64)(((unsigned __int128)bench_rand(&s) * i) >> 64);	/* [0, i) */
		u64 *a = (u64 *)(base + i * stride), *c = (u64 *)(base + j * stride);
		u64 t = *a;
		*a = *c;
		*c = t;
	}
	for (u64 i = 0; i < nodes; i++) {
		u64 *w = (u64 *)(base + i * stride);
		*w = (u64)(base + *w * stride);
	}
	return base;
}

u64 bench_chase_cycle(const void *buf, u64 nodes, u64 stride)
{
	const u8 *base = buf, *p = buf;
	u64 steps = 0;

	do {
		u64 next = *(const u64 *)p;
		if (next < (u64)base || next >= (u64)base + nodes * stride ||
		    (next - (u64)base) % stride)
			return 0;
		p = (const u8 *)next;
		steps++;
	} while (p != base && steps <= nodes);
	return p == base ? steps : 0;
}

u64 bench_mem_cap(void)
{
	u64 free = pmm_free_pages() * PAGE_SIZE, cap = 1ul << 12;

	if (free <= MEM_HEADROOM + SZ_2M)
		return 0;
	free -= MEM_HEADROOM + SZ_2M;		/* + the 2 MiB alignment slack */
	while (cap * 2 <= free)
		cap *= 2;
	return cap;
}

/* Small buffers are not worth a 2 MiB alignment (pmm_alloc zeroes what
 * it hands out): they take their pages as they come. */
#define SMALL_BUF	(1ul << 20)

void *bench_mem_2m(u64 bytes)
{
	u64 pages = ALIGN_UP(bytes, SZ_2M) / PAGE_SIZE + SZ_2M / PAGE_SIZE;
	u64 pa;

	if (bytes <= SMALL_BUF)
		return (void *)pmm_alloc(ALIGN_UP(bytes, PAGE_SIZE) / PAGE_SIZE);
	if (pages * PAGE_SIZE + MEM_HEADROOM > pmm_free_pages() * PAGE_SIZE)
		return NULL;
	pa = pmm_alloc(pages);
	if (!pa)
		return NULL;
	/* The identity map is made of 2 MiB pages (kernel/paging.c); start on
	 * one so the buffer spans as few as possible. The slack before the
	 * aligned start is given back, and so is what follows the buffer. */
	u64 start = ALIGN_UP(pa, SZ_2M), end = start + ALIGN_UP(bytes, SZ_2M);
	if (start > pa)
		pmm_free(pa, (start - pa) / PAGE_SIZE);
	if (pa + pages * PAGE_SIZE > end)
		pmm_free(end, (pa + pages * PAGE_SIZE - end) / PAGE_SIZE);
	return (void *)start;
}

void bench_mem_2m_free(void *p, u64 bytes)
{
	if (p)
		pmm_free((u64)p, ALIGN_UP(bytes, bytes <= SMALL_BUF ? PAGE_SIZE : SZ_2M) / PAGE_SIZE);
}

void *bench_mem_4k(u64 bytes)
{
	static u64 base, size;
	u64 pages = ALIGN_UP(bytes, PAGE_SIZE) / PAGE_SIZE;

	if (bytes <= size)
		return (void *)base;
	/* Page tables come on top: one 4 KiB table per 512 pages. */
	if (bytes > VMALLOC_MAX ||
	    (pages + pages / 512 + 2) * PAGE_SIZE + MEM_HEADROOM > pmm_free_pages() * PAGE_SIZE)
		return NULL;
	u64 top = vmalloc_stack(pages);
	if (!top)
		return NULL;
	if (size)
		kprintf("bench: a %lu KiB 4 KiB-page buffer stays allocated (no vfree)\n",
			size >> 10);
	base = top - pages * PAGE_SIZE;
	size = pages * PAGE_SIZE;
	return (void *)base;
}

/*
 * pmm.c — the physical page allocator: one bit per 4 KiB page up to the
 * highest usable address in the boot memory map (1 = in use).
 *
 * Only BOOT_MEM_USABLE ranges are ever handed out; the first MiB (real-mode
 * structures, the future AP trampoline), the kernel image and the bitmap
 * itself are marked in use. Allocation is first-fit from the bottom, so
 * early page tables land in low memory that every boot path identity-maps.
 * Not for NMI context (no locking against reentry); callers serialize.
 */
#include "kernel/kernel.h"
#include "kernel/mm.h"

#define LOW_RESERVED	(1ul << 20)
#define SZ_2M		(2ul << 20)

static u64 *bitmap;
static u64 max_pfn;
static size_t nfree, ntotal;

static bool test_bit(u64 pfn) { return bitmap[pfn / 64] & (1ul << (pfn % 64)); }
static void set_bit(u64 pfn) { bitmap[pfn / 64] |= 1ul << (pfn % 64); }
static void clear_bit(u64 pfn) { bitmap[pfn / 64] &= ~(1ul << (pfn % 64)); }

static void mark_used(u64 base, u64 len)
{
	u64 first = base / PAGE_SIZE, end = MIN(ALIGN_UP(base + len, PAGE_SIZE) / PAGE_SIZE, max_pfn);

	for (u64 pfn = first; pfn < end; pfn++) {
		if (!test_bit(pfn)) {
			set_bit(pfn);
			nfree--;
		}
	}
}

/* Free the pages in use among [first, end), counting them: a whole word
 * of the bitmap at a time where all its 64 are in use. The boot frees
 * every usable page: a page at a time, 256 MiB cost a million
 * instructions. */
static void free_range(u64 first, u64 end)
{
	for (u64 pfn = first; pfn < end; ) {
		if (!(pfn % 64) && end - pfn >= 64 && bitmap[pfn / 64] == ~0ul) {
			bitmap[pfn / 64] = 0;
			nfree += 64;
			pfn += 64;
			continue;
		}
		if (test_bit(pfn)) {
			clear_bit(pfn);
			nfree++;
		}
		pfn++;
	}
}

static bool overlaps(u64 a, u64 alen, u64 b, u64 blen)
{
	return a < b + blen && b < a + alen;
}

void pmm_init(const struct boot_info *bi)
{
	u64 top = 0;

	for (u32 i = 0; i < bi->mmap_count; i++) {
		const struct boot_mem_range *r = &bi->mmap[i];
		if (r->type == BOOT_MEM_USABLE)
			top = MAX(top, r->base + r->length);
	}
	max_pfn = top / PAGE_SIZE;
	u64 bytes = ALIGN_UP(ALIGN_UP(max_pfn, 64) / 8, PAGE_SIZE);

	/* Place the bitmap in the first usable range above 1 MiB that can
	 * hold it without touching the kernel. */
	for (u32 i = 0; i < bi->mmap_count && !bitmap; i++) {
		const struct boot_mem_range *r = &bi->mmap[i];
		u64 base = ALIGN_UP(MAX(r->base, LOW_RESERVED), PAGE_SIZE);
		u64 end = ALIGN_DOWN(r->base + r->length, PAGE_SIZE);

		if (r->type != BOOT_MEM_USABLE)
			continue;
		if (overlaps(base, bytes, bi->kernel_phys, bi->kernel_size))
			base = ALIGN_UP(bi->kernel_phys + bi->kernel_size, PAGE_SIZE);
		if (base + bytes <= end)
			bitmap = (u64 *)base;
	}
	if (!bitmap)
		panic("pmm_init: no usable range holds the %lu-byte page bitmap", bytes);

	memset(bitmap, 0xff, bytes);
	for (u32 i = 0; i < bi->mmap_count; i++) {
		const struct boot_mem_range *r = &bi->mmap[i];
		if (r->type != BOOT_MEM_USABLE)
			continue;
		free_range(ALIGN_UP(r->base, PAGE_SIZE) / PAGE_SIZE,
			   ALIGN_DOWN(r->base + r->length, PAGE_SIZE) / PAGE_SIZE);
	}
	ntotal = nfree;
	mark_used(0, LOW_RESERVED);
	mark_used(bi->kernel_phys, bi->kernel_size);
	mark_used((u64)bitmap, bytes);
}

u64 pmm_alloc(size_t npages)
{
	u64 run = 0;

	if (!npages)
		return 0;
	for (u64 pfn = 0; pfn < max_pfn; pfn++) {
		if (!(pfn % 64) && bitmap[pfn / 64] == ~0ul) {
			run = 0;
			pfn += 63;
			continue;
		}
		run = test_bit(pfn) ? 0 : run + 1;
		if (run == npages) {
			u64 first = pfn + 1 - npages;
			for (u64 p = first; p <= pfn; p++)
				set_bit(p);
			nfree -= npages;
			memset((void *)(first * PAGE_SIZE), 0, npages * PAGE_SIZE);
			return first * PAGE_SIZE;
		}
	}
	return 0;
}

void pmm_free(u64 pa, size_t npages)
{
	for (u64 pfn = pa / PAGE_SIZE; pfn < pa / PAGE_SIZE + npages; pfn++) {
		BUG_ON(pfn >= max_pfn || !test_bit(pfn));
		clear_bit(pfn);
		nfree++;
	}
}

/* A 2 MiB region of which no page is in use, by its first bitmap word. */
static bool region_free(u64 w)
{
	for (u64 i = w; i < w + SZ_2M / PAGE_SIZE / 64; i++)
		if (bitmap[i])
			return false;
	return true;
}

/*
 * Time one write to each of up to max free 2 MiB regions, spread evenly
 * over all of them. Under a hypervisor that backs guest RAM only when it
 * is first written (QEMU's default, with the host's transparent huge
 * pages), a write to a region nothing has written yet waits while the
 * host zeroes a page; on bare metal, and where the firmware or the
 * kernel wrote before, it is an ordinary store. Free pages hold nothing
 * (pmm_alloc zeroes what it hands out), so the word is left there.
 * Each write's time goes to ticks[], in TSC ticks.
 */
u32 pmm_first_writes(u64 *ticks, u32 max)
{
	const u64 words = SZ_2M / PAGE_SIZE / 64;
	u64 last = ALIGN_DOWN(max_pfn / 64, words), regions = 0, k = 0;
	u32 n = 0;

	for (u64 w = 0; w < last; w += words)
		regions += region_free(w);
	if (!regions || !max)
		return 0;
	u64 stride = (regions + max - 1) / max;
	for (u64 w = 0; w < last && n < max; w += words) {
		if (!region_free(w) || k++ % stride)
			continue;
		volatile u64 *p = (volatile u64 *)(w * 64 * PAGE_SIZE);
		u64 t0 = rdtsc_ordered();
		*p = 0;
		ticks[n++] = rdtsc_ordered() - t0;
	}
	return n;
}

size_t pmm_free_pages(void) { return nfree; }
size_t pmm_total_pages(void) { return ntotal; }

/*
 * paging.c — the kernel's own page tables (SDM Vol. 3A 4.5, 4-level paging).
 *
 *   [0, top)            identity map of RAM and the 32-bit MMIO hole, 2 MiB
 *                       pages, never executable; page 0 left unmapped so a
 *                       NULL dereference faults; what is not RAM below
 *                       4 GiB is uncached (APIC, IOAPIC, HPET, PCI BARs).
 *   __kernel_start..    the image, 4 KiB pages: text R-X, rodata R--,
 *                       data/bss RW- (W^X); the boot stack's guard page is
 *                       left unmapped.
 *   VMALLOC_BASE..      stacks with an unmapped guard page below each.
 *
 * The entries' bits and the walk that only reads (va_mapped) are
 * kernel/pgtable.h and kernel/pgtable.c.
 */
#include "kernel/kernel.h"
#include "kernel/lib/hash.h"
#include "kernel/mm.h"
#include "kernel/pgtable.h"

#define SZ_2M		(2ul << 20)
#define SZ_4G		(4ul << 30)
#define VMALLOC_BASE	0xffffffffc0000000ul
#define VMALLOC_END	0xffffffffff000000ul

static u64 nx;			/* PTE_NX if the CPU has it, else 0 */
static u64 vmalloc_next = VMALLOC_BASE;

static u64 *table_at(u64 *entry)
{
	if (!(*entry & PTE_P)) {
		u64 pa = pmm_alloc(1);
		if (!pa)
			panic("paging: out of memory for page tables");
		*entry = pa | PTE_P | PTE_W;
	}
	BUG_ON(*entry & PTE_PS);
	return (u64 *)(*entry & PTE_ADDR);
}

static u64 *pte_slot(u64 va, int level_stop)
{
	u64 *t = kernel_pml4;

	for (int level = 3; level > level_stop; level--)
		t = table_at(&t[(va >> (12 + 9 * level)) & 511]);
	return &t[(va >> (12 + 9 * level_stop)) & 511];
}

static void map_4k(u64 va, u64 pa, u64 flags)
{
	*pte_slot(va, 0) = pa | flags | PTE_P;
}

static void map_2m(u64 va, u64 pa, u64 flags)
{
	*pte_slot(va, 1) = pa | flags | PTE_P | PTE_PS;
}

static bool is_ram(const struct boot_info *bi, u64 base, u64 len)
{
	for (u32 i = 0; i < bi->mmap_count; i++) {
		const struct boot_mem_range *r = &bi->mmap[i];
		if (r->type == BOOT_MEM_RESERVED || r->type == BOOT_MEM_MMIO)
			continue;
		if (base < r->base + r->length && r->base < base + len)
			return true;
	}
	return false;
}

u64 mem_top(const struct boot_info *bi)
{
	u64 top = SZ_4G;

	for (u32 i = 0; i < bi->mmap_count; i++)
		if (bi->mmap[i].type != BOOT_MEM_RESERVED && bi->mmap[i].type != BOOT_MEM_MMIO)
			top = MAX(top, bi->mmap[i].base + bi->mmap[i].length);
	return ALIGN_UP(top, SZ_2M);
}

static u64 kernel_phys_base;

u64 virt_to_phys(const void *p)
{
	u64 va = (u64)p;

	if (va >= (u64)__kernel_start && va < (u64)__kernel_end)
		return va - (u64)__kernel_start + kernel_phys_base;
	if (va >= VMALLOC_BASE) {
		u64 *e = pte_slot(va, 0);
		return (*e & PTE_ADDR) | (va & 0xfff);
	}
	return va;		/* identity map */
}

static u64 image_flags(u64 va)
{
	if (va >= (u64)__text_start && va < (u64)__text_end)
		return 0;				/* R-X */
	if (va >= (u64)__data_start && va < (u64)__bss_end)
		return PTE_W | nx;			/* RW- */
	return nx;					/* R-- */
}

void paging_init(const struct boot_info *bi)
{
	u64 top = mem_top(bi);

	/* The NX bit is legal once EFER.NXE is on: cpu_setup turned it on
	 * where the CPU has it. */
	nx = rdmsr(MSR_IA32_EFER) & EFER_NXE ? PTE_NX : 0;
	kernel_phys_base = bi->kernel_phys;
	kernel_pml4 = (u64 *)pmm_alloc(1);
	if (!kernel_pml4)
		panic("paging_init: out of memory");

	for (u64 pa = 0; pa < top; pa += SZ_2M) {
		u64 cache = is_ram(bi, pa, SZ_2M) ? 0 : PTE_PCD | PTE_PWT;
		if (pa == 0) {
			for (u64 p = PAGE_SIZE; p < SZ_2M; p += PAGE_SIZE)
				map_4k(p, p, PTE_W | nx | cache);
			continue;
		}
		map_2m(pa, pa, PTE_W | nx | cache);
	}

	for (u64 va = (u64)__kernel_start; va < (u64)__kernel_end; va += PAGE_SIZE) {
		if (va == (u64)boot_stack_guard)
			continue;
		map_4k(va, va - (u64)__kernel_start + bi->kernel_phys, image_flags(va));
	}
	write_cr3((u64)kernel_pml4);
}

void paging_set_exec(u64 pa, bool exec)
{
	BUG_ON(pa >= SZ_2M || pa < PAGE_SIZE || (pa & (PAGE_SIZE - 1)));
	*pte_slot(pa, 0) = pa | PTE_P | (exec ? 0 : PTE_W | nx);
	invlpg(pa);
}

bool paging_map_wc(u64 pa, u64 len)
{
	if (!kernel_pml4 || (pa & (SZ_2M - 1)) || (len & (SZ_2M - 1)) || !len || !va_mapped(pa, len))
		return false;
	for (u64 p = pa; p < pa + len; p += SZ_2M)
		if (!(*pte_slot(p, 1) & PTE_PS))
			return false;
	for (u64 p = pa; p < pa + len; p += SZ_2M) {
		map_2m(p, p, PTE_W | nx | PDE_PAT);
		invlpg(p);
	}
	return true;
}

u64 vmalloc_stack(size_t npages)
{
	u64 base = vmalloc_next + PAGE_SIZE;		/* guard page stays unmapped */

	if (base + npages * PAGE_SIZE > VMALLOC_END)
		return 0;
	for (size_t i = 0; i < npages; i++) {
		u64 pa = pmm_alloc(1);
		if (!pa)
			return 0;
		map_4k(base + i * PAGE_SIZE, pa, PTE_W | nx);
	}
	vmalloc_next = base + npages * PAGE_SIZE;
	return vmalloc_next;
}

void vfree_stack(u64 top, size_t npages)
{
	u64 base = top - npages * PAGE_SIZE;

	BUG_ON(base < VMALLOC_BASE || top > vmalloc_next || (top & (PAGE_SIZE - 1)));
	for (size_t i = 0; i < npages; i++) {
		u64 *e = pte_slot(base + i * PAGE_SIZE, 0);
		BUG_ON(!(*e & PTE_P));
		u64 pa = *e & PTE_ADDR;
		*e = 0;
		invlpg(base + i * PAGE_SIZE);
		pmm_free(pa, 1);
	}
}

u64 vmalloc_code(size_t npages)
{
	/* Same region and guard page as the stacks: RW-, until flipped. */
	u64 top = vmalloc_stack(npages);

	return top ? top - npages * PAGE_SIZE : 0;
}

void paging_code_exec(u64 va, size_t npages, bool exec)
{
	BUG_ON(va < VMALLOC_BASE || (va & (PAGE_SIZE - 1)));
	for (size_t i = 0; i < npages; i++) {
		u64 *e = pte_slot(va + i * PAGE_SIZE, 0);
		BUG_ON(!(*e & PTE_P));
		/* W^X: writable and no-execute, or read-only and executable. */
		*e = (*e & PTE_ADDR) | PTE_P | (exec ? 0 : PTE_W | nx);
		invlpg(va + i * PAGE_SIZE);
	}
}

void paging_code_rodata(u64 va, size_t npages)
{
	BUG_ON(va < VMALLOC_BASE || (va & (PAGE_SIZE - 1)));
	for (size_t i = 0; i < npages; i++) {
		u64 *e = pte_slot(va + i * PAGE_SIZE, 0);
		BUG_ON(!(*e & PTE_P));
		*e = (*e & PTE_ADDR) | PTE_P | nx;
		invlpg(va + i * PAGE_SIZE);
	}
}

/* FNV-1a over the table's entries, and over the tables below them. */
static u64 hash_table(const u64 *t, int level, u64 h)
{
	for (int i = 0; i < 512; i++) {
		u64 e = t[i] & ~(PTE_A | PTE_D);
		h = fnv1a(h, e);
		if ((e & PTE_P) && level > 0 && !(e & PTE_PS))
			h = hash_table((const u64 *)(e & PTE_ADDR), level - 1, h);
	}
	return h;
}

u64 paging_hash(void)
{
	return kernel_pml4 ? hash_table(kernel_pml4, 3, FNV1A_START) : 0;
}

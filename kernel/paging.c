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
 * The code the host sends (apps/bench_code.c) runs on a second set of
 * tables, code_pml4, built once by paging_code_cr3: the same entries,
 * but a page the kernel can write is read-only there unless its entry
 * says it is the code's too (PTE_CODE_RW: the code's own pages, the IST
 * stacks the CPU pushes an NMI's frame on, MMIO). So the kernel's image,
 * its stacks, its page tables and the rest of RAM by its physical address
 * (the identity map) are read-only to the code: a stray store faults
 * instead of writing them. Every entry is written through set_pte, which
 * writes both sets of tables (paging_init, before the code's exist, fills
 * the kernel's directly); one set serves every CPU (one address space, and
 * code runs on one CPU at a time).
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

static u64 *slot_in(u64 *t, u64 va, int level_stop)
{
	for (int level = 3; level > level_stop; level--)
		t = table_at(&t[(va >> (12 + 9 * level)) & 511]);
	return &t[(va >> (12 + 9 * level_stop)) & 511];
}

static u64 *pte_slot(u64 va, int level_stop)
{
	return slot_in(kernel_pml4, va, level_stop);
}

/* The entry at va's slot of the given level, in the kernel's tables and,
 * once they exist, in the code's (pte_code_view). */
static void set_pte(u64 va, int level, u64 e)
{
	*pte_slot(va, level) = e;
	if (code_pml4)
		*slot_in(code_pml4, va, level) = pte_code_view(e);
}

static void map_4k(u64 va, u64 pa, u64 flags)
{
	set_pte(va, 0, pa | flags | PTE_P);
}

static void map_2m(u64 va, u64 pa, u64 flags)
{
	set_pte(va, 1, pa | flags | PTE_P | PTE_PS);
}

/*
 * The slots of one level in ascending order, as paging_init fills them
 * before the code's tables exist: the walk from the root only where a
 * table begins or a page was skipped, not for each of its 512 slots.
 */
struct slot_run {
	u64 next_va;
	u64 *slot;
};

static u64 *run_slot(struct slot_run *r, u64 va, int level)
{
	u64 size = PAGE_SIZE << (9 * level);

	if (!r->slot || va != r->next_va || !(va & (size * 512 - 1)))
		r->slot = pte_slot(va, level);
	r->next_va = va + size;
	return r->slot++;
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

	/* The code's tables do not exist yet: the entries go straight into
	 * the kernel's (what map_4k and map_2m would write). */
	BUG_ON(code_pml4);
	struct slot_run pages = { 0 }, big = { 0 };
	for (u64 pa = 0; pa < top; pa += SZ_2M) {
		/* MMIO stays writable to code run on purpose: it programs
		 * the local APIC, as the kernel does. */
		u64 cache = is_ram(bi, pa, SZ_2M) ? 0 : PTE_PCD | PTE_PWT | PTE_CODE_RW;
		if (pa == 0) {
			for (u64 p = PAGE_SIZE; p < SZ_2M; p += PAGE_SIZE)
				*run_slot(&pages, p, 0) = p | PTE_W | nx | cache | PTE_P;
			continue;
		}
		*run_slot(&big, pa, 1) = pa | PTE_W | nx | cache | PTE_P | PTE_PS;
	}

	for (u64 va = (u64)__kernel_start; va < (u64)__kernel_end; va += PAGE_SIZE) {
		if (va == (u64)boot_stack_guard)
			continue;
		*run_slot(&pages, va, 0) = (va - (u64)__kernel_start + bi->kernel_phys) |
					   image_flags(va) | PTE_P;
	}
	write_cr3((u64)kernel_pml4);
}

void paging_set_exec(u64 pa, bool exec)
{
	BUG_ON(pa >= SZ_2M || pa < PAGE_SIZE || (pa & (PAGE_SIZE - 1)));
	set_pte(pa, 0, pa | PTE_P | (exec ? 0 : PTE_W | nx));
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
		map_2m(p, p, PTE_W | nx | PDE_PAT | PTE_CODE_RW);
		invlpg(p);
	}
	return true;
}

/* npages of fresh memory above an unmapped guard page, with these flags. */
static u64 vmalloc_pages(size_t npages, u64 flags)
{
	u64 base = vmalloc_next + PAGE_SIZE;		/* guard page stays unmapped */

	if (base + npages * PAGE_SIZE > VMALLOC_END)
		return 0;
	for (size_t i = 0; i < npages; i++) {
		u64 pa = pmm_alloc(1);
		if (!pa)
			return 0;
		map_4k(base + i * PAGE_SIZE, pa, flags);
	}
	vmalloc_next = base + npages * PAGE_SIZE;
	return vmalloc_next;
}

u64 vmalloc_stack(size_t npages)
{
	return vmalloc_pages(npages, PTE_W | nx);
}

u64 vmalloc_cpu_stack(size_t npages)
{
	return vmalloc_pages(npages, PTE_W | nx | PTE_CODE_RW);
}

void vfree_stack(u64 top, size_t npages)
{
	u64 base = top - npages * PAGE_SIZE;

	BUG_ON(base < VMALLOC_BASE || top > vmalloc_next || (top & (PAGE_SIZE - 1)));
	for (size_t i = 0; i < npages; i++) {
		u64 *e = pte_slot(base + i * PAGE_SIZE, 0);
		BUG_ON(!(*e & PTE_P));
		u64 pa = *e & PTE_ADDR;
		set_pte(base + i * PAGE_SIZE, 0, 0);
		invlpg(base + i * PAGE_SIZE);
		pmm_free(pa, 1);
	}
}

u64 vmalloc_code(size_t npages)
{
	/* Same region and guard page as the stacks: RW-, until flipped;
	 * the code's to write too. */
	u64 top = vmalloc_pages(npages, PTE_W | nx | PTE_CODE_RW);

	return top ? top - npages * PAGE_SIZE : 0;
}

void paging_code_exec(u64 va, size_t npages, bool exec)
{
	BUG_ON(va < VMALLOC_BASE || (va & (PAGE_SIZE - 1)));
	for (size_t i = 0; i < npages; i++) {
		u64 *e = pte_slot(va + i * PAGE_SIZE, 0);
		BUG_ON(!(*e & PTE_P));
		/* W^X: writable and no-execute, or read-only and executable. */
		set_pte(va + i * PAGE_SIZE, 0, (*e & (PTE_ADDR | PTE_CODE_RW)) | PTE_P |
			(exec ? 0 : PTE_W | nx));
		invlpg(va + i * PAGE_SIZE);
	}
}

void paging_code_rodata(u64 va, size_t npages)
{
	BUG_ON(va < VMALLOC_BASE || (va & (PAGE_SIZE - 1)));
	for (size_t i = 0; i < npages; i++) {
		u64 *e = pte_slot(va + i * PAGE_SIZE, 0);
		BUG_ON(!(*e & PTE_P));
		set_pte(va + i * PAGE_SIZE, 0, (*e & (PTE_ADDR | PTE_CODE_RW)) | PTE_P | nx);
		invlpg(va + i * PAGE_SIZE);
	}
}

/* FNV-1a over the table's entries, and over the tables below them. A
 * last-level table's (most entries are there) in four lanes folded into
 * h, as apps/bench_code.c hash_words: fewer instructions an entry, and
 * under QEMU's TCG the time is the instructions'. */
static u64 hash_table(const u64 *t, int level, u64 h)
{
	if (level == 0) {
		u64 l0 = h, l1 = h + 1, l2 = h + 2, l3 = h + 3;
		for (int i = 0; i < 512; i += 4) {
			l0 = fnv1a(l0, t[i] & ~(PTE_A | PTE_D));
			l1 = fnv1a(l1, t[i + 1] & ~(PTE_A | PTE_D));
			l2 = fnv1a(l2, t[i + 2] & ~(PTE_A | PTE_D));
			l3 = fnv1a(l3, t[i + 3] & ~(PTE_A | PTE_D));
		}
		return fnv1a(fnv1a(fnv1a(fnv1a(h, l0), l1), l2), l3);
	}
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

/* ---- the tables code run on purpose runs on ---------------------------- */

/* Give back a copy's tables: those below its first n entries, then it. */
static void free_copy(u64 *c, int level, int n)
{
	for (int i = 0; i < n && level > 0; i++)
		if ((c[i] & PTE_P) && !(c[i] & PTE_PS))
			free_copy((u64 *)(c[i] & PTE_ADDR), level - 1, 512);
	pmm_free((u64)c, 1);
}

/* A copy of the kernel's table t at this level, the tables below it
 * copied too, its leaves as pte_code_view has them; NULL when out of
 * memory. */
static u64 *copy_table(const u64 *t, int level)
{
	u64 *c = (u64 *)pmm_alloc(1);

	if (!c)
		return NULL;
	for (int i = 0; i < 512; i++) {
		u64 e = t[i];
		if (!(e & PTE_P) || level == 0 || (e & PTE_PS)) {
			c[i] = pte_code_view(e);
			continue;
		}
		u64 *below = copy_table((const u64 *)(e & PTE_ADDR), level - 1);
		if (!below) {
			free_copy(c, level, i);
			return NULL;
		}
		c[i] = (u64)below | (e & ~PTE_ADDR);
	}
	return c;
}

u64 paging_code_cr3(void)
{
	/* Without CR0.WP a store at CPL 0 ignores the R/W bits (SDM Vol. 3A
	 * 4.6.1): the copy would protect nothing. cpu_setup sets it. */
	BUG_ON(!(read_cr0() & CR0_WP));
	if (!code_pml4)
		code_pml4 = copy_table(kernel_pml4, 3);
	return (u64)code_pml4;
}

bool paging_code_readonly(u64 va)
{
	u64 k = pte_leaf(kernel_pml4, va), c = pte_leaf(code_pml4, va);

	return (k & PTE_P) && (k & PTE_W) && !(c & PTE_W);
}

/*
 * ksym.c — the kernel's own symbol table: an address to its function, a
 * name to its address.
 *
 * The table is generated at link time (tools/gen-ksyms.sh, two-pass link
 * in the Makefile): sorted text addresses, and their names. Lookups only
 * read (the index below is built once, at boot): NMI-safe, and safe on the
 * fault path. An address outside the kernel's
 * text goes to the lookup set with ksym_set_more (the programs the host
 * loaded, apps/program.c).
 *
 * A sample's call chain looks up the function a frameless leaf was in on
 * every NMI (leaf_return_of), so the lookup starts from an index built at
 * boot: the text cut into KSYM_BUCKETS equal buckets, each giving the last
 * symbol at or below its start. A lookup then steps over the few symbols
 * inside one bucket instead of a binary search over all of them (some 35
 * instructions a lookup where the search took 127).
 */
#include "kernel/kernel.h"

static ksym_more_fn more;

void ksym_set_more(ksym_more_fn fn)
{
	__atomic_store_n(&more, fn, __ATOMIC_RELEASE);
}

extern const u64 ksyms_count;
extern const u64 ksyms_addr[];
extern const u32 ksyms_name_off[];
extern const char ksyms_names[];

#define KSYM_BUCKETS	8192		/* 16 KiB of index: 64-byte buckets up to 512 KiB of text */

/* The last symbol at or below each bucket's start. Until the index is
 * built every address falls in bucket 0 (a shift of 63), whose entry 0
 * makes the lookup step from the first symbol: slow, and right. */
static u16 bucket_first[KSYM_BUCKETS];
static u32 bucket_shift = 63;		/* log2 of a bucket's bytes */

static void ksym_index_init(void)
{
	u64 text = (u64)(__text_end - __text_start), i = 0;
	u32 shift = 0;

	if (!ksyms_count || ksyms_count > 0xffff || !text)
		return;			/* (no index: every lookup steps from the first) */
	while ((text - 1) >> shift >= KSYM_BUCKETS)
		shift++;
	for (u64 b = 0; b <= (text - 1) >> shift; b++) {
		u64 start = (u64)__text_start + (b << shift);
		while (i + 1 < ksyms_count && ksyms_addr[i + 1] <= start)
			i++;
		bucket_first[b] = i;
	}
	__atomic_store_n(&bucket_shift, shift, __ATOMIC_RELEASE);
}
BOOT_HOOK(BOOT_PLATFORM, ksym_index_init);

const char *ksym_lookup(u64 addr, u64 *offset, u64 *size)
{
	if (addr < (u64)__text_start || addr >= (u64)__text_end || !ksyms_count) {
		ksym_more_fn fn = __atomic_load_n(&more, __ATOMIC_ACQUIRE);
		return fn ? fn(addr, offset, size) : NULL;
	}
	/* The last symbol with address <= addr. */
	u64 lo = bucket_first[(addr - (u64)__text_start) >>
			      __atomic_load_n(&bucket_shift, __ATOMIC_ACQUIRE)];
	while (lo + 1 < ksyms_count && ksyms_addr[lo + 1] <= addr)
		lo++;
	if (ksyms_addr[lo] > addr)
		return NULL;
	if (offset)
		*offset = addr - ksyms_addr[lo];
	if (size) {
		u64 end = lo + 1 < ksyms_count ? ksyms_addr[lo + 1] : (u64)__text_end;
		/* Several names may share an address; the next distinct one ends it. */
		for (u64 i = lo + 1; i < ksyms_count && ksyms_addr[i] == ksyms_addr[lo]; i++)
			end = i + 1 < ksyms_count ? ksyms_addr[i + 1] : (u64)__text_end;
		*size = end - ksyms_addr[lo];
	}
	return ksyms_names + ksyms_name_off[lo];
}

u64 ksym_address(const char *name)
{
	for (u64 i = 0; i < ksyms_count; i++)
		if (!strcmp(ksyms_names + ksyms_name_off[i], name))
			return ksyms_addr[i];
	return 0;
}

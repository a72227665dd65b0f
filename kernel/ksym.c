/*
 * ksym.c — the kernel's own symbol table: an address to its function, a
 * name to its address.
 *
 * The table is generated at link time (tools/gen-ksyms.sh, two-pass link
 * in the Makefile): sorted text addresses, and their names. Reads only:
 * NMI-safe, and safe on the fault path. An address outside the kernel's
 * text goes to the lookup set with ksym_set_more (the programs the host
 * loaded, apps/program.c).
 *
 * A sample's call chain looks up the function a frameless leaf was in on
 * every NMI (leaf_return_of), so the lookup starts from an index built at
 * boot: the text cut into KSYM_BUCKETS equal buckets, each giving the last
 * symbol at or below its start. A lookup then steps over the few symbols
 * inside one bucket instead of a binary search over all of them (a tenth
 * of the instructions). Until the index is built, and for a table too
 * large for it, the binary search serves.
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

static u16 bucket_first[KSYM_BUCKETS];	/* the last symbol at or below each bucket's start */
static u32 bucket_shift;		/* log2 of a bucket's bytes */
static bool bucket_ready;

static void ksym_index_init(void)
{
	u64 text = (u64)(__text_end - __text_start), i = 0;

	if (!ksyms_count || ksyms_count > 0xffff || !text)
		return;
	while ((text - 1) >> bucket_shift >= KSYM_BUCKETS)
		bucket_shift++;
	for (u64 b = 0; b <= (text - 1) >> bucket_shift; b++) {
		u64 start = (u64)__text_start + (b << bucket_shift);
		while (i + 1 < ksyms_count && ksyms_addr[i + 1] <= start)
			i++;
		bucket_first[b] = i;
	}
	__atomic_store_n(&bucket_ready, true, __ATOMIC_RELEASE);
}
BOOT_HOOK(BOOT_PLATFORM, ksym_index_init);

/* The last symbol with address <= addr (addr in the text): 0 if none is. */
static u64 last_at_or_below(u64 addr)
{
	u64 lo = 0, hi = ksyms_count;

	if (__atomic_load_n(&bucket_ready, __ATOMIC_ACQUIRE)) {
		lo = bucket_first[(addr - (u64)__text_start) >> bucket_shift];
		while (lo + 1 < hi && ksyms_addr[lo + 1] <= addr)
			lo++;
		return lo;
	}
	while (hi - lo > 1) {
		u64 mid = (lo + hi) / 2;
		if (ksyms_addr[mid] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

const char *ksym_lookup(u64 addr, u64 *offset, u64 *size)
{
	if (addr < (u64)__text_start || addr >= (u64)__text_end || !ksyms_count) {
		ksym_more_fn fn = __atomic_load_n(&more, __ATOMIC_ACQUIRE);
		return fn ? fn(addr, offset, size) : NULL;
	}
	u64 lo = last_at_or_below(addr);
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

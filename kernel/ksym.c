/*
 * ksym.c — the kernel's own symbol table: an address to its function, a
 * name to its address.
 *
 * The table is generated at link time (tools/gen-ksyms.sh, two-pass link
 * in the Makefile): sorted text addresses, and their names. Reads only:
 * NMI-safe, and safe on the fault path. An address outside the kernel's
 * text goes to the lookup set with ksym_set_more (the programs the host
 * loaded, apps/program.c).
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

const char *ksym_lookup(u64 addr, u64 *offset, u64 *size)
{
	u64 lo = 0, hi = ksyms_count;

	if (addr < (u64)__text_start || addr >= (u64)__text_end || !hi) {
		ksym_more_fn fn = __atomic_load_n(&more, __ATOMIC_ACQUIRE);
		return fn ? fn(addr, offset, size) : NULL;
	}
	/* Last symbol with address <= addr. */
	while (hi - lo > 1) {
		u64 mid = (lo + hi) / 2;
		if (ksyms_addr[mid] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (ksyms_addr[lo] > addr)
		return NULL;
	u64 end = lo + 1 < ksyms_count ? ksyms_addr[lo + 1] : (u64)__text_end;
	/* Several names may share an address; the next distinct one ends it. */
	for (u64 i = lo + 1; i < ksyms_count && ksyms_addr[i] == ksyms_addr[lo]; i++)
		end = i + 1 < ksyms_count ? ksyms_addr[i + 1] : (u64)__text_end;
	if (offset)
		*offset = addr - ksyms_addr[lo];
	if (size)
		*size = end - ksyms_addr[lo];
	return ksyms_names + ksyms_name_off[lo];
}

u64 ksym_address(const char *name)
{
	for (u64 i = 0; i < ksyms_count; i++)
		if (!strcmp(ksyms_names + ksyms_name_off[i], name))
			return ksyms_addr[i];
	return 0;
}

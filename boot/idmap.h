/*
 * idmap.h — the loader's identity map, planned and built from a list of
 * physical ranges (boot/idmap.c).
 *
 * Pure code like elfcheck.c: no firmware calls, no allocation, no libc
 * beyond <stdint.h> and <stddef.h>, so it builds into the EFI loader and
 * into the host test (test/host/test_idmap.c). The tables are written
 * where the caller says; their addresses go into the entries as they are
 * (the loader runs identity-mapped, so its pointers are physical).
 */
#ifndef BAREPERF_BOOT_IDMAP_H
#define BAREPERF_BOOT_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#define IDMAP_PAGE	4096u
#define IDMAP_TOP	(1ull << 47)	/* 4-level paging's lower canonical half */

/* One range to map: write-back (RAM the firmware marks EFI_MEMORY_WB)
 * or uncached (MMIO, holes the caller wants reachable). */
struct idmap_range {
	uint64_t base, len;
	int wb;
};

/*
 * Pages of tables needed to identity-map ranges[0, n): one PML4, a PDPT
 * per 512 GiB touched, a PD per 1 GiB touched that 1 GiB pages cannot
 * cover (no gib_pages, or the GiB not covered whole by one cache type).
 * Ranges must end below IDMAP_TOP; returns 0 if one does not.
 */
size_t idmap_pages(const struct idmap_range *r, size_t n, int gib_pages);

/*
 * Write the tables into `pages` zeroed 4 KiB pages at tables (aligned),
 * the PML4 first. Every 2 MiB block any range touches is mapped, present
 * and writable, write-back if a WB range overlaps it, else PCD|PWT;
 * blocks nothing touches stay unmapped. A whole GiB of one type becomes
 * a 1 GiB page when gib_pages. Returns the number of pages used (as
 * idmap_pages), or 0 if `pages` is too few.
 */
size_t idmap_build(const struct idmap_range *r, size_t n, int gib_pages, uint64_t *tables,
		   size_t pages);

#endif

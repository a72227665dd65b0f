/*
 * tools/util/convert_perf.h — a capture to perf.data (`bareperf convert
 * --to perf.data`); perf's build-id cache is tools/util/buildid_cache.h.
 *
 * Symbols: the symtab of the kernel.elf that ran (tools/util/session.h).
 * Errors: 0 or -1 with one line in err (no trailing newline).
 */
#ifndef BAREPERF_TOOLS_UTIL_CONVERT_PERF_H
#define BAREPERF_TOOLS_UTIL_CONVERT_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "tools/util/session.h"

#define CONVERT_KERNEL_MAP	"[kernel.kallsyms]"	/* perf's name for the kernel */

/*
 * Write a perf.data file of kernel-mode samples that `perf report`,
 * `perf script` and `perf annotate` read with kernel.elf as the kernel
 * image (vmlinux), found by its build-id. The layout and why it is that
 * way: tools/util/convert_perf.c. kernel_path names the file in the
 * header's command line.
 */
int convert_perfdata(const struct session *s, const struct symtab *t,
		     const char *kernel_path, const uint8_t *build_id, size_t build_id_len,
		     const char *out, char *err, size_t errlen);

/* perf's event type and config for a bareperf event: generic names map to
 * PERF_TYPE_HARDWARE/SOFTWARE, anything else is PERF_TYPE_RAW, config. */
void convert_event_type(const struct bp_record_event_desc *d, uint32_t *type, uint64_t *config);

#endif

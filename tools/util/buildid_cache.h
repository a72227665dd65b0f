/*
 * tools/util/buildid_cache.h — perf's build-id cache, where `perf report`
 * finds the kernel image of a converted capture by its build-id.
 * Errors: 0 or -1 with one line in err (no trailing newline).
 */
#ifndef BAREPERF_TOOLS_UTIL_BUILDID_CACHE_H
#define BAREPERF_TOOLS_UTIL_BUILDID_CACHE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Put kernel_path (absolute) into perf's build-id cache under its build-id,
 * as `perf buildid-cache -a` does; dir_out receives the cache's directory.
 */
int buildid_cache_add(const char *kernel_path, const uint8_t *id, size_t idlen,
		      char *dir_out, size_t dirlen, char *err, size_t errlen);

/*
 * Where the cache keeps the file of build-id id: DIR/.build-id/xx/rest/elf
 * (in buf); -1 if no cache directory is known (neither PERF_BUILDID_DIR
 * nor HOME). The file may not be there.
 */
int buildid_cache_path(const uint8_t *id, size_t idlen, char *buf, size_t n);

#endif

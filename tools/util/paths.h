/*
 * tools/util/paths.h — where the files bareperf needs beside itself come
 * from: the kernel, the UEFI loader's ESP tree and the SDK header.
 *
 * The binary finds them from its own location (/proc/self/exe):
 *   PREFIX/bin/bareperf    installed (make install): the kernel and the
 *                          ESP in PREFIX/lib/bareperf, bareperf.h in
 *                          PREFIX/include
 *   TREE/BUILD/bareperf    a build tree: the kernel and the ESP in the
 *                          build directory (the first of the binary's
 *                          directory and its parents, up to the tree, that
 *                          holds kernel.elf), bareperf.h in TREE/include
 * BAREPERF_LIBDIR in the environment names the directory of the kernel
 * and the ESP instead. An explicit path on the command line (-k, --build)
 * wins over all of these.
 */
#ifndef BAREPERF_TOOLS_UTIL_PATHS_H
#define BAREPERF_TOOLS_UTIL_PATHS_H

#include <limits.h>
#include <stdbool.h>

struct bp_paths {
	char libdir[PATH_MAX];		/* kernel.elf, esp/EFI/BOOT/BOOTX64.EFI */
	char includedir[PATH_MAX];	/* bareperf.h */
	bool installed;			/* PREFIX/bin/bareperf */
};

/*
 * Fill p for a binary at exe (an absolute path without symbolic links)
 * and the value of BAREPERF_LIBDIR (env; NULL or "" when unset), by the
 * rules above. Only looks at the file system; cannot fail.
 */
void paths_resolve(struct bp_paths *p, const char *exe, const char *env);

/* The same for this process, resolved once. */
const struct bp_paths *paths(void);

/* libdir/kernel.elf: the default kernel of record, bench, list-apps and
 * the readers' last resort. */
const char *paths_kernel(void);

#endif

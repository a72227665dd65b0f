/*
 * tools/util/sdk.c — see tools/util/sdk.h.
 */
#include <stdio.h>

#include "tools/util/paths.h"
#include "tools/util/sdk.h"

static const char *const sdk_flags[SDK_NCFLAGS - 1] = {
	"-std=gnu11", "-O2", "-g", "-ffreestanding", "-fno-pic", "-fno-pie",
	"-mcmodel=kernel", "-mno-red-zone", "-fno-stack-protector",
	"-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-msse2",
};

int sdk_cflags_argv(const char **argv, const char *includedir, char *ibuf, size_t ibuflen)
{
	size_t i;

	if (!includedir)
		includedir = paths()->includedir;
	if ((size_t)snprintf(ibuf, ibuflen, "-I%s", includedir) >= ibuflen)
		return -1;
	for (i = 0; i < SDK_NCFLAGS - 1; i++)
		argv[i] = sdk_flags[i];
	argv[i++] = ibuf;
	argv[i] = NULL;
	return SDK_NCFLAGS;
}

/*
 * tools/util/buildid_cache.c — perf's build-id cache, as `perf
 * buildid-cache -a FILE` fills it (tools/util/buildid_cache.h):
 * DIR/<absolute path>/<build-id>/elf holds the file (a hard link, else a
 * copy) and DIR/.build-id/<2 hex>/<rest> links to its directory
 * (tools/perf/util/build-id.c, build_id_cache__add). DIR is
 * $PERF_BUILDID_DIR, else $HOME/.debug.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/util/buildid_cache.h"
#include "tools/util/util.h"

/* mkdir -p path */
static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

/* The file into the cache: a hard link, else a copy written beside it and
 * renamed into place, so that a reader never sees half of it. */
static int cache_file(const char *from, const char *to)
{
	char tmp[PATH_MAX + 8], err[PATH_MAX];
	int fd, e;

	if (link(from, to) == 0)
		return 0;
	if (strlen(to) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, to, strlen(to));
	memcpy(tmp + strlen(to), ".XXXXXX", 8);
	if ((fd = mkstemp(tmp)) < 0)
		return -1;
	close(fd);
	if (copy_file(from, tmp, err, sizeof(err)) || chmod(tmp, 0644) || rename(tmp, to)) {
		e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

int buildid_cache_add(const char *kernel_path, const uint8_t *id, size_t idlen,
		      char *dir_out, size_t dirlen, char *err, size_t errlen)
{
	const char *env = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	char dir[PATH_MAX], hex[2 * 64 + 1], path[4 * PATH_MAX], link_dir[3 * PATH_MAX];
	char target[3 * PATH_MAX], have[3 * PATH_MAX];
	struct stat st;
	ssize_t n;

	if (!idlen || idlen > 64) {
		snprintf(err, errlen, "%s has no build-id", kernel_path);
		return -1;
	}
	if (env && *env)
		snprintf(dir, sizeof(dir), "%s", env);
	else if (home && *home)
		snprintf(dir, sizeof(dir), "%s/.debug", home);
	else {
		snprintf(err, errlen, "neither PERF_BUILDID_DIR nor HOME is set");
		return -1;
	}
	snprintf(dir_out, dirlen, "%s", dir);
	for (size_t i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	snprintf(path, sizeof(path), "%s%s/%s", dir, kernel_path, hex);
	if (mkdirs(path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	strcat(path, "/elf");
	if (stat(path, &st) && cache_file(kernel_path, path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(link_dir, sizeof(link_dir), "%s/.build-id/%.2s", dir, hex);
	if (mkdirs(link_dir)) {
		snprintf(err, errlen, "%s: %s", link_dir, strerror(errno));
		return -1;
	}
	snprintf(target, sizeof(target), "../..%s/%s", kernel_path, hex);
	snprintf(path, sizeof(path), "%s/%s", link_dir, hex + 2);
	n = readlink(path, have, sizeof(have) - 1);
	if (n >= 0 && (size_t)n == strlen(target) && !memcmp(have, target, (size_t)n))
		return 0;
	unlink(path);
	if (symlink(target, path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int buildid_cache_path(const uint8_t *id, size_t idlen, char *buf, size_t n)
{
	const char *env = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	char hex[2 * 64 + 1];

	if (!idlen || idlen > 64 || ((!env || !*env) && (!home || !*home)))
		return -1;
	for (size_t i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	if (env && *env)
		snprintf(buf, n, "%s/.build-id/%.2s/%s/elf", env, hex, hex + 2);
	else
		snprintf(buf, n, "%s/.debug/.build-id/%.2s/%s/elf", home, hex, hex + 2);
	return 0;
}

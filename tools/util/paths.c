/*
 * tools/util/paths.c — see tools/util/paths.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/util/paths.h"

/* How far above the binary the build directory and the tree may be
 * (TREE/build/host/test_x: two). */
#define PATHS_MAX_UP	4

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static bool has(const char *dir, const char *file)
{
	char path[PATH_MAX];

	return (size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) < sizeof(path) &&
	       !access(path, F_OK);
}

/* Cut dir's last component ("/a/b" -> "/a", "/a" -> "/"); false at "/". */
static bool up(char *dir)
{
	char *slash = strrchr(dir, '/');

	if (!slash || !strcmp(dir, "/"))
		return false;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	return true;
}

/* to (PATH_MAX bytes) gets from, or dir/name; a name too long for it
 * becomes "", which names no file. */
static void copy(char *to, const char *from)
{
	if ((size_t)snprintf(to, PATH_MAX, "%s", from) >= PATH_MAX)
		to[0] = '\0';
}

static void join(char *to, const char *dir, const char *name)
{
	if ((size_t)snprintf(to, PATH_MAX, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "",
			     name) >= PATH_MAX)
		to[0] = '\0';
}

/* A build tree: the tree is the nearest directory at or above bindir
 * holding include/uapi/wire.h; the build directory the nearest at or
 * above bindir, below the tree, holding kernel.elf (else bindir). */
static void resolve_tree(struct bp_paths *p, const char *bindir)
{
	char dir[PATH_MAX];
	bool lib = false;

	copy(p->libdir, bindir);
	copy(dir, bindir);
	for (int i = 0; i <= PATHS_MAX_UP; i++) {
		if (has(dir, "include/uapi/wire.h")) {
			join(p->includedir, dir, "include");
			return;
		}
		if (!lib && has(dir, "kernel.elf")) {
			copy(p->libdir, dir);
			lib = true;
		}
		if (!up(dir))
			break;
	}
	/* Not under a tree: the binary alone, its files beside it. */
	copy(dir, bindir);
	up(dir);
	join(p->includedir, dir, "include");
}

void paths_resolve(struct bp_paths *p, const char *exe, const char *env)
{
	char bindir[PATH_MAX], prefix[PATH_MAX], lib[PATH_MAX];
	const char *base;

	memset(p, 0, sizeof(*p));
	copy(bindir, exe);
	up(bindir);
	base = strrchr(bindir, '/');
	copy(prefix, bindir);
	up(prefix);
	join(lib, prefix, "lib/bareperf");
	if (base && !strcmp(base, "/bin") && is_dir(lib)) {
		p->installed = true;
		copy(p->libdir, lib);
		join(p->includedir, prefix, "include");
	} else {
		resolve_tree(p, bindir);
	}
	if (env && *env)
		copy(p->libdir, env);
}

const struct bp_paths *paths(void)
{
	static struct bp_paths p;
	static bool done;
	char exe[PATH_MAX];

	if (!done) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		/* Without /proc: the current directory stands in for the binary's. */
		if (n > 0)
			exe[n] = '\0';
		else if (getcwd(exe, sizeof(exe) - sizeof("/bareperf")))
			strcat(exe, "/bareperf");
		else
			copy(exe, "/bareperf");
		paths_resolve(&p, exe, getenv("BAREPERF_LIBDIR"));
		done = true;
	}
	return &p;
}

const char *paths_kernel(void)
{
	static char kernel[PATH_MAX];

	if (!kernel[0])
		join(kernel, paths()->libdir, "kernel.elf");
	return kernel;
}

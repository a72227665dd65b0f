/*
 * test_paths.c — where bareperf finds its kernel, ESP and SDK header from
 * its own location (tools/util/paths.c), on trees laid out in a scratch
 * directory; and the SDK's compiler flags (tools/util/sdk.c).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "test/host/tmpdir.h"
#include "tools/util/paths.h"
#include "tools/util/sdk.h"

/* Make the directories of path (relative to the scratch directory), and
 * the file itself unless path ends in '/'. */
static void lay(const char *path)
{
	char p[256];

	snprintf(p, sizeof(p), "%s", tmpdir_path(path));
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	if (p[strlen(p) - 1] != '/') {
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fclose(f);
	}
}

static int setup(void **state)
{
	(void)state;
	if (tmpdir_make("test_paths"))
		return -1;
	lay("tree/include/uapi/wire.h");
	lay("tree/build/kernel.elf");
	lay("tree/build/host/");
	lay("tree/scratch/b/");
	lay("prefix/bin/");
	lay("prefix/lib/bareperf/kernel.elf");
	lay("alone/bin/");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove();
}

static void a_build_tree_uses_its_build_directory(void **state)
{
	struct bp_paths p;

	(void)state;
	paths_resolve(&p, tmpdir_path("tree/build/bareperf"), NULL);
	assert_false(p.installed);
	assert_string_equal(p.libdir, tmpdir_path("tree/build"));
	assert_string_equal(p.includedir, tmpdir_path("tree/include"));
	/* a test binary below it: the build directory above, with the kernel */
	paths_resolve(&p, tmpdir_path("tree/build/host/test_x"), NULL);
	assert_string_equal(p.libdir, tmpdir_path("tree/build"));
	assert_string_equal(p.includedir, tmpdir_path("tree/include"));
	/* a build directory without a kernel yet: itself, not another's */
	paths_resolve(&p, tmpdir_path("tree/scratch/b/bareperf"), NULL);
	assert_string_equal(p.libdir, tmpdir_path("tree/scratch/b"));
	assert_string_equal(p.includedir, tmpdir_path("tree/include"));
}

static void an_installed_binary_uses_its_prefix(void **state)
{
	struct bp_paths p;

	(void)state;
	paths_resolve(&p, tmpdir_path("prefix/bin/bareperf"), NULL);
	assert_true(p.installed);
	assert_string_equal(p.libdir, tmpdir_path("prefix/lib/bareperf"));
	assert_string_equal(p.includedir, tmpdir_path("prefix/include"));
	/* bin/ without lib/bareperf beside it is no installation */
	paths_resolve(&p, tmpdir_path("alone/bin/bareperf"), NULL);
	assert_false(p.installed);
	assert_string_equal(p.libdir, tmpdir_path("alone/bin"));
}

static void the_environment_names_the_libdir(void **state)
{
	struct bp_paths p;

	(void)state;
	paths_resolve(&p, tmpdir_path("prefix/bin/bareperf"), "/opt/bp/lib");
	assert_string_equal(p.libdir, "/opt/bp/lib");
	assert_string_equal(p.includedir, tmpdir_path("prefix/include"));
	paths_resolve(&p, tmpdir_path("tree/build/bareperf"), "");
	assert_string_equal(p.libdir, tmpdir_path("tree/build"));
}

static void this_binary_finds_the_tree_it_was_built_in(void **state)
{
	char want[PATH_MAX];

	(void)state;
	/* build/host/test_paths, run from the tree's top directory */
	assert_non_null(realpath("include", want));
	assert_string_equal(paths()->includedir, want);
	assert_false(paths()->installed);
	assert_int_equal(strcmp(paths_kernel() + strlen(paths_kernel()) - 11, "/kernel.elf"), 0);
}

static void the_sdk_flags_are_one_list(void **state)
{
	static const char *const want[] = {
		"-std=gnu11", "-O2", "-g", "-ffreestanding", "-fno-pic", "-fno-pie",
		"-mcmodel=kernel", "-mno-red-zone", "-fno-stack-protector",
		"-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-msse2",
		"-I/opt/bp/include",
	};
	const char *av[SDK_NCFLAGS + 1];
	char inc[32], small[8];

	(void)state;
	assert_int_equal(sdk_cflags_argv(av, "/opt/bp/include", inc, sizeof(inc)), SDK_NCFLAGS);
	assert_int_equal(sizeof(want) / sizeof(want[0]), SDK_NCFLAGS);
	for (int i = 0; i < SDK_NCFLAGS; i++)
		assert_string_equal(av[i], want[i]);
	assert_null(av[SDK_NCFLAGS]);
	assert_int_equal(sdk_cflags_argv(av, "/opt/bp/include", small, sizeof(small)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_build_tree_uses_its_build_directory),
		cmocka_unit_test(an_installed_binary_uses_its_prefix),
		cmocka_unit_test(the_environment_names_the_libdir),
		cmocka_unit_test(this_binary_finds_the_tree_it_was_built_in),
		cmocka_unit_test(the_sdk_flags_are_one_list),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * tools/builtin-cflags.c — `bareperf cflags`: the SDK's compiler flags
 * (tools/util/sdk.h) on one line, for `cc -c $(bareperf cflags) prog.c`.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>

#include "tools/commands.h"
#include "tools/util/paths.h"
#include "tools/util/sdk.h"

static void usage(FILE *f)
{
	fputs("usage: bareperf cflags\n"
	      "  the compiler flags of a C file built against the SDK header bareperf.h to\n"
	      "  run on the bareperf kernel, on one line: cc -c $(bareperf cflags) prog.c\n"
	      "\n"
	      "The -I flag names the directory holding bareperf.h: PREFIX/include for an\n"
	      "installed bareperf (PREFIX/bin/bareperf), the tree's include/ for a build\n"
	      "tree's BUILD/bareperf.\n",
	      f);
}

int cmd_cflags(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *av[SDK_NCFLAGS + 1];
	char inc[PATH_MAX + 3];
	int c, n;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "bareperf cflags: bad option '%s'\n", argv[optind - 1]);
		return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "bareperf cflags: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	n = sdk_cflags_argv(av, NULL, inc, sizeof(inc));
	if (n < 0) {
		fprintf(stderr, "bareperf cflags: the include directory's name is too long\n");
		return 1;
	}
	for (int i = 0; i < n; i++)
		printf("%s%s", i ? " " : "", av[i]);
	putchar('\n');
	return ferror(stdout) ? 1 : 0;
}

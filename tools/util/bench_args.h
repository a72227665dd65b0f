/*
 * tools/util/bench_args.h — `bareperf bench`'s command line as nanoBench
 * reads it: an option named by any unique prefix of its name, and a
 * --batch line cut into words as a shell would.
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_ARGS_H
#define BAREPERF_TOOLS_UTIL_BENCH_ARGS_H

#include <stddef.h>

/*
 * The option arg names among names[0..n): itself when it is one of them,
 * else the one name it is a prefix of ("-l" for "-loop_count"), as
 * nanoBench resolves an abbreviation. NULL when it is the prefix of two
 * or more, with why naming them all ("-a is ambiguous: -asm, -avg"); arg
 * itself, why "", when it is the prefix of none (an unknown option, the
 * caller's to refuse). Only "-x" words are resolved: "--x" and what is
 * not an option come back as they are.
 */
const char *bench_opt_resolve(const char *arg, const char *const *names, int n, char *why,
			      size_t len);

/*
 * Cut line into words as a POSIX shell would without expanding anything:
 * blanks between words, '...' taken as it is, "..." with \" \\ \$ \`
 * escaped, a \ outside quotes escaping the next character. The words are
 * malloc'd into *argv (NULL-terminated; argv[0] is name, as a program's
 * own name), *argc counting name. Returns 0, or -1 with why (an unclosed
 * quote) and nothing to free.
 */
int bench_split_words(const char *name, const char *line, int *argc, char ***argv, char *why,
		      size_t len);
void bench_free_words(int argc, char **argv);

#endif

/*
 * tools/commands.h — the subcommands of the host tool `bareperf`, and
 * their table (tools/commands.c), which tools/bareperf.c dispatches
 * through and the command fuzzer (test/fuzz/fuzz_cmd.c) calls into. Each
 * takes the words after its name (argv[0] is the subcommand) and returns
 * the process exit status: 0 ok, 1 failure, 2 usage error. Errors are one
 * clear line on stderr.
 */
#ifndef BAREPERF_TOOLS_COMMANDS_H
#define BAREPERF_TOOLS_COMMANDS_H

#include <stddef.h>

int cmd_record(int argc, char **argv);		/* tools/builtin-record.c */
int cmd_bench(int argc, char **argv);		/* tools/builtin-bench.c */
int cmd_report(int argc, char **argv);		/* tools/builtin-report.c */
int cmd_stat(int argc, char **argv);		/* tools/builtin-stat.c */
int cmd_script(int argc, char **argv);		/* tools/builtin-script.c */
int cmd_list(int argc, char **argv);		/* tools/builtin-list.c: events */
int cmd_list_apps(int argc, char **argv);	/* tools/builtin-list.c */
int cmd_convert(int argc, char **argv);		/* tools/builtin-convert.c */
int cmd_flamegraph(int argc, char **argv);	/* tools/builtin-flamegraph.c */
int cmd_cflags(int argc, char **argv);		/* tools/builtin-cflags.c */

struct bareperf_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;		/* one sentence, for bareperf --help */
};

/* Every command, in the order bareperf --help lists them. */
extern const struct bareperf_command bareperf_commands[];
extern const size_t bareperf_ncommands;

/* The command called name, or NULL. */
const struct bareperf_command *bareperf_command(const char *name);

/* Wire the hooks between commands and the decoders they may use (convert
 * --to chrome's instruction-trace slices, tools/util/chrome.h): once,
 * before any command runs. */
void bareperf_commands_init(void);

#endif

/*
 * tools/commands.h — the subcommands of the host tool `bareperf`
 * (tools/bareperf.c dispatches). Each takes the words after its name
 * (argv[0] is the subcommand) and returns the process exit status:
 * 0 ok, 1 failure, 2 usage error. Errors are one clear line on stderr.
 */
#ifndef BAREPERF_TOOLS_COMMANDS_H
#define BAREPERF_TOOLS_COMMANDS_H

int cmd_record(int argc, char **argv);		/* tools/builtin-record.c */
int cmd_bench(int argc, char **argv);		/* tools/builtin-bench.c */
int cmd_report(int argc, char **argv);		/* tools/builtin-report.c */
int cmd_stat(int argc, char **argv);		/* tools/builtin-stat.c */
int cmd_script(int argc, char **argv);		/* tools/builtin-script.c */
int cmd_list(int argc, char **argv);		/* tools/builtin-list.c: events */
int cmd_list_apps(int argc, char **argv);	/* tools/builtin-list.c */
int cmd_convert(int argc, char **argv);		/* tools/builtin-convert.c */
int cmd_flamegraph(int argc, char **argv);	/* tools/builtin-flamegraph.c */

#endif

/*
 * tools/util/cli.h — what every bareperf command's command line shares.
 *
 * Input: like perf, `-i -` reads the capture from standard input, as a
 * stream (tools/util/capture.h): its header is checked from its first
 * bytes, and nothing is copied.
 */
#ifndef BAREPERF_TOOLS_CLI_H
#define BAREPERF_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/util/session.h"

/*
 * Check the input before loading it: `-i -` on a terminal is refused.
 * tmp (n bytes) is set to "": the commands' temporary-file hooks below
 * have nothing to do. 0, or -1 after one line on stderr naming
 * `bareperf cmd`.
 */
int cli_input(const char *cmd, const char **input, char *tmp, size_t n);
/* Nothing if tmp is "" (what cli_input leaves). */
void cli_input_done(const char *tmp);
/* Where text (n bytes, a message or a session's path) names the file
 * tmp, name what it holds instead. Nothing if tmp is "". */
void cli_input_name(const char *tmp, const char *name, char *text, size_t n);

/*
 * Open a capture for a converter: cli_input, session_load(in) without
 * the console, then the kernel's symbols as report does (session_symtab:
 * kernel, else kernel.elf next to the capture or the default kernel,
 * checked against the capture's build-id unless force); kpath (PATH_MAX
 * bytes) receives the absolute path of the file used. Prints errors
 * (naming `bareperf cmd`) and the capture's losses on stderr. 0 or -1.
 */
int cli_open_capture(const char *cmd, const char *in, const char *kernel, bool force,
		     struct session *s, struct symtab **t, char *kpath);

#endif

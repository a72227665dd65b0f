/*
 * tools/util/cli.h — what every bareperf command's command line shares.
 *
 * Input: like perf, `-i -` reads the capture from standard input. The
 * loader reads files (it may map them), so the stream is copied into a
 * private temporary file first ($TMPDIR, else /tmp), removed again by
 * cli_input_done once the capture is loaded.
 */
#ifndef BAREPERF_TOOLS_CLI_H
#define BAREPERF_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/util/session.h"

/*
 * If *input is "-", copy standard input into a temporary file, name it in
 * tmp (n bytes) and point *input at it; else leave both alone (tmp "").
 * 0, or -1 after one line on stderr naming `bareperf cmd`.
 */
int cli_input(const char *cmd, const char **input, char *tmp, size_t n);
/* Remove cli_input's temporary file, if any (tmp may be ""). */
void cli_input_done(const char *tmp);
/* Where text (n bytes, a message or a session's path) names the
 * temporary file tmp, name what it holds instead ("(standard input)"):
 * the user never gave that name. Nothing if tmp is "". */
void cli_input_name(const char *tmp, const char *name, char *text, size_t n);

/*
 * Open a capture for a converter: cli_input, session_load(in) without
 * the console, then the kernel's symbols as report does (session_symtab:
 * kernel, else kernel.elf next to the capture or build/kernel.elf,
 * checked against the capture's build-id unless force); kpath (PATH_MAX
 * bytes) receives the absolute path of the file used. Prints errors
 * (naming `bareperf cmd`) and the capture's losses on stderr. 0 or -1.
 */
int cli_open_capture(const char *cmd, const char *in, const char *kernel, bool force,
		     struct session *s, struct symtab **t, char *kpath);

#endif

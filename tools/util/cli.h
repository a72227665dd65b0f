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

#include <stddef.h>

/*
 * If *input is "-", copy standard input into a temporary file, name it in
 * tmp (n bytes) and point *input at it; else leave both alone (tmp "").
 * 0, or -1 after one line on stderr naming `bareperf cmd`.
 */
int cli_input(const char *cmd, const char **input, char *tmp, size_t n);
/* Remove cli_input's temporary file, if any (tmp may be ""). */
void cli_input_done(const char *tmp);

#endif

/*
 * cmdline.h — kernel command-line parsing (kernel/cmdline.c).
 *
 * Syntax: space-separated key=value options, then optionally "--" and the
 * words handed to the app as argv. Pure code: also built into the host test
 * test/host/test_cmdline.c.
 */
#ifndef BAREPERF_KERNEL_CMDLINE_H
#define BAREPERF_KERNEL_CMDLINE_H

#include <stddef.h>

struct kernel_options;

#define CMDLINE_DEFAULT_APP	"suite"

void cmdline_defaults(struct kernel_options *o);
/* Parse `line` in place (words are cut out of it and kept by *o).
 * Returns 0, or -1 with a one-line reason in err. */
int cmdline_parse(char *line, struct kernel_options *o, char *err, size_t errlen);
/* One line per option: "  name=VALUE  description". */
void cmdline_help(void (*out)(const char *line));

#endif

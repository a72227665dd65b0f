/*
 * tools/util/sigclean.h — what a stop signal must not leave behind. A
 * command that starts QEMU (tools/util/qemu.c) or makes a private
 * temporary directory registers them here; SIGINT, SIGTERM or SIGHUP,
 * where the command did not catch it itself, then stops each QEMU (its
 * process group: SIGTERM, SIGKILL after 2 s of wall-clock time), reaps
 * it, removes each directory, and ends the process by the same signal
 * (a shell sees 128 + the signal: 130 for Ctrl-C). A command that
 * catches the signals (bareperf record) puts these handlers back when it
 * is done, and meanwhile stops its QEMU itself.
 *
 * The handler is installed over the default action only: a signal the
 * command was started with ignored (nohup, a background job) stays
 * ignored. Only the process that registered acts: a forked child between
 * fork and exec does nothing but die.
 */
#ifndef BAREPERF_TOOLS_UTIL_SIGCLEAN_H
#define BAREPERF_TOOLS_UTIL_SIGCLEAN_H

#include <sys/types.h>

/* A directory of ours (an absolute path under /tmp, at most 95
 * characters), removed with all it holds. 0, or -1 when full. */
int sigclean_add_dir(const char *dir);
void sigclean_del_dir(const char *dir);

/* A child leading its own process group, stopped and reaped. 0, or -1 when full. */
int sigclean_add_group(pid_t pgid);
void sigclean_del_group(pid_t pgid);

#endif

/*
 * tmpdir.h — a host test's scratch directory, made in its group setup and
 * removed with all it holds in its teardown. One directory a process.
 */
#ifndef BAREPERF_TEST_HOST_TMPDIR_H
#define BAREPERF_TEST_HOST_TMPDIR_H

/* Make /tmp/NAME.XXXXXX; 0, or -1 when mkdtemp fails. */
int tmpdir_make(const char *name);
/* DIR/file, in one of four buffers used in turn: a call may take up to
 * four of these at once. */
char *tmpdir_path(const char *file);
/* Remove the directory and what it holds; 0 when that succeeded. */
int tmpdir_remove(void);

#endif

/*
 * tools/util/qemu.h — starting the bareperf kernel in QEMU for `bareperf
 * record` and `bareperf bench`, as tools/bpqemu.py does: PVH direct boot through qboot, or UEFI through
 * OVMF and a private copy of the ESP whose bareperf.cfg carries the
 * kernel command line. The stream comes on QEMU's 16550 (-serial stdio:
 * a pipe to us), or with virtio on a virtio-console port (a unix socket
 * chardev in a private temporary directory) while the UART keeps the
 * plain console. isa-debug-exit carries the kernel's exit code.
 *
 * Use: qemu_prepare (checks the files, builds the command line; nothing
 * runs yet), qemu_start, qemu_connect (virtio), read the pipes, feed
 * QEMU's stderr to qemu_err_read, then qemu_reap and qemu_cleanup.
 *
 * Errors: -1 with one line in err (tools/util/util.h).
 */
#ifndef BAREPERF_TOOLS_UTIL_QEMU_H
#define BAREPERF_TOOLS_UTIL_QEMU_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define QEMU_OVMF_CODE	"/usr/share/OVMF/OVMF_CODE_4M.fd"
#define QEMU_OVMF_VARS	"/usr/share/OVMF/OVMF_VARS_4M.fd"
#define QEMU_QBOOT	"/usr/share/qemu/qboot.rom"

/* What to boot, and how. */
struct qemu_config {
	const char *kernel;		/* kernel.elf */
	const char *build;		/* the build directory (its esp/ for uefi) */
	const char *cmdline;		/* the kernel command line (no newline) */
	unsigned smp, mem;		/* CPUs, MiB */
	bool uefi, virtio, icount, kvm;
	bool serial_in;			/* QEMU's stdin (the UART's input) a pipe from us */
	bool no_stderr;			/* QEMU's stderr to /dev/null, not a pipe to us */
};

/* QEMU's own stderr lines, one at a time, without the newline. */
typedef void (*qemu_line_fn)(void *ctx, const char *line);

struct qemu {
	pid_t pid;			/* -1 when not running */
	int err_fd;			/* QEMU's stderr, our end; -1 when closed */
	int in_fd;			/* serial_in: QEMU's stdin, our end; else -1 */
	bool serial_in, no_stderr;
	char errline[512];		/* its current line */
	size_t errlen;
	unsigned err_lines;		/* lines it wrote on stderr (not ours to stop it) */
	char dir[64];			/* private temp dir: socket, ESP copy, vars */
	char sock[96];			/* the virtio-console socket */
	char *argv[64];			/* the QEMU command, NULL-terminated */
	int argc;
	char cmdline[1024];		/* the kernel command line it boots with */
	char link[64];			/* the link, as the capture names it */
	char strs[16][4200];		/* storage for built arguments */
	int nstrs;
};

/*
 * Check the kernel (and for uefi the loader and OVMF), make the private
 * directory (and ESP copy), and build q's command. q is reset first; on
 * failure q->dir may exist: qemu_cleanup removes it.
 */
int qemu_prepare(struct qemu *q, const struct qemu_config *c, char *err, size_t errlen);

/*
 * Start QEMU in its own process group (Ctrl-C reaches us, and we stop
 * it: the command itself, or tools/util/sigclean.h's handler, which also
 * removes q's directory), stdin /dev/null, stdout and stderr on pipes: *out is our end of
 * its stdout (the UART), q->err_fd of its stderr. With serial_in its
 * stdin is a pipe too (q->in_fd: what we write there reaches the guest's
 * UART); with no_stderr its stderr goes to /dev/null (q->err_fd -1).
 * Started again after qemu_reap, it boots the same machine (the same
 * ESP copy and firmware variables).
 */
int qemu_start(struct qemu *q, int *out, char *err, size_t errlen);

/* The virtio chardev: QEMU waits (wait=on) until we connect. The fd, or -1. */
int qemu_connect(struct qemu *q, char *err, size_t errlen);

/*
 * Read what QEMU wrote on stderr (call when q->err_fd is readable) and
 * pass each whole line to fn, except the one it prints when we stop it
 * ("terminating on signal"). At EOF the last partial line goes too and
 * q->err_fd is closed (-1).
 */
void qemu_err_read(struct qemu *q, qemu_line_fn fn, void *ctx);

/*
 * Stop QEMU if it still runs (kill_it: SIGTERM to its group, SIGKILL
 * after 2 s of wall-clock time) and reap it: its wait status, or -1 if
 * it was not running.
 */
int qemu_reap(struct qemu *q, bool kill_it);

/* Remove q's private directory (only ever a /tmp/bareperf-rec-* of ours). */
void qemu_cleanup(struct qemu *q);

#endif

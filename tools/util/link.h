/*
 * tools/util/link.h — the byte links the kernel's stream comes over:
 * a serial line to a real machine (a tty, or a pty standing in for one)
 * and a unix socket (QEMU's virtio-console chardev). What flows on them
 * is the wire format (uapi/wire.h); this file only opens them.
 *
 * Errors: -1 with one line in err (tools/util/util.h).
 */
#ifndef BAREPERF_TOOLS_UTIL_LINK_H
#define BAREPERF_TOOLS_UTIL_LINK_H

#include <stddef.h>
#include <sys/types.h>
#include <termios.h>

/* The termios speed constant for baud, or 0 if termios has none. */
speed_t link_baud_speed(unsigned baud);

/*
 * Open a serial device for receiving the stream: O_RDWR | O_NOCTTY, raw
 * (cfmakeraw's flags: no echo, no line editing, no CR/LF translation, no
 * signals), 8N1, no hardware or software flow control, CLOCAL and CREAD,
 * VMIN 0 / VTIME 1 (reads return what arrived within 0.1 s), the given
 * speed both ways; the settings are read back and checked. *saved gets
 * the previous settings (restore with tcsetattr). Returns the fd, or -1
 * with one line in err.
 */
int link_tty_open(const char *dev, unsigned baud, struct termios *saved,
		  char *err, size_t errlen);

/*
 * Connect to the unix stream socket at path, which its server (owner, a
 * child process) is about to open: retried every 20 ms for up to
 * timeout_s seconds of wall-clock time, or until owner has exited.
 * Returns the fd; -2 with err when nobody listened in time, -1 with err
 * on any other failure.
 */
int link_unix_connect(const char *path, pid_t owner, double timeout_s,
		      char *err, size_t errlen);

#endif

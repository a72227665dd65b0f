/*
 * tools/record.h — the parts of `bareperf record` its unit test drives
 * directly (test/host/test_record.c); the command is cmd_record().
 */
#ifndef BAREPERF_TOOLS_RECORD_H
#define BAREPERF_TOOLS_RECORD_H

#include <stddef.h>
#include <termios.h>

/* The termios speed constant for baud, or 0 if termios has none. */
speed_t record_baud_speed(unsigned baud);

/*
 * Open a serial device for receiving the stream: O_RDWR | O_NOCTTY, raw
 * (cfmakeraw's flags: no echo, no line editing, no CR/LF translation, no
 * signals), 8N1, no hardware or software flow control, CLOCAL and CREAD,
 * VMIN 0 / VTIME 1 (reads return what arrived within 0.1 s), the given
 * speed both ways; the settings are read back and checked. *saved gets
 * the previous settings (restore with tcsetattr). Returns the fd, or -1
 * with one line in err.
 */
int record_tty_open(const char *dev, unsigned baud, struct termios *saved,
		    char *err, size_t errlen);

#endif

/*
 * tools/util/link.c — serial lines and unix sockets (tools/util/link.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/util/link.h"
#include "tools/util/util.h"

static const struct { unsigned baud; speed_t speed; } speeds[] = {
	{ 50, B50 }, { 75, B75 }, { 110, B110 }, { 134, B134 }, { 150, B150 },
	{ 200, B200 }, { 300, B300 }, { 600, B600 }, { 1200, B1200 }, { 1800, B1800 },
	{ 2400, B2400 }, { 4800, B4800 }, { 9600, B9600 }, { 19200, B19200 },
	{ 38400, B38400 }, { 57600, B57600 }, { 115200, B115200 }, { 230400, B230400 },
	{ 460800, B460800 }, { 500000, B500000 }, { 576000, B576000 }, { 921600, B921600 },
	{ 1000000, B1000000 }, { 1152000, B1152000 }, { 1500000, B1500000 },
	{ 2000000, B2000000 }, { 2500000, B2500000 }, { 3000000, B3000000 },
	{ 3500000, B3500000 }, { 4000000, B4000000 },
};

speed_t link_baud_speed(unsigned baud)
{
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].baud == baud)
			return speeds[i].speed;
	return 0;
}

int link_tty_open(const char *dev, unsigned baud, struct termios *saved,
		  char *err, size_t errlen)
{
	speed_t sp = link_baud_speed(baud);
	struct termios t, back;
	int fd;

	if (!sp)
		return fail(err, errlen, "--baud %u: not a speed termios knows (e.g. 9600, "
			    "115200, 921600)", baud);
	fd = open(dev, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, "%s: %s", dev, strerror(errno));
	if (tcgetattr(fd, saved)) {
		int e = errno;
		close(fd);
		return fail(err, errlen, "%s: not a serial line (%s)", dev, strerror(e));
	}
	t = *saved;
	/* cfmakeraw(3), spelled out: bytes pass through untouched. */
	t.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL |
				 IXON | IXOFF | IXANY | INPCK);
	t.c_oflag &= ~(tcflag_t)OPOST;
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
	/* 8N1, no hardware flow control, ignore modem lines, enable the receiver. */
	t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB | CSTOPB | CRTSCTS);
	t.c_cflag |= CS8 | CLOCAL | CREAD;
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 1;
	if (cfsetispeed(&t, sp) || cfsetospeed(&t, sp) || tcsetattr(fd, TCSANOW, &t)) {
		int e = errno;
		close(fd);
		return fail(err, errlen, "%s: cannot set %u 8N1 raw: %s", dev, baud, strerror(e));
	}
	/* tcsetattr succeeds if any one change took: read it back. */
	if (tcgetattr(fd, &back) || (back.c_cflag & (CSIZE | PARENB | CSTOPB | CRTSCTS)) != CS8 ||
	    (back.c_lflag & (ICANON | ECHO | ISIG)) || (back.c_iflag & (IXON | ICRNL)) ||
	    cfgetispeed(&back) != sp) {
		tcsetattr(fd, TCSANOW, saved);
		close(fd);
		return fail(err, errlen, "%s: the driver did not accept %u 8N1 raw", dev, baud);
	}
	return fd;
}

int link_unix_connect(const char *path, pid_t owner, double timeout_s,
		      char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	double t0 = now_s();

	if (strlen(path) >= sizeof(a.sun_path))
		return fail(err, errlen, "%s: path too long for a unix socket", path);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(err, errlen, "socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			return fd;
		close(fd);
		if (now_s() - t0 > timeout_s || waitpid(owner, NULL, WNOHANG) == owner)
			return fail_code(-2, err, errlen, "%s: nobody listens on it (after %.0f s)",
					 path, now_s() - t0);
		usleep(20000);
	}
}

/*
 * test_record — `bareperf record --tty` with a pty pair standing in for
 * the serial device: the termios set-up (raw 8N1, no flow control, the
 * speed, VMIN/VTIME), a recorded stream fed through the master side and
 * written byte for byte into the capture, the stop after every CPU's
 * APP_STOP and a quiet spell, the device going away (EIO), and Ctrl-C
 * leaving a valid capture marked interrupted. With an app, the START_RUN
 * request record sends (tools/util/control.c), decoded as the kernel's
 * apps/run_request.c parses it, and the options it refuses over --tty.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "test/host/capgen.h"
#include "wire/frame.h"
#include "tools/commands.h"
#include "tools/util/control.h"
#include "tools/util/link.h"
#include "tools/util/record_live.h"
#include "tools/util/session.h"
#include "uapi/wire.h"

static char err[512];
static char in_path[64], out_path[64];
static const uint8_t bid[20] = { 0x11, 0x22, 0x33, 0x44, 0x55 };

struct pty {
	int master;
	char slave[128];
};

static void pty_open(struct pty *p)
{
	p->master = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(p->master >= 0);
	assert_int_equal(grantpt(p->master), 0);
	assert_int_equal(unlockpt(p->master), 0);
	assert_int_equal(ptsname_r(p->master, p->slave, sizeof(p->slave)), 0);
}

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(in_path, sizeof(in_path), "/tmp/test_record_in-XXXXXX");
	snprintf(out_path, sizeof(out_path), "/tmp/test_record_out-XXXXXX");
	if ((fd = mkstemp(in_path)) < 0)
		return -1;
	close(fd);
	if ((fd = mkstemp(out_path)) < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(in_path);
	unlink(out_path);
	return 0;
}

static void speeds(void **state)
{
	(void)state;
	assert_int_equal(link_baud_speed(115200), B115200);
	assert_int_equal(link_baud_speed(9600), B9600);
	assert_int_equal(link_baud_speed(921600), B921600);
	assert_int_equal(link_baud_speed(12345), 0);
}

static void termios_setup(void **state)
{
	struct pty p;
	struct termios saved, t;
	int fd;

	(void)state;
	pty_open(&p);
	fd = link_tty_open(p.slave, 921600, &saved, err, sizeof(err));
	if (fd < 0)
		fail_msg("link_tty_open: %s", err);
	assert_int_equal(tcgetattr(fd, &t), 0);
	assert_int_equal(t.c_cflag & CSIZE, CS8);
	assert_int_equal(t.c_cflag & (PARENB | CSTOPB | CRTSCTS), 0);
	assert_int_equal(t.c_cflag & (CLOCAL | CREAD), CLOCAL | CREAD);
	assert_int_equal(t.c_lflag & (ICANON | ECHO | ECHONL | ISIG | IEXTEN), 0);
	assert_int_equal(t.c_iflag & (IXON | IXOFF | ICRNL | INLCR | IGNCR | ISTRIP | BRKINT), 0);
	assert_int_equal(t.c_oflag & OPOST, 0);
	assert_int_equal(t.c_cc[VMIN], 0);
	assert_int_equal(t.c_cc[VTIME], 1);
	assert_int_equal(cfgetispeed(&t), B921600);
	assert_int_equal(cfgetospeed(&t), B921600);
	/* The saved settings are the pty's defaults: a canonical line. */
	assert_true(saved.c_lflag & ICANON);
	close(fd);
	close(p.master);

	assert_int_equal(link_tty_open("/dev/null", 115200, &saved, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a serial line"));
	assert_int_equal(link_tty_open("/nonexistent/tty", 115200, &saved, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(link_tty_open(p.slave, 12345, &saved, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--baud 12345"));
}

/* A two-CPU run, complete (with_stop) or cut before the APP_STOPs; the
 * stream bytes (after the capture header) into *data. */
static size_t make_stream(bool with_stop, uint8_t **data)
{
	struct capgen *g = malloc(sizeof(*g));
	struct capture_reader r;
	size_t n;

	assert_non_null(g);
	assert_int_equal(capgen_open(g, in_path, CAPGEN_ST,
				     "bareperf: booted via UEFI\r\nstream: starting\r\n", err,
				     sizeof(err)), 0);
	capgen_meta(g, 2, 1000000000, 0, bid, sizeof(bid));
	capgen_event(g, 0, "cpu-clock", 0, 250000);
	for (unsigned c = 0; c < 2; c++) {
		capgen_cpu(g, c, BP_PMU_SOFT);
		capgen_app(g, c, true, 1, "loopnest", 0, 0);
	}
	capgen_flush(g, 0);
	for (int i = 0; i < 3000; i++)
		capgen_sample(g, (unsigned)i % 2, 0, 0xffffffff80100000ull + (uint64_t)(i % 77) * 4,
			      (uint64_t)i * 250000, 250000, 1, 0, NULL);
	capgen_lost(g, 1, 5);
	if (with_stop)
		for (unsigned c = 0; c < 2; c++)
			capgen_app(g, c, false, 1, NULL, 900000000, 0);
	for (unsigned c = 0; c < 2; c++)
		capgen_flush(g, c);
	capgen_console(g, 0, "app: loopnest: exit status 0\r\n");
	g->no_end = !with_stop;		/* cut: the kernel's END never came */
	assert_int_equal(capgen_close(g, 0, err, sizeof(err)), 0);
	free(g);
	assert_int_equal(capture_open(&r, in_path, err, sizeof(err)), 0);
	n = r.info.data_avail;
	*data = malloc(n);
	assert_int_equal(capture_read(&r, *data, n, err, sizeof(err)), (long)n);
	capture_close_reader(&r);
	return n;
}

/*
 * The writer: waits until the recorder has set the line raw (a canonical
 * line would turn CR into LF), then sends data in uneven pieces, then
 * keeps the master open (hold_s) or closes it at once.
 */
static pid_t feeder(struct pty *p, const uint8_t *data, size_t n, double hold_s)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid)
		return pid;
	int s = open(p->slave, O_RDWR | O_NOCTTY);
	struct termios t;
	for (int i = 0; i < 500; i++) {
		if (s >= 0 && !tcgetattr(s, &t) && !(t.c_lflag & ICANON))
			break;
		usleep(10000);
	}
	for (size_t off = 0, k = 1; off < n; off += k, k = k * 3 % 4093 + 1) {
		if (k > n - off)
			k = n - off;
		if (write(p->master, data + off, k) != (ssize_t)k)
			_exit(3);
	}
	if (hold_s > 0)
		usleep((useconds_t)(hold_s * 1e6));
	_exit(0);
}

static int record(const char *tty, const char *quiet_time)
{
	char *argv[] = { "record", "-q", "--tty", (char *)tty, "--quiet-time", (char *)quiet_time,
			 "-o", out_path, NULL };
	return cmd_record(8, argv);
}

static void check_capture(const uint8_t *data, size_t n, size_t expect_n, bool interrupted)
{
	struct capture_reader r;
	uint8_t *got = malloc(n + 1);

	assert_int_equal(capture_open(&r, out_path, err, sizeof(err)), 0);
	assert_true(r.info.complete);
	assert_int_equal(r.info.interrupted, interrupted);
	assert_int_equal(r.info.hdr.link_kind, WIRE_LINK_TTY);
	assert_int_equal(r.info.hdr.baud, 115200);
	assert_int_equal(r.info.data_avail, expect_n);
	assert_int_equal(capture_read(&r, got, n, err, sizeof(err)), (long)expect_n);
	assert_memory_equal(got, data, expect_n);	/* byte for byte as sent */
	if (expect_n == n) {
		/* RUN_META's build-id went into the header. */
		assert_int_equal(r.info.hdr.build_id_size, 20);
		assert_memory_equal(r.info.hdr.build_id, bid, sizeof(bid));
	}
	capture_close_reader(&r);
	free(got);
}

static void records_a_stream(void **state)
{
	struct pty p;
	uint8_t *data;
	size_t n = make_stream(true, &data);
	struct timespec t0, t1;
	int st;

	(void)state;
	pty_open(&p);
	/* The feeder keeps the line open: record stops on the APP_STOPs. */
	pid_t pid = feeder(&p, data, n, 20);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(record(p.slave, "0.3"), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	close(p.master);
	check_capture(data, n, n, false);

	struct session s;
	assert_int_equal(session_load(&s, out_path, err, sizeof(err)), 0);
	assert_int_equal(s.nsamples, 3000);
	assert_int_equal(s.loss.ring_lost[1], 5);
	assert_int_equal(s.loss.crc_errors + s.loss.bad_frames + s.loss.frames_lost_total, 0);
	assert_non_null(strstr(s.console, "booted via UEFI"));
	session_free(&s);
	free(data);
}

static void device_goes_away(void **state)
{
	struct pty p;
	uint8_t *data;
	size_t n = make_stream(false, &data);
	int st;

	(void)state;
	pty_open(&p);
	pid_t pid = feeder(&p, data, n, 0.3);
	/* The last master fd closes when the feeder exits: reads fail with EIO. */
	close(p.master);
	/* Before the run ended: status 1, and the capture holds what arrived. */
	assert_int_equal(record(p.slave, "1"), 1);
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	check_capture(data, n, n, false);
	free(data);
}

static void ctrl_c_keeps_a_valid_capture(void **state)
{
	struct pty p;
	uint8_t *data;
	size_t n = make_stream(false, &data), half = n / 2;
	int st;

	(void)state;
	pty_open(&p);
	unlink(out_path);	/* no earlier test's capture can look like progress */
	pid_t rec = fork();
	assert_true(rec >= 0);
	if (!rec)
		_exit(record(p.slave, "1"));
	/* Half the stream, no APP_STOP: only Ctrl-C ends this recording. */
	pid_t pid = feeder(&p, data, half, 30);
	for (int i = 0; i < 300; i++) {
		struct capture_reader r;
		bool done = !capture_open(&r, out_path, err, sizeof(err)) &&
			    r.info.data_avail >= half;
		capture_close_reader(&r);
		if (done)
			break;
		usleep(10000);
	}
	kill(rec, SIGINT);
	waitpid(rec, &st, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 130);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	close(p.master);
	check_capture(data, n, half, true);

	struct session s;
	assert_int_equal(session_load(&s, out_path, err, sizeof(err)), 0);
	assert_true(s.interrupted);
	assert_true(s.nsamples > 0);
	session_free(&s);
	free(data);
}

/* One {type, len, value} triple of a START_RUN message. */
struct param {
	uint16_t type, len;
	const uint8_t *v;
};

/*
 * The triples of the START_RUN message msg (n bytes), walked as
XX header's length is the
 * rest of msg, and every triple lies inside it. Their number.
 */
static int params_of(const uint8_t *msg, size_t n, struct param *out, int max)
{
	struct wire_ctl_msg m;
	int k = 0;

	assert_true(n >= sizeof(m));
	memcpy(&m, msg, sizeof(m));
	assert_int_equal(m.type, WIRE_CTL_START_RUN);
	assert_int_equal(m.len, n - sizeof(m));
	for (size_t at = sizeof(m); at < n; k++) {
		struct wire_ctl_msg t;
		assert_true(n - at >= sizeof(t));
		memcpy(&t, msg + at, sizeof(t));
		assert_true(t.len <= n - at - sizeof(t));
		assert_true(k < max);
		out[k] = (struct param){ t.type, t.len, msg + at + sizeof(t) };
		at += sizeof(t) + t.len;
	}
	return k;
}

static void assert_text(const struct param *p, uint16_t type, const char *text)
{
	assert_int_equal(p->type, type);
	assert_int_equal(p->len, strlen(text));
	assert_memory_equal(p->v, text, p->len);
}

/* A u64 parameter: 8 bytes, little-endian (the kernel memcpy's it on x86). */
static void assert_u64(const struct param *p, uint16_t type, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	assert_int_equal(p->type, type);
	assert_int_equal(p->len, 8);
	assert_memory_equal(p->v, le, 8);
}

static void start_run_message(void **state)
{
	static uint8_t msg[1 << 17];
	char *args[] = { "n=3", "quick" };
	struct ctl_run r = {
		.app = "loopnest", .args = args, .nargs = 2,
		.events = "cpu-clock", .period = 100000, .cpus = "1",
		.count = "tsc,,task-clock,", .has_max_rate = true,
		.max_rate = 0x0102030405060708ull, .trace = "sstep:sieve",
	};
	struct param p[16];
	size_t n;

	(void)state;
	n = ctl_start_run_msg(&r, msg, sizeof(msg));
	assert_true(n > 0);
	assert_int_equal(params_of(msg, n, p, 16), 11);
	assert_int_equal(p[0].type, WIRE_RUN_NONCE);
	assert_int_equal(p[0].len, 8);
	assert_text(&p[1], WIRE_RUN_APP, "loopnest");
	assert_text(&p[2], WIRE_RUN_EVENT, "cpu-clock");
	assert_u64(&p[3], WIRE_RUN_PERIOD, 100000);
	assert_text(&p[4], WIRE_RUN_CPUS, "1");
	assert_text(&p[5], WIRE_RUN_ARG, "n=3");
	assert_text(&p[6], WIRE_RUN_ARG, "quick");
	/* One COUNT per counting event; the empty items are not sent. */
	assert_text(&p[7], WIRE_RUN_COUNT, "tsc");
	assert_text(&p[8], WIRE_RUN_COUNT, "task-clock");
	assert_u64(&p[9], WIRE_RUN_MAX_RATE, 0x0102030405060708ull);
	assert_text(&p[10], WIRE_RUN_TRACE, "sstep:sieve");

	/* max_rate 0 is "no limit", sent; without has_max_rate, none. */
	r.max_rate = 0;
	n = ctl_start_run_msg(&r, msg, sizeof(msg));
	assert_int_equal(params_of(msg, n, p, 16), 11);
	assert_u64(&p[9], WIRE_RUN_MAX_RATE, 0);
	r = (struct ctl_run){ .app = "loopnest", .count = "tsc" };
	n = ctl_start_run_msg(&r, msg, sizeof(msg));
	assert_int_equal(params_of(msg, n, p, 16), 3);
	assert_text(&p[2], WIRE_RUN_COUNT, "tsc");
	/* A program's limit, when given (record --run-timeout). */
	r = (struct ctl_run){ .app = "hang", .timeout_ms = 2500 };
	n = ctl_start_run_msg(&r, msg, sizeof(msg));
	assert_int_equal(params_of(msg, n, p, 16), 3);
	assert_u64(&p[2], WIRE_RUN_TIMEOUT_MS, 2500);

	/* Too long for cap, by one byte: refused whole (0), never cut. */
	r = (struct ctl_run){ .app = "loopnest", .count = "tsc,task-clock", .trace = "all",
			      .has_max_rate = true, .max_rate = 1000 };
	n = ctl_start_run_msg(&r, msg, sizeof(msg));
	assert_int_equal(n, 4 + 12 + 12 + 7 + 14 + 12 + 7);
	assert_int_equal(ctl_start_run_msg(&r, msg, n), n);
	assert_int_equal(ctl_start_run_msg(&r, msg, n - 1), 0);
	assert_int_equal(ctl_start_run_msg(&r, msg, 3), 0);

	/* A value longer than a triple's u16 length, and a message longer
	 * than the header's: refused, however large cap is. */
	char *big = malloc(70000);
	assert_non_null(big);
	memset(big, 'a', 69999);
	big[69999] = 0;
	r = (struct ctl_run){ .app = "loopnest", .trace = big };
	assert_int_equal(ctl_start_run_msg(&r, msg, sizeof(msg)), 0);
	big[40000] = ',';
	r = (struct ctl_run){ .app = "loopnest", .count = big };
	assert_int_equal(ctl_start_run_msg(&r, msg, sizeof(msg)), 0);
	free(big);

	/* ctl_client_init holds CTL_MSG_MAX: more is refused. */
	struct ctl_client *c = malloc(sizeof(*c));
	char *many[64];
	char arg[64];
	assert_non_null(c);
	memset(arg, 'x', 63);
	arg[63] = 0;
	for (int i = 0; i < 64; i++)
		many[i] = arg;
	r = (struct ctl_run){ .app = "loopnest", .args = many, .nargs = 16 };
	assert_int_equal(ctl_client_init(c, &r), 0);
	r.nargs = 64;
	assert_int_equal(ctl_client_init(c, &r), -1);
	free(c);
}

/*
 * The request record --tty sends for a run with counting events, a rate
 * limit and tracing: read off the line's master side (the machine's end)
 * and decoded. Record runs in a child, killed once the request is read.
 */
static void record_asks_for_the_whole_run(void **state)
{
	static uint8_t line[1 << 16], buf[WIRE_FRAME_MAX];
	struct param p[16];
	struct pty pt;
	struct timespec t0, t;
	size_t got = 0;
	int st, np = 0;

	(void)state;
	pty_open(&pt);
	pid_t rec = fork();
	assert_true(rec >= 0);
	if (!rec) {
		char *argv[] = { "record", "-q", "--tty", pt.slave, "-o", out_path, "--timeout", "30",
				 "--count", "tsc,task-clock", "--max-rate", "500", "--trace", "sieve",
				 "--", "loopnest", NULL };
		_exit(cmd_record(16, argv));
	}
	/* The request goes out once the line has been quiet for 0.3 s: allow
	 * 20 s of wall clock for it on a loaded machine. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (t = t0; !np && t.tv_sec - t0.tv_sec < 20; clock_gettime(CLOCK_MONOTONIC, &t)) {
		struct pollfd pf = { pt.master, POLLIN, 0 };
		if (poll(&pf, 1, 100) <= 0)
			continue;
		ssize_t k = read(pt.master, line + got, sizeof(line) - got);
		if (k <= 0)
			continue;
		got += (size_t)k;
		/* Frames are COBS-encoded between 0x00 delimiters. */
		for (size_t start = 0, i = 0; i < got && !np; i++) {
			struct wire_frame f;
			if (line[i])
				continue;
			if (i > start && !wire_frame_unpack(line + start, i - start, buf, sizeof(buf), &f) &&
			    f.channel == WIRE_CH_CONTROL && f.cpu == WIRE_CPU_HOST)
				np = params_of(f.payload, f.len, p, 16);
			start = i + 1;
		}
	}
	kill(rec, SIGKILL);
	waitpid(rec, &st, 0);
	close(pt.master);
	if (!np)
		fail_msg("no START_RUN request on the line within 20 s (%zu bytes came)", got);
	assert_int_equal(np, 6);
	assert_int_equal(p[0].type, WIRE_RUN_NONCE);
	assert_text(&p[1], WIRE_RUN_APP, "loopnest");
	assert_text(&p[2], WIRE_RUN_COUNT, "tsc");
	assert_text(&p[3], WIRE_RUN_COUNT, "task-clock");
	assert_u64(&p[4], WIRE_RUN_MAX_RATE, 500);
	assert_text(&p[5], WIRE_RUN_TRACE, "sieve");
}

/* cmd_record with its stderr into text (n bytes): its status. */
static int record_stderr(int argc, char **argv, char *text, size_t n)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), rc;
	size_t k;

	assert_non_null(tmp);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(tmp), 2) >= 0);
	rc = cmd_record(argc, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	k = fread(text, 1, n - 1, tmp);
	text[k] = 0;
	fclose(tmp);
	return rc;
}

/* What START_RUN cannot carry is refused by name, and a request too long
 * for one is refused before the line is touched. */
static void tty_refusals(void **state)
{
	char text[1024];
	char *g[] = { "record", "--tty", "/dev/null", "-g", "--ring-pages", "64", "--count",
		      "tsc", "--", "loopnest", NULL };
	char *ap[] = { "record", "--tty", "/dev/null", "--append", "x=1", "--pace", "9600", NULL };
	char *noapp[] = { "record", "--tty", "/dev/null", "--max-rate", "10", NULL };
	char *many[80];
	char arg[64];
	struct pty pt;

	(void)state;
	assert_int_equal(record_stderr(10, g, text, sizeof(text)), 2);
	assert_non_null(strstr(text, "-g, --ring-pages: kernel options of the machine's boot"));
	assert_null(strstr(text, "--count"));
	assert_int_equal(record_stderr(7, ap, text, sizeof(text)), 2);
	assert_non_null(strstr(text, "--pace, --append: kernel options"));
	assert_int_equal(record_stderr(5, noapp, text, sizeof(text)), 2);
	assert_non_null(strstr(text, "need an app"));
	/* a built-in app has no run limit to set; seconds from 0.001 to a day */
	char *rt_app[] = { "record", "--tty", "/dev/null", "--run-timeout", "5", "--", "loopnest",
			   NULL };
	char *rt_bad[] = { "record", "--run-timeout", "0", "--", "x.c", NULL };
	assert_int_equal(record_stderr(7, rt_app, text, sizeof(text)), 2);
	assert_non_null(strstr(text, "--run-timeout limits your own program's run"));
	assert_int_equal(record_stderr(5, rt_bad, text, sizeof(text)), 2);
	assert_non_null(strstr(text, "--run-timeout: '0' is not seconds"));

	/* 70 arguments of 63 bytes: more than CTL_MSG_MAX. */
	pty_open(&pt);
	memset(arg, 'x', 63);
	arg[63] = 0;
	many[0] = "record";
	many[1] = "--tty";
	many[2] = pt.slave;
	many[3] = "-o";
	many[4] = out_path;
	many[5] = "--";
	many[6] = "loopnest";
	for (int i = 7; i < 77; i++)
		many[i] = arg;
	many[77] = NULL;
	unlink(out_path);
	assert_int_equal(record_stderr(77, many, text, sizeof(text)), 2);
	assert_non_null(strstr(text, "longer than one START_RUN request holds"));
	assert_non_null(strstr(text, "nothing was sent"));
	assert_int_equal(access(out_path, F_OK), -1);	/* no capture left behind */
	struct pollfd pf = { pt.master, POLLIN, 0 };
	assert_int_equal(poll(&pf, 1, 300), 0);		/* and nothing on the line */
	close(pt.master);
}

static void bad_options(void **state)
{
	char *a1[] = { "record", "--tty", "/dev/null", "--qemu", NULL };
	char *a2[] = { "record", "--tty", "/dev/null", "-e", "cycles", NULL };
	char *a3[] = { "record", "-c", "100", "-F", "10", NULL };
	char *a4[] = { "record", "--cpu", "0", NULL };
	char *a5[] = { "record", "--bogus", NULL };
	char *a6[] = { "record", "--qemu", "--kernel", "/nonexistent.elf", "-o", out_path, NULL };

	(void)state;
	assert_int_equal(cmd_record(4, a1), 2);
	assert_int_equal(cmd_record(5, a2), 2);
	assert_int_equal(cmd_record(5, a3), 2);
	assert_int_equal(cmd_record(3, a4), 2);
	assert_int_equal(cmd_record(2, a5), 2);
	assert_int_equal(cmd_record(6, a6), 1);
}

/* What live_last_words prints for console text `text`, QEMU's exit
 * cutting its last line where the text ends. */
static char *last_words(const char *text)
{
	static struct live L;
	static char out[4096];
	FILE *f = tmpfile();
	int saved = dup(2);

	assert_non_null(f);
	memset(&L, 0, sizeof(L));
	live_console_text(&L, (const uint8_t *)text, strlen(text));
	live_flush_line(&L);
	fflush(stderr);
	dup2(fileno(f), 2);
	live_last_words(&L);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	out[fread(out, 1, sizeof(out) - 1, f)] = 0;
	fclose(f);
	return out;
}

/* The kernel's reason is its last "bareperf: " line, never the halt line
 * after it, whole or cut short by the exit at any byte. */
static void last_words_skip_the_halt_line(void **state)
{
	static const char reason[] = "bareperf: no app named 'x'. Apps:\r\n  loopnest  nested loops\r\n";
	static const char halt[] = "bareperf: halted (exit status 2); reset the machine to run again\r\n";
	char text[512];

	(void)state;
	for (size_t cut = 0; cut <= sizeof(halt) - 1; cut++) {
		snprintf(text, sizeof(text), "boot: ok\r\n%s%.*s", reason, (int)cut, halt);
		char *w = last_words(text);
		assert_non_null(strstr(w, "  | bareperf: no app named 'x'. Apps:\n  |   loopnest"));
		assert_null(strstr(w, "halte"));
		assert_null(strstr(w, "boot: ok"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(speeds),
		cmocka_unit_test(termios_setup),
		cmocka_unit_test(records_a_stream),
		cmocka_unit_test(device_goes_away),
		cmocka_unit_test(ctrl_c_keeps_a_valid_capture),
		cmocka_unit_test(bad_options),
		cmocka_unit_test(start_run_message),
		cmocka_unit_test(record_asks_for_the_whole_run),
		cmocka_unit_test(tty_refusals),
		cmocka_unit_test(last_words_skip_the_halt_line),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * tools/record.c — `bareperf record`: receive the kernel's stream and
 * write it, byte for byte as received, into a capture file
 * (tools/capture.h).
 *
 * Two links:
 *   --qemu (default)  start the kernel in QEMU ourselves, as tools/bpqemu.py
 *                     does: PVH direct boot through qboot, or --uefi through
 *                     OVMF and a private copy of the ESP. The stream comes on
 *                     QEMU's 16550 (-serial stdio: our pipe), or with --virtio
 *                     on a virtio-console port (a unix socket chardev) while
 *                     the UART keeps the plain console. Recording stops when
 *                     QEMU exits; the status is the kernel's exit code.
 *   --tty DEV         a serial line to a real machine, set raw 8N1 at --baud;
 *                     recording stops once every CPU of the run sent APP_STOP
 *                     and the line has been quiet for a second.
 *
 * Everything received is also fed to the wire decoder as it arrives, for
 * the live view: the console text (boot text before the stream's first
 * 0x00, then CONSOLE frames) on stderr, a one-line progress display, and
 * the closing summary with every loss, exactly counted. Ctrl-C (SIGINT),
 * SIGTERM and SIGHUP only set a flag: the main loop closes the capture
 * with WIRE_CAPF_INTERRUPTED, so what arrived stays a valid capture.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ringbuf/wire.h"
#include "tools/capture.h"
#include "tools/commands.h"
#include "tools/record.h"
#include "tools/session.h"

#define OVMF_CODE	"/usr/share/OVMF/OVMF_CODE_4M.fd"
#define OVMF_VARS	"/usr/share/OVMF/OVMF_VARS_4M.fd"
#define QBOOT		"/usr/share/qemu/qboot.rom"
#define MAX_CPUS	SESSION_MAX_CPUS

/* Exit statuses besides the kernel's own codes (as tools/bpqemu.py). */
#define EXIT_TIMEOUT	124
#define EXIT_NO_CODE	125
#define EXIT_INTERRUPT	130

struct opts {
	const char *out, *events, *kernel, *build, *tty, *append, *cpu, *count;
	bool control;			/* --tty: ask for the run over the control channel */
	uint64_t period, freq;
	unsigned ring_pages, baud, smp, mem, pace;
	bool callchain, uefi, icount, virtio, kvm, quiet;
	int verbose;
	double timeout, quiet_s;
	char **app;			/* APP and its args, NULL if none */
	int napp;
};

#define TAIL_LINES	40

/* What the live view and the summary count, from the decoder's callbacks. */
struct live {
	bool show_console, progress, status_shown, quiet;
	bool console_from_stream;	/* CONSOLE frames are shown (UART transport) */
	bool seen_zero;			/* the stream's first 0x00 went by */
	bool live_boot_text;		/* show the text before it as it comes (--qemu) */
	char line[1024];		/* console text of the current line */
	size_t linelen;
	char tail[TAIL_LINES][256];	/* the last console lines, a ring */
	unsigned ntail;			/* lines ever put in it */
	int esc;			/* in an escape sequence: 1 after ESC, 2 in a CSI */
	/* Firmware text, before the first line our code prints (the loader's
	 * "bareperf-boot: ..." or the kernel's "bareperf: ..."): held back,
	 * shown with -v -v, or at the end if our code never started. */
	bool ours_started, show_firmware;
	char firmware[8192];
	size_t fwlen, fw_dropped;
	uint64_t samples[MAX_CPUS], ring_lost[MAX_CPUS], lost_samples[MAX_CPUS];
	uint64_t throttles;
	bool have_meta;
	uint32_t nr_cpus;
	bool stopped[MAX_CPUS];
	uint32_t nstopped;
	int64_t app_status;
	struct capture_writer *w;
	double last_draw;
	uint64_t drawn_bytes;
	/* The control channel (--tty with an app): the kernel's reply. */
	bool control;
	bool replied, reply_ok;
	bool ended;			/* END arrived (after the reply, with control) */
	char reply[256];
	uint64_t frames_seen;
	/* Frames before the first of each (channel, cpu) that arrived (session.h). */
	bool seen[WIRE_NR_CHANNELS][MAX_CPUS];
	uint64_t before_first[WIRE_NR_CHANNELS][MAX_CPUS], before_first_total;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- serial lines -------------------------------------------------------- */

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

speed_t record_baud_speed(unsigned baud)
{
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].baud == baud)
			return speeds[i].speed;
	return 0;
}

int record_tty_open(const char *dev, unsigned baud, struct termios *saved,
		    char *err, size_t errlen)
{
	speed_t sp = record_baud_speed(baud);
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

/* ---- the live view -------------------------------------------------------- */

static void clear_status(struct live *L)
{
	if (L->status_shown) {
		fputs("\r\033[K", stderr);
		L->status_shown = false;
	}
}

static void flush_line(struct live *L)
{
	char *t;

	if (!L->linelen)
		return;
	if (!L->ours_started && !(L->linelen >= 8 && !memcmp(L->line, "bareperf", 8))) {
		if (!L->show_firmware) {
			size_t n = L->linelen + 1;
			if (L->fwlen + n <= sizeof(L->firmware)) {
				memcpy(L->firmware + L->fwlen, L->line, L->linelen);
				L->firmware[L->fwlen + L->linelen] = '\n';
				L->fwlen += n;
			} else {
				L->fw_dropped++;
			}
			L->linelen = 0;
			return;
		}
	} else {
		L->ours_started = true;
	}
	/* The kernel's warnings ("bareperf: warning: ...") are shown always. */
	if (L->show_console || (!L->quiet && L->linelen >= 19 &&
				!memcmp(L->line, "bareperf: warning: ", 19))) {
		clear_status(L);
		fwrite(L->line, 1, L->linelen, stderr);
		fputc('\n', stderr);
	}
	/* The last lines, for when the run fails and the console was not shown. */
	t = L->tail[L->ntail++ % TAIL_LINES];
	snprintf(t, sizeof(L->tail[0]), "%.*s", (int)L->linelen, L->line);
	L->linelen = 0;
}

/*
 * The kernel's reason, when the run failed and its console was not shown
 * (stderr is not a terminal): from its last "bareperf: ..." line (how it
 * reports a refusal, a bad command line, a panic) on, else the last lines.
 */
static void last_words(const struct live *L)
{
	unsigned n = L->ntail < TAIL_LINES ? L->ntail : TAIL_LINES, from = n > 8 ? n - 8 : 0;

	for (unsigned i = n; i-- > 0;) {
		const char *t = L->tail[(L->ntail - n + i) % TAIL_LINES];
		if (!strncmp(t, "bareperf: ", 10) && strncmp(t, "bareperf: halted", 16)) {
			from = i;
			break;
		}
	}
	if (from >= n)
		return;
	fprintf(stderr, "bareperf record: the kernel said:\n");
	for (unsigned i = from; i < n; i++) {
		const char *t = L->tail[(L->ntail - n + i) % TAIL_LINES];
		if (strncmp(t, "bareperf: halted", 16))
			fprintf(stderr, "  | %s\n", t);
	}
}

/* Console text, shown a whole line at a time (the status line would
 * overwrite a partial one). CRs are dropped: the kernel ends lines CRLF.
 * Escape sequences (OVMF clears the screen and moves the cursor: ECMA-48
 * CSI sequences, ESC [ ... final byte 0x40-0x7e) and other control
 * characters never reach the user's terminal. */
static void console_text(struct live *L, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = (char)p[i];
		if (L->esc == 1) {
			L->esc = c == '[' ? 2 : 0;
			continue;
		}
		if (L->esc == 2) {
			if (p[i] >= 0x40 && p[i] <= 0x7e)
				L->esc = 0;
			continue;
		}
		if (c == '\033') {
			L->esc = 1;
			continue;
		}
		if (c == '\r' || ((unsigned char)c < 0x20 && c != '\n' && c != '\t'))
			continue;
		if (c == '\n' || L->linelen == sizeof(L->line)) {
			flush_line(L);
			if (c == '\n')
				continue;
		}
		L->line[L->linelen++] = c;
	}
}

static uint64_t sum(const uint64_t *v)
{
	uint64_t s = 0;

	for (int i = 0; i < MAX_CPUS; i++)
		s += v[i];
	return s;
}

static void draw_status(struct live *L, const struct wire_dec *d, bool force)
{
	const struct wire_dec_stats *st = wire_dec_stats(d);
	double t = now_s();

	if (!L->progress || (!force && t - L->last_draw < 0.1))
		return;
	/* Redraw on news, or every 2 s to show it is alive. */
	if (!force && L->status_shown && L->w->written == L->drawn_bytes && t - L->last_draw < 2)
		return;
	L->last_draw = t;
	L->drawn_bytes = L->w->written;
	fprintf(stderr, "\r\033[Krecord: %.1f KiB, %" PRIu64 " frames, %" PRIu64 " samples, %"
		PRIu64 " lost, %" PRIu64 " frames lost in transit", L->w->written / 1024.0,
		st->frames_ok, st->samples, sum(L->ring_lost) + sum(L->lost_samples),
		st->lost_frames - L->before_first_total);
	L->status_shown = true;
	fflush(stderr);
}

static void on_record(void *ctx, const struct wire_dec_frame *f, const struct bp_record_header *h)
{
	struct live *L = ctx;
	uint32_t cpu = f->cpu < MAX_CPUS ? f->cpu : MAX_CPUS - 1;

	switch (h->type) {
	case BP_RECORD_SAMPLE:
		L->samples[cpu]++;
		break;
	case BP_RECORD_LOST:
		if (h->size >= sizeof(struct bp_record_lost))
			L->ring_lost[cpu] += ((const struct bp_record_lost *)h)->lost;
		break;
	case BP_RECORD_LOST_SAMPLES:
		if (h->size >= sizeof(struct bp_record_lost_samples))
			L->lost_samples[cpu] += ((const struct bp_record_lost_samples *)h)->lost;
		break;
	case BP_RECORD_THROTTLE:
		L->throttles++;
		break;
	case BP_RECORD_RUN_META:
		if (h->size >= sizeof(struct bp_record_run_meta)) {
			const struct bp_record_run_meta *m = (const void *)h;
			static const uint8_t zero[20];
			L->have_meta = true;
			L->nr_cpus = m->nr_cpus;
			/* A new run: its APP_STOPs are what we wait for. */
			memset(L->stopped, 0, sizeof(L->stopped));
			L->nstopped = 0;
			if (memcmp(m->build_id, zero, sizeof(zero)))
				capture_set_build_id(L->w, m->build_id, sizeof(m->build_id));
		}
		break;
	case BP_RECORD_APP_STOP:
		if (h->size >= sizeof(struct bp_record_app_stop)) {
			const struct bp_record_app_stop *a = (const void *)h;
			if (a->cpu < MAX_CPUS && !L->stopped[a->cpu]) {
				L->stopped[a->cpu] = true;
				L->nstopped++;
			}
			if (a->status)
				L->app_status = a->status;
		}
		break;
	default:
		break;
	}
}

static void on_data(void *ctx, const struct wire_dec_frame *f, const uint8_t *p, size_t n)
{
	struct live *L = ctx;
	struct wire_ctl_msg m;

	if (f->channel == WIRE_CH_CONSOLE && L->console_from_stream)
		console_text(L, p, n);
	/* The kernel's answer to START_RUN: OK "exit N" or ERROR "why". */
	if (f->channel == WIRE_CH_CONTROL && f->cpu != WIRE_CPU_HOST && n >= sizeof(m)) {
		memcpy(&m, p, sizeof(m));
		if ((m.type == WIRE_CTL_OK || m.type == WIRE_CTL_ERROR) && m.len <= n - sizeof(m)) {
			size_t k = m.len < sizeof(L->reply) - 1 ? m.len : sizeof(L->reply) - 1;
			memcpy(L->reply, p + sizeof(m), k);
			L->reply[k] = 0;
			L->replied = true;
			L->reply_ok = m.type == WIRE_CTL_OK;
		}
		/* END: the kernel sent everything (uapi/wire.h §5); after our
		 * request's reply, it closes what we asked for. */
		if (m.type == WIRE_CTL_END && (L->replied || !L->control))
			L->ended = true;
	}
}

/* Plain text outside the stream after it started: a halted machine's last line. */
static void on_text(void *ctx, uint64_t off, const uint8_t *p, size_t n)
{
	struct live *L = ctx;

	(void)off;
	if (L->console_from_stream && (L->seen_zero || !L->live_boot_text))
		console_text(L, p, n);
}

static void on_frame(void *ctx, const struct wire_dec_frame *f)
{
	struct live *L = ctx;

	L->frames_seen++;
	if (f->channel < WIRE_NR_CHANNELS && f->cpu < MAX_CPUS && !L->seen[f->channel][f->cpu]) {
		L->seen[f->channel][f->cpu] = true;
		L->before_first[f->channel][f->cpu] = f->lost_before;
		L->before_first_total += f->lost_before;
	}
}

/* ---- the control channel (apps/control.c, uapi/wire.h §5) ------------ */

static size_t put_param(uint8_t *buf, size_t at, size_t cap, uint16_t type, const void *v,
			size_t len)
{
	struct wire_ctl_msg t = { type, (uint16_t)len };

	if (at + sizeof(t) + len > cap)
		return cap + 1;		/* too long: the caller refuses it */
	memcpy(buf + at, &t, sizeof(t));
	memcpy(buf + at + sizeof(t), v, len);
	return at + sizeof(t) + len;
}

/*
 * The START_RUN message for o: {APP, EVENT*, PERIOD | FREQ, CPUS, ARG*,
 * NONCE}. The nonce is this request's identity: sent again, the same
 * message is not run twice.
 */
static size_t start_run_msg(const struct opts *o, uint8_t *msg, size_t cap)
{
	struct wire_ctl_msg m = { WIRE_CTL_START_RUN, 0 };
	size_t at = sizeof(m);
	uint64_t nonce = 0;
	char ev[256];

	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce) || !nonce) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		nonce = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
			((uint64_t)getpid() << 32) ^ 1;
	}
	at = put_param(msg, at, cap, WIRE_RUN_NONCE, &nonce, sizeof(nonce));
	at = put_param(msg, at, cap, WIRE_RUN_APP, o->app[0], strlen(o->app[0]));
	if (o->events) {
		snprintf(ev, sizeof(ev), "%s", o->events);
		for (char *e = strtok(ev, ","); e && at <= cap; e = strtok(NULL, ","))
			at = put_param(msg, at, cap, WIRE_RUN_EVENT, e, strlen(e));
	}
	if (o->period && at <= cap)
		at = put_param(msg, at, cap, WIRE_RUN_PERIOD, &o->period, sizeof(o->period));
	if (o->freq && at <= cap)
		at = put_param(msg, at, cap, WIRE_RUN_FREQ, &o->freq, sizeof(o->freq));
	if (o->cpu && at <= cap)
		at = put_param(msg, at, cap, WIRE_RUN_CPUS, o->cpu, strlen(o->cpu));
	for (int i = 1; i < o->napp && at <= cap; i++)
		at = put_param(msg, at, cap, WIRE_RUN_ARG, o->app[i], strlen(o->app[i]));
	if (at > cap || at - sizeof(m) > UINT16_MAX)
		return 0;
	m.len = (uint16_t)(at - sizeof(m));
	memcpy(msg, &m, sizeof(m));
	return at;
}

/* Frame msg as a CONTROL frame from the host and write it to fd. */
static int send_control(struct wire_enc *e, int fd, const uint8_t *msg, size_t len,
			char *err, size_t errlen)
{
	static uint8_t out[WIRE_ENC_OUT_MIN];
	size_t used, n = wire_encode_bytes(e, WIRE_CH_CONTROL, msg, len, &used, out, sizeof(out));

	if (used != len)
		return fail(err, errlen, "the START_RUN request does not fit in a frame");
	for (size_t off = 0; off < n;) {
		ssize_t k = write(fd, out + off, n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return fail(err, errlen, "cannot write to %s: %s", "the line",
				    k < 0 ? strerror(errno) : "no progress");
		off += (size_t)k;
	}
	tcdrain(fd);
	return 0;
}

/* Stream bytes as they arrive: into the capture first, then the live view. */
static int stream_bytes(struct live *L, struct wire_dec *d, const uint8_t *p, size_t n,
			char *err, size_t errlen)
{
	if (capture_append(L->w, p, n, err, errlen))
		return -1;
	if (!L->seen_zero) {
		/* Boot text: shown as it comes, not when the first 0x00 ends it
		 * (the decoder passes it to on_text only then). Not on a line we
		 * may have joined mid-stream: there the first bytes can be a
		 * frame, which the decoder tells from text. */
		const uint8_t *z = memchr(p, 0, n);
		if (L->live_boot_text && L->console_from_stream)
			console_text(L, p, z ? (size_t)(z - p) : n);
		wire_dec_feed(d, p, n);
		L->seen_zero = z != NULL;
		return 0;
	}
	wire_dec_feed(d, p, n);
	return 0;
}

/* ---- QEMU ------------------------------------------------------------------ */

struct qemu {
	pid_t pid;
	int err_fd;			/* QEMU's stderr, our end; -1 when closed */
	char errline[512];		/* its current line */
	size_t errlen;
	unsigned err_lines;		/* lines it wrote on stderr */
	char dir[64];			/* private temp dir: socket, ESP copy, vars */
	char sock[96];
	char *argv[64];
	int argc;
	char cmdline[1024];
	char link[64];
	char strs[16][4200];		/* storage for built arguments */
	int nstrs;
};

static char *qs(struct qemu *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *qs(struct qemu *q, const char *fmt, ...)
{
	va_list ap;
	char *s = q->strs[q->nstrs++];

	va_start(ap, fmt);
	vsnprintf(s, sizeof(q->strs[0]), fmt, ap);
	va_end(ap);
	return s;
}

static void qarg(struct qemu *q, const char *a)
{
	if (q->argc < 62)
		q->argv[q->argc++] = (char *)a;
}

static int copy_file(const char *from, const char *to, char *err, size_t errlen)
{
	char buf[1 << 16];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return fail(err, errlen, "%s: %s", from, strerror(errno));
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		close(in);
		return fail(err, errlen, "%s: %s", to, strerror(errno));
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	close(in);
	if (close(out) || n < 0)
		return fail(err, errlen, "cannot copy %s to %s", from, to);
	return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path) && errno != ENOENT ? -1 : 0;
}

/* Our own mkdtemp directory, depth first; never follows a link out of it. */
static void rm_tree(const char *dir)
{
	if (dir[0] && !strncmp(dir, "/tmp/bareperf-rec-", 18))
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The kernel command line this run asks for. */
static void build_cmdline(const struct opts *o, char *buf, size_t n)
{
	size_t len = 0;

#define ADD(...) (len += (size_t)snprintf(buf + len, len < n ? n - len : 0, __VA_ARGS__))
	ADD("stream=%s", o->virtio ? "virtio" : "uart");
	if (o->app)
		ADD(" app=%s", o->app[0]);
	if (o->events)
		ADD(" events=%s", o->events);
	if (o->count)
		ADD(" count=%s", o->count);
	if (o->period)
		ADD(" period=%" PRIu64, o->period);
	if (o->freq)
		ADD(" freq=%" PRIu64, o->freq);
	if (o->callchain)
		ADD(" callchain=1");
	if (o->ring_pages)
		ADD(" ring_pages=%u", o->ring_pages);
	if (o->pace)
		ADD(" pace=%u", o->pace);
	if (o->append)
		ADD(" %s", o->append);
	if (o->app && o->napp > 1) {
		ADD(" --");
		for (int i = 1; i < o->napp; i++)
			ADD(" %s", o->app[i]);
	}
#undef ADD
	if (len >= n && n)
		buf[n - 1] = 0;
}

static int qemu_prepare(struct qemu *q, const struct opts *o, char *err, size_t errlen)
{
	char esp[256];

	memset(q, 0, sizeof(*q));
	q->pid = -1;
	q->err_fd = -1;
	snprintf(q->dir, sizeof(q->dir), "/tmp/bareperf-rec-XXXXXX");
	if (!mkdtemp(q->dir))
		return fail(err, errlen, "cannot make a temporary directory: %s", strerror(errno));
	build_cmdline(o, q->cmdline, sizeof(q->cmdline));
	if (strpbrk(q->cmdline, "\n")) {
		return fail(err, errlen, "the kernel command line cannot hold a newline");
	}
	if (access(o->kernel, R_OK))
		return fail(err, errlen, "%s: %s (run 'make' first, or --kernel PATH)", o->kernel,
			    strerror(errno));

	qarg(q, "qemu-system-x86_64");
	qarg(q, "-machine");
	qarg(q, "q35");
	qarg(q, "-m");
	qarg(q, qs(q, "%u", o->mem));
	qarg(q, "-smp");
	qarg(q, qs(q, "%u", o->smp));
	qarg(q, "-no-reboot");
	qarg(q, "-display");
	qarg(q, "none");
	qarg(q, "-monitor");
	qarg(q, "none");
	qarg(q, "-serial");
	qarg(q, "stdio");
	qarg(q, "-nic");
	qarg(q, "none");
	qarg(q, "-device");
	qarg(q, "isa-debug-exit,iobase=0xf4,iosize=0x04");
	if (o->kvm) {
		qarg(q, "-enable-kvm");
		qarg(q, "-cpu");
		qarg(q, "host");
	}
	if (o->icount) {
		/* One TSC tick per retired instruction: deterministic runs (QEMU -icount). */
		qarg(q, "-icount");
		qarg(q, "shift=0,sleep=off");
	}
	if (o->uefi) {
		char from[4096], cfg[300], path[300];
		FILE *f;
		if (access(OVMF_CODE, R_OK))
			return fail(err, errlen, "%s is missing: apt-get install ovmf", OVMF_CODE);
		snprintf(from, sizeof(from), "%s/esp/EFI/BOOT/BOOTX64.EFI", o->build);
		if (access(from, R_OK))
			return fail(err, errlen, "%s is missing: run 'make esp' first", from);
		/* A private ESP: the loader reads our command line from its bareperf.cfg. */
		snprintf(esp, sizeof(esp), "%s/esp", q->dir);
		snprintf(path, sizeof(path), "%s/EFI/BOOT", esp);
		if (mkdir(esp, 0755) || mkdir(qs(q, "%s/EFI", esp), 0755) || mkdir(path, 0755))
			return fail(err, errlen, "cannot make %s: %s", path, strerror(errno));
		if (copy_file(from, qs(q, "%s/BOOTX64.EFI", path), err, errlen) ||
		    copy_file(o->kernel, qs(q, "%s/kernel.elf", esp), err, errlen) ||
		    copy_file(OVMF_VARS, qs(q, "%s/ovmf-vars.fd", q->dir), err, errlen))
			return -1;
		snprintf(cfg, sizeof(cfg), "%s/bareperf.cfg", esp);
		if (!(f = fopen(cfg, "w")) || fprintf(f, "# written by bareperf record\n%s\n",
						      q->cmdline) < 0 || fclose(f))
			return fail(err, errlen, "cannot write %s", cfg);
		qarg(q, "-drive");
		qarg(q, "if=pflash,format=raw,readonly=on,file=" OVMF_CODE);
		qarg(q, "-drive");
		qarg(q, qs(q, "if=pflash,format=raw,file=%s/ovmf-vars.fd", q->dir));
		qarg(q, "-drive");
		qarg(q, qs(q, "format=raw,file=fat:rw:%s", esp));
	} else {
		if (!access(QBOOT, R_OK)) {
			qarg(q, "-bios");
			qarg(q, QBOOT);
		}
		qarg(q, "-kernel");
		qarg(q, o->kernel);
		qarg(q, "-append");
		qarg(q, q->cmdline);
	}
	if (o->virtio) {
		snprintf(q->sock, sizeof(q->sock), "%s/stream.sock", q->dir);
		qarg(q, "-device");
		qarg(q, "virtio-serial-pci,disable-legacy=on");
		qarg(q, "-chardev");
		qarg(q, qs(q, "socket,id=bpvc,path=%s,server=on,wait=on", q->sock));
		qarg(q, "-device");
		qarg(q, "virtserialport,chardev=bpvc,name=bareperf.0");
	}
	q->argv[q->argc] = NULL;
	snprintf(q->link, sizeof(q->link), "qemu-%s:%s%s%s", o->uefi ? "uefi" : "pvh",
		 o->virtio ? "virtio-console" : "serial-stdio", o->icount ? ",icount" : "",
		 o->kvm ? ",kvm" : "");
	return 0;
}

/* Start QEMU with its stdout and stderr on pipes; *out is our stdout end. */
static int qemu_start(struct qemu *q, int *out, char *err, size_t errlen)
{
	int p[2], e[2];

	if (pipe2(p, O_CLOEXEC))
		return fail(err, errlen, "pipe: %s", strerror(errno));
	if (pipe2(e, O_CLOEXEC)) {
		close(p[0]);
		close(p[1]);
		return fail(err, errlen, "pipe: %s", strerror(errno));
	}
	q->pid = fork();
	if (q->pid < 0) {
		close(p[0]);
		close(p[1]);
		close(e[0]);
		close(e[1]);
		return fail(err, errlen, "fork: %s", strerror(errno));
	}
	if (q->pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		/* Its own process group: Ctrl-C reaches us, and we stop QEMU. */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(e[1], 2) < 0)
			_exit(127);
		execvp(q->argv[0], q->argv);
		fprintf(stderr, "cannot run %s: %s (apt-get install qemu-system-x86)\n",
			q->argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(q->pid, q->pid);
	close(p[1]);
	close(e[1]);
	*out = p[0];
	q->err_fd = e[0];
	return 0;
}

/*
 * QEMU's own messages, a line at a time, as "qemu: ..." on stderr; not
 * the one it prints when we stop it (Ctrl-C, --timeout).
 */
static void qemu_err_line(struct live *L, struct qemu *q)
{
	q->errline[q->errlen] = 0;
	if (q->errlen && !strstr(q->errline, "terminating on signal")) {
		q->err_lines++;
		clear_status(L);
		fprintf(stderr, "qemu: %s\n", q->errline);
	}
	q->errlen = 0;
}

static void qemu_err_read(struct live *L, struct qemu *q)
{
	char buf[1024];
	ssize_t n = read(q->err_fd, buf, sizeof(buf));

	if (n <= 0) {
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		qemu_err_line(L, q);
		close(q->err_fd);
		q->err_fd = -1;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == '\n' || q->errlen == sizeof(q->errline) - 1)
			qemu_err_line(L, q);
		if (buf[i] != '\n' && buf[i] != '\r')
			q->errline[q->errlen++] = buf[i];
	}
}

/* The virtio chardev: QEMU waits (wait=on) until we connect. */
static int qemu_connect(struct qemu *q, char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	double t0 = now_s();

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", q->sock);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(err, errlen, "socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			return fd;
		close(fd);
		if (now_s() - t0 > 10 || waitpid(q->pid, NULL, WNOHANG) == q->pid)
			return fail(err, errlen, "QEMU did not open its virtio-console socket %s",
				    q->sock);
		usleep(20000);
	}
}

/* Stop QEMU if it still runs; its wait status, or -1. */
static int qemu_reap(struct qemu *q, bool kill_it)
{
	int st = -1;

	if (q->pid <= 0)
		return -1;
	if (kill_it)
		kill(-q->pid, SIGTERM);
	for (int i = 0; i < 200; i++) {
		pid_t r = waitpid(q->pid, &st, WNOHANG);
		if (r == q->pid) {
			q->pid = -1;
			return st;
		}
		if (r < 0)
			break;
		usleep(10000);
	}
	kill(-q->pid, SIGKILL);
	waitpid(q->pid, &st, 0);
	q->pid = -1;
	return st;
}

/* ---- the command ------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bareperf record [-o FILE] [-e EVENTS] [-c PERIOD | -F FREQ] [-g]\n"
		"                       [--qemu [QEMU options] | --tty DEV [--baud N]] [-- APP [ARGS]]\n"
		"  run APP on the bareperf kernel and write what it streams into a capture\n"
		"  -o, --output FILE     capture file (default capture.bpc); with --qemu, a copy\n"
		"                        of the kernel goes beside it (FILE.bpc -> FILE.kernel.elf)\n"
		"  -e, --events LIST     events to sample (events=; default cycles, or cpu-clock\n"
		"                        without a PMU); bareperf list names them\n"
		"  -c, --period N        sampling period (events, or ns for cpu-clock)\n"
		"  -F, --freq N          samples per second instead of a period\n"
		"  -g, --call-graph      record frame-pointer call chains\n"
		"      --count LIST      also count these events (count=; COUNTS records for\n"
		"                        bareperf stat); no sampling then unless -e is given\n"
		"      --ring-pages N    ring buffer pages per CPU (a power of two)\n"
		"      --append WORDS    more kernel options (see the kernel's cmdline help)\n"
		"      --cpu LIST        not supported: the kernel samples every CPU of the run\n"
		"                        (filter afterwards: bareperf report --cpu LIST)\n"
		"  QEMU (the default link):\n"
		"      --qemu            boot build/kernel.elf in QEMU (PVH direct boot)\n"
		"      --uefi            boot through OVMF and the loader instead\n"
		"  -k, --kernel PATH     the kernel (default build/kernel.elf)\n"
		"      --build DIR       where the ESP is, for --uefi (default build)\n"
		"      --smp N, --mem MIB  CPUs (default 1) and memory (default 256)\n"
		"      --icount          TSC = instructions: deterministic runs (TCG)\n"
		"      --kvm             -enable-kvm -cpu host (a Linux host with a PMU)\n"
		"      --virtio          stream on virtio-console; the UART keeps the console\n"
		"      --pace BAUD       hold the UART stream to a real line's rate\n"
		"      --timeout SEC     stop QEMU after SEC seconds (status 124)\n"
		"  serial line to a real machine (its bareperf.cfg sets the run):\n"
		"      --tty DEV         e.g. /dev/ttyUSB0; raw 8N1, no flow control\n"
		"      --baud N          line speed (default 115200)\n"
		"      --quiet-time SEC  stop this long after every CPU's APP_STOP (default 1)\n"
		"  -v, --verbose         show the console even when stderr is not a terminal,\n"
		"                        and the QEMU command; -v -v also the firmware's own\n"
		"                        output (otherwise shown only if the loader never starts)\n"
		"  -q, --quiet           no console, no progress, no summary\n"
		"\n"
		"Exit status: the kernel's exit code (0 ok, 1 failure, 2 usage, 3 panic), from\n"
		"its stream's END (or, if it stopped before its stream started, QEMU's status),\n"
		"124 on --timeout, 125 if QEMU failed or ended without one, 130 after Ctrl-C.\n");
}

static int parse_u(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end || end == s || x < min || x > max || s[0] == '-') {
		fprintf(stderr, "bareperf record: %s: '%s' is not a number from %" PRIu64 " to %"
			PRIu64 "\n", opt, s, min, max);
		return -1;
	}
	*v = x;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	enum { OPT_RING = 256, OPT_QEMU, OPT_UEFI, OPT_KERNEL, OPT_BUILD, OPT_SMP, OPT_MEM, OPT_ICOUNT, OPT_KVM,
	       OPT_VIRTIO, OPT_PACE, OPT_TIMEOUT, OPT_TTY, OPT_BAUD, OPT_QUIET_TIME, OPT_CPU, OPT_APPEND, OPT_COUNT };
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "events", required_argument, NULL, 'e' },
		{ "period", required_argument, NULL, 'c' },
		{ "freq", required_argument, NULL, 'F' },
		{ "call-graph", no_argument, NULL, 'g' },
		{ "ring-pages", required_argument, NULL, OPT_RING },
		{ "append", required_argument, NULL, OPT_APPEND },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "qemu", no_argument, NULL, OPT_QEMU },
		{ "uefi", no_argument, NULL, OPT_UEFI },
		{ "kernel", required_argument, NULL, 'k' },
		{ "build", required_argument, NULL, OPT_BUILD },
		{ "smp", required_argument, NULL, OPT_SMP },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "icount", no_argument, NULL, OPT_ICOUNT },
		{ "kvm", no_argument, NULL, OPT_KVM },
		{ "virtio", no_argument, NULL, OPT_VIRTIO },
		{ "pace", required_argument, NULL, OPT_PACE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "tty", required_argument, NULL, OPT_TTY },
		{ "baud", required_argument, NULL, OPT_BAUD },
		{ "quiet-time", required_argument, NULL, OPT_QUIET_TIME },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool qemu = false, baud_set = false;
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->out = "capture.bpc";
	o->kernel = "build/kernel.elf";
	o->build = "build";
	o->baud = 115200;
	o->smp = 1;
	o->mem = 256;
	o->quiet_s = 1.0;
	optind = 0;
	opterr = 0;
	/* '+': stop at the first word that is not an option (the app). */
	while ((c = getopt_long(argc, argv, "+:o:e:c:F:gk:vqh", lo, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'o': o->out = optarg; break;
		case 'e': o->events = optarg; break;
		case 'c':
			if (parse_u("-c", optarg, 1, INT64_MAX, &o->period))
				return 2;
			break;
		case 'F':
			if (parse_u("-F", optarg, 1, 1000000, &o->freq))
				return 2;
			break;
		case 'g': o->callchain = true; break;
		case OPT_RING:
			if (parse_u("--ring-pages", optarg, 2, 65536, &v) || (v & (v - 1))) {
				if (v & (v - 1))
					fprintf(stderr, "bareperf record: --ring-pages: %s is not a power of "
						"two\n", optarg);
				return 2;
			}
			o->ring_pages = (unsigned)v;
			break;
		case OPT_APPEND: o->append = optarg; break;
		case OPT_COUNT: o->count = optarg; break;
		case OPT_CPU: o->cpu = optarg; break;
		case OPT_QEMU: qemu = true; break;
		case OPT_UEFI: o->uefi = true; qemu = true; break;
		case 'k': o->kernel = optarg; break;
		case OPT_BUILD: o->build = optarg; break;
		case OPT_SMP:
			if (parse_u("--smp", optarg, 1, 64, &v))
				return 2;
			o->smp = (unsigned)v;
			qemu = true;
			break;
		case OPT_MEM:
			if (parse_u("--mem", optarg, 64, 65536, &v))
				return 2;
			o->mem = (unsigned)v;
			qemu = true;
			break;
		case OPT_ICOUNT: o->icount = true; qemu = true; break;
		case OPT_KVM: o->kvm = true; qemu = true; break;
		case OPT_VIRTIO: o->virtio = true; qemu = true; break;
		case OPT_PACE:
			if (parse_u("--pace", optarg, 300, 10000000, &v))
				return 2;
			o->pace = (unsigned)v;
			break;
		case OPT_TIMEOUT:
			o->timeout = strtod(optarg, &end);
			if (*end || end == optarg || o->timeout < 0) {
				fprintf(stderr, "bareperf record: --timeout: '%s' is not seconds\n", optarg);
				return 2;
			}
			break;
		case OPT_TTY: o->tty = optarg; break;
		case OPT_BAUD:
			if (parse_u("--baud", optarg, 50, 4000000, &v))
				return 2;
			o->baud = (unsigned)v;
			baud_set = true;
			break;
		case OPT_QUIET_TIME:
			o->quiet_s = strtod(optarg, &end);
			if (*end || end == optarg || o->quiet_s < 0) {
				fprintf(stderr, "bareperf record: --quiet-time: '%s' is not seconds\n",
					optarg);
				return 2;
			}
			break;
		case 'v': o->verbose++; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "bareperf record: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "bareperf record: unknown option '%s' (bareperf record --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		o->app = argv + optind;
		o->napp = argc - optind;
	}
	if (o->period && o->freq) {
		fprintf(stderr, "bareperf record: -c PERIOD and -F FREQ exclude each other\n");
		return 2;
	}
	if (o->tty && qemu) {
		fprintf(stderr, "bareperf record: --tty and QEMU options (--qemu, --uefi, --smp, "
			"--icount, ...) exclude each other\n");
		return 2;
	}
	if (o->cpu && !o->tty) {
		fprintf(stderr, "bareperf record: --cpu: with --qemu the app runs on the boot CPU and "
			"every CPU is sampled (filter afterwards: bareperf report --cpu %s); --cpu N "
			"picks the app's CPU over --tty with control=1\n", o->cpu);
		return 2;
	}
	/* --tty with an app: the machine booted with control=1 serves the run we ask for. */
	o->control = o->tty && (o->app || o->events || o->period || o->freq || o->cpu);
	if (o->tty && !o->app && o->control) {
		fprintf(stderr, "bareperf record: -e, -c, -F and --cpu over --tty need an app "
			"(-- APP): the run is asked for over the control channel\n");
		return 2;
	}
	if (o->tty && (o->callchain || o->ring_pages || o->pace || o->append || o->count)) {
		fprintf(stderr, "bareperf record: -g, --count, --ring-pages, --pace and --append are "
			"kernel options: with --tty, set callchain=, count=, ring_pages=, pace= in the "
			"machine's bareperf.cfg\n");
		return 2;
	}
	if (!o->tty && baud_set) {
		fprintf(stderr, "bareperf record: --baud goes with --tty (QEMU's UART has no speed; "
			"--pace holds it to one)\n");
		return 2;
	}
	for (int i = 0; o->app && i < o->napp; i++)
		if (strpbrk(o->app[i], " \t\n")) {
			fprintf(stderr, "bareperf record: app argument '%s': the kernel command line "
				"splits words at spaces\n", o->app[i]);
			return 2;
		}
	return -1;
}

static void summary(const struct opts *o, const struct live *L, const struct wire_dec *d,
		    const char *state, int code_kind, int code)
{
	struct wire_dec_stats stats = *wire_dec_stats(d);
	const struct wire_dec_stats *st = &stats;
	uint32_t ncpu = L->nr_cpus;

	stats.lost_frames -= L->before_first_total;

	for (uint32_t c = 0; c < MAX_CPUS; c++)
		if ((L->samples[c] || L->ring_lost[c] || L->lost_samples[c]) && c + 1 > ncpu)
			ncpu = c + 1;
	fprintf(stderr, "bareperf record: %s: %.1f KiB, %" PRIu64 " frames, %" PRIu64 " samples (%s)\n",
		o->out, L->w->written / 1024.0, st->frames_ok, st->samples, state);
	for (uint32_t c = 0; c < ncpu; c++)
		fprintf(stderr, "  cpu %u: %" PRIu64 " samples, LOST %" PRIu64 " (ring full), "
			"LOST_SAMPLES %" PRIu64 "%s\n", c, L->samples[c], L->ring_lost[c],
			L->lost_samples[c], L->have_meta && !L->stopped[c] ? ", no APP_STOP" : "");
	if (L->throttles)
		fprintf(stderr, "  throttled %" PRIu64 " time%s\n", L->throttles,
			L->throttles == 1 ? "" : "s");
	fprintf(stderr, "  link: %" PRIu64 " frames lost in transit, %" PRIu64 " CRC errors, %"
		PRIu64 " other damaged frames, %" PRIu64 " duplicates\n", st->lost_frames,
		st->crc_errors, st->cobs_errors + st->short_frames + st->bad_version +
		st->bad_channel + st->bad_payload, st->duplicates);
	if (st->foreign_frames)
		fprintf(stderr, "  %" PRIu64 " frames of another boot refused (boot %08" PRIx32
			", not this stream's %08" PRIx32 ")\n", st->foreign_frames, st->foreign_boot,
			st->boot);
	for (unsigned ch = 0; ch < WIRE_NR_CHANNELS; ch++)
		for (unsigned c = 0; c < MAX_CPUS; c++) {
			static const char *const names[] = { "console", "records", "aux", "control" };
			const struct wire_dec_stream *ws = wire_dec_stream(d, ch, c);
			uint64_t early = L->before_first[ch][c];
			if (ws && ws->lost > early)
				fprintf(stderr, "    %" PRIu64 " %s frames of cpu %u lost\n",
					ws->lost - early, names[ch], c);
			if (early)
				fprintf(stderr, "    %" PRIu64 " %s frames of cpu %u before the first one "
					"received (joined a running stream, or lost)\n", early, names[ch], c);
		}
	/* A kernel that failed says why (last_words()); one that did not
	 * and sent nothing was not streaming. */
	if (!st->frames_ok && !code)
		fprintf(stderr, "  no frame arrived: %s\n", o->tty ?
			"is the machine's bareperf.cfg set to stream=uart, and the line's speed right?" :
			"did the kernel start the stream (stream=uart/virtio)?");
	if (st->frames_ok && !wire_dec_complete(d))
		fprintf(stderr, "  the stream's END did not arrive: what the kernel sent after the "
			"last frame is unknown\n");
	if (code_kind == 1)
		fprintf(stderr, "  kernel exit code %d (%s)\n", code, session_exit_name(code));
	else if (code_kind == 2)
		fprintf(stderr, "  app exit status %d\n", code);
	else if (code_kind == 3)
		fprintf(stderr, "  kernel exit code %d (%s), from QEMU's exit status only: the kernel "
			"sent no END\n", code, session_exit_name(code));
}

int cmd_record(int argc, char **argv)
{
	struct opts o;
	struct qemu q = { .pid = -1, .err_fd = -1 };
	struct live L;
	struct capture_writer w;
	struct capture_meta meta = { 0 };
	struct termios saved;
	struct wire_dec *d = NULL;
	const struct wire_dec_ops ops = { on_frame, on_record, on_data, NULL, on_text };
	struct sigaction sa, old_int, old_term, old_hup, old_pipe;
	uint8_t bid[64];
	char err[1024], state[200];
	int uart = -1, vsock = -1, ttyfd = -1, rc, st = -1, qcode;
	const struct wire_dec_stats *ds;
	bool halted;
	bool eof_uart = false, eof_stream = false, timed_out = false, io_error = false;
	struct wire_enc host_enc;
	uint8_t ctl_msg[1024];
	size_t ctl_len = 0;
	double sent_at = 0;
	uint64_t frames_at_send = 0;
	int sends = 0;
	uint8_t *buf = NULL;
	double t0, last_byte;

	rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	memset(&L, 0, sizeof(L));
	memset(&w, 0, sizeof(w));
	w.fd = -1;
	L.w = &w;
	L.show_console = !o.quiet && (o.verbose || isatty(2));
	L.show_firmware = o.verbose >= 2;
	L.progress = !o.quiet && isatty(2);
	L.console_from_stream = !o.virtio;
	L.control = o.control;
	L.quiet = o.quiet;
	L.live_boot_text = !o.tty;

	/* Open the link first: a bad device or kernel leaves no file behind. */
	if (o.tty) {
		ttyfd = record_tty_open(o.tty, o.baud, &saved, err, sizeof(err));
		if (ttyfd < 0) {
			fprintf(stderr, "bareperf record: %s\n", err);
			return 1;
		}
		meta.link_kind = WIRE_LINK_TTY;
		meta.baud = o.baud;
		meta.link = o.tty;
	} else {
		int n = symtab_read_build_id(o.kernel, bid, sizeof(bid), err, sizeof(err));
		if (n < 0 || qemu_prepare(&q, &o, err, sizeof(err))) {
			fprintf(stderr, "bareperf record: %s\n", err);
			rm_tree(q.dir);
			return 1;
		}
		if (n > 0) {
			meta.build_id = bid;
			meta.build_id_size = (size_t)n > 20 ? 20 : (size_t)n;
		}
		meta.link_kind = o.virtio ? WIRE_LINK_QEMU_VIRTIO : WIRE_LINK_QEMU_SERIAL;
		meta.link = q.link;
		meta.run_args = q.cmdline;
	}
	buf = malloc(1 << 16);
	d = wire_dec_new(&ops, &L);
	if (!buf || !d || capture_create(&w, o.out, &meta, err, sizeof(err))) {
		fprintf(stderr, "bareperf record: %s\n", buf && d ? err : "out of memory");
		rc = 1;
		goto out;
	}

	/* The kernel that runs, kept beside the capture: reports symbolize it
	 * after build/kernel.elf was rebuilt (session_symtab looks there first). */
	if (!o.tty) {
		char copy[4200];
		session_kernel_copy_path(o.out, copy, sizeof(copy));
		if (strcmp(copy, o.kernel) && copy_file(o.kernel, copy, err, sizeof(err)))
			fprintf(stderr, "bareperf record: warning: %s\n", err);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	stop_signal = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);

	if (!o.tty) {
		if (o.verbose) {
			fprintf(stderr, "bareperf record:");
			for (int i = 0; i < q.argc; i++)
				fprintf(stderr, strpbrk(q.argv[i], " ,") ? " '%s'" : " %s", q.argv[i]);
			fputc('\n', stderr);
		}
		if (qemu_start(&q, &uart, err, sizeof(err)) ||
		    (o.virtio && (vsock = qemu_connect(&q, err, sizeof(err))) < 0)) {
			fprintf(stderr, "bareperf record: %s\n", err);
			rc = 1;
			goto restore;
		}
	}

	if (o.control) {
		struct wire_enc_config ec = { .cpu = WIRE_CPU_HOST };
		wire_encoder_init(&host_enc, &ec);
		ctl_len = start_run_msg(&o, ctl_msg, sizeof(ctl_msg));
		if (!ctl_len) {
			fprintf(stderr, "bareperf record: the run's parameters are too long for one "
				"START_RUN request\n");
			rc = 2;
			goto restore;
		}
		if (!o.quiet)
			fprintf(stderr, "bareperf record: asking the machine on %s for the run "
				"(it must have booted with control=1 stream=uart)\n", o.tty);
	}

	t0 = last_byte = now_s();
	for (;;) {
		struct pollfd pf[3];
		int np = 0, stream_i = -1, uart_i = -1, err_i = -1;

		if (stop_signal)
			break;
		if (o.timeout > 0 && now_s() - t0 > o.timeout) {
			timed_out = true;
			break;
		}
		if (o.tty) {
			pf[np] = (struct pollfd){ ttyfd, POLLIN, 0 };
			stream_i = np++;
		} else {
			if (!eof_uart) {
				pf[np] = (struct pollfd){ uart, POLLIN, 0 };
				uart_i = np++;
				if (!o.virtio)
					stream_i = uart_i;
			}
			if (o.virtio && !eof_stream) {
				pf[np] = (struct pollfd){ vsock, POLLIN, 0 };
				stream_i = np++;
			}
			if (!np)
				break;		/* QEMU closed everything: it has exited */
			if (q.err_fd >= 0) {
				pf[np] = (struct pollfd){ q.err_fd, POLLIN, 0 };
				err_i = np++;
			}
		}
		int n = poll(pf, (nfds_t)np, 100);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "bareperf record: poll: %s\n", strerror(errno));
			io_error = true;
			break;
		}
		for (int i = 0; n > 0 && i < np; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (i == err_i) {
				qemu_err_read(&L, &q);
				continue;
			}
			ssize_t k = read(pf[i].fd, buf, 1 << 16);
			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (k <= 0) {
				/* EOF, or EIO: the pty master or the USB adapter went away. */
				if (o.tty) {
					if (k < 0)
						fprintf(stderr, "%sbareperf record: %s: %s\n",
							L.status_shown ? "\r\033[K" : "", o.tty, strerror(errno));
					L.status_shown = false;
					eof_stream = true;
				} else if (i == uart_i) {
					eof_uart = true;
					if (!o.virtio)
						eof_stream = true;
				} else {
					eof_stream = true;
				}
				continue;
			}
			if (i == stream_i) {
				last_byte = now_s();
				if (stream_bytes(&L, d, buf, (size_t)k, err, sizeof(err))) {
					fprintf(stderr, "bareperf record: %s\n", err);
					io_error = true;
				}
			} else {
				console_text(&L, buf, (size_t)k);	/* virtio: the UART's plain console */
			}
		}
		if (io_error || (o.tty && eof_stream))
			break;
		/*
		 * The request: once the line has been quiet for 0.3 s (a booting
		 * machine has had its say), and again when no frame came back and
		 * the line has been silent for 2 s since (the request was lost:
		 * the machine reads requests only between runs, and prints "app:
		 * ...: start" as a CONSOLE frame the moment it begins one). Not
		 * while it still talks (it is booting, and will read the request
		 * it holds), and never once a frame came: a second request would
		 * start a second run.
		 */
		if (o.control && !L.replied && now_s() - last_byte >= 0.3 &&
		    (!sends || (L.frames_seen == frames_at_send && now_s() - sent_at >= 2.0 &&
				now_s() - last_byte >= 2.0))) {
			if (send_control(&host_enc, ttyfd, ctl_msg, ctl_len, err, sizeof(err))) {
				fprintf(stderr, "bareperf record: %s: %s\n", o.tty, err);
				io_error = true;
				break;
			}
			sends++;
			sent_at = now_s();
			frames_at_send = L.frames_seen;
		}
		/* It answered (OK "exit N" after the run's records, or ERROR), and
		 * its END followed: done. A kernel that sends no END: a quiet spell. */
		if (o.control && L.replied && (L.ended || now_s() - last_byte >= 2.0))
			break;
		/* A serial line never closes: the machine's END, or every CPU's
		 * APP_STOP, then a quiet spell. */
		if (o.tty && !o.control && (L.ended || (L.have_meta && L.nr_cpus &&
		    L.nstopped >= L.nr_cpus && now_s() - last_byte >= o.quiet_s)))
			break;
		if (!o.tty && eof_stream && (o.virtio ? eof_uart : true))
			break;
		draw_status(&L, d, false);
	}

	wire_dec_finish(d);
	flush_line(&L);
	clear_status(&L);
	if (!L.ours_started && L.fwlen) {
		/* Nothing of ours ran: what the firmware said is the clue. */
		fprintf(stderr, "bareperf record: the loader never started; the firmware said:\n");
		fwrite(L.firmware, 1, L.fwlen, stderr);
		if (L.fw_dropped)
			fprintf(stderr, "  (%zu more lines)\n", L.fw_dropped);
	}
	if (!o.tty) {
		st = qemu_reap(&q, stop_signal || timed_out || io_error);
		while (q.err_fd >= 0)
			qemu_err_read(&L, &q);	/* its last words, up to EOF */
	}
	{
		uint32_t flags = stop_signal || timed_out ? WIRE_CAPF_INTERRUPTED : 0;
		struct capture_info ci = { .hdr = w.hdr };
		if (capture_close(&w, flags, err, sizeof(err))) {
			fprintf(stderr, "bareperf record: %s\n", err);
			rc = 1;
			goto restore;
		}
		ci.hdr.flags |= WIRE_CAPF_COMPLETE | flags;
		ci.complete = true;
		ci.interrupted = flags;
		ci.data_avail = w.written;
		ci.truncated = w.failed;
		capture_describe(&ci, state, sizeof(state));
	}
	ds = wire_dec_stats(d);
	halted = ds->ends && (ds->end_flags & WIRE_END_HALT);
	qcode = !o.tty && WIFEXITED(st) && (WEXITSTATUS(st) & 1) ? WEXITSTATUS(st) >> 1 : -1;
	if (stop_signal) {
		rc = EXIT_INTERRUPT;
		if (!o.quiet)
			summary(&o, &L, d, state, 0, 0);
		fprintf(stderr, "bareperf record: interrupted (signal %d); %s holds what arrived\n",
			(int)stop_signal, o.out);
	} else if (timed_out) {
		rc = EXIT_TIMEOUT;
		if (!o.quiet)
			summary(&o, &L, d, state, 0, 0);
		fprintf(stderr, "bareperf record: timed out after %.0f s; %s holds what arrived\n",
			o.timeout, o.out);
	} else if (io_error) {
		rc = 1;
	} else if (o.control) {
		int code = 0;
		if (!L.reply_ok) {
			fprintf(stderr, "bareperf record: the machine refused the run: %s\n", L.reply);
			rc = 2;
		} else {
			rc = sscanf(L.reply, "exit %d", &code) == 1 ? code : 0;
			if (!o.quiet)
				summary(&o, &L, d, state, 2, rc);
		}
	} else if (o.tty && halted) {
		rc = (int)ds->end_status;
		if (!o.quiet)
			summary(&o, &L, d, state, 1, rc);
	} else if (o.tty) {
		bool ended = L.have_meta && L.nr_cpus && L.nstopped >= L.nr_cpus;
		rc = ended ? (int)(L.app_status & 0xff) : 1;
		if (!o.quiet)
			summary(&o, &L, d, state, ended ? 2 : 0, rc);
		if (!ended)
			fprintf(stderr, "bareperf record: %s went away before every CPU's APP_STOP; "
				"%s holds what arrived\n", o.tty, o.out);
	} else if (halted || (qcode >= 0 && !q.err_lines)) {
		/*
		 * The kernel's exit code is its END's. Without END (it stopped
		 * before its stream could start: a bad command line), QEMU's
		 * isa-debug-exit status carries it, unless QEMU itself failed
		 * (it said so on stderr, and its status 1 would read as "0, ok").
		 */
		rc = halted ? (int)ds->end_status : qcode;
		if (!o.quiet)
			summary(&o, &L, d, state, halted ? 1 : 3, rc);
		if (halted && qcode != rc)
			fprintf(stderr, "bareperf record: QEMU's exit status %d does not match the "
				"kernel's exit code %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, rc);
	} else {
		if (!o.quiet)
			summary(&o, &L, d, state, 0, -1);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
			fprintf(stderr, "bareperf record: QEMU could not be started (see above)\n");
		else if (WIFEXITED(st))
			fprintf(stderr, "bareperf record: QEMU ended with status %d without a kernel "
				"exit code\n", WEXITSTATUS(st));
		else
			fprintf(stderr, "bareperf record: QEMU was killed by signal %d\n",
				WIFSIGNALED(st) ? WTERMSIG(st) : -1);
		rc = EXIT_NO_CODE;
	}
	/* A failed run's reason, when the console did not go by on stderr. */
	if (rc && !L.show_console && !o.quiet && !stop_signal && !timed_out && !io_error &&
	    !(o.control && !L.reply_ok))
		last_words(&L);
restore:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
out:
	if (q.pid > 0)
		qemu_reap(&q, true);
	if (w.fd >= 0)
		capture_close(&w, WIRE_CAPF_INTERRUPTED, err, sizeof(err));
	if (uart >= 0)
		close(uart);
	if (q.err_fd >= 0)
		close(q.err_fd);
	if (vsock >= 0)
		close(vsock);
	if (ttyfd >= 0) {
		tcsetattr(ttyfd, TCSANOW, &saved);
		close(ttyfd);
	}
	rm_tree(q.dir);
	wire_dec_free(d);
	free(buf);
	return rc;
}

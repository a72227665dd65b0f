/*
 * tools/util/control.c — START_RUN requests and the kernel's replies, and
 * the request line bench's RUN_CODE goes over (tools/util/control.h,
 * uapi/wire.h §5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tools/util/control.h"
#include "tools/util/util.h"
#include "wire/decode.h"
#include "uapi/wire.h"

#define FIRST_QUIET_S	0.3	/* line quiet this long: send */
#define RESEND_S	2.0	/* no frame back, line silent this long: send again */

void ctl_reply_feed(struct ctl_reply *r, bool asked, const uint8_t *p, size_t n)
{
	struct wire_ctl_msg m;

	if (n < sizeof(m))
		return;
	memcpy(&m, p, sizeof(m));
	if ((m.type == WIRE_CTL_OK || m.type == WIRE_CTL_ERROR) && m.len <= n - sizeof(m)) {
		size_t k = m.len < sizeof(r->text) - 1 ? m.len : sizeof(r->text) - 1;
		memcpy(r->text, p + sizeof(m), k);
		r->text[k] = 0;
		r->replied = true;
		r->ok = m.type == WIRE_CTL_OK;
	}
	/* END: the kernel sent everything (uapi/wire.h §5); after our
	 * request's reply, it closes what we asked for. */
	if (m.type == WIRE_CTL_END && (r->replied || !asked))
		r->ended = true;
}

size_t ctl_put(uint8_t *buf, size_t at, size_t cap, uint16_t type, const void *v, size_t len)
{
	struct wire_ctl_msg t = { type, (uint16_t)len };

	if (len > UINT16_MAX || at > cap || at + sizeof(t) + len > cap)
		return cap + 1;		/* too long: the caller refuses it */
	memcpy(buf + at, &t, sizeof(t));
	memcpy(buf + at + sizeof(t), v, len);
	return at + sizeof(t) + len;
}

/* A u64 parameter, little-endian as the wire's numbers (uapi/wire.h). */
static size_t put_u64(uint8_t *buf, size_t at, size_t cap, uint16_t type, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	return ctl_put(buf, at, cap, type, le, sizeof(le));
}

/* One parameter per comma-separated item of list (empty items left out). */
static size_t put_list(uint8_t *buf, size_t at, size_t cap, uint16_t type, const char *list)
{
	for (const char *p = list; p && *p && at <= cap;) {
		size_t n = strcspn(p, ",");
		if (n)
			at = ctl_put(buf, at, cap, type, p, n);
		p += n + (p[n] == ',');
	}
	return at;
}

size_t ctl_start_run_msg(const struct ctl_run *r, uint8_t *msg, size_t cap)
{
	struct wire_ctl_msg m = { WIRE_CTL_START_RUN, 0 };
	size_t at = sizeof(m);
	uint64_t nonce = 0;

	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce) || !nonce) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		nonce = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
			((uint64_t)getpid() << 32) ^ 1;
	}
	at = put_u64(msg, at, cap, WIRE_RUN_NONCE, nonce);
	at = ctl_put(msg, at, cap, WIRE_RUN_APP, r->app, strlen(r->app));
	at = put_list(msg, at, cap, WIRE_RUN_EVENT, r->events);
	if (r->period)
		at = put_u64(msg, at, cap, WIRE_RUN_PERIOD, r->period);
	if (r->freq)
		at = put_u64(msg, at, cap, WIRE_RUN_FREQ, r->freq);
	if (r->cpus)
		at = ctl_put(msg, at, cap, WIRE_RUN_CPUS, r->cpus, strlen(r->cpus));
	for (int i = 0; i < r->nargs && at <= cap; i++)
		at = ctl_put(msg, at, cap, WIRE_RUN_ARG, r->args[i], strlen(r->args[i]));
	at = put_list(msg, at, cap, WIRE_RUN_COUNT, r->count);
	if (r->has_max_rate)
		at = put_u64(msg, at, cap, WIRE_RUN_MAX_RATE, r->max_rate);
	if (r->trace)
		at = ctl_put(msg, at, cap, WIRE_RUN_TRACE, r->trace, strlen(r->trace));
	if (r->timeout_ms)
		at = put_u64(msg, at, cap, WIRE_RUN_TIMEOUT_MS, r->timeout_ms);
	if (at > cap || at - sizeof(m) > UINT16_MAX)
		return 0;
	m.len = (uint16_t)(at - sizeof(m));
	memcpy(msg, &m, sizeof(m));
	return at;
}

int ctl_client_init(struct ctl_client *c, const struct ctl_run *r)
{
	struct wire_enc_config ec = { .cpu = WIRE_CPU_HOST };

	memset(c, 0, sizeof(*c));
	wire_encoder_init(&c->enc, &ec);
	c->len = ctl_start_run_msg(r, c->msg, sizeof(c->msg));
	return c->len ? 0 : -1;
}

int ctl_send(struct wire_enc *enc, int fd, const uint8_t *msg, size_t len, size_t *sent,
	     char *err, size_t errlen)
{
	static uint8_t out[WIRE_ENC_OUT_MIN];
	size_t used, n = wire_encode_bytes(enc, WIRE_CH_CONTROL, msg, len, &used, out, sizeof(out));

	if (sent)
		*sent = 0;
	if (used != len) {
		errno = EMSGSIZE;
		return fail(err, errlen, "the request does not fit in a frame");
	}
	for (size_t off = 0; off < n;) {
		ssize_t k = write(fd, out + off, n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : EIO;
			fail(err, errlen, "cannot write to the line: %s",
			     k < 0 ? strerror(e) : "no progress");
			errno = e;
			return -1;
		}
		off += (size_t)k;
		if (sent)
			*sent += (size_t)k;
	}
	return 0;
}

/* Frame the request as a CONTROL frame from the host and write it to fd. */
static int send_request(struct ctl_client *c, int fd, char *err, size_t errlen)
{
	if (ctl_send(&c->enc, fd, c->msg, c->len, NULL, err, errlen))
		return -1;
	tcdrain(fd);
	return 0;
}

int ctl_client_tick(struct ctl_client *c, int fd, const struct ctl_reply *r, double now,
		    double last_byte, uint64_t frames, char *err, size_t errlen)
{
	if (r->replied || now - last_byte < FIRST_QUIET_S)
		return 0;
	if (c->sends && (frames != c->frames_at_send || now - c->sent_at < RESEND_S ||
			 now - last_byte < RESEND_S))
		return 0;
	if (send_request(c, fd, err, errlen))
		return -1;
	c->sends++;
	c->sent_at = now_s();
	c->frames_at_send = frames;
	return 0;
}

/* ---- the request line ------------------------------------------------------ */

/* Keep the last sizeof(L->console) - 1 bytes the kernel printed. */
static void console_add(struct ctl_line *L, const uint8_t *p, size_t n)
{
	size_t cap = sizeof(L->console) - 1;

	if (n > cap)
		p += n - cap, n = cap;
	if (L->clen + n > cap) {
		size_t drop = L->clen + n - cap;
		memmove(L->console, L->console + drop, L->clen - drop);
		L->clen -= drop;
	}
	for (size_t i = 0; i < n; i++)	/* NULs would cut the text short */
		L->console[L->clen++] = p[i] ? (char)p[i] : ' ';
	L->console[L->clen] = 0;
}

/* The control channel's banner (apps/control.c), printed as plain text
 * before the stream starts: from then on the kernel reads requests.
 * Anything sent earlier may be read by the firmware (OVMF's console reads
 * the serial port) and lost. */
#define READY_TEXT	"control: waiting for requests from the host"

/* A probe unanswered this long goes again. */
#define PROBE_AGAIN_S	2.0

/* Bytes from the machine: until the banner, also kept as its console text
 * (the decoder holds plain text back until a frame delimiter comes). */
static void line_feed(struct ctl_line *L, const uint8_t *p, size_t n)
{
	L->rx += n;
	if (!L->ready) {
		console_add(L, p, n);
		if (strstr(L->console, READY_TEXT))
			L->ready = true;
	}
	wire_dec_feed(L->dec, p, n);
}

static void on_data(void *ctx, const struct wire_dec_frame *f, const uint8_t *p, size_t n)
{
	struct ctl_line *L = ctx;
	struct wire_ctl_msg m;

	if (f->channel == WIRE_CH_CONSOLE) {
		console_add(L, p, n);
		return;
	}
	if (f->channel != WIRE_CH_CONTROL || f->cpu == WIRE_CPU_HOST || n < sizeof(m) || !L->r)
		return;
	memcpy(&m, p, sizeof(m));
	if (m.len > n - sizeof(m))
		return;
	if (m.type == WIRE_CTL_END) {
		L->r->ended = L->r->done;
		return;
	}
	if (m.type == WIRE_CTL_ITEM && L->r->on_item) {
		char text[600];
		size_t k = m.len < sizeof(text) - 1 ? m.len : sizeof(text) - 1;
		memcpy(text, p + sizeof(m), k);
		text[k] = 0;
		if (L->r->on_item(L->r->arg, text))
			return;
	}
	char *dst = m.type == WIRE_CTL_ITEM && L->r->nitems < CTL_ITEMS_MAX ?
		    L->r->item[L->r->nitems++] :
		    (m.type == WIRE_CTL_OK || m.type == WIRE_CTL_ERROR) ? L->r->text : NULL;
	if (!dst)
		return;
	size_t k = m.len < 599 ? m.len : 599;
	/* A late answer to a probe sent again: not the request's. */
	if (!L->probing && L->probe_reply && m.type == WIRE_CTL_ERROR &&
	    k == strlen(L->probe_reply) && !memcmp(p + sizeof(m), L->probe_reply, k))
		return;
	memcpy(dst, p + sizeof(m), k);
	dst[k] = 0;
	if (m.type != WIRE_CTL_ITEM) {
		L->r->done = true;
		L->r->ok = m.type == WIRE_CTL_OK;
	}
}

static const struct wire_dec_ops line_ops = { NULL, NULL, on_data, NULL, NULL, NULL };

void ctl_line_codec(struct ctl_line *L)
{
	struct wire_enc_config ec = { .cpu = WIRE_CPU_HOST };

	wire_encoder_init(&L->enc, &ec);
	L->dec = wire_dec_new(&line_ops, L);
}

void ctl_line_stop_qemu(struct ctl_line *L)
{
	if (L->q.pid > 0)
		qemu_reap(&L->q, true);
	if (L->in >= 0)
		close(L->in);
	if (L->out >= 0)
		close(L->out);
	L->in = L->out = -1;
}

/* The CPU time (user and system, seconds) QEMU has used so far, or -1
 * when the line is no QEMU or /proc does not say. */
static double qemu_cpu_s(const struct ctl_line *L)
{
	char path[64], buf[1024];
	unsigned long long ut, st;
	FILE *f;

	if (L->q.pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)L->q.pid);
	if (!(f = fopen(path, "r")))
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* After the command's name in parentheses: state, then fields 4 to
	 * 13, then utime and stime in clock ticks (proc(5)). */
	const char *p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* How often a wait on a QEMU looks at its CPU time. */
#define CPU_LOOK_S	0.5

/* Feed what the machine sends to the decoder until *done, at most wait_s
 * seconds counted as control.h says (wall time on a tty; on a QEMU the
 * CPU time it got since its last byte, within CTL_WAIT_CAP times wait_s
 * of wall time): CTL_LINE_OK, CTL_LINE_SILENT (time is up),
 * CTL_LINE_CLOSED, or CTL_LINE_STOPPED (*L->stop). */
static int pump(struct ctl_line *L, const bool *done, double wait_s)
{
	double t0 = now_s(), cpu0 = qemu_cpu_s(L);
	double mark = t0, cpu_mark = cpu0;	/* the last byte's times */
	bool qemu = cpu0 >= 0;

	L->wait_wall = 0;
	L->wait_cpu = -1;
	L->wait_capped = false;
	while (!*done) {
		struct pollfd p = { L->in, POLLIN, 0 };
		double t = now_s(), cpu = qemu ? qemu_cpu_s(L) : -1;
		double spent = t - mark;
		if (cpu >= 0 && cpu - cpu_mark < spent)
			spent = cpu - cpu_mark;
		L->wait_wall = t - t0;
		L->wait_cpu = cpu >= 0 ? cpu - cpu0 : -1;
		if (L->stop && *L->stop)
			return CTL_LINE_STOPPED;
		if (qemu && t - t0 >= CTL_WAIT_CAP * wait_s) {
			L->wait_capped = true;
			return CTL_LINE_SILENT;
		}
		if (spent >= wait_s)
			return CTL_LINE_SILENT;
		double left = wait_s - spent;
		if (qemu && left > CPU_LOOK_S)
			left = CPU_LOOK_S;
		int k = poll(&p, 1, (int)(left * 1000) + 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k > 0) {
			uint8_t buf[4096];
			ssize_t got = read(L->in, buf, sizeof(buf));
			if (got <= 0)
				return CTL_LINE_CLOSED;
			line_feed(L, buf, (size_t)got);
			if (qemu) {
				mark = now_s();
				double c = qemu_cpu_s(L);
				cpu_mark = c >= 0 ? c : cpu_mark;
			}
		}
	}
	return CTL_LINE_OK;
}

/* What a wait of wait_s that ran out measured (pump), for the errors:
 * on a QEMU its wall and CPU time, and which bound ended it. */
static const char *waited(const struct ctl_line *L, double wait_s, char *buf, size_t n)
{
	if (L->wait_cpu < 0)
		snprintf(buf, n, "in %.0f s", wait_s);
	else if (L->wait_capped)
		snprintf(buf, n, "in %.0f s of wall time, the bound for a machine that keeps "
			 "running (%d times the %.0f s a quiet host needs; QEMU had %.0f s of "
			 "CPU time meanwhile)", L->wait_wall, CTL_WAIT_CAP, wait_s, L->wait_cpu);
	else
		snprintf(buf, n, "in %.0f s since its last byte, counting only the CPU time its "
			 "QEMU got (%.0f s of wall time in all, %.0f s of CPU time)", wait_s,
			 L->wait_wall, L->wait_cpu);
	return buf;
}

/* Say in why what silence (after wait_s) or a closed line means, with
 * the console's text; returns k. */
static int say_why(const struct ctl_line *L, int k, double wait_s, char *why, size_t why_n)
{
	char w[256];

	if (k == CTL_LINE_SILENT)
		snprintf(why, why_n, "no reply from the machine %s%s%s",
			 waited(L, wait_s, w, sizeof(w)), L->clen ? "; its console said:\n" : "",
			 L->console);
	else if (k == CTL_LINE_CLOSED)
		snprintf(why, why_n, "the machine's line closed%s%s",
			 L->clen ? "; its console said:\n" : "", L->console);
	return k;
}

int ctl_line_request(struct ctl_line *L, const uint8_t *msg, size_t len, struct ctl_replies *r,
		     double wait_s, char *why, size_t why_n)
{
	size_t sent;
	bool (*on_item)(void *, const char *) = r->on_item;
	void *arg = r->arg;

	memset(r, 0, sizeof(*r));
	r->on_item = on_item;
	r->arg = arg;
	L->r = r;
	int e = ctl_send(&L->enc, L->out, msg, len, &sent, why, why_n) ? errno : 0;
	L->tx += sent;
	if (e)
		return e == EPIPE ? CTL_LINE_CLOSED : CTL_LINE_IO;
	return say_why(L, pump(L, &r->done, wait_s), wait_s, why, why_n);
}

/*
 * The first request after the line is opened can go unanswered (QEMU's
 * pty under load: 3 in 60 with three QEMUs busy on 2 cores, while the
 * machine answered the next invocation at once; bytes a previous one left
 * unread may come first), so the probe goes again every PROBE_AGAIN_S.
 */
int ctl_line_probe(struct ctl_line *L, const uint8_t *msg, size_t len, const char *reply,
		   double wait_s, char *why, size_t why_n)
{
	struct ctl_replies r = { 0 };
	double t0 = now_s(), sent_at = -1;
	int k = CTL_LINE_OK;

	L->r = &r;
	L->probe_reply = reply;
	L->probing = true;
	while (!r.done && k == CTL_LINE_OK) {
		double t = now_s();
		if (t - t0 >= wait_s) {
			k = CTL_LINE_SILENT;
			break;
		}
		if (sent_at < 0 || t - sent_at >= PROBE_AGAIN_S) {
			size_t sent;
			int e = ctl_send(&L->enc, L->out, msg, len, &sent, why, why_n) ? errno : 0;
			L->tx += sent;
			if (e)
				return e == EPIPE ? CTL_LINE_CLOSED : CTL_LINE_IO;
			sent_at = t;
		}
		double left = wait_s - (t - t0);
		k = pump(L, &r.done, left < 0.25 ? left : 0.25);
		if (k == CTL_LINE_SILENT)
			k = CTL_LINE_OK;
	}
	L->probing = false;
	L->r = NULL;
	return say_why(L, k, wait_s, why, why_n);
}

int ctl_line_wait_end(struct ctl_line *L, double wait_s)
{
	return L->r ? pump(L, &L->r->ended, wait_s) : CTL_LINE_OK;
}

int ctl_line_wait_ready(struct ctl_line *L, double wait_s, char *why, size_t why_n)
{
	char w[256];
	int k = pump(L, &L->ready, wait_s);
	if (k == CTL_LINE_SILENT)
		snprintf(why, why_n, "the kernel did not say '%s' %s%s%s", READY_TEXT,
			 waited(L, wait_s, w, sizeof(w)), L->clen ? "; the machine said:\n" : "",
			 L->console);
	else if (k == CTL_LINE_CLOSED)
		snprintf(why, why_n, "QEMU ended before the kernel was ready%s%s",
			 L->clen ? "; the machine said:\n" : "", L->console);
	return k;
}

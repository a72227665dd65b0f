/*
 * tools/util/control.c — START_RUN requests and the kernel's replies
 * (tools/util/control.h, uapi/wire.h §5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tools/util/control.h"
#include "tools/util/util.h"
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

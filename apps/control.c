/*
 * control.c — one boot, many runs: with control=1 the kernel serves the
 * host's requests over the stream (include/uapi/wire.h §5) instead of
 * running one app from the command line. Requests are CONTROL frames from
 * WIRE_CPU_HOST; every reply is CONTROL frames too, ending in OK or ERROR.
 *
 *   LIST_APPS    one ITEM "name<TAB>description" per app, then OK (the
 *                programs the host loaded last, "loaded program, ...")
 *   LIST_EVENTS  one ITEM "name<TAB>description" per event, then OK
 *   START_RUN    {APP, EVENT*, PERIOD | FREQ, CPUS, ARG*, COUNT*, MAX_RATE,
 *                TRACE}: runs the app (records stream as usual), then
 *                OK "exit N"; what to sample and count is the request's
 *                (the defaults if not sent), the rate limit and tracing
 *                not sent are the boot command line's (uapi/wire.h)
 *   RUN_CODE     {BODY, INIT, UNROLL, ...}: with code=1 only, measures the
 *                machine code sent (apps/bench_code.h): ITEMs, then OK
 *   LOAD         {NAME, SIZE, OFFSET, DATA}: with code=1 only, a program's
 *                object in pieces (apps/program_load.c): ITEMs, then OK
 *
 * control.c answers LIST_APPS and LIST_EVENTS itself; START_RUN is
 * apps/run_request.c's, RUN_CODE apps/bench_code.c's: each request type
 * has a handler registered with CONTROL_HANDLER (apps/control.h), and
 * serve() finds it by type.
 *
 * Everything the host sends is bounds-checked against the frame it came in
 * and copied into fixed buffers: no request can write outside them. A
 * frame that fails its CRC is ignored; a malformed or unknown request gets
 * an ERROR that says what was wrong.
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "apps/control.h"
#include "apps/program.h"
#include "kernel/stream.h"
#include "wire/frame.h"
#include "profile/profile.h"

#define reply control_reply
#define replyf control_replyf

extern const struct control_handler __start_control_handlers[], __stop_control_handlers[];

static u8 rx[WIRE_ENCODED_MAX];		/* one encoded frame being received */
static u8 frame[WIRE_FRAME_MAX];	/* its decoded bytes */

void control_reply(u16 type, const char *text, size_t len)
{
	static u8 msg[sizeof(struct wire_ctl_msg) + 512];
	struct wire_ctl_msg *m = (struct wire_ctl_msg *)msg;

	len = MIN(len, sizeof(msg) - sizeof(*m));
	m->type = type;
	m->len = len;
	memcpy(msg + sizeof(*m), text, len);
	stream_control_send(msg, sizeof(*m) + len);
}

void control_replyf(u16 type, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	int n = kvsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	control_reply(type, text, MIN((size_t)n, sizeof(text) - 1));
}

static void list_apps(const u8 *v, size_t len)
{
	(void)v, (void)len;
	for (const struct app *a = app_next(NULL); a; a = app_next(a))
		replyf(WIRE_CTL_ITEM, "%s\t%s", a->name, a->desc);
	for (const struct app *a = program_next(NULL); a; a = program_next(a))
		replyf(WIRE_CTL_ITEM, "%s\t%s", a->name, a->desc);
	reply(WIRE_CTL_OK, "", 0);
}
CONTROL_HANDLER(list_apps, WIRE_CTL_LIST_APPS, list_apps);

static void list_events(const u8 *v, size_t len)
{
	const char *name, *desc;

	(void)v, (void)len;
	replyf(WIRE_CTL_ITEM, "cpu-clock\tsoft PMU: HPET NMIs, period in ns (works on any machine)");
	for (int i = 0; (name = pmu_event_name(i, &desc)); i++)
		replyf(WIRE_CTL_ITEM, "%s\t%s", name, desc);
	reply(WIRE_CTL_OK, "", 0);
}
CONTROL_HANDLER(list_events, WIRE_CTL_LIST_EVENTS, list_events);

static void serve(const struct wire_frame *f)
{
	struct wire_ctl_msg m;

	if (f->len < sizeof(m)) {
		reply(WIRE_CTL_ERROR, "control message shorter than its header", 39);
		return;
	}
	memcpy(&m, f->payload, sizeof(m));
	if (m.len != f->len - sizeof(m)) {
		replyf(WIRE_CTL_ERROR, "control message says %u bytes of value, the frame holds %zu",
		       m.len, f->len - sizeof(m));
		return;
	}
	const u8 *v = f->payload + sizeof(m);
	for (const struct control_handler *h = __start_control_handlers;
	     h < __stop_control_handlers; h++)
		if (h->type == m.type) {
			h->serve(v, m.len);
			return;
		}
	replyf(WIRE_CTL_ERROR, "unknown request type %#x", m.type);
}

/* START_RUN's WIRE_RUN_NONCE, 0 if it has none (or is not START_RUN). */
static u64 run_nonce(const struct wire_frame *f)
{
	struct wire_ctl_msg m, t;
	const u8 *p = f->payload + sizeof(m);
	size_t len;
	u64 nonce = 0;

	if (f->len < sizeof(m))
		return 0;
	memcpy(&m, f->payload, sizeof(m));
	if (m.type != WIRE_CTL_START_RUN || m.len != f->len - sizeof(m))
		return 0;
	for (len = m.len; len >= sizeof(t); p += sizeof(t) + t.len, len -= sizeof(t) + t.len) {
		memcpy(&t, p, sizeof(t));
		if (t.len > len - sizeof(t))
			return 0;
		if (t.type == WIRE_RUN_NONCE && t.len == sizeof(nonce))
			memcpy(&nonce, p + sizeof(t), sizeof(nonce));
	}
	return nonce;
}

static void handle(const struct wire_frame *f)
{
	static u64 last_nonce;
	u64 nonce;

	if (f->channel != WIRE_CH_CONTROL || f->cpu != WIRE_CPU_HOST)
		return;
	/* A resent request already served: its run and replies went out. */
	nonce = run_nonce(f);
	if (nonce && nonce == last_nonce)
		return;
	if (nonce)
		last_nonce = nonce;
	/* Each request's frames are numbered from 0 and closed by END: the
	 * host's recording of this request misses nothing before or after. */
	stream_restart();
	serve(f);
	stream_end(0, false);
}

int control_serve(void)
{
	size_t n = 0;
	bool overflow = false;
	u8 chunk[256];

	if (stream_transport() == STREAM_OFF) {
		kprintf("bareperf: control=1 needs stream=uart or stream=virtio\n");
		return EXIT_USAGE;
	}
	kprintf("control: waiting for requests from the host\n");
	stream_start();
	stream_listen(false);		/* the requests are read here */
	for (;;) {
		size_t got = stream_recv(chunk, sizeof(chunk));
		if (!got) {
			cpu_relax();
			continue;
		}
		for (size_t i = 0; i < got; i++) {
			if (chunk[i] != WIRE_DELIM) {
				if (n < sizeof(rx))
					rx[n++] = chunk[i];
				else
					overflow = true;	/* longer than any frame: noise */
				continue;
			}
			struct wire_frame f;
			if (n && !overflow &&
			    !wire_frame_unpack(rx, n, frame, sizeof(frame), &f))
				handle(&f);
			n = 0;
			overflow = false;
		}
	}
}

/*
 * tools/util/control.h — the host's side of the control channel
 * (uapi/wire.h §5, served by the kernel's control app): `bareperf
 * record --tty DEV -- APP` asks a machine booted with control=1 for a run
 * with one START_RUN request, and reads the kernel's answer; `bareperf
 * bench` frames its RUN_CODE requests with the same ctl_put and ctl_send,
 * and sends them over a request line (struct ctl_line) one at a time.
 *
 * A request travels as one CONTROL frame from WIRE_CPU_HOST, framed by
 * the codec's encoder (wire/record.h). Its nonce is the request's
 * identity: sent again, the same message is not run twice.
 */
#ifndef BAREPERF_TOOLS_UTIL_CONTROL_H
#define BAREPERF_TOOLS_UTIL_CONTROL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/record.h"
#include "tools/util/qemu.h"

/*
 * The run START_RUN asks for. NULL / 0 / false: not sent, and the kernel
 * decides (apps/run_request.c: the defaults for events, period, freq and
 * counting; the boot command line's rate limit and tracing).
 */
struct ctl_run {
	const char *app;		/* required */
	char *const *args;		/* the app's arguments */
	int nargs;
	const char *events;		/* comma-separated: one WIRE_RUN_EVENT each */
	uint64_t period, freq;
	const char *cpus;		/* the CPU the app runs on */
	const char *count;		/* comma-separated: one WIRE_RUN_COUNT each */
	bool has_max_rate;		/* send max_rate (0 is "no limit") */
	uint64_t max_rate;		/* samples/s per CPU before throttling */
	const char *trace;		/* WIRE_RUN_TRACE: trace= SPEC */
	uint64_t timeout_ms;		/* a loaded program's limit; 0: the kernel's */
};

/* The longest START_RUN message ctl_client_init builds: the kernel's own
 * limits (apps/run_request.c: 16 arguments of 63 bytes, 255-byte lists) fit. */
#define CTL_MSG_MAX	4096

/* The kernel's answer, from the CONTROL messages it sends. */
struct ctl_reply {
	bool replied, ok;		/* OK "exit N" or ERROR "why" came */
	bool ended;			/* END came (after the reply, if one was asked for) */
	char text[256];			/* the reply's text */
};

/*
 * A CONTROL message from the kernel (p, n: the frame's payload). OK and
 * ERROR fill r; END (the kernel sent everything) sets r->ended once the
 * reply came, or at once when no request was made (asked false).
 */
void ctl_reply_feed(struct ctl_reply *r, bool asked, const uint8_t *p, size_t n);

/* The requesting side: the message, and when it went out. */
struct ctl_client {
	struct wire_enc enc;		/* CONTROL frames from WIRE_CPU_HOST */
	uint8_t msg[CTL_MSG_MAX];
	size_t len;
	unsigned sends;
	double sent_at;			/* now_s() of the last send */
	uint64_t frames_at_send;	/* frames received by then */
};

/*
 * Append one parameter {type, len, v} to the message in buf at offset at:
 * the new offset, or cap + 1 once it no longer fits or len exceeds the
 * u16 a triple's length has (and from then on, so a chain of calls is
 * checked once at its end).
 */
size_t ctl_put(uint8_t *buf, size_t at, size_t cap, uint16_t type, const void *v, size_t len);

/*
 * Frame msg (len bytes: a whole request) as one CONTROL frame from the
 * host with enc and write it all to fd. *sent (if not NULL): the bytes
 * written. 0, or -1 with err and errno (EPIPE: the machine closed the
 * line; EMSGSIZE: msg does not fit in one frame).
 */
int ctl_send(struct wire_enc *enc, int fd, const uint8_t *msg, size_t len, size_t *sent,
	     char *err, size_t errlen);

/*
 * The START_RUN message {NONCE, APP, EVENT*, PERIOD | FREQ, CPUS, ARG*,
 * COUNT*, MAX_RATE, TRACE} into msg, each parameter a {u16 type, u16 len,
 * value} triple (uapi/wire.h §5), numbers u64 little-endian; a list is one
 * triple per comma-separated item (empty items are left out). Its length,
 * or 0 if it does not fit in cap (or in one message's u16 length).
 */
size_t ctl_start_run_msg(const struct ctl_run *r, uint8_t *msg, size_t cap);

/* Build c's request for r. 0, or -1 if the run's parameters are longer
 * than CTL_MSG_MAX: nothing may be sent then. */
int ctl_client_init(struct ctl_client *c, const struct ctl_run *r);

/*
 * Send the request on fd when it is due, all times wall clock (now_s):
 * once the line has been quiet for 0.3 s (a booting machine has had its
 * say), and again when no frame came back and the line has been silent
 * for 2 s since (the request was lost: the machine reads requests only
 * between runs, and prints "app: ...: start" as a CONSOLE frame the
 * moment it begins one). Not while it still talks (it is booting, and
 * will read the request it holds), and never once a frame came or the
 * reply is in: a second request would start a second run.
 * last_byte: when the line last delivered bytes; frames: frames received
 * so far. 0, or -1 with err when the write failed.
 */
int ctl_client_tick(struct ctl_client *c, int fd, const struct ctl_reply *r, double now,
		    double last_byte, uint64_t frames, char *err, size_t errlen);

/* ---- the request line ------------------------------------------------------ */

/* ITEMs one request's replies hold: the kernel's BENCH_MAX_EVENTS. */
#define CTL_ITEMS_MAX	4

/* One request's replies: ITEMs, then OK or ERROR (done). */
struct ctl_replies {
	bool done, ok;
	bool ended;			/* the END after them came */
	char text[600];
	int nitems;
	char item[CTL_ITEMS_MAX][600];
	/* NULL, or called first with each ITEM's text (NUL-terminated, at
	 * most 599 bytes): true takes it, false leaves it to item[]. Kept
	 * by ctl_line_request, which clears the rest. */
	bool (*on_item)(void *arg, const char *text);
	void *arg;
};

/*
 * A line to a machine that serves requests one at a time: a tty, or a
 * QEMU (q) its owner started and whose serial line it reads. Requests go
 * out as CONTROL frames (ctl_send); what comes back is decoded, CONTROL
 * replies into r, the console's text kept for the errors.
 */
struct ctl_line {
	int in, out;			/* we read `in`, write `out` */
	struct qemu q;			/* QEMU, when not a tty */
	bool prepared;			/* q's command and directory made */
	struct wire_dec *dec;
	struct wire_enc enc;
	struct ctl_replies *r;		/* the request waited for */
	char console[4096];		/* the kernel's last console text, for errors */
	size_t clen;
	bool ready;			/* the control banner seen since QEMU started; tty: true */
	bool probing;			/* ctl_line_probe waits: probe_reply is its */
	const char *probe_reply;	/* the probe's answer, not a later request's */
	uint64_t tx, rx;		/* bytes written to and read from the line */
	/* The last wait on a QEMU (pump): its wall time, QEMU's CPU time in
	 * it, and whether it ended at the bound on wall time. */
	double wait_wall, wait_cpu;
	bool wait_capped;
	const volatile sig_atomic_t *stop;	/* NULL, or nonzero: stop waiting */
};

/* How a request (or the wait for the banner) ended. */
enum { CTL_LINE_OK, CTL_LINE_IO, CTL_LINE_SILENT, CTL_LINE_CLOSED, CTL_LINE_STOPPED };

/* A fresh encoder and decoder on L (the decoder: wire_dec_free it). */
void ctl_line_codec(struct ctl_line *L);

/* Reap L's QEMU, if any, and close the line. */
void ctl_line_stop_qemu(struct ctl_line *L);

/*
 * How the waits below count wait_s. On a tty: wall time. On a QEMU, the
 * machine's progress: the time since its last byte, and of that only
 * what QEMU got of the CPU (a loaded host stretches the wall time a boot
 * or a run takes, not its work), so wait_s is what a quiet host needs
 * with a margin; a machine that keeps running or talking without end is
 * given up on after CTL_WAIT_CAP times wait_s of wall time.
 */
#define CTL_WAIT_CAP	4

/*
 * Send one request (msg, len: a whole message) and wait for its OK or
 * ERROR, at most wait_s seconds (counted as above), the replies in r:
 * CTL_LINE_OK, or why not (and the kernel's last console text) in why.
 */
int ctl_line_request(struct ctl_line *L, const uint8_t *msg, size_t len, struct ctl_replies *r,
		     double wait_s, char *why, size_t why_n);

/*
 * After the last request's reply: wait for the END that closes it (at
 * most wait_s), so that what comes next on the line is the next
 * request's. CTL_LINE_OK, or CTL_LINE_SILENT / CTL_LINE_CLOSED.
 */
int ctl_line_wait_end(struct ctl_line *L, double wait_s);

/*
 * A tty, before any request: msg, one that runs nothing and is answered
 * at once (reply, or why this machine refuses), so that from then on
 * silence is the requests' doing. Sent again until an answer, for at
 * most wait_s of wall time: CTL_LINE_OK, or why not in why. A late
 * reply to it is dropped from then on.
 */
int ctl_line_probe(struct ctl_line *L, const uint8_t *msg, size_t len, const char *reply,
		   double wait_s, char *why, size_t why_n);

/*
 * QEMU: wait until the kernel says it reads requests (the control
 * channel's banner, apps/control.c), at most wait_s seconds (counted as
 * above: OVMF prints nothing for most of its boot, but works):
 * CTL_LINE_OK, or why not in why.
 */
int ctl_line_wait_ready(struct ctl_line *L, double wait_s, char *why, size_t why_n);

#endif

/*
 * stream.h — the link that gets data off the machine (kernel/stream.c):
 * frames of include/uapi/wire.h on the UART or virtio-console. Console
 * text and control messages are framed here; the rings' records are
 * framed by the drain above it (ringbuf/drain.h), which sends through
 * stream_send/stream_flush in stream_framer's numbering.
 */
#ifndef BAREPERF_KERNEL_STREAM_H
#define BAREPERF_KERNEL_STREAM_H

#include "kernel/x86.h"

#define STREAM_MAX_CPUS	64	/* CPUs with a frame numbering of their own */

struct wire_framer;

enum stream_transport {
	STREAM_OFF,		/* plain console only; rings stay in memory */
	STREAM_UART,		/* frames on the console UART */
	STREAM_VIRTIO,		/* frames on virtio-console; the UART stays plain text */
};

struct stream_stats {
	u64 bytes;		/* bytes handed to the transport */
	u64 frames;		/* frames of every CPU and channel */
	u64 write_errors;	/* transport refused or timed out */
	u64 repeats_asked;	/* descriptors sent again because the host asked */
};

/* Parse "off|uart|virtio" (kernel command line). */
int stream_parse(const char *s, enum stream_transport *out);
/* Bring up the chosen transport (virtio falls back to the UART with a
 * message). Call once after the console and PCI are up. */
void stream_init(enum stream_transport t, u32 pace_baud);
enum stream_transport stream_transport(void);
/* Switch to framed output: from here on console text goes out as CONSOLE
 * frames (on the UART transport) and the drain sends. Idempotent. */
void stream_start(void);
/* Framed output is on. NMI-safe (a read). */
bool stream_active(void);
void stream_get_stats(struct stream_stats *out);
/* Bytes the host sent on the transport, non-blocking: count or 0. */
size_t stream_recv(void *buf, size_t cap);
/*
 * Read the line for the host's word about repeats (uapi/wire.h §3) while
 * sending: on from stream_start; control=1 turns it off, as it reads the
 * line itself.
 */
void stream_listen(bool on);
/* Send one CONTROL message (struct wire_ctl_msg + value) as a frame. */
void stream_control_send(const void *msg, size_t len);
/*
 * Send END (uapi/wire.h §5): every (channel, cpu)'s frame count, so the
 * host can tell a complete stream from a cut one. halt: the machine
 * stops with exit code status, and the console is plain text from here
 * on; else a served control request is complete. Starts the stream if it
 * had not started (the host still learns the exit code). Not NMI-safe.
 */
void stream_end(u32 status, bool halt);
/* The reason (enum wire_end_reason) the halting END gives for a nonzero
 * status: set by what refuses the run, before the machine exits. */
void stream_end_reason(u8 reason);
/*
 * For a sender of frames (the drain): CPU cpu's frame numbering (NULL
 * past STREAM_MAX_CPUS), shared with its CONSOLE and CONTROL frames so
 * END reports every count. stream_send queues encoded bytes for the
 * transport (paced on the UART if asked); stream_flush returns once the
 * transport has taken everything queued, so data may be released from
 * its ring only after it. All three with the output lock held
 * (console_lock_output), never from NMI context.
 */
struct wire_framer *stream_framer(u32 cpu);
void stream_send(const void *p, size_t n);
void stream_flush(void);
/* Number every channel from 0 again (WIRE_F_START): a control request's
 * frames are a stream of their own, so a recorder that asked for it sees
 * nothing missing before them. */
void stream_restart(void);

#endif

/*
 * stream.h — getting records off the machine (kernel/stream.c): the drain
 * from the per-CPU rings to a transport, in the wire format of
 * include/uapi/wire.h.
 */
#ifndef BAREPERF_KERNEL_STREAM_H
#define BAREPERF_KERNEL_STREAM_H

#include "kernel/x86.h"

enum stream_transport {
	STREAM_OFF,		/* plain console only; rings stay in memory */
	STREAM_UART,		/* frames on the console UART */
	STREAM_VIRTIO,		/* frames on virtio-console; the UART stays plain text */
};

struct stream_stats {
	u64 bytes;		/* bytes handed to the transport */
	u64 frames;
	u64 records;		/* ring records sent */
	u64 drains;		/* drain passes that moved data */
	u64 skipped_busy;	/* timer drains skipped: output in use */
	u64 write_errors;	/* transport refused or timed out */
};

/* Parse "off|uart|virtio" (kernel command line). */
int stream_parse(const char *s, enum stream_transport *out);
/* Bring up the chosen transport (virtio falls back to the UART with a
 * message). Call once after the console and PCI are up. */
void stream_init(enum stream_transport t, u32 pace_baud);
enum stream_transport stream_transport(void);
/* Switch to framed output: from here on console text goes out as CONSOLE
 * frames (on the UART transport) and the rings are drained. Idempotent. */
void stream_start(void);
bool stream_active(void);
/* Send every record the rings hold (run end), or only rings past their
 * watermark (from_tick). Not NMI-safe. */
void stream_drain(bool from_tick);
void stream_get_stats(struct stream_stats *out);
/* Bytes the host sent on the transport, non-blocking: count or 0. */
size_t stream_recv(void *buf, size_t cap);
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
/* Number every channel from 0 again (WIRE_F_START): a control request's
 * frames are a stream of their own, so a recorder that asked for it sees
 * nothing missing before them. */
void stream_restart(void);

#endif

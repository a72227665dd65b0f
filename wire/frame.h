/*
 * wire/frame.h — the wire's link layer (include/uapi/wire.h §2):
 * COBS frames with a CRC32C, numbered per (cpu, channel); the byte
 * channels (CONSOLE, CONTROL, AUX); and the check of a received frame.
 * The record codec (wire/record.h) writes its items into frames opened
 * here (struct wire_writer).
 *
 * Freestanding and allocation-free: every buffer is the caller's. Also
 * built for the host, where wire/decode.c (the decoder) and the tests
 * use the same frame check, CRC and varints. Shared with the host, so it
 * uses <stdint.h> types.
 *
 * NMI-safe: no. One struct wire_framer per sender CPU, used by one thread at
 * a time (the kernel: under the console's output lock).
 */
#ifndef BAREPERF_WIRE_FRAME_H
#define BAREPERF_WIRE_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/wire.h"

enum wire_error {
	WIRE_OK		=  0,
	WIRE_E_COBS	= -1,	/* not valid COBS, or longer than any frame */
	WIRE_E_SHORT	= -2,	/* fewer bytes than a header and a CRC */
	WIRE_E_CRC	= -3,	/* CRC mismatch */
	WIRE_E_VERSION	= -4,	/* a version this code does not read */
	WIRE_E_CHANNEL	= -5,	/* a channel this code does not know */
	WIRE_E_PAYLOAD	= -6,	/* payload not well formed for its channel */
	WIRE_E_SPACE	= -7,	/* output buffer too small */
};

/* ---- primitives (both sides) -------------------------------------- */

/*
 * CRC32C (Castagnoli, reflected 0x82F63B78). Pass 0 to start; pass the
 * previous result to continue: wire_crc32c(wire_crc32c(0, a, n), b, m) is
 * the CRC of a then b. Hosted builds use the CPU's crc32 instruction
 * (SSE4.2) when it has one; wire_crc32c_table is the portable version the
 * kernel always uses. Both give the same result.
 */
uint32_t wire_crc32c(uint32_t crc, const void *p, size_t n);
uint32_t wire_crc32c_table(uint32_t crc, const void *p, size_t n);

/* LEB128 varints (uapi/wire.h §4). put: bytes written (1..10), out must
 * have 10 bytes. get: bytes read, or 0 if the varint is cut short by end
 * or has bits beyond 64. */
size_t wire_put_uvarint(uint8_t *out, uint64_t v);

static inline size_t wire_get_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;

	for (size_t i = 0; i < 10; i++) {
		if (p + i >= end)
			return 0;
		uint8_t b = p[i];
		/* The tenth byte holds bit 63 only. */
		if (i == 9 && b > 1)
			return 0;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			return i + 1;
		}
	}
	return 0;
}

static inline uint64_t wire_zigzag(uint64_t v)
{
	return (v << 1) ^ (uint64_t)((int64_t)v >> 63);
}

static inline uint64_t wire_unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/*
 * COBS-encode n bytes into out (which has room for WIRE_COBS_MAX(n)),
 * without the delimiter: the encoding every frame uses, for senders that
 * build a frame whole (the host's control client, tests). Returns the
 * bytes written.
 */
size_t wire_cobs_encode(const uint8_t *src, size_t n, uint8_t *out);

/*
 * COBS-decode one frame's bytes (without the 0x00 delimiter) into out.
 * Returns the decoded length, or WIRE_E_COBS if src is not valid COBS or
 * does not fit in cap.
 */
long wire_cobs_decode(const uint8_t *src, size_t n, uint8_t *out, size_t cap);

/* A frame that passed wire_frame_unpack(). payload points into its buf. */
struct wire_frame {
	uint8_t  channel;		/* < WIRE_NR_CHANNELS */
	uint8_t  flags;
	uint16_t cpu;
	uint32_t seq;
	uint32_t boot;			/* 0 in a version 1 frame: unknown */
	const uint8_t *payload;
	size_t   len;
};

/*
 * Check one received frame: COBS-decode src (the bytes between two
 * delimiters) into buf (cap >= WIRE_FRAME_MAX takes any frame), check
 * length, CRC, version (WIRE_VERSION_MIN .. WIRE_VERSION) and channel, and
 * fill *f. Returns 0 or a negative
 * enum wire_error; on error *f is untouched and nothing in buf may be
 * used. Does not look inside the payload.
 */
int wire_frame_unpack(const uint8_t *src, size_t n, uint8_t *buf, size_t cap,
		      struct wire_frame *f);

/* ---- sending frames ------------------------------------------------- */

/*
 * Default payload bytes per frame. Small, so that damage costs little: a
 * line that flips one bit in 500 bytes leaves about half such frames
 * whole (a frame is dropped whole on any error), while a 1 KiB frame
 * hardly ever survives. The price, a frame's 18 bytes and its first
 * sample's full fields, keeps a hot loop's sample under 3.5 bytes (make
 * wire-bench).
 */
#define WIRE_FRAME_TARGET	224u

/*
 * Payload bytes per frame on a line whose host asks for repeats and has
 * reported no damage (uapi/wire.h §3): fewer frames, so fewer headers,
 * CRCs and first samples in full. The first report of damage brings the
 * frames back to WIRE_FRAME_TARGET.
 */
#define WIRE_FRAME_TARGET_CLEAN	1024u

/*
 * An out buffer this large always has room for the leading delimiter and
 * one frame of any size, so every call makes progress.
 */
#define WIRE_ENC_OUT_MIN	(WIRE_ENCODED_MAX + 1u)

struct wire_descs;

/*
 * Writing a frame's payload item by item (the record codec): bytes pass
 * through the writer, which updates the CRC and fills in COBS code bytes
 * straight into the caller's buffer. An item that does not fit sets
 * `full`; the caller rolls back by restoring a copy of the writer (a few
 * words) taken before the item.
 */
struct wire_writer {
	uint8_t *out;
	size_t pos;			/* next output byte */
	size_t lim;			/* payload bytes may not start at or past this */
	size_t code_pos;		/* where the open block's code byte goes */
	uint32_t code;			/* 1 + bytes in the open block */
	uint32_t crc;			/* running, inverted */
	size_t raw;			/* frame bytes so far, header included */
	bool full;			/* ran out of out: roll back */
};

/* One sender's frame numbering (uapi/wire.h §2, §5). */
struct wire_framer {
	uint16_t cpu;			/* goes into every frame */
	uint32_t boot;			/* goes into every frame */
	uint32_t frame_target;		/* payload bytes per frame */
	bool     lead_sent;		/* the 0x00 that starts the stream */
	uint8_t  started;		/* bit per channel: WIRE_F_START was sent */
	uint32_t seq[WIRE_NR_CHANNELS];	/* frames sent per channel: the next seq */
	uint64_t frames;		/* frames written */
	uint64_t bytes;			/* bytes written, delimiters included */
	uint8_t  flags;			/* WIRE_F_* every next frame carries (WIRE_F_REPEAT) */
	/* The host asks for repeats (uapi/wire.h §3): RECORDS given to the
	 * encoder while flags has WIRE_F_REPEAT are taken and not sent. */
	bool     hold_repeats;
	/* Records mostly zero may go as WIRE_ITEM_RAW_SPARSE (a clean line
	 * whose host asks for repeats: frames there pack more records, so a
	 * damaged one costs more). */
	bool     sparse;
	struct wire_descs *keep;	/* if set: the descriptors its RECORDS frames carried */
	/*
	 * If set (span_cap bytes, the caller's): a RECORDS frame may span
	 * calls of the encoder, open here until it reaches frame_target or
	 * wire_framer_finish closes it. No other frame of this framer may
	 * be written while one is open.
	 */
	uint8_t *span;
	size_t   span_cap;
	bool     span_open;
	uint32_t span_records;		/* records in the open frame */
	bool     span_descs;		/* ... the last of them a run's descriptor */
	struct wire_writer span_w;	/* its writer, into span */
};

/* frame_target 0: WIRE_FRAME_TARGET; at most WIRE_PAYLOAD_MAX. */
void wire_framer_init(struct wire_framer *l, uint16_t cpu, uint32_t boot, uint32_t frame_target);

/*
 * Close the RECORDS frame open in l->span, if any, into out (outcap >=
 * span_cap): returns the bytes written.
 */
size_t wire_framer_finish(struct wire_framer *l, uint8_t *out, size_t outcap);

/* Number every channel from 0 again, each next frame marked WIRE_F_START. */
void wire_framer_restart(struct wire_framer *l);

/*
 * Encode bytes as CONSOLE or CONTROL frames (channel). CONSOLE text is
 * split into frames of frame_target bytes. A CONTROL message is one frame
 * or nothing: *consumed is len or 0 (len > WIRE_PAYLOAD_MAX never fits).
 * Returns bytes written; *consumed as above.
 */
size_t wire_framer_encode_bytes(struct wire_framer *l, enum wire_channel channel,
			      const void *data, size_t len, size_t *consumed,
			      uint8_t *out, size_t outcap);

/*
 * Encode AUX data: data[0, len) is the AUX area from counter aux_pos on.
 * Frames carry up to frame_target - 8 data bytes each, with their own
 * position. Returns bytes written; *consumed as above.
 */
size_t wire_framer_encode_aux(struct wire_framer *l, uint64_t aux_pos, const void *data,
			    size_t len, size_t *consumed, uint8_t *out, size_t outcap);

/* Open a frame of channel at out[at]: the stream's leading delimiter if
 * not sent yet, then the header. False if out has no room even for that. */
bool wire_frame_open(struct wire_framer *l, struct wire_writer *w, uint8_t *out, size_t at,
		     size_t outcap, unsigned channel);
/* Append the CRC and the delimiter, count the frame; returns the position
 * in out after it. */
size_t wire_frame_close(struct wire_framer *l, struct wire_writer *w, unsigned channel);

/* The CRC32C table (T[i] = i shifted through the polynomial eight times)
 * and one byte's step: inline, as the encoder's every byte takes it. */
extern const uint32_t wire_crc32c_tab[256];

static inline uint32_t wire_crc_step(uint32_t crc, uint8_t b)
{
	return (crc >> 8) ^ wire_crc32c_tab[(crc ^ b) & 0xff];
}

/* One byte into the frame, COBS-coded, without the CRC (the trailer). */
static inline void wire_put_cobs(struct wire_writer *w, uint8_t b)
{
	w->raw++;
	if (w->pos >= w->lim) {
		w->full = true;
		return;
	}
	if (b) {
		w->out[w->pos++] = b;
		if (++w->code != 0xff)
			return;
	}
	/* A zero, or 254 bytes without one: close the block, open the next. */
	w->out[w->code_pos] = (uint8_t)w->code;
	w->code_pos = w->pos++;
	w->code = 1;
}

/* One payload byte: into the CRC and the frame. */
static inline void wire_put_byte(struct wire_writer *w, uint8_t b)
{
	w->crc = wire_crc_step(w->crc, b);
	wire_put_cobs(w, b);
}

void wire_put_bytes(struct wire_writer *w, const void *p, size_t n);
void wire_put_uvarint_w(struct wire_writer *w, uint64_t v);

static inline void wire_put_svarint(struct wire_writer *w, uint64_t delta)
{
	wire_put_uvarint_w(w, wire_zigzag(delta));
}

/* Payload bytes written so far. */
static inline size_t wire_payload_len(const struct wire_writer *w)
{
	return w->raw - WIRE_HEADER_SIZE;
}

#endif

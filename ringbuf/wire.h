/*
 * ringbuf/wire.h — the wire codec's kernel half: turns ring records,
 * console text, AUX data and control messages into COBS frames
 * (include/uapi/wire.h), and checks frames the host sends.
 *
 * Freestanding and allocation-free: every buffer is the caller's. Also
 * built for the host, where tools/util/wire_dec.c (the decoder) and the tests
 * use the same frame check, CRC and varints.
 *
 * NMI-safe: no. The drain calls the encoder outside NMI context; one
 * struct wire_enc per sender CPU, used by one thread at a time.
 */
#ifndef BAREPERF_RINGBUF_WIRE_H
#define BAREPERF_RINGBUF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/perf_ring.h"
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

/* The size of a SAMPLE record for sample_type with nr_read group entries
 * and nr_ips callchain entries (ignored unless their bit is set), header
 * included; 0 if sample_type has unsupported bits or the size would
 * exceed BP_RECORD_MAX. */
uint32_t wire_sample_size(uint64_t sample_type, uint64_t nr_read, uint64_t nr_ips);

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

/* ---- encoder -------------------------------------------------------- */

#define WIRE_ENC_MAX_EVENTS	16	/* IDENTIFIER events it can tell apart */
#define WIRE_FRAME_TARGET	1024u	/* default payload bytes per frame */

/*
 * An out buffer this large always has room for the leading delimiter and
 * one frame of any size, so every call makes progress.
 */
#define WIRE_ENC_OUT_MIN	(WIRE_ENCODED_MAX + 1u)

/* Predictions for compact SAMPLE items; reset at every frame start. */
struct wire_pred {
	uint64_t sample_type;
	bool     have_type;
	uint16_t misc;
	uint32_t pid, tid, cpu, res;
	uint64_t identifier, id, period;
	uint64_t ip, time, dtime, addr;
	uint64_t time_enabled, time_running;
	uint64_t read_config[WIRE_PRED_READ], read_count[WIRE_PRED_READ];
	uint64_t chain[WIRE_PRED_CHAIN];
};

/* A SAMPLE record taken apart by its sample_type (perf_ring.h order). */
struct wire_sample {
	uint64_t sample_type;
	uint16_t misc;
	uint64_t identifier, ip, time, addr, id, period;
	uint32_t pid, tid, cpu, res;
	uint64_t nr_read, time_enabled, time_running;
	const uint8_t *read;		/* nr_read {config, count} pairs, little-endian */
	uint64_t nr_ips;
	const uint8_t *ips;		/* nr_ips u64, little-endian */
};

/*
 * After a compact SAMPLE item is coded: what the next one predicts from
 * (uapi/wire.h §4). The one rule, shared by the encoder and the decoder.
 */
void wire_pred_commit(struct wire_pred *p, const struct wire_sample *s);

struct wire_enc_config {
	uint16_t cpu;			/* goes into every frame; one encoder per cpu */
	uint32_t frame_target;		/* payload bytes per frame; 0: WIRE_FRAME_TARGET */
	/*
	 * The sample_type of SAMPLE records that have no IDENTIFIER the
	 * encoder has learned (0: none; such samples go raw). EVENT_DESC
	 * records passing through teach it more: one with IDENTIFIER in its
	 * sample_type maps its id; one without sets this default.
	 */
	uint64_t sample_type;
	uint32_t boot;			/* goes into every frame (uapi/wire.h §2) */
};

struct wire_enc_stats {
	uint64_t frames;		/* frames written */
	uint64_t bytes;			/* bytes written, delimiters included */
	uint64_t records;		/* records encoded */
	uint64_t samples_compact;	/* SAMPLE records sent as compact items */
	uint64_t samples_raw;		/* SAMPLE records sent verbatim */
	uint64_t bad_input;		/* calls that stopped at a malformed record */
};

struct wire_enc {
	uint16_t cpu;
	uint32_t boot;
	uint32_t frame_target;
	bool     lead_sent;		/* the 0x00 that starts the stream */
	uint8_t  started;		/* bit per channel: WIRE_F_START was sent */
	uint32_t seq[WIRE_NR_CHANNELS];
	uint64_t sample_type;
	uint32_t nr_events;
	struct { uint64_t id, sample_type; } events[WIRE_ENC_MAX_EVENTS];
	struct wire_pred pred;
	struct wire_enc_stats stats;
};

void wire_encoder_init(struct wire_enc *e, const struct wire_enc_config *cfg);

/*
 * Set the default sample_type (as wire_enc_config.sample_type), e.g. at
 * the start of each run: a CPU whose ring carries no EVENT_DESC learns it
 * no other way, and sends its samples raw (exact, but ~10x larger).
 */
void wire_encoder_set_sample_type(struct wire_enc *e, uint64_t sample_type);

/*
 * Tell the encoder the sample_type of an event's SAMPLE records (id is
 * the IDENTIFIER value). Returns 0, or WIRE_E_SPACE when the table is
 * full (such samples are then sent raw: still exact, only longer).
 */
int wire_encoder_add_event(struct wire_enc *e, uint64_t id, uint64_t sample_type);

/*
 * Encode whole records (perf_ring.h layout, back to back, as in the ring
 * after unwrapping) from records[0, len) as RECORDS frames into out.
 * SAMPLE records of a known sample_type become compact items, everything
 * else goes verbatim. Frames hold up to frame_target payload bytes (a
 * larger record gets a frame of its own). Only complete frames are
 * written; *consumed is the number of input bytes they hold, always a
 * whole number of records. Returns the bytes written to out.
 *
 * Stops early when out is full (call again with the rest), or at a record
 * whose header is malformed (size < 8, not a multiple of 8, or past len):
 * *consumed then points at it, and stats.bad_input counts it.
 * outcap >= WIRE_ENC_OUT_MIN guarantees progress.
 */
size_t wire_encode_records(struct wire_enc *e, const void *records, size_t len,
			   size_t *consumed, uint8_t *out, size_t outcap);

/*
 * Encode bytes as CONSOLE or CONTROL frames (channel). CONSOLE text is
 * split into frames of frame_target bytes. A CONTROL message is one frame
 * or nothing: *consumed is len or 0 (len > WIRE_PAYLOAD_MAX never fits).
 * Returns bytes written; *consumed as above.
 */
size_t wire_encode_bytes(struct wire_enc *e, enum wire_channel channel,
			 const void *data, size_t len, size_t *consumed,
			 uint8_t *out, size_t outcap);

/*
 * Encode AUX data: data[0, len) is the AUX area from counter aux_pos on.
 * Frames carry up to frame_target - 8 data bytes each, with their own
 * position. Returns bytes written; *consumed as above.
 */
size_t wire_encode_aux(struct wire_enc *e, uint64_t aux_pos, const void *data,
		       size_t len, size_t *consumed, uint8_t *out, size_t outcap);

#endif

/*
 * wire/decode.h — the host's streaming decoder for the bareperf wire
 * format (include/uapi/wire.h).
 *
 * Feed it bytes in chunks of any size as they arrive; it finds frames
 * between 0x00 delimiters, checks them (COBS, CRC, version, channel, the
 * whole payload), tracks sequence numbers per (channel, cpu) and calls
 * back with what survived, in sequence order per (channel, cpu) (a frame
 * that arrives early is held for a window of later frames). A frame is
 * (boot, channel, cpu, seq): one that came already is a duplicate, the
 * first frame of a stream too, dropped and counted; a stream is numbered
 * anew only by a START frame after an END (or by a START frame that is not
 * the one it had). A frame that fails any check yields nothing: its
 * bytes go to the unframed callback as noise, never into records. Plain
 * text before the stream's first 0x00 and after a halting END (uapi/wire.h
 * §1, §5) goes to the text callback and is never counted as damage.
 * RECORDS frames are expanded back into records byte-for-byte identical
 * to what the kernel put in its ring.
 *
 * Not thread-safe: one decoder per thread. Callbacks may be NULL.
 */
#ifndef BAREPERF_WIRE_DECODE_H
#define BAREPERF_WIRE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/perf_ring.h"
#include "uapi/wire.h"
#include "wire/record.h"

struct wire_dec_frame {
	uint8_t  channel;		/* enum wire_channel */
	uint8_t  flags;			/* WIRE_F_* */
	uint16_t cpu;
	uint32_t seq;
	uint32_t lost_before;		/* frames of (channel, cpu) missing just before it */
	uint64_t offset;		/* stream offset of its first encoded byte */
	uint64_t aux_pos;		/* AUX: counter of the first data byte */
	const uint8_t *payload;		/* the frame's payload as sent */
	size_t   len;
};

struct wire_dec_ops {
	/* A frame passed every check; called before its records or data. */
	void (*frame)(void *ctx, const struct wire_dec_frame *f);
	/* One record of a RECORDS frame, in order; 8-aligned, valid until return. */
	void (*record)(void *ctx, const struct wire_dec_frame *f,
		       const struct bp_record_header *rec);
	/* CONSOLE text, CONTROL message, or AUX data (after its aux_pos). */
	void (*data)(void *ctx, const struct wire_dec_frame *f, const uint8_t *p, size_t n);
	/* Bytes that are no frame (boot text, noise, damaged frames), without
	 * delimiters; offset is where they start in the stream. */
	void (*unframed)(void *ctx, uint64_t offset, const uint8_t *p, size_t n);
	/* Plain text outside the stream: before its first 0x00 (the boot
	 * text), and after END with WIRE_END_HALT. NULL: these go to
	 * unframed. Never counted as damage. */
	void (*text)(void *ctx, uint64_t offset, const uint8_t *p, size_t n);
	/*
	 * A SAMPLE that came as a compact item, in record's place: the record
	 * (as record would have it) and the values it was expanded from, so
	 * a reader need not take the record apart again (v's read and ips
	 * point into rec). NULL: such samples go to record too. A SAMPLE
	 * sent verbatim always goes to record.
	 */
	void (*sample)(void *ctx, const struct wire_dec_frame *f,
		       const struct bp_record_header *rec, const struct wire_sample *v);
};

struct wire_dec_stats {
	uint64_t bytes;			/* bytes fed */
	uint64_t frames_ok;		/* frames delivered */
	uint64_t records;		/* records delivered */
	uint64_t samples;		/* ... of which SAMPLE */
	uint64_t compact_samples;	/* ... of which came as compact items */
	uint64_t garbage_bytes;		/* bytes outside delivered frames, delimiters not counted */
	uint64_t cobs_errors;		/* chunks that are not COBS or are longer than any frame */
	uint64_t short_frames;		/* chunks shorter than a header and a CRC */
	uint64_t crc_errors;
	uint64_t bad_version;		/* CRC right, version this decoder does not read */
	uint64_t bad_channel;		/* CRC right, unknown channel */
	uint64_t bad_payload;		/* CRC right, payload malformed: dropped whole */
	uint64_t duplicates;		/* CRC right, seq already seen: dropped */
	uint64_t restarts;		/* WIRE_F_START on a stream already seen */
	uint64_t lost_frames;		/* from sequence gaps, all channels */
	uint64_t lost_by_channel[WIRE_NR_CHANNELS];
	/* Appended (decode.c): */
	uint64_t text_bytes;		/* plain text outside the stream (ops.text) */
	uint64_t cut_bytes;		/* the last chunk, which the input ended inside
					 * before it formed a frame (not damage) */
	uint64_t held;			/* frames that came ahead of their turn and
					 * were held to be delivered in seq order */
	uint64_t ends;			/* END messages (uapi/wire.h §5) */
	uint32_t end_status;		/* ... the last one's status and flags */
	uint16_t end_flags;
	uint64_t tail_lost;		/* frames END says were sent that never came
					 * (also in lost_frames and per stream) */
	uint32_t boot;			/* the stream's boot (uapi/wire.h §2), 0: none yet */
	uint32_t foreign_boot;		/* the last other boot seen */
	uint64_t foreign_frames;	/* frames of another boot: refused whole */
};

/* One (channel, cpu) stream's sequence tracking. */
struct wire_dec_stream {
	bool     seen;
	uint32_t next_seq;		/* seq expected next */
	uint64_t frames;		/* delivered */
	uint64_t lost;			/* missing, from seq gaps (before the first too) */
	uint64_t duplicates;
	uint64_t bad_payload;
	/* The numbering the stream is in: d's END count when its START
	 * came, and that frame's CRC (a restart, below, needs a new one). */
	uint64_t ends_at_start;
	uint32_t start_crc;
};

struct wire_dec;

/* NULL if out of memory. ops is copied. */
struct wire_dec *wire_dec_new(const struct wire_dec_ops *ops, void *ctx);
void wire_dec_free(struct wire_dec *d);
/* Forget the stream state and statistics, as if new. */
void wire_dec_reset(struct wire_dec *d);

void wire_dec_feed(struct wire_dec *d, const void *buf, size_t len);
/*
 * End of input. A last frame whose delimiter never came is still tried
 * (it is delivered if it passes every check); anything else pending is
 * unframed.
 */
void wire_dec_finish(struct wire_dec *d);

const struct wire_dec_stats *wire_dec_stats(const struct wire_dec *d);
/*
 * True if the input holds the stream's end: an END arrived, no frame
 * after it, and the input did not end inside a frame. A capture without
 * its end lost an unknown number of frames after the last one it has.
 */
bool wire_dec_complete(const struct wire_dec *d);
/* NULL if no frame of (channel, cpu) ever passed the CRC (nor did END
 * count any frame of it). */
const struct wire_dec_stream *wire_dec_stream(const struct wire_dec *d, unsigned channel,
					      unsigned cpu);

/*
 * Expand one RECORDS payload into records, back to back, in out (cap
 * bytes; WIRE_DEC_RECORDS_MAX always suffices). Returns the bytes
 * written, or WIRE_E_PAYLOAD if the payload is malformed (then out holds
 * nothing usable). compact, if not NULL, counts the compact items.
 */
long wire_dec_records(const uint8_t *payload, size_t len, uint8_t *out, size_t cap,
		      uint64_t *compact);

/*
 * The most record bytes one payload can expand to: a one-byte compact
 * item can stand for a 48-byte SAMPLE (header + the five sticky fields).
 */
#define WIRE_DEC_RECORDS_MAX	(48u * WIRE_PAYLOAD_MAX + BP_RECORD_MAX)

#endif

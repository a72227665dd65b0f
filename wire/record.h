/*
 * wire/record.h — the record codec: ring records (perf_ring.h) into the
 * RECORDS frames of include/uapi/wire.h, SAMPLE records as compact items;
 * and the one prediction rule its decoder (wire/decode.c) shares. The
 * frames (COBS, CRC32C, numbering) and the byte channels are the link
 * layer's, wire/frame.h; an encoder frames with a struct wire_framer
 * of its own unless given the stream's (wire_encoder_use_framer).
 *
 * Freestanding and allocation-free: every buffer is the caller's. Built
 * into the kernel (the drain, ringbuf/drain.c) and for the host (the
 * decoder, the tests); shared with the host, so it uses <stdint.h> types.
 *
 * NMI-safe: no. The drain calls the encoder outside NMI context; one
 * struct wire_enc per sender CPU, used by one thread at a time.
 */
#ifndef BAREPERF_WIRE_RECORD_H
#define BAREPERF_WIRE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/lib/unaligned.h"
#include "wire/frame.h"
#include "uapi/perf_ring.h"
#include "uapi/wire.h"

/* The size of a SAMPLE record for sample_type with nr_read group entries
 * and nr_ips callchain entries (ignored unless their bit is set), header
 * included; 0 if sample_type has unsupported bits or the size would
 * exceed BP_RECORD_MAX. */
uint32_t wire_sample_size(uint64_t sample_type, uint64_t nr_read, uint64_t nr_ips);

/* ---- encoder -------------------------------------------------------- */

#define WIRE_ENC_MAX_EVENTS	16	/* IDENTIFIER events it can tell apart */

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
 * (uapi/wire.h §4). The one rule, shared by the encoder and the decoder;
 * inline, as it runs once a sample on both ends. st is v->sample_type,
 * passed apart so that a caller knowing it as a constant gets code for
 * that sample_type alone.
 *
 * wire_pred_commit_moved is the part of it for the fields an item always
 * codes (the IP, the time, the address, READ, the chain); the rest (the
 * sample_type, misc and the fields of WIRE_S_STICKY and WIRE_S_PERIOD)
 * an item whose tag has none of WIRE_S_TYPE, MISC, STICKY and PERIOD
 * takes from the prediction unchanged, so that committing them is
 * writing back what is there: the decoder leaves that out.
 */
static inline void wire_pred_commit_moved(struct wire_pred *p, const struct wire_sample *v,
					  uint64_t st)
{
	if (st & BP_SAMPLE_IP)
		p->ip = v->ip;
	if (st & BP_SAMPLE_TIME) {
		p->dtime = v->time - p->time;
		p->time = v->time;
	}
	if (st & BP_SAMPLE_ADDR)
		p->addr = v->addr;
	if (st & BP_SAMPLE_READ) {
		p->time_enabled = v->time_enabled;
		p->time_running = v->time_running;
		for (uint64_t i = 0; i < v->nr_read && i < WIRE_PRED_READ; i++) {
			p->read_config[i] = ld64(v->read + 16 * i);
			p->read_count[i] = ld64(v->read + 16 * i + 8);
		}
	}
	if (st & BP_SAMPLE_CALLCHAIN)
		for (uint64_t i = 0; i < v->nr_ips && i < WIRE_PRED_CHAIN; i++)
			p->chain[i] = ld64(v->ips + 8 * i);
}

static inline void wire_pred_commit_st(struct wire_pred *p, const struct wire_sample *v,
				       uint64_t st)
{
	p->sample_type = st;
	p->have_type = true;
	p->misc = v->misc;
	if (st & BP_SAMPLE_IDENTIFIER)
		p->identifier = v->identifier;
	if (st & BP_SAMPLE_TID)
		p->pid = v->pid, p->tid = v->tid;
	if (st & BP_SAMPLE_ID)
		p->id = v->id;
	if (st & BP_SAMPLE_CPU)
		p->cpu = v->cpu, p->res = v->res;
	if (st & BP_SAMPLE_PERIOD)
		p->period = v->period;
	wire_pred_commit_moved(p, v, st);
}

static inline void wire_pred_commit(struct wire_pred *p, const struct wire_sample *v)
{
	wire_pred_commit_st(p, v, v->sample_type);
}

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

/* Frames and bytes are the link's (struct wire_framer). */
struct wire_enc_stats {
	uint64_t records;		/* records encoded */
	uint64_t samples_compact;	/* SAMPLE records sent as compact items */
	uint64_t samples_raw;		/* SAMPLE records sent verbatim */
	uint64_t bad_input;		/* calls that stopped at a malformed record */
};

struct wire_enc {
	struct wire_framer framer;	/* its own frame numbering (cpu, boot, seq) */
	struct wire_framer *ext;		/* ... or, if set, this one's */
	uint64_t sample_type;
	uint32_t nr_events;
	struct { uint64_t id, sample_type; } events[WIRE_ENC_MAX_EVENTS];
	struct wire_pred pred;
	struct wire_enc_stats stats;
};

void wire_encoder_init(struct wire_enc *e, const struct wire_enc_config *cfg);

/*
 * Frame with l from now on (NULL: the encoder's own framer again): the
 * kernel's drain numbers its RECORDS and AUX frames in the stream's
 * per-CPU framer (kernel/stream.h), which also carries that CPU's CONSOLE
 * and CONTROL frames and reports every count at the end. An encoder using
 * an outside framer must not be copied.
 */
void wire_encoder_use_framer(struct wire_enc *e, struct wire_framer *l);

/* The framer the encoder frames with. */
static inline struct wire_framer *wire_encoder_framer(struct wire_enc *e)
{
	return e->ext ? e->ext : &e->framer;
}

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
 *
 * With the framer's span (a clean line, kernel/stream.c), the last frame
 * stays open in it for the next call, until wire_framer_finish: the caller
 * finishes it before its records may be released or another frame of the
 * framer written.
 *
 * With the framer's hold_repeats, records given while its flags have
 * WIRE_F_REPEAT are consumed and nothing is written. With its keep, the
 * descriptors among the records consumed into frames without
 * WIRE_F_REPEAT are kept there (wire_descs_keep).
 */
size_t wire_encode_records(struct wire_enc *e, const void *records, size_t len,
			   size_t *consumed, uint8_t *out, size_t outcap);

/*
 * The run's descriptors as they went out (RUN_META, CPU_INFO, PMU_CAPS,
 * EVENT_DESC, APP_START, PROGRAM: uapi/wire.h §3), for sending them again:
 * a RUN_META starts a new set. buf (cap bytes, 8-aligned) is the caller's;
 * a descriptor past its room is counted in dropped and not kept.
 */
struct wire_descs {
	uint8_t *buf;
	size_t cap, len;
	uint64_t dropped;
};

/* Keep the descriptors among the whole records at records[0, len). */
void wire_descs_keep(struct wire_descs *d, const void *records, size_t len);

/* The byte channels (CONSOLE, CONTROL, AUX) through the encoder's framer:
 * wire_framer_encode_bytes / wire_framer_encode_aux (wire/frame.h). */
static inline size_t wire_encode_bytes(struct wire_enc *e, enum wire_channel channel,
				       const void *data, size_t len, size_t *consumed,
				       uint8_t *out, size_t outcap)
{
	return wire_framer_encode_bytes(wire_encoder_framer(e), channel, data, len, consumed,
				      out, outcap);
}

static inline size_t wire_encode_aux(struct wire_enc *e, uint64_t aux_pos, const void *data,
				     size_t len, size_t *consumed, uint8_t *out, size_t outcap)
{
	return wire_framer_encode_aux(wire_encoder_framer(e), aux_pos, data, len, consumed, out,
				    outcap);
}

#endif

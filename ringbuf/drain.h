/*
 * drain.h — the drain (ringbuf/drain.c): records and AUX data from per-CPU
 * rings, through the record codec (wire/record.h), onto the stream's
 * link (kernel/stream.h). Kernel only.
 *
 * The drain is the rings' consumer (ringbuf.h): it reads records with the
 * reader's acquire ordering and releases them (data_tail, aux_tail) only
 * after their frames went to the transport (stream_flush), so a record is
 * either on the wire or still in its ring, never in between. It never
 * asks who owns the rings: the caller (the run) hands them over.
 */
#ifndef BAREPERF_RINGBUF_DRAIN_H
#define BAREPERF_RINGBUF_DRAIN_H

#include <stdbool.h>
#include <stdint.h>

struct bp_ring;

struct bp_drain_stats {
	uint64_t records;	/* ring records sent */
	uint64_t drains;	/* passes over a ring that moved data */
	uint64_t skipped_busy;	/* tick drains skipped: output in use */
	uint64_t repeats;	/* sendings of the run's descriptors again */
	uint64_t descs_dropped;	/* descriptors past the copy's room: never repeated */
};

/*
 * Send what the rings hold. rings[cpu] is CPU cpu's ring, or NULL; nr
 * rings (at most STREAM_MAX_CPUS are drained). sample_type: the run's
 * SAMPLE layout, told to every CPU's encoder (only CPU 0's ring carries
 * the EVENT_DESC records that would teach it), so all CPUs' samples go
 * compact.
 *
 * from_tick false (run end, or a writer making room): every record of
 * every ring, waiting for the output lock. from_tick true (the run's
 * periodic tick): only rings whose wakeup flags say data or AUX crossed
 * the watermark, and nothing at all if the output lock is taken (counted
 * in skipped_busy) — a tick never waits behind console output.
 *
 * The run's descriptors (RUN_META ... PROGRAM) are kept as they pass and
 * sent again, flagged WIRE_F_REPEAT (uapi/wire.h §3), on CPU 0's
 * numbering: every 16 KiB of RECORDS frames, and by a call with
 * from_tick false that sent samples (the run's end).
 *
 * Does nothing until the stream is active (stream_start). One data_head
 * snapshot per ring per call: a producer faster than the link cannot keep
 * a call going for ever. Not NMI-safe: takes the output lock and waits on
 * the transport; call from thread context or the run's timer interrupt.
 */
void bp_drain(struct bp_ring *const *rings, uint32_t nr, uint64_t sample_type, bool from_tick);

void bp_drain_get_stats(struct bp_drain_stats *out);

#endif

/*
 * drain.c — the drain (contract and ordering: ringbuf/drain.h): per-CPU
 * rings -> the record codec (wire/record.c) -> the stream's link
 * (kernel/stream.c). Kernel only.
 *
 * It runs at run end, and during a run from the run's tick on the boot
 * CPU when a ring has crossed its watermark — never inside an NMI. Every
 * pass holds the output lock (kernel/console.c), so its frames never
 * interleave with console text.
 */
#include "kernel/kernel.h"
#include "kernel/stream.h"
#include "ringbuf/drain.h"
#include "ringbuf/ringbuf.h"
#include "wire/record.h"

#define STAGE_SIZE	(128u << 10)	/* records per encode pass; > 2 * BP_RECORD_MAX */
#define DESCS_SIZE	(32u << 10)	/* the run's descriptors: 64 CPUs' and a few events' */
#define REPEAT_RATIO	16u		/* RECORDS bytes between two sendings of them, */
#define REPEAT_MIN	(4u << 10)	/* per byte of them, at least this */
#define PIECE_SIZE	(2u << 10)	/* record bytes per encoder call */

static struct wire_enc enc[STREAM_MAX_CPUS];
static bool enc_ready[STREAM_MAX_CPUS];
static struct bp_drain_stats stats;

static u8 stage[STAGE_SIZE] __attribute__((aligned(8)));
static u8 out[WIRE_ENC_OUT_MIN];
static u8 recbuf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));

/*
 * The run's descriptors as they went out (uapi/wire.h §3, repeated
 * descriptors), kept once their frames went out and sent again after
 * REPEAT_RATIO times their size of RECORDS frames (at most 1/16 of a long
 * run's) and after the samples of a drain that is not a tick's (the run's
 * end): a host that lost a frame of them, or joined late, reads the
 * samples again.
 */
static u8 descs[DESCS_SIZE] __attribute__((aligned(8)));
static size_t descs_len;
static u64 sent_since_repeat;		/* RECORDS bytes since the last sending */
static bool samples_since_repeat;

void bp_drain_get_stats(struct bp_drain_stats *o) { *o = stats; }

/* CPU cpu's encoder, framing in the stream's numbering for that CPU. */
static struct wire_enc *encoder(u32 cpu)
{
	if (!enc_ready[cpu]) {
		struct wire_enc_config c = { .cpu = (u16)cpu };
		wire_encoder_init(&enc[cpu], &c);
		wire_encoder_use_framer(&enc[cpu], stream_framer(cpu));
		enc_ready[cpu] = true;
	}
	return &enc[cpu];
}

/* Keep a copy of rec if a SAMPLE needs it read; a RUN_META starts a run. */
static void keep_desc(const struct bp_record_header *rec)
{
	switch (rec->type) {
	case BP_RECORD_RUN_META:
		descs_len = 0;
		/* fall through */
	case BP_RECORD_CPU_INFO:
	case BP_RECORD_PMU_CAPS:
	case BP_RECORD_EVENT_DESC:
	case BP_RECORD_APP_START:
	case BP_RECORD_PROGRAM:
		if (descs_len + rec->size > sizeof(descs)) {
			stats.descs_dropped++;
			return;
		}
		memcpy(descs + descs_len, rec, rec->size);
		descs_len += rec->size;
		return;
	case BP_RECORD_SAMPLE:
		samples_since_repeat = true;
		return;
	default:
		return;
	}
}

/* The records at p[0, len), whole and sent: keep what is to repeat. */
static void keep_descs(const u8 *p, size_t len)
{
	for (size_t at = 0; at < len; at += ((const struct bp_record_header *)(p + at))->size)
		keep_desc((const struct bp_record_header *)(p + at));
}

static bool repeat_due(void)
{
	return descs_len && sent_since_repeat >= MAX(REPEAT_RATIO * descs_len, (size_t)REPEAT_MIN);
}

/* The descriptors again, flagged WIRE_F_REPEAT, one record a frame. */
static void send_descs(struct wire_enc *e)
{
	struct wire_framer *l = wire_encoder_framer(e);
	u32 target = l->frame_target;
	/* The EVENT_DESCs going through teach the encoder a sample_type (a
	 * counting event's, last): the samples after keep the run's. */
	u64 sample_type = e->sample_type;

	l->flags = WIRE_F_REPEAT;
	l->frame_target = 1;		/* a second record never fits */
	for (size_t done = 0, used; done < descs_len; done += used) {
		size_t w = wire_encode_records(e, descs + done, descs_len - done, &used, out,
					       sizeof(out));
		stream_send(out, w);
		if (!used)
			break;
	}
	stream_flush();
	l->flags = 0;
	l->frame_target = target;
	wire_encoder_set_sample_type(e, sample_type);
	sent_since_repeat = 0;
	samples_since_repeat = false;
	stats.repeats++;
}

/*
 * AUX data (instruction traces): the bytes below aux_head (C),
 * sent as AUX frames that carry their position, then released (D) once
 * their frames went to the transport, as records are. The host pairs them
 * with the AUX records by position (uapi/wire.h §3): we send up to
 * aux_head, which is always the end of the last committed AUX record.
 */
static void drain_aux(struct wire_enc *e, struct bp_ring_reader *r)
{
	u64 head, tail;

	if (!r->aux)
		return;
	head = bp_ring_aux_head(r);
	tail = r->ctl->aux_tail;		/* ours: the consumer writes it */
	if (tail == head)
		return;
	while (tail != head) {
		u64 pos = tail & (r->aux_size - 1), len = MIN(head - tail, r->aux_size - pos);
		size_t used, w = wire_encode_aux(e, tail, r->aux + pos, len, &used, out,
						 sizeof(out));
		stream_send(out, w);
		if (!used)
			break;
		tail += used;
	}
	stream_flush();
	bp_ring_aux_release(r, tail);
}

/*
 * The bytes of the whole records at p[0, len) up to max, one record at
 * least: the drain encodes a stage in pieces, so that the descriptors'
 * repeat comes when due, not after the whole stage.
 */
static size_t whole_records(const u8 *p, size_t len, size_t max)
{
	size_t n = 0;

	while (n < len) {
		u16 size = ((const struct bp_record_header *)(p + n))->size;
		if (size < sizeof(struct bp_record_header) || (n && n + size > max))
			break;
		n += size;
	}
	return n ? MIN(n, len) : len;	/* a malformed record: the encoder counts it */
}

/* Send the records of one ring: stage whole records, encode, send, then
 * release them; then its AUX data. */
static void drain_ring(struct wire_enc *e, struct bp_ring *rb)
{
	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	/* The AUX area, if any, is part of the ring's memory. */
	u64 size = rb->ctl->aux_size ? rb->ctl->aux_offset + rb->ctl->aux_size :
		   (u64)BP_RING_PAGE_SIZE + rb->data_size;

	if (bp_ring_reader_init(&r, (u8 *)rb->ctl, size))
		return;
	/* One data_head snapshot per pass: a producer faster than the link
	 * must not keep a pass going for ever. */
	bp_ring_read_begin(&r);
	for (;;) {
		size_t len = 0;
		while (len + BP_RECORD_MAX <= sizeof(stage) &&
		       bp_ring_read_next(&r, &rec, recbuf, sizeof(recbuf)) == 1) {
			memcpy(stage + len, rec, rec->size);
			len += rec->size;
			stats.records++;
		}
		if (!len)
			break;
		for (size_t done = 0, used; done < len; done += used) {
			size_t piece = whole_records(stage + done, len - done, PIECE_SIZE);
			size_t w = wire_encode_records(e, stage + done, piece, &used, out,
						       sizeof(out));
			stream_send(out, w);
			sent_since_repeat += w;
			keep_descs(stage + done, used);
			if (repeat_due())
				send_descs(encoder(0));
			if (!used)
				break;		/* malformed record: counted by the encoder */
		}
		stream_flush();
		bp_ring_read_end(&r);
		stats.drains++;
	}
	drain_aux(e, &r);
}

void bp_drain(struct bp_ring *const *rings, uint32_t nr, uint64_t sample_type, bool from_tick)
{
	if (!stream_active())
		return;
	if (from_tick) {
		if (!console_trylock()) {
			stats.skipped_busy++;
			return;
		}
	} else if (!console_lock_output()) {
		stats.skipped_busy++;		/* the console says who held it */
		return;
	}
	for (u32 cpu = 0; cpu < nr && cpu < STREAM_MAX_CPUS; cpu++) {
		struct bp_ring *rb = rings[cpu];
		if (!rb)
			continue;
		struct wire_enc *e = encoder(cpu);
		/* Only CPU 0's ring carries EVENT_DESC: tell every encoder the
		 * run's sample_type so all CPUs' samples go compact. */
		wire_encoder_set_sample_type(e, sample_type);
		if (from_tick && !(bp_ring_wakeup_take(rb) & (BP_WAKEUP_DATA | BP_WAKEUP_AUX)))
			continue;
		drain_ring(e, rb);
	}
	if (descs_len && (repeat_due() || (!from_tick && samples_since_repeat)))
		send_descs(encoder(0));
	console_unlock_output();
}

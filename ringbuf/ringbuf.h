/*
 * ringbuf/ringbuf.h — the perf-style ring buffer and its AUX area.
 *
 * One ring per CPU. The producer side (output_*, aux_output_*) runs on the
 * ring's own CPU, in any context including NMI, and may be interrupted by
 * an NMI that writes to the same ring; it never blocks and never takes a
 * lock. The consumer side (bp_ring_reader) runs anywhere outside NMI
 * context: another CPU, the drain loop, or the host tool reading a
 * captured ring. The byte layout and the memory-ordering protocol are in
 * include/uapi/perf_ring.h; this header is the C interface.
 *
 * The ring does no allocation: the caller passes the memory (a control
 * page, then the data area, then optionally the AUX area) and the struct
 * bp_ring, which must be 64-byte aligned (it is declared so). Builds
 * freestanding for the kernel and hosted for tests: same source.
 *
 * Errors are 0 or a negative enum bp_ring_error; bp_ring_strerror() names
 * them.
 */
#ifndef BAREPERF_RINGBUF_RINGBUF_H
#define BAREPERF_RINGBUF_RINGBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/perf_ring.h"
#include "ringbuf/atomic.h"

enum bp_ring_error {
	BP_RING_OK		=   0,
	BP_ERING_INVAL		=  -1,	/* NULL argument or unknown flag */
	BP_ERING_ALIGN		=  -2,	/* ring memory not page-aligned */
	BP_ERING_SIZE		=  -3,	/* not one control page + 0 or 2^n (n >= 1) data pages */
	BP_ERING_NODATA		=  -4,	/* metadata-only ring: no data area */
	BP_ERING_RECSIZE	=  -5,	/* record size 0, not 8-aligned, or too large */
	BP_ERING_NOSPACE	=  -6,	/* no room: dropped, reported by the next LOST */
	BP_ERING_PAUSED		=  -7,	/* ring paused: dropped, reported by the next LOST */
	BP_ERING_OVERFLOW	=  -8,	/* copy past the end of the reserved record */
	BP_ERING_VERSION	=  -9,	/* reader: control page needs a newer reader */
	BP_ERING_CORRUPT	= -10,	/* reader: geometry or record header inconsistent */
	BP_ERING_BUFSZ		= -11,	/* reader: buffer too small for a wrapped record */
	BP_ERING_SAMPLE		= -12,	/* unsupported sample_type bit or sample too large */
	BP_EAUX_NONE		= -13,	/* the ring has no AUX area */
	BP_EAUX_SIZE		= -14,	/* AUX size not 2^n pages */
	BP_EAUX_OFFSET		= -15,	/* AUX area overlaps the data area or is unaligned */
	BP_EAUX_NESTED		= -16,	/* an AUX writer is already active on this ring */
	BP_EAUX_FULL		= -17,	/* AUX area full: producer stopped */
	BP_EAUX_STOPPED		= -18,	/* producer stopped until the consumer frees space */
	BP_EAUX_SKIP		= -19,	/* skip larger than the handle's space */
	BP_EAUX_COMMIT		= -20,	/* commit larger than the handle's space */
	BP_EAUX_FLAGS		= -21,	/* unknown flag passed to aux_output_end */
	BP_EAUX_HANDLE		= -22,	/* handle not open: no begin, or already ended */
	BP_ERING_NR_ERRORS	=  23,
};

/* Never NULL; "unknown error" for anything not in the enum. NMI-safe: yes. */
const char *bp_ring_strerror(int err);

/*
 * Called on the producer's CPU, possibly inside an NMI, when a watermark
 * is crossed or the AUX producer stops. It must only post a notification
 * (a self-IPI, a flag): never consume, never block. NULL is allowed; the
 * consumer can also poll bp_ring_wakeup_take().
 */
struct bp_ring;
typedef void (*bp_ring_notify_fn)(struct bp_ring *rb, void *arg);

struct bp_ring_config {
	uint32_t flags;			/* BP_RING_F_OVERWRITE or 0 */
	uint64_t id;			/* goes into LOST records and ctl->ring_id */
	uint64_t watermark;		/* bytes between wakeups; 0: data_size / 2 */
	bp_ring_notify_fn notify;
	void *notify_arg;
};

/*
 * bp_ring.slow: the count of records dropped since the last LOST record,
 * plus mode bits at the top. Any bit set sends output_begin to its slow
 * path, so the fast path tests one word. (2^61 drops would reach the mode
 * bits: at one per nanosecond, after 73 years.)
 */
#define BP_RING_S_LOST_MASK	((1ull << 61) - 1)
#define BP_RING_S_PAUSED	(1ull << 62)
#define BP_RING_S_OVERWRITE	(1ull << 63)

/* bp_ring_wakeup_take() result bits */
#define BP_WAKEUP_DATA		(1u << 0)	/* data watermark crossed */
#define BP_WAKEUP_AUX		(1u << 1)	/* AUX watermark crossed or producer stopped */

/*
 * The producer's private state. Fields are private to ringbuf/; they are
 * here only so callers can allocate the struct (one per CPU).
 */
struct bp_ring {
	/*
	 * Fast path first. "local": only the owning CPU and its NMIs touch
	 * it (bp_local_* accessors); "shared": other CPUs too (C11 atomics).
	 */
	uint32_t nest;			/* local: writers active on this CPU */
	uint32_t max_record;		/* min(BP_RECORD_MAX, data_size) */
	uint64_t head;			/* local: reservation counter, >= data_head */
	uint64_t limit;			/* local: fast-path records end at or below it */
	_Atomic uint64_t slow;		/* shared: lost count | BP_RING_S_* */
	uint64_t mask;			/* data_size - 1 */
	uint64_t data_size;
	uint8_t *data;
	struct bp_ring_ctl *ctl;
	uint64_t wakeup_next;		/* local: data_head that posts the next wakeup */
	uint64_t sample_size;		/* local: the last sample_type of one-word
					 * fields (and perhaps CALLCHAIN) written and
					 * its SAMPLE's fixed size, type << 32 | size */

	uint64_t watermark;
	uint64_t id;
	bp_ring_notify_fn notify;
	void *notify_arg;

	/* AUX producer, all local. */
	uint8_t *aux;			/* NULL: no AUX area */
	uint64_t aux_size;
	uint64_t aux_watermark;
	uint64_t aux_head;		/* committed AUX bytes */
	uint64_t aux_wakeup_next;
	uint64_t aux_stop_tail;		/* aux_tail when the producer stopped */
	uint32_t aux_nest;		/* 1 while a handle is open: the guard */
	uint32_t aux_stopped;
	uint32_t aux_flags;		/* BP_RING_F_AUX_OVERWRITE */

	/* Shared: set by the producer, taken by the consumer. Own line. */
	_Alignas(BP_CACHELINE) _Atomic uint32_t wakeup;	/* BP_WAKEUP_* */
};

/* ------------------------------------------------------------------ */
/* Setup (not NMI-safe: call before the ring is in use).               */

/*
 * Lay a ring over [mem, mem + mem_size): a control page, then a data area
 * of mem_size - BP_RING_PAGE_SIZE bytes. mem must be page-aligned
 * (BP_ERING_ALIGN); mem_size must be one page plus 0 data pages
 * (metadata only: every write fails with BP_ERING_NODATA) or 2^n data
 * pages with n >= 1 (BP_ERING_SIZE otherwise). cfg may be NULL for
 * defaults. Zeroes the control page and the data area.
 */
int bp_ring_init(struct bp_ring *rb, void *mem, uint64_t mem_size,
		 const struct bp_ring_config *cfg);

/*
 * Add the AUX area at ctl + aux_offset, aux_size bytes; the caller owns
 * that memory as well. aux_offset must be page-aligned and at or after
 * the end of the data area (BP_EAUX_OFFSET); aux_size 2^m pages, m >= 0
 * (BP_EAUX_SIZE); the ring needs a data area for AUX records
 * (BP_ERING_NODATA). flags: BP_RING_F_AUX_OVERWRITE (snapshot mode) or 0.
 * watermark 0: aux_size / 2. Zeroes the AUX area.
 */
int bp_ring_aux_init(struct bp_ring *rb, uint64_t aux_offset, uint64_t aux_size,
		     uint32_t flags, uint64_t watermark);

/* ------------------------------------------------------------------ */
/* Producer, data area. All NMI-safe: yes, on the ring's own CPU only.  */

struct bp_ring_handle {
	struct bp_ring *rb;
	uint64_t pos;			/* next byte to write (counter) */
	uint64_t end;			/* end of the reservation */
	uint64_t wrap;			/* where the record wraps: end if it does not */
};

/*
 * Reserve a record of size bytes (header included, multiple of 8, at most
 * min(BP_RECORD_MAX, data_size)). On success the caller writes exactly
 * size bytes with bp_ring_output_copy() and must then call
 * bp_ring_output_end(), even if a copy failed. If records were dropped
 * since the last LOST record, one is written first, inside the same
 * reservation. Errors (nothing to end): BP_ERING_RECSIZE, BP_ERING_NODATA
 * (neither counted as lost); BP_ERING_NOSPACE, BP_ERING_PAUSED, and in
 * overwrite mode BP_ERING_NOSPACE when the write would reach a record an
 * interrupted writer has not finished (all counted as lost).
 */
static inline int bp_ring_output_begin(struct bp_ring *rb, struct bp_ring_handle *h,
				       uint32_t size);

/*
 * Copy len bytes into the record at the handle's position, wrapping at
 * the end of the data area. BP_ERING_OVERFLOW, and nothing written, if
 * len exceeds what is left of the reservation.
 */
static inline int bp_ring_output_copy(struct bp_ring_handle *h, const void *src,
				      uint32_t len);

/*
 * Finish the record. Only the outermost writer on the CPU publishes
 * data_head (B); it re-reads the head after publishing, so records that
 * NMIs reserved meanwhile are published too and data_head never goes
 * backwards. Posts a wakeup when the watermark is crossed.
 */
static inline void bp_ring_output_end(struct bp_ring_handle *h);

/* begin + copy + end of a complete record; size from its header. */
int bp_ring_output(struct bp_ring *rb, const void *record);

/*
 * Stop (paused = true) or restart recording; while paused every write
 * fails with BP_ERING_PAUSED and counts as lost. An overwrite-mode reader
 * pauses first. NMI-safe: yes, callable from any CPU.
 */
void bp_ring_pause(struct bp_ring *rb, bool paused);

/*
 * Bytes a writer could reserve now (loads data_tail, A); for producers
 * that would rather wait than drop. NMI-safe: yes, on the ring's CPU.
 */
uint64_t bp_ring_free(struct bp_ring *rb);

/* Drops not yet reported in a LOST record. NMI-safe: yes, any CPU. */
uint64_t bp_ring_lost(struct bp_ring *rb);

/*
 * Consumer side: fetch and clear the pending wakeup bits (BP_WAKEUP_*).
 * Any context, any CPU. NMI-safe: yes (but the consumer itself is not).
 */
uint32_t bp_ring_wakeup_take(struct bp_ring *rb);

/* ------------------------------------------------------------------ */
/* SAMPLE records. NMI-safe: yes.                                      */

struct bp_sample {
	uint64_t ip;
	uint32_t pid, tid;		/* app id, app thread */
	uint64_t time;			/* TSC */
	uint64_t addr;
	uint64_t id;			/* ID and IDENTIFIER */
	uint32_t cpu;
	/* Parsed only (bp_sample_parse), never written: the IDENTIFIER word
	 * apart from ID, and CPU's reserved half, for an exact copy. */
	uint64_t identifier;
	uint32_t res;
	uint64_t period;
	uint64_t time_enabled;		/* READ */
	uint64_t time_running;
	uint32_t nr_group;
	const struct bp_group_entry *group;
	uint32_t nr_ips;		/* CALLCHAIN: ips[0] = ip, then return */
	const uint64_t *ips;		/*   addresses (bp_callchain_fp) */
};

/*
 * Size of the SAMPLE record for sample_type, header included; 0 when
 * sample_type has a bit outside BP_SAMPLE_SUPPORTED or the record would
 * exceed BP_RECORD_MAX.
 */
uint32_t bp_sample_size(uint64_t sample_type, const struct bp_sample *s);

/* Write one SAMPLE record, fields in perf's order (perf_ring.h). */
int bp_ring_output_sample(struct bp_ring *rb, uint64_t sample_type, uint16_t misc,
			  const struct bp_sample *s);

/*
 * Decode a SAMPLE record written for sample_type. Pointers in *s (group,
 * ips) point into rec. BP_ERING_CORRUPT if the record's size does not
 * match its contents, BP_ERING_SAMPLE for unsupported bits.
 */
int bp_sample_parse(uint64_t sample_type, const struct bp_record_header *rec,
		    struct bp_sample *s);

/*
 * Frame-pointer backtrace for CALLCHAIN, by ringbuf/callchain.h's
 * bp_walk_frames: ips[0] = ip, then the return address of each frame
 * starting at fp. Reads only 8-aligned frames inside [stack_lo, stack_hi),
 * stops when the chain does not move up the stack. Returns the number of
 * entries written, at most max (0 for max 0). NMI-safe: yes.
 */
uint32_t bp_callchain_fp(uint64_t ip, uint64_t fp, uint64_t stack_lo,
			 uint64_t stack_hi, uint64_t *ips, uint32_t max);

/* ------------------------------------------------------------------ */
/* Producer, AUX area. NMI-safe: yes, on the ring's own CPU only.       */

struct bp_aux_handle {
	struct bp_ring *rb;		/* NULL when not open */
	uint64_t head;			/* AUX counter where data goes next */
	uint64_t size;			/* bytes writable from head */
};

/*
 * Open the AUX area for writing. h->size never lets the producer reach
 * data the consumer has not released (bounded by aux_tail, A); in
 * snapshot mode it is the whole area. Errors: BP_EAUX_NONE;
 * BP_EAUX_NESTED when a handle is already open on this ring (an NMI
 * interrupting an AUX writer: refused, nothing corrupted); BP_EAUX_FULL
 * when no byte is free: the producer stops and the consumer is woken;
 * BP_EAUX_STOPPED while stopped, until the consumer has moved aux_tail.
 */
int bp_aux_output_begin(struct bp_ring *rb, struct bp_aux_handle *h);

/* Pad size bytes for the producer's alignment. BP_EAUX_SKIP if > h->size. */
int bp_aux_output_skip(struct bp_aux_handle *h, uint64_t size);

/* Copy len bytes to [h->head + offset, ...), wrapping; within h->size. */
int bp_aux_output_copy(struct bp_aux_handle *h, uint64_t offset, const void *src,
		       uint64_t len);

/*
 * Commit size bytes written at h->head and close the handle: aux_head
 * advances, and an AUX record {offset, size, flags} goes into the data
 * area when size or flags is non-zero (snapshot mode adds
 * BP_AUX_FLAG_OVERWRITE). flags: BP_AUX_FLAG_TRUNCATED | _PARTIAL |
 * _COLLISION. TRUNCATED stops the producer until the consumer frees space
 * (not in snapshot mode, which has no consumer). Skips followed by a
 * zero-size commit are undone. BP_EAUX_COMMIT (size > h->size),
 * BP_EAUX_FLAGS, BP_EAUX_HANDLE leave the handle open and change nothing;
 * otherwise the handle is closed, and the result is that of writing the
 * AUX record (0, or BP_ERING_NOSPACE/PAUSED: counted as lost).
 */
int bp_aux_output_end(struct bp_aux_handle *h, uint64_t size, uint64_t flags);

/* ------------------------------------------------------------------ */
/* Consumer. Not NMI-safe; one reader per ring.                         */

struct bp_ring_reader {
	struct bp_ring_ctl *ctl;
	const uint8_t *data;
	const uint8_t *aux;
	uint64_t data_size;
	uint64_t aux_size;
	uint64_t head;			/* data_head snapshot (C) */
	uint64_t tail;			/* next record */
	uint64_t end;			/* overwrite mode: tail limit */
	uint32_t flags;			/* ctl->flags */
};

/*
 * Attach to the ring in [mem, mem + mem_size) (mem_size includes the AUX
 * area if any). Checks the version (BP_ERING_VERSION) and that the
 * geometry is valid and inside mem_size (BP_ERING_CORRUPT).
 */
int bp_ring_reader_init(struct bp_ring_reader *r, void *mem, uint64_t mem_size);

/*
 * Snapshot data_head (C) and return the bytes available. In overwrite
 * mode: restart the walk at data_head, newest record first.
 */
uint64_t bp_ring_read_begin(struct bp_ring_reader *r);

/*
 * Next record: 1 and *rec set, 0 when none is left, or an error. A record
 * is returned in place, or copied to buf (buflen bytes) when it wraps
 * (BP_ERING_BUFSZ if it does not fit; BP_RECORD_MAX always fits). *rec
 * stays valid until bp_ring_read_end().
 */
int bp_ring_read_next(struct bp_ring_reader *r, const struct bp_record_header **rec,
		      void *buf, uint32_t buflen);

/* Release what was read: data_tail = tail (D). No-op in overwrite mode. */
void bp_ring_read_end(struct bp_ring_reader *r);

/* AUX: the producer's aux_head (C). */
uint64_t bp_ring_aux_head(const struct bp_ring_reader *r);

/* Copy [offset, offset + size) of the AUX area to dst, wrapping. */
int bp_ring_aux_read(const struct bp_ring_reader *r, uint64_t offset, uint64_t size,
		     void *dst);

/*
 * Release the AUX area below tail (D): the end (aux_offset + aux_size) of
 * the last AUX record the consumer has finished with.
 */
void bp_ring_aux_release(struct bp_ring_reader *r, uint64_t tail);

/* ------------------------------------------------------------------ */
/*
 * The producer's fast path, inline so that begin + copy + end of a small
 * record is one straight run of code in the NMI handler. Everything not
 * on the fast path is out of line in ringbuf.c.
 */

/* A reservation made off the fast path: its first byte, or an error. */
struct bp_ring__rsv {
	uint64_t pos;
	int err;
};

struct bp_ring__rsv bp_ring__begin_slow(struct bp_ring *rb, uint32_t size);
struct bp_ring__rsv bp_ring__reserve_slow(struct bp_ring *rb, uint64_t pos, uint32_t size);
void bp_ring__drop(struct bp_ring *rb, uint64_t count);
void bp_ring__wakeup(struct bp_ring *rb, uint64_t head);
void bp_ring__copy_wrap(struct bp_ring *rb, uint64_t off, const void *src, uint32_t len);
void bp_ring__post_wakeup(struct bp_ring *rb, uint32_t what);

/*
 * The fast path reserves with one read-modify-write instruction on the
 * head: an NMI comes before it or after it, never in between, so there
 * is nothing to retry. The limit it checks against is a promise that the
 * bytes below it are free (the consumer's tail, last read, allows them)
 * and do not wrap, for any reservation that starts at or after the head
 * seen when the limit is read: so it is read before reserving. It is
 * never more than a data area past the tail, so a record larger than the
 * data area fails it too. Anything else (overwrite mode, paused, a LOST
 * record owed, past the limit) goes to the slow path.
 */
static inline int bp_ring_output_begin(struct bp_ring *rb, struct bp_ring_handle *h,
				       uint32_t size)
{
	struct bp_ring__rsv r;
	uint64_t limit;

	/* Sizes no ring takes; the slow path refuses those over max_record. */
	if (bp_unlikely((size & (BP_RECORD_ALIGN - 1)) || size - 1 >= BP_RECORD_MAX))
		return rb->data_size ? BP_ERING_RECSIZE : BP_ERING_NODATA;

	bp_local_inc32(&rb->nest);
	limit = bp_local_read(&rb->limit);
	if (bp_likely(!bp_load_relaxed(&rb->slow))) {
		r.pos = bp_local_fetch_add64(&rb->head, size);
		if (bp_likely(r.pos + size <= limit)) {
			/* Below the limit nothing wraps: inlined, the copies'
			 * wrap checks fold away. */
			h->rb = rb;
			h->pos = r.pos;
			h->end = h->wrap = r.pos + size;
			return 0;
		}
		r = bp_ring__reserve_slow(rb, r.pos, size);
	} else {
		r = bp_ring__begin_slow(rb, size);
	}
	if (r.err)
		return r.err;
	h->rb = rb;
	h->pos = r.pos;
	h->end = r.pos + size;
	/* The counter where the data area ends, if the record crosses it. */
	h->wrap = (r.pos & rb->mask) + size > rb->data_size ? (r.pos | rb->mask) + 1 : h->end;
	return 0;
}

/*
 * Release this writer's hold on the ring. Only the outermost writer
 * publishes; the ones nested inside it (NMIs) leave their records to it.
 *
 * Publishing happens while the nest count is still held, so an NMI that
 * arrives between reading head and storing data_head is a nested writer
 * and cannot publish a newer value that we would then overwrite with an
 * older one (the data_head-goes-backwards bug Linux fixed in
 * perf_output_put_handle, 2019). After letting go we read head again: an
 * NMI that came after our read reserved space as a nested writer and left
 * publishing it to us.
 */
static inline void bp_ring__put(struct bp_ring *rb)
{
	uint64_t head;

	/*
	 * The compares read local state with plain loads, which the compiler
	 * folds into the compare: each comes after an inc or dec of the nest
	 * count, a compiler barrier, so it is a fresh load all the same, and
	 * an NMI in between leaves the value as it found it or (the head) is
	 * ours to publish.
	 */
	if (rb->nest > 1) {
		bp_local_dec32(&rb->nest);
		return;
	}
again:
	head = bp_local_read(&rb->head);
	/* B: the records below head are written; pairs with C in read_begin. */
	bp_store_release(bp_atomic64(&rb->ctl->data_head), head);
	if (bp_unlikely(head >= rb->wakeup_next))
		bp_ring__wakeup(rb, head);
	bp_local_dec32(&rb->nest);
	if (bp_unlikely(rb->head != head)) {
		bp_local_inc32(&rb->nest);
		goto again;
	}
}

static inline void bp_ring_output_end(struct bp_ring_handle *h)
{
	bp_ring__put(h->rb);
}

static inline int bp_ring_output_copy(struct bp_ring_handle *h, const void *src,
				      uint32_t len)
{
	struct bp_ring *rb = h->rb;
	uint64_t off = h->pos & rb->mask;

	if (bp_unlikely(len > h->end - h->pos))
		return BP_ERING_OVERFLOW;
	if (bp_likely(h->pos + len <= h->wrap))
		__builtin_memcpy(rb->data + off, src, len);
	else
		bp_ring__copy_wrap(rb, off, src, len);
	h->pos += len;
	return 0;
}

#endif

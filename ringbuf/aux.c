/*
 * ringbuf/aux.c — the AUX area: bulk data (hardware trace) written in
 * large chunks and announced by AUX records in the data area.
 *
 * After the AUX API of seeds 002/003 (Linux perf_aux_output_begin/end/
 * skip, 2015): begin hands out a handle whose size never reaches data the
 * consumer has not released; end commits, advances aux_head and posts an
 * AUX record when there is something to say; skip pads for alignment; a
 * second writer while a handle is open is refused by a guard. Our own
 * choices where the seed leaves room: the producer stopped by a full area
 * or a truncated commit restarts by itself once the consumer has moved
 * aux_tail; skips followed by an empty commit are undone.
 */
#include "ringbuf/ringbuf.h"

#define PAGE		BP_RING_PAGE_SIZE
#define AUX_END_FLAGS	(BP_AUX_FLAG_TRUNCATED | BP_AUX_FLAG_PARTIAL | BP_AUX_FLAG_COLLISION)

static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

int bp_ring_aux_init(struct bp_ring *rb, uint64_t aux_offset, uint64_t aux_size,
		     uint32_t flags, uint64_t watermark)
{
	struct bp_ring_ctl *ctl;

	if (!rb || !rb->ctl || rb->aux || (flags & ~BP_RING_F_AUX_OVERWRITE))
		return BP_ERING_INVAL;
	if (!rb->data_size)
		return BP_ERING_NODATA;	/* AUX records need a data area */
	if (aux_size % PAGE || !is_pow2(aux_size / PAGE))
		return BP_EAUX_SIZE;
	if (aux_offset % PAGE || aux_offset < PAGE + rb->data_size ||
	    aux_offset > UINT64_MAX - aux_size)
		return BP_EAUX_OFFSET;
	if (watermark > aux_size)
		return BP_ERING_INVAL;

	ctl = rb->ctl;
	rb->aux = (uint8_t *)ctl + aux_offset;
	__builtin_memset(rb->aux, 0, aux_size);
	rb->aux_size = aux_size;
	rb->aux_watermark = watermark ? watermark : aux_size / 2;
	rb->aux_flags = flags;
	rb->aux_head = 0;
	rb->aux_wakeup_next = rb->aux_watermark;
	rb->aux_stopped = 0;
	rb->aux_nest = 0;

	ctl->aux_offset = aux_offset;
	ctl->aux_size = aux_size;
	ctl->aux_watermark = rb->aux_watermark;
	ctl->flags |= flags;
	return 0;
}

static void aux_unguard(struct bp_ring *rb)
{
	bp_barrier();
	bp_local_set(&rb->aux_nest, 0);
}

/* Stop the producer until aux_tail moves past tail; tell the consumer. */
static void aux_stop(struct bp_ring *rb, uint64_t tail)
{
	bp_local_set(&rb->aux_stop_tail, tail);
	bp_local_set(&rb->aux_stopped, 1);
	bp_ring__post_wakeup(rb, BP_WAKEUP_AUX);
}

int bp_aux_output_begin(struct bp_ring *rb, struct bp_aux_handle *h)
{
	uint64_t head, tail, used;

	if (!rb->aux)
		return BP_EAUX_NONE;
	/* The guard: an NMI that interrupts an open handle is refused. */
	if (bp_local_xchg32(&rb->aux_nest, 1))
		return BP_EAUX_NESTED;

	head = bp_local_read(&rb->aux_head);
	if (rb->aux_flags & BP_RING_F_AUX_OVERWRITE) {
		/* Snapshot mode: the hardware wraps freely, nobody consumes. */
		used = 0;
	} else {
		/* A: pairs with D in bp_ring_aux_release. */
		tail = bp_load_acquire(bp_atomic64(&rb->ctl->aux_tail));
		if (bp_local_read(&rb->aux_stopped)) {
			if (tail == bp_local_read(&rb->aux_stop_tail)) {
				aux_unguard(rb);
				return BP_EAUX_STOPPED;
			}
			bp_local_set(&rb->aux_stopped, 0);
		}
		used = head - tail;
		if (used >= rb->aux_size) {
			aux_stop(rb, tail);
			aux_unguard(rb);
			return BP_EAUX_FULL;
		}
	}
	h->rb = rb;
	h->head = head;
	h->size = rb->aux_size - used;
	return 0;
}

int bp_aux_output_skip(struct bp_aux_handle *h, uint64_t size)
{
	if (!h->rb)
		return BP_EAUX_HANDLE;
	if (size > h->size)
		return BP_EAUX_SKIP;
	h->head += size;
	h->size -= size;
	return 0;
}

int bp_aux_output_copy(struct bp_aux_handle *h, uint64_t offset, const void *src,
		       uint64_t len)
{
	struct bp_ring *rb = h->rb;
	uint64_t pos, first;

	if (!rb)
		return BP_EAUX_HANDLE;
	if (offset > h->size || len > h->size - offset)
		return BP_ERING_OVERFLOW;
	pos = (h->head + offset) & (rb->aux_size - 1);
	first = rb->aux_size - pos < len ? rb->aux_size - pos : len;
	__builtin_memcpy(rb->aux + pos, src, first);
	__builtin_memcpy(rb->aux, (const uint8_t *)src + first, len - first);
	return 0;
}

static int aux_post_record(struct bp_ring *rb, uint64_t offset, uint64_t size, uint64_t flags)
{
	struct bp_record_aux rec = {
		.header = { .type = BP_RECORD_AUX, .misc = 0, .size = sizeof(rec) },
		.aux_offset = offset,
		.aux_size = size,
		.flags = flags,
	};

	return bp_ring_output(rb, &rec);
}

int bp_aux_output_end(struct bp_aux_handle *h, uint64_t size, uint64_t flags)
{
	struct bp_ring *rb = h->rb;
	bool snapshot;
	uint64_t start, new_head;
	int err = 0;

	if (!rb)
		return BP_EAUX_HANDLE;
	if (flags & ~AUX_END_FLAGS)
		return BP_EAUX_FLAGS;
	if (size > h->size)
		return BP_EAUX_COMMIT;

	snapshot = rb->aux_flags & BP_RING_F_AUX_OVERWRITE;
	if (snapshot)
		flags |= BP_AUX_FLAG_OVERWRITE;
	/* Padding with nothing after it is not worth keeping. */
	start = size ? h->head : bp_local_read(&rb->aux_head);
	new_head = start + size;

	/*
	 * The record first: the consumer learns of AUX data only from it,
	 * and B on data_head (inside bp_ring_output) orders the AUX bytes
	 * written above before it. Only when it says something.
	 */
	if (size || flags)
		err = aux_post_record(rb, start, size, flags);
	bp_local_set(&rb->aux_head, new_head);
	/* B for the AUX area: pairs with C in bp_ring_aux_head. */
	bp_store_release(bp_atomic64(&rb->ctl->aux_head), new_head);

	if ((flags & BP_AUX_FLAG_TRUNCATED) && !snapshot) {
		aux_stop(rb, bp_load_acquire(bp_atomic64(&rb->ctl->aux_tail)));
	} else if (new_head >= bp_local_read(&rb->aux_wakeup_next)) {
		bp_local_set(&rb->aux_wakeup_next, new_head + rb->aux_watermark);
		bp_ring__post_wakeup(rb, BP_WAKEUP_AUX);
	}

	h->rb = NULL;
	aux_unguard(rb);
	return err;
}

/* ------------------------------------------------------------------ */
/* Consumer                                                            */

uint64_t bp_ring_aux_head(const struct bp_ring_reader *r)
{
	/* C: pairs with B in bp_aux_output_end. */
	return bp_load_acquire(bp_atomic64(&r->ctl->aux_head));
}

int bp_ring_aux_read(const struct bp_ring_reader *r, uint64_t offset, uint64_t size,
		     void *dst)
{
	uint64_t pos, first;

	if (!r->aux)
		return BP_EAUX_NONE;
	if (size > r->aux_size)
		return BP_ERING_INVAL;
	pos = offset & (r->aux_size - 1);
	first = r->aux_size - pos < size ? r->aux_size - pos : size;
	__builtin_memcpy(dst, r->aux + pos, first);
	__builtin_memcpy((uint8_t *)dst + first, r->aux, size - first);
	return 0;
}

void bp_ring_aux_release(struct bp_ring_reader *r, uint64_t tail)
{
	/* D: pairs with A in bp_aux_output_begin: we are done below tail. */
	bp_store_release(bp_atomic64(&r->ctl->aux_tail), tail);
}

/*
 * ringbuf/ringbuf.c — the data area: setup, writers, LOST accounting,
 * wakeups, overwrite mode, SAMPLE records and the reader.
 *
 * The writer follows Linux's perf_output_begin/end
 * (kernel/events/ring_buffer.c), expressed with C11 atomics: a nest counter
 * says how many writers are active on this CPU; each reserves its bytes by
 * one unlocked add to the private head; only the outermost one publishes
 * data_head, and it looks at the head again after letting go, so space that
 * an NMI reserved meanwhile is published as well. Barrier names A/B/C/D
 * are those of include/uapi/perf_ring.h.
 */
#include "ringbuf/ringbuf.h"
#include "ringbuf/callchain.h"

#define PAGE		BP_RING_PAGE_SIZE
#define LOST_SIZE	((uint32_t)sizeof(struct bp_record_lost))

static const char *const error_names[BP_ERING_NR_ERRORS] = {
	[-BP_RING_OK]		= "success",
	[-BP_ERING_INVAL]	= "invalid argument",
	[-BP_ERING_ALIGN]	= "ring memory is not page-aligned",
	[-BP_ERING_SIZE]	= "ring size is not one control page plus 0 or 2^n (n >= 1) data pages",
	[-BP_ERING_NODATA]	= "metadata-only ring has no data area",
	[-BP_ERING_RECSIZE]	= "record size is 0, not a multiple of 8, or too large",
	[-BP_ERING_NOSPACE]	= "no room in the ring: record dropped and counted as lost",
	[-BP_ERING_PAUSED]	= "ring paused: record dropped and counted as lost",
	[-BP_ERING_OVERFLOW]	= "copy past the end of the reservation",
	[-BP_ERING_VERSION]	= "ring written by a newer, incompatible producer",
	[-BP_ERING_CORRUPT]	= "ring geometry or record header is inconsistent",
	[-BP_ERING_BUFSZ]	= "buffer too small for a wrapped record",
	[-BP_ERING_SAMPLE]	= "unsupported sample_type bit or sample too large",
	[-BP_EAUX_NONE]		= "ring has no AUX area",
	[-BP_EAUX_SIZE]		= "AUX size is not 2^n pages",
	[-BP_EAUX_OFFSET]	= "AUX area overlaps the data area or is not page-aligned",
	[-BP_EAUX_NESTED]	= "nested AUX writer refused",
	[-BP_EAUX_FULL]		= "AUX area full: producer stopped",
	[-BP_EAUX_STOPPED]	= "AUX producer stopped until the consumer frees space",
	[-BP_EAUX_SKIP]		= "AUX skip larger than the space in the handle",
	[-BP_EAUX_COMMIT]	= "AUX commit larger than the space in the handle",
	[-BP_EAUX_FLAGS]	= "unknown AUX flag",
	[-BP_EAUX_HANDLE]	= "AUX handle is not open",
};

const char *bp_ring_strerror(int err)
{
	if (err > 0 || err <= -BP_ERING_NR_ERRORS || !error_names[-err])
		return "unknown error";
	return error_names[-err];
}

static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */

/*
 * Seed 000 ("new output ABI"): the size is one page plus 2^n pages, or
 * plus 0 pages for a metadata-only mapping. One data page is refused:
 * a single page is already full when the consumer is woken.
 */
static bool data_pages_valid(uint64_t pages)
{
	return pages == 0 || (pages >= 2 && is_pow2(pages));
}

int bp_ring_init(struct bp_ring *rb, void *mem, uint64_t mem_size,
		 const struct bp_ring_config *cfg)
{
	static const struct bp_ring_config defaults;
	struct bp_ring_ctl *ctl = mem;
	uint64_t data_size;

	if (!rb || !mem)
		return BP_ERING_INVAL;
	if (!cfg)
		cfg = &defaults;
	if (cfg->flags & ~BP_RING_F_OVERWRITE)
		return BP_ERING_INVAL;
	if ((uintptr_t)mem % PAGE)
		return BP_ERING_ALIGN;
	if (mem_size < PAGE || mem_size % PAGE || !data_pages_valid(mem_size / PAGE - 1))
		return BP_ERING_SIZE;
	data_size = mem_size - PAGE;
	if (cfg->watermark > data_size)
		return BP_ERING_INVAL;

	__builtin_memset(rb, 0, sizeof(*rb));
	/* Zeroed data lets an overwrite-mode reader see where data ends. */
	__builtin_memset(mem, 0, mem_size);

	rb->ctl = ctl;
	rb->data = (uint8_t *)mem + PAGE;
	rb->data_size = data_size;
	rb->mask = data_size - 1;
	/* Nothing read yet: the tail is 0. (0 in a metadata-only ring.) */
	rb->limit = data_size;
	rb->max_record = data_size < BP_RECORD_MAX ? (uint32_t)data_size : BP_RECORD_MAX;
	rb->watermark = cfg->watermark ? cfg->watermark : data_size / 2;
	rb->id = cfg->id;
	rb->notify = cfg->notify;
	rb->notify_arg = cfg->notify_arg;
	/*
	 * Heads are 64-bit byte counters and do not wrap in practice (2^64
	 * bytes), so "head >= wakeup_next" is a plain compare. A flight
	 * recorder has no one to wake; its head runs down from 2^64 and
	 * never reaches UINT64_MAX, which is not a multiple of 8.
	 */
	rb->wakeup_next = rb->watermark;
	/* No field: the header alone. */
	rb->sample_size = sizeof(struct bp_record_header);
	if (cfg->flags & BP_RING_F_OVERWRITE) {
		rb->wakeup_next = UINT64_MAX;
		bp_store_relaxed(&rb->slow, BP_RING_S_OVERWRITE);
	}

	ctl->version = BP_RING_VERSION;
	ctl->compat_version = BP_RING_COMPAT_VERSION;
	ctl->page_size = PAGE;
	ctl->flags = cfg->flags;
	ctl->data_offset = PAGE;
	ctl->data_size = data_size;
	ctl->data_watermark = (cfg->flags & BP_RING_F_OVERWRITE) ? 0 : rb->watermark;
	ctl->ring_id = cfg->id;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Producer                                                            */

void bp_ring__post_wakeup(struct bp_ring *rb, uint32_t what)
{
	bp_or32(&rb->wakeup, what);
	if (rb->notify)
		rb->notify(rb, rb->notify_arg);
}

/* The watermark was crossed: tell the consumer, arm the next one. */
void bp_ring__wakeup(struct bp_ring *rb, uint64_t head)
{
	bp_local_set(&rb->wakeup_next, head + rb->watermark);
	bp_ring__post_wakeup(rb, BP_WAKEUP_DATA);
}

/* A failed write: count it for the next LOST record, then let go. */
void bp_ring__drop(struct bp_ring *rb, uint64_t count)
{
	bp_add64(&rb->slow, count);
	bp_ring__put(rb);
}

/* The bytes at data area offset off, wrapping if they cross its end. */
void bp_ring__copy_wrap(struct bp_ring *rb, uint64_t off, const void *src, uint32_t len)
{
	uint64_t first = rb->data_size - off;

	if (first > len)
		first = len;
	__builtin_memcpy(rb->data + off, src, first);
	__builtin_memcpy(rb->data, (const uint8_t *)src + first, len - first);
}

/*
 * Is there room for [head, head + size), which we hold? Ask the
 * consumer's real tail. A: acquire pairs with D in read_end: the consumer
 * is done with everything below tail before we overwrite it. The limit
 * came from an earlier acquire on this CPU, so it orders our writes as
 * well.
 *
 * With room, the new limit is the tail's, but no further than where the
 * data area next wraps after our record: good for every reservation that
 * starts at or after our end. Without room, we give the bytes back. NMIs
 * that came since our reservation have finished, and each either gave its
 * bytes back too or kept them; one that kept them found a tail that
 * leaves room for ours as well, which the second look at the tail then
 * sees. So the head never goes back below a kept reservation, and no
 * limit is stored for bytes given back.
 */
static bool ring_room(struct bp_ring *rb, uint64_t head, uint64_t size)
{
	uint64_t end = head + size, tail, limit;

	for (;;) {
		tail = bp_load_acquire(bp_atomic64(&rb->ctl->data_tail));
		if (end - tail <= rb->data_size) {
			limit = (end | rb->mask) + 1;
			if (limit > tail + rb->data_size)
				limit = tail + rb->data_size;
			bp_local_set(&rb->limit, limit);
			return true;
		}
		if (bp_local_cmpxchg64(&rb->head, end, head))
			return false;
	}
}

/*
 * A record larger than max_record (0 in a metadata-only ring): refused,
 * not counted as lost, like a size no ring takes.
 */
static struct bp_ring__rsv ring_refuse(struct bp_ring *rb)
{
	bp_ring__put(rb);
	return (struct bp_ring__rsv){ .err = rb->data_size ? BP_ERING_RECSIZE : BP_ERING_NODATA };
}

struct bp_ring__rsv bp_ring__reserve_slow(struct bp_ring *rb, uint64_t pos, uint32_t size)
{
	if (ring_room(rb, pos, size))
		return (struct bp_ring__rsv){ .pos = pos };
	/* Larger than the data area: never room, the bytes are given back. */
	if (size > rb->max_record)
		return ring_refuse(rb);
	bp_ring__drop(rb, 1);
	return (struct bp_ring__rsv){ .err = BP_ERING_NOSPACE };
}

static void ring_put_lost(struct bp_ring *rb, uint64_t pos, uint64_t lost)
{
	struct bp_record_lost rec = {
		.header = { .type = BP_RECORD_LOST, .misc = 0, .size = LOST_SIZE },
		.id = rb->id,
		.lost = lost,
	};

	bp_ring__copy_wrap(rb, pos & rb->mask, &rec, LOST_SIZE);
}

/*
 * Take the count of dropped records, leaving the mode bits. An exchange,
 * so drops by an NMI that interrupts us are neither lost nor reported
 * twice; a writer that fails gives the count back, plus one for itself.
 */
static uint64_t ring_take_lost(struct bp_ring *rb)
{
	return bp_fetch_and64(&rb->slow, ~BP_RING_S_LOST_MASK) & BP_RING_S_LOST_MASK;
}

/* Records were dropped: the LOST record goes first, in the same reservation. */
static struct bp_ring__rsv ring_begin_lost(struct bp_ring *rb, uint32_t size)
{
	uint64_t lost = ring_take_lost(rb);
	uint32_t extra = lost ? LOST_SIZE : 0;
	uint64_t head = bp_local_fetch_add64(&rb->head, size + extra);

	if (!ring_room(rb, head, size + extra)) {
		bp_ring__drop(rb, lost + 1);
		return (struct bp_ring__rsv){ .err = BP_ERING_NOSPACE };
	}
	if (lost)
		ring_put_lost(rb, head, lost);
	return (struct bp_ring__rsv){ .pos = head + extra };
}

/*
 * Overwrite mode writes backward (perf's write_backward): the new record
 * ends where the previous one starts, so data_head is always the start of
 * the newest record and a reader walks forward from it. The only bytes we
 * may not overwrite are those of records interrupted writers are still
 * filling, in [head, data_head): refuse rather than corrupt them.
 */
static struct bp_ring__rsv ring_begin_backward(struct bp_ring *rb, uint32_t size)
{
	uint64_t lost = ring_take_lost(rb);
	uint32_t extra = lost ? LOST_SIZE : 0;
	uint64_t head, new_head, published;

	do {
		head = bp_local_read(&rb->head);
		new_head = head - size - extra;
		published = bp_load_relaxed(bp_atomic64(&rb->ctl->data_head));
		if (published - new_head > rb->data_size) {
			bp_ring__drop(rb, lost + 1);
			return (struct bp_ring__rsv){ .err = BP_ERING_NOSPACE };
		}
	} while (!bp_local_cmpxchg64(&rb->head, head, new_head));

	/* Read newest first, the LOST record comes after the record it precedes. */
	if (lost)
		ring_put_lost(rb, new_head + size, lost);
	return (struct bp_ring__rsv){ .pos = new_head };
}

struct bp_ring__rsv bp_ring__begin_slow(struct bp_ring *rb, uint32_t size)
{
	uint64_t slow = bp_load_relaxed(&rb->slow);

	if (size > rb->max_record)
		return ring_refuse(rb);
	if (slow & BP_RING_S_PAUSED) {
		bp_ring__drop(rb, 1);
		return (struct bp_ring__rsv){ .err = BP_ERING_PAUSED };
	}
	if (slow & BP_RING_S_OVERWRITE)
		return ring_begin_backward(rb, size);
	return ring_begin_lost(rb, size);
}

int bp_ring_output(struct bp_ring *rb, const void *record)
{
	const struct bp_record_header *hdr = record;
	struct bp_ring_handle h;
	int err;

	err = bp_ring_output_begin(rb, &h, hdr->size);
	if (err)
		return err;
	bp_ring_output_copy(&h, record, hdr->size);
	bp_ring_output_end(&h);
	return 0;
}

void bp_ring_pause(struct bp_ring *rb, bool paused)
{
	if (paused)
		bp_or64(&rb->slow, BP_RING_S_PAUSED);
	else
		bp_fetch_and64(&rb->slow, ~BP_RING_S_PAUSED);
}

uint64_t bp_ring_free(struct bp_ring *rb)
{
	uint64_t used;

	if (bp_load_relaxed(&rb->slow) & BP_RING_S_OVERWRITE)
		return rb->data_size;
	/* A: pairs with D, as in bp_ring__tail_allows. */
	used = bp_local_read(&rb->head) - bp_load_acquire(bp_atomic64(&rb->ctl->data_tail));
	return used >= rb->data_size ? 0 : rb->data_size - used;
}

uint64_t bp_ring_lost(struct bp_ring *rb)
{
	return bp_load_relaxed(&rb->slow) & BP_RING_S_LOST_MASK;
}

uint32_t bp_ring_wakeup_take(struct bp_ring *rb)
{
	return bp_xchg32(&rb->wakeup, 0);
}

/* ------------------------------------------------------------------ */
/* SAMPLE records                                                      */

/* The one-word fields, each 8 bytes in the record. */
#define SAMPLE_WORDS	(BP_SAMPLE_IDENTIFIER | BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | \
			 BP_SAMPLE_ADDR | BP_SAMPLE_ID | BP_SAMPLE_CPU | BP_SAMPLE_PERIOD)

/*
 * How many one-word fields type names: its bits 0-3 (IP, TID, TIME,
 * ADDR), 6-8 (ID, CPU, PERIOD) and 16 (IDENTIFIER), counted a nibble at
 * a time from a table (POPCNT is not assumed, and the kernel links no
 * libgcc).
 */
_Static_assert(SAMPLE_WORDS == 0x101cf, "the one-word fields are bits 0-3, 6-8 and 16");
static inline uint32_t sample_words(uint64_t type)
{
	static const uint8_t bits[16] = { 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4 };

	return bits[type & 0xf] + bits[type >> 6 & 0x7] + (uint32_t)(type >> 16 & 1);
}

/* The fixed part of a SAMPLE: the header, the one-word fields, READ's
 * three words and CALLCHAIN's count; in bytes. */
static inline uint32_t sample_fixed_size(uint64_t type)
{
	uint32_t words = 1 + sample_words(type);

	if (type & BP_SAMPLE_READ)
		words += 3;
	if (type & BP_SAMPLE_CALLCHAIN)
		words++;
	return words * (uint32_t)sizeof(uint64_t);
}

/* The whole record's size, or 0 (an unsupported bit, or too large). */
static inline uint32_t sample_size(uint64_t type, const struct bp_sample *s)
{
	uint64_t size;

	if (type & ~BP_SAMPLE_SUPPORTED)
		return 0;
	size = sample_fixed_size(type);
	if (type & BP_SAMPLE_READ)
		size += (uint64_t)s->nr_group * sizeof(struct bp_group_entry);
	if (type & BP_SAMPLE_CALLCHAIN)
		size += (uint64_t)s->nr_ips * sizeof(uint64_t);
	return size > BP_RECORD_MAX ? 0 : (uint32_t)size;
}

uint32_t bp_sample_size(uint64_t type, const struct bp_sample *s)
{
	return sample_size(type, s);
}

/* The fixed part after its header, in perf's order (see perf_ring.h), from w. */
static inline __attribute__((always_inline)) void sample_fixed(uint64_t type,
								 const struct bp_sample *s,
								 uint64_t *w)
{
	if (type & BP_SAMPLE_IDENTIFIER)
		*w++ = s->id;
	if (type & BP_SAMPLE_IP)
		*w++ = s->ip;
	if (type & BP_SAMPLE_TID)
		*w++ = s->pid | (uint64_t)s->tid << 32;
	if (type & BP_SAMPLE_TIME)
		*w++ = s->time;
	if (type & BP_SAMPLE_ADDR)
		*w++ = s->addr;
	if (type & BP_SAMPLE_ID)
		*w++ = s->id;
	if (type & BP_SAMPLE_CPU)
		*w++ = s->cpu;
	if (type & BP_SAMPLE_PERIOD)
		*w++ = s->period;
	if (type & BP_SAMPLE_READ) {
		*w++ = s->nr_group;
		*w++ = s->time_enabled;
		*w++ = s->time_running;
	}
	if (type & BP_SAMPLE_CALLCHAIN)
		*w = s->nr_ips;
}

/* The one-word fields perf record writes of a system-wide run (-a), and
 * profile/'s SAMPLEs carry. */
#define SAMPLE_USUAL	(BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID | \
			 BP_SAMPLE_CPU | BP_SAMPLE_PERIOD)

/* sample_fixed for the NMI's fast paths (one-word fields, perhaps a
 * call chain's count): the usual fields, known at compile time, are six
 * stores without a test each; any other set is asked field by field. */
static inline __attribute__((always_inline)) void sample_fixed_fast(uint64_t type,
								      const struct bp_sample *s,
								      uint64_t *w)
{
	if (bp_likely(type == SAMPLE_USUAL))
		sample_fixed(SAMPLE_USUAL, s, w);
	else if (bp_likely(type == (SAMPLE_USUAL | BP_SAMPLE_CALLCHAIN)))
		sample_fixed(SAMPLE_USUAL | BP_SAMPLE_CALLCHAIN, s, w);
	else
		sample_fixed(type, s, w);
}

/* The fixed part's words at most: header, 8 one-word fields, READ's 3,
 * CALLCHAIN's count. */
#define SAMPLE_FIXED_MAX	13

static inline uint64_t sample_header(uint16_t misc, uint32_t size)
{
	struct bp_record_header hdr = { .type = BP_RECORD_SAMPLE, .misc = misc,
					.size = (uint16_t)size };
	uint64_t word;

	__builtin_memcpy(&word, &hdr, sizeof(word));
	return word;
}

/*
 * Any SAMPLE. Unless the record wraps, the fixed part is written in
 * place; otherwise it is laid out in w and copied, wrapping. The group's
 * entries and the chain's addresses go in with one copy each: a field at
 * a time would cost a wrap check apiece, on the NMI path.
 */
static __attribute__((noinline)) int output_sample_any(struct bp_ring *rb, uint64_t type,
							 uint16_t misc, const struct bp_sample *s)
{
	uint64_t w[SAMPLE_FIXED_MAX], *fix, nr_ips;
	uint32_t size = sample_size(type, s), fixed, split;
	struct bp_ring_handle h;
	int err;

	if (!size)
		return BP_ERING_SAMPLE;
	err = bp_ring_output_begin(rb, &h, size);
	if (err)
		return err;
	fix = h.wrap == h.end ? (uint64_t *)(rb->data + (h.pos & rb->mask)) : w;
	fix[0] = sample_header(misc, size);
	sample_fixed(type, s, fix + 1);
	fixed = sample_fixed_size(type);
	/* The group's entries go between READ's words and CALLCHAIN's count. */
	split = (type & BP_SAMPLE_READ) && s->nr_group && (type & BP_SAMPLE_CALLCHAIN) ?
		fixed - sizeof(uint64_t) : fixed;
	if (fix == w)
		bp_ring_output_copy(&h, w, split);
	else
		h.pos += split;
	if ((type & BP_SAMPLE_READ) && s->nr_group)
		bp_ring_output_copy(&h, s->group, s->nr_group * sizeof(*s->group));
	if (split < fixed) {
		nr_ips = s->nr_ips;
		bp_ring_output_copy(&h, &nr_ips, sizeof(nr_ips));
	}
	if ((type & BP_SAMPLE_CALLCHAIN) && s->nr_ips)
		bp_ring_output_copy(&h, s->ips, s->nr_ips * sizeof(*s->ips));
	bp_ring_output_end(&h);
	return 0;
}

/*
 * bp_ring_output_sample's and output_sample_chain's record where the fast
 * reservation failed: the slow path reserves (reserved: head already moved
 * to pos + size), and the record, which may wrap, is laid out in w and
 * copied, a chain's addresses after the fixed part (size: the whole
 * record's).
 */
static __attribute__((noinline)) int sample_slow(struct bp_ring *rb, uint64_t type,
						 uint16_t misc, const struct bp_sample *s,
						 uint32_t size, uint64_t pos, bool reserved)
{
	uint32_t fixed = sample_fixed_size(type);
	struct bp_ring__rsv r = reserved ? bp_ring__reserve_slow(rb, pos, size)
					 : bp_ring__begin_slow(rb, size);
	uint64_t w[SAMPLE_FIXED_MAX];

	if (r.err)
		return r.err;
	w[0] = sample_header(misc, size);
	sample_fixed(type, s, w + 1);
	bp_ring__copy_wrap(rb, r.pos & rb->mask, w, fixed);
	if (size > fixed)
		bp_ring__copy_wrap(rb, (r.pos + fixed) & rb->mask, s->ips, size - fixed);
	bp_ring__put(rb);
	return 0;
}

/*
 * A run writes one sample_type: the fixed part's size is worked out once
 * and kept with the type in one word, which an NMI reads or replaces whole.
 */
static inline __attribute__((always_inline)) uint32_t sample_size_kept(struct bp_ring *rb,
								       uint64_t type)
{
	uint64_t known = bp_local_read(&rb->sample_size);
	uint32_t size;

	if (bp_likely(known >> 32 == type))
		return (uint32_t)known;
	size = sample_fixed_size(type);
	bp_local_set(&rb->sample_size, type << 32 | size);
	return size;
}

/* n words from src to dst: rep movsq, inline. The chain's few addresses
 * would cost the NMI more in memcpy's call and set-up than in the copy. */
static inline __attribute__((always_inline)) void copy_words(uint64_t *dst, const uint64_t *src,
							     uint64_t n)
{
	__asm__ __volatile__("rep movsq" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/*
 * The sampling NMI's SAMPLE with a call chain (record -g): one-word
 * fields, the chain's count and its addresses. As bp_ring_output_sample
 * does: the fixed part's size kept with the type, the reservation's fast
 * path (anything else out of line, whole), the fixed part stored straight
 * into the reserved bytes; the addresses follow in one copy. Apart from
 * bp_ring_output_sample so that its path without a chain keeps its few
 * values in registers.
 */
static __attribute__((noinline)) int output_sample_chain(struct bp_ring *rb, uint64_t type,
							   uint16_t misc, const struct bp_sample *s)
{
	uint64_t limit, pos, *fix;
	uint32_t fixed, size, n = s->nr_ips;

	/* Known from the caller's test; said again so that the compiler
	 * drops sample_fixed's tests of READ and CALLCHAIN. */
	type = (type & SAMPLE_WORDS) | BP_SAMPLE_CALLCHAIN;
	fixed = sample_size_kept(rb, type);
	if (bp_unlikely(n > (BP_RECORD_MAX - fixed) / sizeof(uint64_t)))
		return BP_ERING_SAMPLE;
	size = fixed + n * (uint32_t)sizeof(uint64_t);
	bp_local_inc32(&rb->nest);
	limit = bp_local_read(&rb->limit);
	if (bp_unlikely(bp_load_relaxed(&rb->slow)))
		return sample_slow(rb, type, misc, s, size, 0, false);
	pos = bp_local_fetch_add64(&rb->head, size);
	if (bp_unlikely(pos + size > limit))
		return sample_slow(rb, type, misc, s, size, pos, true);
	fix = (uint64_t *)(rb->data + (pos & rb->mask));
	fix[0] = sample_header(misc, size);
	sample_fixed_fast(type, s, fix + 1);
	copy_words(fix + fixed / sizeof(uint64_t), s->ips, n);
	bp_ring__put(rb);
	return 0;
}

/*
 * The NMI's usual SAMPLE has one-word fields only (no READ, no
 * CALLCHAIN): its size is the type's alone, and each field is stored
 * straight into the reserved bytes, in one pass. The reservation is
 * bp_ring_output_begin's fast path, whose bytes never wrap; everything
 * else goes out of line, whole, so that this path keeps its few values
 * in registers.
 */
int bp_ring_output_sample(struct bp_ring *rb, uint64_t type, uint16_t misc,
			  const struct bp_sample *s)
{
	uint64_t limit, pos, *fix;
	uint32_t size;

	if (bp_unlikely(type & ~SAMPLE_WORDS))
		return type & ~(SAMPLE_WORDS | BP_SAMPLE_CALLCHAIN) ?
		       output_sample_any(rb, type, misc, s) : output_sample_chain(rb, type, misc, s);
	/* Known from the test above; said again so that the compiler drops
	 * sample_fixed's tests of READ and CALLCHAIN. */
	type &= SAMPLE_WORDS;
	size = sample_size_kept(rb, type);
	bp_local_inc32(&rb->nest);
	limit = bp_local_read(&rb->limit);
	if (bp_unlikely(bp_load_relaxed(&rb->slow)))
		return sample_slow(rb, type, misc, s, size, 0, false);
	pos = bp_local_fetch_add64(&rb->head, size);
	if (bp_unlikely(pos + size > limit))
		return sample_slow(rb, type, misc, s, size, pos, true);
	fix = (uint64_t *)(rb->data + (pos & rb->mask));
	fix[0] = sample_header(misc, size);
	sample_fixed_fast(type, s, fix + 1);
	bp_ring__put(rb);
	return 0;
}

struct sample_cursor {
	const uint8_t *p;
	const uint8_t *end;
	bool bad;
};

static uint64_t take_u64(struct sample_cursor *c)
{
	uint64_t v = 0;

	if (c->end - c->p < (ptrdiff_t)sizeof(v)) {
		c->bad = true;
		return 0;
	}
	__builtin_memcpy(&v, c->p, sizeof(v));
	c->p += sizeof(v);
	return v;
}

static void take_u32x2(struct sample_cursor *c, uint32_t *lo, uint32_t *hi)
{
	uint64_t v = take_u64(c);

	*lo = (uint32_t)v;
	*hi = (uint32_t)(v >> 32);
}

/* An array of n elements of size bytes; NULL (and c->bad) if it overruns. */
static const void *take_array(struct sample_cursor *c, uint64_t n, uint64_t size)
{
	const void *p = c->p;

	if (n > (uint64_t)(c->end - c->p) / size) {
		c->bad = true;
		return NULL;
	}
	c->p += n * size;
	return p;
}

int bp_sample_parse(uint64_t type, const struct bp_record_header *rec, struct bp_sample *s)
{
	struct sample_cursor c = {
		.p = (const uint8_t *)(rec + 1),
		.end = (const uint8_t *)rec + rec->size,
	};
	uint64_t n;

	if (type & ~BP_SAMPLE_SUPPORTED)
		return BP_ERING_SAMPLE;
	if (rec->type != BP_RECORD_SAMPLE || rec->size < sizeof(*rec) ||
	    rec->size % BP_RECORD_ALIGN)
		return BP_ERING_CORRUPT;
	__builtin_memset(s, 0, sizeof(*s));

	if (type & BP_SAMPLE_IDENTIFIER)
		s->id = s->identifier = take_u64(&c);
	if (type & BP_SAMPLE_IP)
		s->ip = take_u64(&c);
	if (type & BP_SAMPLE_TID)
		take_u32x2(&c, &s->pid, &s->tid);
	if (type & BP_SAMPLE_TIME)
		s->time = take_u64(&c);
	if (type & BP_SAMPLE_ADDR)
		s->addr = take_u64(&c);
	if (type & BP_SAMPLE_ID)
		s->id = take_u64(&c);
	if (type & BP_SAMPLE_CPU)
		take_u32x2(&c, &s->cpu, &s->res);
	if (type & BP_SAMPLE_PERIOD)
		s->period = take_u64(&c);
	if (type & BP_SAMPLE_READ) {
		n = take_u64(&c);
		s->time_enabled = take_u64(&c);
		s->time_running = take_u64(&c);
		s->group = take_array(&c, n, sizeof(struct bp_group_entry));
		s->nr_group = (uint32_t)n;
	}
	if (type & BP_SAMPLE_CALLCHAIN) {
		n = take_u64(&c);
		s->ips = take_array(&c, n, sizeof(uint64_t));
		s->nr_ips = (uint32_t)n;
	}
	if (c.bad || c.p != c.end)
		return BP_ERING_CORRUPT;
	return 0;
}

uint32_t bp_callchain_fp(uint64_t ip, uint64_t fp, uint64_t stack_lo,
			 uint64_t stack_hi, uint64_t *ips, uint32_t max)
{
	return max ? bp_walk_frames(ip, fp, stack_lo, stack_hi, ips, max, 0, NULL) : 0;
}

/* ------------------------------------------------------------------ */
/* Consumer                                                            */

static bool reader_geometry_valid(const struct bp_ring_ctl *ctl, uint64_t mem_size)
{
	uint64_t data_end;

	if (ctl->page_size != PAGE || ctl->data_offset != PAGE)
		return false;
	if (ctl->data_size % PAGE || !data_pages_valid(ctl->data_size / PAGE))
		return false;
	if (ctl->data_size > mem_size - PAGE)
		return false;
	if (!ctl->aux_size)
		return true;
	data_end = PAGE + ctl->data_size;
	return ctl->aux_size % PAGE == 0 && is_pow2(ctl->aux_size / PAGE) &&
	       ctl->aux_offset % PAGE == 0 && ctl->aux_offset >= data_end &&
	       ctl->aux_size <= mem_size && ctl->aux_offset <= mem_size - ctl->aux_size;
}

int bp_ring_reader_init(struct bp_ring_reader *r, void *mem, uint64_t mem_size)
{
	struct bp_ring_ctl *ctl = mem;

	if (!r || !mem || mem_size < PAGE)
		return BP_ERING_INVAL;
	if (ctl->version == 0)
		return BP_ERING_CORRUPT;
	if (ctl->compat_version > BP_RING_VERSION)
		return BP_ERING_VERSION;
	if (!reader_geometry_valid(ctl, mem_size))
		return BP_ERING_CORRUPT;

	__builtin_memset(r, 0, sizeof(*r));
	r->ctl = ctl;
	r->data = (const uint8_t *)mem + PAGE;
	r->data_size = ctl->data_size;
	r->aux = ctl->aux_size ? (const uint8_t *)mem + ctl->aux_offset : NULL;
	r->aux_size = ctl->aux_size;
	r->flags = ctl->flags;
	r->tail = bp_load_relaxed(bp_atomic64(&ctl->data_tail));
	r->head = r->tail;
	return 0;
}

uint64_t bp_ring_read_begin(struct bp_ring_reader *r)
{
	/* C: pairs with B in bp_ring__put: every byte below head is written. */
	r->head = bp_load_acquire(bp_atomic64(&r->ctl->data_head));
	if (r->flags & BP_RING_F_OVERWRITE) {
		r->tail = r->head;
		r->end = r->head + r->data_size;
		return r->data_size;
	}
	return r->head - r->tail;
}

/*
 * Overwrite mode ends the walk, without error, at a never-written header
 * (size 0) or at a record whose end lies past data_head + data_size: the
 * newest records have overwritten it.
 */
static int reader_check_size(const struct bp_ring_reader *r, uint32_t size, uint64_t avail)
{
	bool overwrite = r->flags & BP_RING_F_OVERWRITE;

	if (overwrite && (size == 0 || size > avail))
		return 0;
	if (size < sizeof(struct bp_record_header) || size % BP_RECORD_ALIGN || size > avail)
		return BP_ERING_CORRUPT;
	return 1;
}

int bp_ring_read_next(struct bp_ring_reader *r, const struct bp_record_header **rec,
		      void *buf, uint32_t buflen)
{
	uint64_t limit = (r->flags & BP_RING_F_OVERWRITE) ? r->end : r->head;
	uint64_t avail = limit - r->tail;
	const struct bp_record_header *hdr;
	uint64_t off, first;
	uint32_t size;
	int ok;

	if (avail == 0 || r->data_size == 0)
		return 0;
	if (avail > r->data_size || avail % BP_RECORD_ALIGN)
		return BP_ERING_CORRUPT;
	off = r->tail & (r->data_size - 1);
	/* Headers are 8 bytes at 8-aligned offsets: never split. */
	hdr = (const struct bp_record_header *)(r->data + off);
	size = hdr->size;
	ok = reader_check_size(r, size, avail);
	if (ok <= 0)
		return ok;

	if (off + size <= r->data_size) {
		*rec = hdr;
	} else {
		if (size > buflen)
			return BP_ERING_BUFSZ;
		first = r->data_size - off;
		__builtin_memcpy(buf, r->data + off, first);
		__builtin_memcpy((uint8_t *)buf + first, r->data, size - first);
		*rec = buf;
	}
	r->tail += size;
	return 1;
}

void bp_ring_read_end(struct bp_ring_reader *r)
{
	if (r->flags & BP_RING_F_OVERWRITE)
		return;
	/* D: pairs with A in bp_ring__tail_allows: we are done below tail. */
	bp_store_release(bp_atomic64(&r->ctl->data_tail), r->tail);
}

/*
 * tools/util/trace/pkt.c — the packet decoder of the single-step tracer
 * (trace.h): one packet of include/uapi/itrace.h from bytes, and the
 * search for a SYNC to start from.
 */
#define _GNU_SOURCE
#include <string.h>

#include "tools/util/trace/internal.h"

/* 1: ok; 0: cut short; -1: more than 64 bits. */
static int get_uvarint(const uint8_t *p, size_t n, size_t *used, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < 10; i++) {
		if (i >= n)
			return 0;
		uint64_t b = p[i];
		if (i == 9 && b > 1)
			return -1;
		x |= (b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*used = i + 1;
			*v = x;
			return 1;
		}
	}
	return -1;
}

static int get_svarint(const uint8_t *p, size_t n, size_t *used, int64_t *v)
{
	uint64_t z;
	int r = get_uvarint(p, n, used, &z);

	if (r == 1)
		*v = (int64_t)((z >> 1) ^ (0 - (z & 1)));
	return r;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

long trace_pkt_decode(const uint8_t *p, size_t n, struct trace_pkt *pkt)
{
	size_t off = 1, u;
	int r;

	memset(pkt, 0, sizeof(*pkt));
	if (!n)
		return 0;
	if (p[0] & ITRACE_OP_TNT) {
		unsigned v = p[0] & 0x7f, nb = 0;
		if (v < 2)
			return -1;
		while (v >> (nb + 1))
			nb++;
		pkt->type = TP_TNT;
		pkt->tnt_n = (uint8_t)nb;
		pkt->tnt_bits = (uint8_t)(v & ((1u << nb) - 1));
		return 1;
	}
	switch (p[0]) {
	case ITRACE_OP_PAD:
		pkt->type = TP_PAD;
		return 1;
	case ITRACE_OP_TIP:
	case ITRACE_OP_PGE:
		pkt->type = p[0] == ITRACE_OP_TIP ? TP_TIP : TP_PGE;
		r = get_svarint(p + off, n - off, &u, &pkt->ip_delta);
		return r == 1 ? (long)(off + u) : r;
	case ITRACE_OP_ASYNC:
		pkt->type = TP_ASYNC;
		r = get_uvarint(p + off, n - off, &u, &pkt->steps);
		if (r != 1)
			return r;
		off += u;
		r = get_svarint(p + off, n - off, &u, &pkt->ip_delta);
		return r == 1 ? (long)(off + u) : r;
	case ITRACE_OP_STOP:
		pkt->type = TP_STOP;
		if (n < 2)
			return 0;
		pkt->reason = p[1];
		if (pkt->reason != ITRACE_STOP_END && pkt->reason != ITRACE_STOP_PAUSE)
			return -1;
		off = 2;
		r = get_uvarint(p + off, n - off, &u, &pkt->steps);
		if (r != 1)
			return r;
		off += u;
		r = get_uvarint(p + off, n - off, &u, &pkt->tsc);
		return r == 1 ? (long)(off + u) : r;
	case ITRACE_OP_SYNC: {
		size_t need = sizeof(struct itrace_sync);
		if (n < ITRACE_SYNC_MAGIC_LEN)
			return memcmp(p, ITRACE_SYNC_MAGIC, n) ? -1 : 0;
		if (memcmp(p, ITRACE_SYNC_MAGIC, ITRACE_SYNC_MAGIC_LEN))
			return -1;
		if (n < need)
			return 0;
		pkt->type = TP_SYNC;
		pkt->ip = get_u64(p + 8);
		pkt->tsc = get_u64(p + 16);
		pkt->steps = get_u64(p + 24);
		pkt->flags = p[32];
		if (pkt->flags & ~ITRACE_SYNC_FLAGS)
			return -1;
		pkt->lo = 0;
		pkt->hi = ~0ull;
		if (pkt->flags & ITRACE_SYNC_RANGE) {
			need += sizeof(struct itrace_range);
			if (n < need)
				return 0;
			pkt->lo = get_u64(p + 33);
			pkt->hi = get_u64(p + 41);
			if (pkt->lo >= pkt->hi)
				return -1;
		}
		return (long)need;
	}
	default:
		return -1;
	}
}

long trace_pkt_find_sync(const uint8_t *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		const uint8_t *m = memmem(p + off, n - off, ITRACE_SYNC_MAGIC, ITRACE_SYNC_MAGIC_LEN);
		struct trace_pkt pk;
		if (!m)
			return -1;
		off = (size_t)(m - p);
		if (trace_pkt_decode(m, n - off, &pk) > 0)
			return (long)off;
		off++;
	}
	return -1;
}


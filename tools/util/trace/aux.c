/*
 * tools/util/trace/aux.c — the capture side of the trace decoder
 * (trace.h): the capture read by the session loader (tools/util/session.h,
 * through a tap), its AUX data placed by AUX counter per CPU and run, cut
 * into pieces by the AUX records that cover it, with the holes and
 * TRUNCATED commits between them; the format of each CPU's data.
 */
#define _GNU_SOURCE
#include <string.h>

#include "uapi/perf_ring.h"
#include "uapi/wire.h"
#include "tools/util/session.h"
#include "tools/util/trace/internal.h"

struct ival {
	uint64_t lo, hi;
};

struct auxrec {
	uint64_t off, size, flags;
};

struct cpu_acc {
	uint32_t cpu, run;		/* a run's rings start again at AUX counter 0 */
	uint8_t *buf;			/* AUX bytes by counter */
	uint64_t buf_cap;
	struct ival *cov;		/* received ranges, sorted, merged */
	size_t ncov, cov_cap;
	struct auxrec *recs;
	size_t nrecs, recs_cap;
	uint64_t bytes, lost_records, lost_frames;
};

struct cap_priv {
	struct cpu_acc *acc;
	size_t nacc;
};

/*
 * The accumulator of cpu in the current run: s->nruns RUN_META records
 * came so far, and each starts a run (control=1 serves many in one
 * boot) whose rings, AUX counters included, start from 0 again.
 */
static struct cpu_acc *acc_for(struct cap_priv *P, const struct session *s, uint32_t cpu)
{
	uint32_t run = (uint32_t)s->nruns;

	for (size_t i = 0; i < P->nacc; i++)
		if (P->acc[i].cpu == cpu && P->acc[i].run == run)
			return &P->acc[i];
	P->acc = xrealloc(P->acc, (P->nacc + 1) * sizeof(*P->acc));
	memset(&P->acc[P->nacc], 0, sizeof(*P->acc));
	P->acc[P->nacc].cpu = cpu;
	P->acc[P->nacc].run = run;
	return &P->acc[P->nacc++];
}

static void cov_add(struct cpu_acc *a, uint64_t lo, uint64_t hi)
{
	size_t i;

	if (lo >= hi)
		return;
	/* Mostly appends: merge with the last range when adjacent. */
	if (a->ncov && a->cov[a->ncov - 1].hi == lo) {
		a->cov[a->ncov - 1].hi = hi;
		return;
	}
	GROW(a->cov, a->ncov, a->cov_cap);
	for (i = a->ncov; i > 0 && a->cov[i - 1].lo > lo; i--)
		a->cov[i] = a->cov[i - 1];
	a->cov[i] = (struct ival){ lo, hi };
	a->ncov++;
	/* Merge overlaps (rare: duplicates). */
	size_t j = 0;
	for (i = 0; i < a->ncov; i++) {
		if (j && a->cov[i].lo <= a->cov[j - 1].hi) {
			if (a->cov[i].hi > a->cov[j - 1].hi)
				a->cov[j - 1].hi = a->cov[i].hi;
		} else {
			a->cov[j++] = a->cov[i];
		}
	}
	a->ncov = j;
}

/* Bytes from lo covered contiguously (up to hi). */
static uint64_t cov_run(const struct cpu_acc *a, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < a->ncov; i++)
		if (a->cov[i].lo <= lo && lo < a->cov[i].hi)
			return (a->cov[i].hi < hi ? a->cov[i].hi : hi) - lo;
	return 0;
}

static uint64_t cov_next(const struct cpu_acc *a, uint64_t lo)
{
	uint64_t best = UINT64_MAX;

	for (size_t i = 0; i < a->ncov; i++)
		if (a->cov[i].lo > lo && a->cov[i].lo < best)
			best = a->cov[i].lo;
	return best;
}

static void cap_frame(void *ctx, const struct session *s, const struct wire_dec_frame *f)
{
	struct cap_priv *P = ctx;

	if (f->lost_before && (f->channel == WIRE_CH_RECORDS || f->channel == WIRE_CH_AUX))
		acc_for(P, s, f->cpu)->lost_frames += f->lost_before;
}

static void cap_record(void *ctx, const struct session *s, const struct wire_dec_frame *f,
		       const struct bp_record_header *rec)
{
	struct cap_priv *P = ctx;

	switch (rec->type) {
	case BP_RECORD_AUX:
		if (rec->size >= sizeof(struct bp_record_aux)) {
			const struct bp_record_aux *r = (const void *)rec;
			struct cpu_acc *a = acc_for(P, s, f->cpu);
			GROW(a->recs, a->nrecs, a->recs_cap);
			a->recs[a->nrecs++] = (struct auxrec){ r->aux_offset, r->aux_size, r->flags };
		}
		break;
	case BP_RECORD_LOST:
		acc_for(P, s, f->cpu)->lost_records++;
		break;
	}
}

#define AUX_HOLE_MAX	(64ull << 20)

static void cap_data(void *ctx, const struct session *s, const struct wire_dec_frame *f,
		     const uint8_t *p, size_t n)
{
	struct cap_priv *P = ctx;

	if (f->channel != WIRE_CH_AUX || !n)
		return;
	struct cpu_acc *a = acc_for(P, s, f->cpu);
	uint64_t end = f->aux_pos + n;
	/*
	 * The buffer is dense from counter 0 (a run's rings start there), so
	 * a frame's position is memory: accept positions within twice the
	 * data received so far plus AUX_HOLE_MAX of holes (lost frames); a
	 * frame beyond is implausible and counted lost, rather than costing
	 * gigabytes for a few bytes.
	 */
	if (end < f->aux_pos || end > (1ull << 34) || end > 2 * (a->bytes + n) + AUX_HOLE_MAX) {
		a->lost_frames++;
		return;
	}
	if (end > a->buf_cap) {
		uint64_t cap = a->buf_cap ? a->buf_cap : 65536;
		while (cap < end)
			cap *= 2;
		a->buf = xrealloc(a->buf, cap);
		memset(a->buf + a->buf_cap, 0, cap - a->buf_cap);
		a->buf_cap = cap;
	}
	memcpy(a->buf + f->aux_pos, p, n);
	cov_add(a, f->aux_pos, end);
	a->bytes += n;
}

static void add_piece(struct trace_cpu_data *c, size_t *cap, const uint8_t *data, size_t len,
		      uint64_t pos, int join)
{
	GROW(c->pieces, c->npieces, *cap);
	c->pieces[c->npieces++] = (struct trace_piece){ data, len, pos, join };
}

static int rec_cmp(const void *a, const void *b)
{
	const struct auxrec *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static void build_pieces(struct cpu_acc *a, struct trace_cpu_data *c)
{
	size_t cap = 0;
	int join = TJ_CONT;

	c->cpu = a->cpu;
	c->run = a->run;
	c->aux_bytes = a->bytes;
	c->records = a->nrecs;
	c->records_lost = a->lost_records + a->lost_frames;
	if (!a->nrecs && a->ncov) {
		/* No AUX records at all: every received range on its own. */
		for (size_t i = 0; i < a->ncov; i++)
			add_piece(c, &cap, a->buf + a->cov[i].lo, a->cov[i].hi - a->cov[i].lo,
				  a->cov[i].lo, i ? TJ_LOSS : TJ_CONT);
		return;
	}
	if (a->nrecs)		/* AUX data but no AUX record: recs is NULL */
		qsort(a->recs, a->nrecs, sizeof(*a->recs), rec_cmp);
	for (size_t i = 0; i < a->nrecs; i++) {
		const struct auxrec *r = &a->recs[i];
		if (r->flags & BP_AUX_FLAG_TRUNCATED)
			c->truncated++;
		for (uint64_t pos = r->off, end = r->off + r->size; pos < end;) {
			uint64_t run = cov_run(a, pos, end);
			if (run) {
				add_piece(c, &cap, a->buf + pos, run, pos, join);
				join = TJ_CONT;
				pos += run;
			} else {
				uint64_t next = cov_next(a, pos);
				next = next < end ? next : end;
				c->missing_bytes += next - pos;
				join = TJ_LOSS;
				pos = next;
			}
		}
		if (r->flags & BP_AUX_FLAG_TRUNCATED)
			join = TJ_PAUSE;
	}
}

int trace_detect_format(const struct trace_piece *pieces, size_t n)
{
	static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };

	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = pieces[i].data;
		size_t len = pieces[i].len;
		const uint8_t *a = memmem(p, len, psb, sizeof(psb));
		long b = trace_pkt_find_sync(p, len);
		if (a && (b < 0 || a - p < b))
			return TF_PT;
		if (b >= 0)
			return TF_SSTEP;
	}
	return TF_NONE;
}

int trace_capture_load(struct trace_capture *tc, const char *path, char *err, size_t n)
{
	static const struct session_tap tap = { cap_frame, cap_record, cap_data };
	struct cap_priv *P = calloc(1, sizeof(*P));
	struct session *s = calloc(1, sizeof(*s));
	const uint8_t *id;
	size_t idlen;

	memset(tc, 0, sizeof(*tc));
	if (!P || !s) {
		free(P);
		free(s);
		seterr(err, n, "%s: out of memory", path);
		return -1;
	}
	tc->priv = P;
	if (session_load_tap(s, path, SESSION_NO_RECORDS, &tap, P, err, n)) {
		free(s);
		trace_capture_free(tc);
		return -1;
	}
	if (session_build_id(s, &id, &idlen)) {
		tc->build_id_len = idlen < sizeof(tc->build_id) ? idlen : sizeof(tc->build_id);
		memcpy(tc->build_id, id, tc->build_id_len);
	}
	tc->nruns = (uint32_t)s->nruns;
	tc->console = s->console;	/* kept: the rest of the session goes */
	s->console = NULL;
	session_free(s);
	free(s);
	tc->cpus = calloc(P->nacc ? P->nacc : 1, sizeof(*tc->cpus));
	for (size_t i = 0; i < P->nacc; i++) {
		build_pieces(&P->acc[i], &tc->cpus[tc->ncpus]);
		tc->cpus[tc->ncpus].format = trace_detect_format(tc->cpus[tc->ncpus].pieces,
								 tc->cpus[tc->ncpus].npieces);
		tc->ncpus++;
	}
	return 0;
}

void trace_capture_free(struct trace_capture *tc)
{
	struct cap_priv *P = tc->priv;

	for (size_t i = 0; i < tc->ncpus; i++)
		free(tc->cpus[i].pieces);
	free(tc->cpus);
	if (P) {
		for (size_t i = 0; i < P->nacc; i++) {
			free(P->acc[i].buf);
			free(P->acc[i].cov);
			free(P->acc[i].recs);
		}
		free(P->acc);
		free(P);
	}
	free(tc->console);
	memset(tc, 0, sizeof(*tc));
}


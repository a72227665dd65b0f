/*
 * bench_records.c — the harness's BENCH and BENCH_END records: numbered
 * per app run, written into the measuring CPU's ring, the stream drained
 * to make room for them (apps/bench.h, bench_run and bench_end).
 */
#include "apps/bench_internal.h"
#include "apps/run.h"
#include "kernel/stream.h"
#include "profile/profile.h"
#include "ringbuf/ringbuf.h"

#define MAX_TABLES	32		/* distinct tables of one app run (table_row) */

/*
 * What the records of this app run have been numbered so far: seq and
 * table_row (perf_ring.h), and the results that found no room. A new run
 * (another app id) starts again from 1. Only bench_run's jobs and
 * bench_end touch it, one at a time (smp_call waits for each job).
 */
static struct {
	u32 app_id;
	u32 seq, lost;
	u32 last_row;			/* table_row of result seq, in last_table */
	char last_table[16];
	u32 ntables;
	char table[MAX_TABLES][16];
	u32 rows[MAX_TABLES];
} numbering;

static void numbering_for_run(u32 app_id)
{
	if (numbering.app_id != app_id) {
		memset(&numbering, 0, sizeof(numbering));
		numbering.app_id = app_id;
	}
}

static u32 next_table_row(const char *table)
{
	u32 i;

	for (i = 0; i < numbering.ntables; i++)
		if (!strncmp(numbering.table[i], table, sizeof(numbering.table[i]) - 1))
			return ++numbering.rows[i];
	if (i == MAX_TABLES)
		return 0;		/* more tables than tracked: row unknown */
	strlcpy(numbering.table[i], table, sizeof(numbering.table[i]));
	numbering.ntables++;
	return numbering.rows[i] = 1;
}

/*
 * Room for a record of size bytes (and the LOST record that may have to
 * precede it) in this CPU's ring: outside any NMI, the records can wait
 * while the stream drains every ring, as the end of the run would. A
 * drain that frees nothing (a transport that stalled) is given up after
 * BENCH_ROOM_WAIT_MS of TSC time, and said.
 */
static void make_room(struct bp_ring *rb, u32 size, bool drain)
{
	u64 need = size + sizeof(struct bp_record_lost);

	if (bp_ring_free(rb) >= need || !drain || !stream_active())
		return;
	/* tsc_hz unknown: a 4 GHz guess, so the wait lasts at least as long */
	u64 t0 = rdtsc(), limit = (tsc_hz ? tsc_hz : 4000000000ul) / 1000 * BENCH_ROOM_WAIT_MS;
	while (bp_ring_free(rb) < need) {
		if (rdtsc() - t0 > limit) {
			kprintf("bench: cpu %u: the ring still has no room for a BENCH record "
				"after %u ms of draining: the record is dropped (counted)\n",
				this_cpu_id(), BENCH_ROOM_WAIT_MS);
			return;
		}
		run_drain(false);
		cpu_relax();
	}
}

void bench_write_record(const struct bench *b, const struct bench_result *r, bool drain)
{
	u32 cpu = this_cpu_id();
	struct bp_ring *rb = profile_active() ? profile_ring(cpu) : NULL;
	struct bp_record_bench rec = {
		.header = { BP_RECORD_BENCH, 0, sizeof(rec) },
		.cpu = cpu,
		.param = b->param,
		.param_unit = b->param_unit,
		.work_unit = b->work_unit,
		.flags = r->flags,
		.n_reps = r->reps,
		.warmup = r->warmup,
		.unroll = r->unroll,
		.disturbed = r->disturbed,
		.loops = r->loops,
		.work = r->work,
		.min = r->min,
		.median = r->median,
		.trimmed_mean = r->tmean,
		.max = r->max,
		.median_n = r->median_n,
		.median_2n = r->median_2n,
		.bench_version = BP_BENCH_VERSION,
		.agg = r->agg,
		.iqr = r->iqr,
	};

	if (!rb)
		return;
	rec.app_id = profile_app_id();
	numbering_for_run(rec.app_id);
	rec.seq = ++numbering.seq;
	rec.table_row = numbering.last_row = next_table_row(b->table);
	strlcpy(rec.table, b->table, sizeof(rec.table));
	strlcpy(numbering.last_table, b->table, sizeof(numbering.last_table));
	strlcpy(rec.name, b->name, sizeof(rec.name));
	strlcpy(rec.event, r->event, sizeof(rec.event));
	make_room(rb, sizeof(rec), drain);
	rec.time = rdtsc();
	if (profile_output(&rec))
		numbering.lost++;	/* counted by the run and the ring's LOST too */
}

void bench_end(const struct bench_opts *o)
{
	u32 app_id = profile_app_id();
	struct bp_record_bench_end rec = {
		.header = { BP_RECORD_BENCH_END, 0, sizeof(rec) },
		.app_id = app_id,
		.cpu = this_cpu_id(),
	};

	if (o->no_records || !profile_active() || !profile_ring(rec.cpu))
		return;
	numbering_for_run(app_id);
	rec.results = numbering.seq;
	rec.lost = numbering.lost;
	rec.last_row = numbering.last_row;
	strlcpy(rec.last_table, numbering.last_table, sizeof(rec.last_table));
	make_room(profile_ring(rec.cpu), sizeof(rec), true);	/* after the measurements */
	int err = profile_output(&rec);
	if (numbering.lost || err)
		kprintf("bench: %u of %u BENCH records found no room in the rings%s (counted in "
			"LOST records; bareperf stat --bench names the rows)\n", numbering.lost,
			numbering.seq, err ? ", nor did the end record" : "");
}

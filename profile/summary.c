/*
 * summary.c — the console summary at the end of a run: the counts of the
 * app's CPU, perf stat's way, and the hottest functions in the rings.
 */
#include "kernel/kernel.h"
#include "pmu/pmu.h"
#include "profile/profile_internal.h"
#include "profile/trace.h"
#include "ringbuf/ringbuf.h"
#include <uapi/perf_ring.h>

#define SUMMARY_SLOTS	256
#define SUMMARY_TOP	8

struct hot {
	u64 func;		/* symbol start, or the ip when unknown */
	u64 count;
};

/*
 * One line per counting event for the app's CPU (CPU 0 if no app ran
 * inside the run), perf stat's way: a multiplexed count is shown scaled,
 * with the factor and the share of the time it ran.
 */
static void print_counts(void)
{
	u32 cpu = 0;

	for (u32 i = 0; i < prof.ncpus; i++)
		if (prof.cpus[i].app_here && prof.cpus[i].app_t1) {
			cpu = i;
			break;
		}
	const struct cpu_prof *cp = &prof.cpus[cpu];
	u64 win = cp->app_here && cp->app_t1 ? cp->app_t1 - cp->app_t0 : cp->t_stop - cp->t_start;
	kprintf("count: %s on cpu %u: %lu TSC ticks (%lu us)%s\n", prof.app_name ? prof.app_name : "run",
		cpu, win, tsc_to_ns(win) / 1000,
		prof.ncpus > 1 ? "; every CPU's counts are in its COUNTS record" : "");
	for (int j = 0; j < prof.cfg.ncount; j++) {
		const struct pmu_value *v = &cp->counts[j];
		const char *name = prof.cfg.attrs[prof.cfg.nevents + j].name;
		if (!v->running) {
			kprintf("count: %s <not counted>\n", name);
		} else if (v->running >= v->enabled) {
			kprintf("count: %s %lu\n", name, v->count);
		} else {
			u64 x100 = pmu_mul_div(v->enabled, 100, v->running);
			u64 pct10 = pmu_mul_div(v->running, 1000, v->enabled);
			kprintf("count: %s %lu (scaled x%lu.%02lu, running %lu.%lu%%)\n", name,
				pmu_scaled(v), x100 / 100, x100 % 100, pct10 / 10, pct10 % 10);
		}
	}
}

/* The soft PMU's ticks due on this CPU that gave no sample, written or
 * dropped (as its TICKS record says: prof_write_ticks). */
static u64 ticks_missed(u32 cpu)
{
	u64 taken = prof.cpus[cpu].samples + prof.cpus[cpu].samples_dropped;

	return prof.soft && prof.soft_started && prof.final_due > taken ?
	       prof.final_due - taken : 0;
}

/*
 * The end of a summary line: the samples lost, each kind named (a tick
 * that gave no sample; a sample dropped, ring full), then the other
 * records dropped, ring full (all the ring's LOST records count).
 */
static void print_losses(bool ticks, u64 missed, u64 sdropped, u64 rdropped)
{
	if (ticks)
		kprintf("%lu lost (%lu ticks without a sample, %lu dropped: ring full)",
			missed + sdropped, missed, sdropped);
	else
		kprintf("%lu lost (dropped: ring full)", sdropped);
	if (rdropped > sdropped)
		kprintf(", %lu other records dropped (ring full)", rdropped - sdropped);
	kprintf("\n");
}

/*
 * Count samples per function across the rings and print the hottest. It
 * reads without releasing (no bp_ring_read_end), so the stream to the host
 * still carries every record. Not NMI-safe.
 */
void profile_summary(void)
{
	static struct hot table[SUMMARY_SLOTS];
	static u8 buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));
	u64 total = 0, written = 0, dropped = 0, other = 0;

	if (prof.cfg.ncount && prof.ncpus)
		print_counts();
	trace_summary();			/* one line per traced CPU */
	if (!prof.cfg.nevents)
		return;
	memset(table, 0, sizeof(table));
	for (u32 cpu = 0; cpu < prof.ncpus; cpu++) {
		struct bp_ring_reader r;
		const struct bp_record_header *rec;

		written += prof.cpus[cpu].samples;
		dropped += prof.cpus[cpu].dropped;
		if (bp_ring_reader_init(&r, prof.cpus[cpu].mem,
					(1 + prof.cpus[cpu].mem_pages + prof.cpus[cpu].aux_pages) * PAGE_SIZE))
			continue;
		bp_ring_read_begin(&r);
		while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
			struct bp_sample s;
			u64 off;
			if (rec->type != BP_RECORD_SAMPLE ||
			    bp_sample_parse(prof.cfg.sample_type, rec, &s))
				continue;
			total++;
			u64 func = ksym_lookup(s.ip, &off, NULL) ? s.ip - off : s.ip;
			u32 h = (func >> 4) % SUMMARY_SLOTS, i;
			for (i = 0; i < SUMMARY_SLOTS; i++, h = (h + 1) % SUMMARY_SLOTS)
				if (!table[h].count || table[h].func == func)
					break;
			if (i == SUMMARY_SLOTS) {
				other++;
				continue;
			}
			table[h].func = func;
			table[h].count++;
		}
	}
	/* Written and dropped are the kernel's own totals; the table can only
	 * show what the stream has not taken off the rings yet. */
	u64 sdropped = 0, missed = 0, rdropped = dropped;
	bool ticks = prof.soft && prof.soft_started;
	for (u32 cpu = 0; cpu < prof.ncpus; cpu++) {
		sdropped += prof.cpus[cpu].samples_dropped;
		missed += ticks_missed(cpu);
	}
	kprintf("profile: %s, %lu samples on %u CPU%s, ", !prof.cfg.soft ? prof.cfg.attrs[0].name :
		prof.soft_lapic ? "cpu-clock (soft PMU: APIC timer interrupts, blind where "
		"interrupts are off)" : "cpu-clock (soft PMU: HPET NMIs)",
		written, prof.ncpus, prof.ncpus == 1 ? "" : "s");
	print_losses(ticks, missed, sdropped, rdropped);
	if (rdropped)
		kprintf("profile: records were dropped, ring full: raise ring_pages= or lower the "
			"rate\n");
	if (prof.soft && !prof.soft_started) {
		kprintf("profile: ticks due unknown: no HPET counter to count them by\n");
	} else if (prof.soft) {
		kprintf("profile: %lu ticks due%s (HPET counter): %lu sampled, %lu dropped "
			"(ring full), %lu without a sample%s\n", prof.final_due,
			prof.ncpus > 1 ? " on each CPU" : "", written, sdropped, missed,
			missed ? " (NMIs late and merged, or throttled: LOST_SAMPLES)" : "");
	}
	prof_took_summary();
	if (total < written)
		kprintf("  (%lu of them already went to the host: bareperf report has the profile)\n",
			written - total);
	for (int k = 0; k < SUMMARY_TOP && total; k++) {
		struct hot *best = NULL;
		for (u32 i = 0; i < SUMMARY_SLOTS; i++)
			if (table[i].count && (!best || table[i].count > best->count))
				best = &table[i];
		if (!best)
			break;
		const char *name = ksym_lookup(best->func, NULL, NULL);
		u64 pct10 = best->count * 1000 / total;
		kprintf("  %5lu.%lu%%  %8lu  %s\n", pct10 / 10, pct10 % 10, best->count,
			name ? name : "?");
		best->count = 0;
	}
	if (other)
		kprintf("  (%lu samples in functions beyond the summary's table)\n", other);
	for (u32 cpu = 0; prof.ncpus > 1 && cpu < prof.ncpus; cpu++) {	/* for the screen console */
		const struct cpu_prof *cp = &prof.cpus[cpu];
		kprintf("  cpu %u: %lu samples, ", cpu, cp->samples);
		print_losses(ticks, ticks_missed(cpu), cp->samples_dropped, cp->dropped);
	}
}

/*
 * tools/util/header.c — the run's metadata above report's, stat's and
 * script's output (tools/util/header.h).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "tools/util/escape.h"
#include "tools/util/header.h"

static void fmt_ns(uint64_t ns, char *buf, size_t n)
{
	if (ns >= 10000000000ull)
		snprintf(buf, n, "%.2f s", ns / 1e9);
	else if (ns >= 10000000)
		snprintf(buf, n, "%.2f ms", ns / 1e6);
	else if (ns >= 10000)
		snprintf(buf, n, "%.2f us", ns / 1e3);
	else
		snprintf(buf, n, "%" PRIu64 " ns", ns);
}

/* One CPU's share of a soft-PMU run: "196 samples (25.1%) + 584 lost ...". */
static void coverage_terms(FILE *f, const struct session_ticks *t)
{
	const struct bp_record_ticks *r = &t->rec;
	uint64_t missing = r->samples > t->received ? r->samples - t->received : 0;

	if (!r->period) {			/* ticks due unknown */
		fprintf(f, "%" PRIu64 " samples", t->received);
		if (r->dropped)
			fprintf(f, " + %" PRIu64 " dropped (ring full)", r->dropped);
		if (missing)
			fprintf(f, " + %" PRIu64 " written, not received", missing);
		return;
	}
	fprintf(f, "%" PRIu64 " samples (%.1f%%) + %" PRIu64 " lost", t->received,
		r->due ? 100.0 * t->received / r->due : 0.0, r->lost);
	if (r->throttled)
		fprintf(f, " (%" PRIu64 " of them throttled)", r->throttled);
	if (r->dropped)
		fprintf(f, " + %" PRIu64 " dropped (ring full)", r->dropped);
	if (missing)
		fprintf(f, " + %" PRIu64 " written, not received", missing);
	if (t->received > r->samples)
		fprintf(f, "; %" PRIu64 " more received than the kernel wrote",
			t->received - r->samples);
	if (r->samples + r->dropped + r->lost != r->due)
		fprintf(f, "; the kernel's own account does not add up (%" PRIu64 " written)",
			r->samples);
}

void header_print_coverage(FILE *f, const struct session *s, const char *pfx)
{
	for (size_t i = 0; i < s->nticks; i++) {
		const struct bp_record_ticks *r = &s->ticks[i].rec;
		char every[32], over[32], run[32] = "";
		unsigned ncpu = 0;
		bool first = true;

		for (size_t j = 0; j < s->nticks && first; j++)
			first = j >= i || s->ticks[j].rec.app_id != r->app_id;
		if (!first)
			continue;		/* printed with the run's first TICKS */
		for (size_t j = i; j < s->nticks; j++)
			ncpu += s->ticks[j].rec.app_id == r->app_id;
		fmt_ns(r->hpet_hz ? r->period * 1000000000ull / r->hpet_hz : 0, every, sizeof(every));
		/* A damaged TICKS can say more than 2^64 ns: the largest, not a wrapped cast. */
		double over_ns = r->hpet_hz ? (double)r->window * 1e9 / r->hpet_hz : 0;
		fmt_ns(over_ns < 0x1p64 ? (uint64_t)over_ns : UINT64_MAX, over, sizeof(over));
		if (s->nruns > 1)
			snprintf(run, sizeof(run), "run %u: ", r->app_id);
		if (!r->period)		/* the APIC timer's ticks: not counted */
			fprintf(f, "%scoverage: %sticks due unknown (no HPET: cpu-clock on %s APIC "
				"timer, blind while interrupts are off)%s", pfx, run,
				ncpu > 1 ? "each CPU's" : "the", ncpu > 1 ? "\n" : ": ");
		else {
			fprintf(f, "%scoverage: %s%" PRIu64 " ticks due", pfx, run, r->due);
			if (ncpu > 1)
				fprintf(f, " on each of %u CPUs", ncpu);
			fprintf(f, " (one every %s over %s, HPET counter)%s", every, over,
				ncpu > 1 ? "\n" : ": ");
		}
		for (size_t j = i; j < s->nticks; j++) {
			if (s->ticks[j].rec.app_id != r->app_id)
				continue;
			if (ncpu > 1)
				fprintf(f, "%s  cpu %u: ", pfx, s->ticks[j].rec.cpu);
			coverage_terms(f, &s->ticks[j]);
			fputc('\n', f);
		}
	}
}

static const char *vendor_name(uint32_t v)
{
	return v == BP_CPU_VENDOR_INTEL ? "Intel" : v == BP_CPU_VENDOR_AMD ? "AMD" : "unknown";
}

/* One line per program the kernel loaded: the object that names it, or none. */
static void print_programs(FILE *f, const struct symtab *t, const char *pfx)
{
	const struct symtab *p;
	char hex[2 * 64 + 1], e1[4 * 32 + 1], e2[4 * 256 + 1];

	for (size_t i = 0; (p = symtab_program_at(t, i)); i++) {
		const char *name;
		uint64_t start, end;
		size_t idlen;
		const uint8_t *id;
		symtab_program_range(p, &name, &start, &end);
		term_escape(e1, sizeof(e1), name);
		if (!symtab_is_program_object(p)) {
			fprintf(f, "%sprogram: %s at %#" PRIx64 "-%#" PRIx64 ": no object (its code "
				"shows as [%s]+0x...)\n", pfx, e1, start, end, e1);
			continue;
		}
		id = symtab_build_id(p, &idlen);
		fprintf(f, "%sprogram: %s at %#" PRIx64 "-%#" PRIx64 ": %s, build-id %s\n",
			pfx, e1, start, end, term_escape(e2, sizeof(e2), symtab_path(p)),
			id ? symtab_hex(id, idlen, hex, sizeof(hex)) : "(none)");
	}
}

void header_print(FILE *f, const struct session *s, const char *kernel,
			 const struct symtab *t, const char *pfx)
{
	const struct wire_capture_header *h = &s->capture;
	/* Text from the capture goes through term_escape(): a header field
	 * must not drive the terminal. */
	char buf[256], hex[2 * 64 + 1], e1[4 * sizeof(h->run_args) + 1], e2[4 * sizeof(h->link) + 1];
	const uint8_t *id;
	size_t idlen;
	uint32_t code;

	fprintf(f, "%scapture: %s (%s)\n", pfx, s->path, s->state);
	if (session_run_failed(s, &code, buf, sizeof(buf)))
		fprintf(f, "%sWARNING: the run failed: the kernel exited with code %u (%s)%s%s\n", pfx,
			code, session_exit_name(code), buf[0] ? ": " : "", buf);
	if (h->start_ns) {
		time_t t = (time_t)(h->start_ns / 1000000000u);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
		fprintf(f, "%srecorded: %s over %s%s%s%s\n", pfx, buf,
			h->link[0] ? term_escape(e2, sizeof(e2), h->link) : "?",
			h->run_args[0] ? ": \"" : "", term_escape(e1, sizeof(e1), h->run_args),
			h->run_args[0] ? "\"" : "");
	}
	if (session_build_id(s, &id, &idlen) && kernel && t) {
		size_t kl;
		const uint8_t *kid = symtab_build_id(t, &kl);
		bool match = kid && kl >= idlen && !memcmp(kid, id, idlen);
		if (match)
			fprintf(f, "%skernel: %s, build-id %s (matches)\n", pfx, kernel,
				symtab_hex(id, idlen, hex, sizeof(hex)));
		else	/* each build-id named with its owner */
			fprintf(f, "%skernel: %s, build-id %s; DOES NOT MATCH the capture's %s "
				"(--force; symbols may be wrong)\n", pfx, kernel,
				kid ? symtab_hex(kid, kl, e2, sizeof(e2)) : "(none)",
				symtab_hex(id, idlen, hex, sizeof(hex)));
	} else if (session_build_id(s, &id, &idlen))
		fprintf(f, "%skernel: build-id %s\n", pfx, symtab_hex(id, idlen, hex, sizeof(hex)));
	print_programs(f, t, pfx);
	if (s->have_cpu_info[0]) {
		const struct bp_record_cpu_info *c = &s->cpu_info[0];
		char brand[sizeof(c->brand) + 1];
		memcpy(brand, c->brand, sizeof(c->brand));
		brand[sizeof(c->brand)] = 0;
		fprintf(f, "%scpu: %s family %u model %u stepping %u \"%s\", %u CPU%s in the run\n",
			pfx, vendor_name(c->vendor), c->family, c->model, c->stepping,
			term_escape(e1, sizeof(e1), brand),
			s->ncpus, s->ncpus == 1 ? "" : "s");
	}
	if (s->have_cpu_info[0] || s->have_meta) {
		const struct bp_record_pmu_caps *p = &s->pmu_caps[0];
		if (s->meta.quiet_asked) {
			static const char *const q[] = { "turbo=off", "prefetch=off" };
			fprintf(f, "%smachine:", pfx);
			for (int i = 0; i < 2; i++)
				if (s->meta.quiet_asked & (1u << i))
					fprintf(f, " %s %s;", q[i], s->meta.quiet_done & (1u << i) ?
						"done" : s->meta.quiet_refused & (1u << i) ?
						"refused (see the boot log)" : "not done");
			fprintf(f, " idle CPUs in hlt\n");
		}
		if (s->meta.flags & BP_META_SOFT_LAPIC)
			fprintf(f, "%spmu: soft PMU (local APIC timer interrupts: cpu-clock; code that "
				"runs with interrupts off is not sampled); no hardware PMU used\n", pfx);
		else if (p->kind == BP_PMU_SOFT || (s->meta.flags & BP_META_SOFT_PMU))
			fprintf(f, "%spmu: soft PMU (HPET NMIs: cpu-clock); no hardware PMU used\n", pfx);
		else if (p->kind == BP_PMU_INTEL_ARCH || p->kind == BP_PMU_AMD)
			fprintf(f, "%spmu: %s v%u, %u GP counters x %u bits, %u fixed x %u bits\n", pfx,
				p->kind == BP_PMU_INTEL_ARCH ? "Intel arch perfmon" : "AMD",
				p->version, p->nr_gp, p->gp_width, p->nr_fixed, p->fixed_width);
		else
			fprintf(f, "%spmu: none found\n", pfx);
	}
	if (s->have_meta) {
		bool icount = (s->meta.flags & BP_META_ICOUNT) || strstr(h->link, "icount");
		fprintf(f, "%stsc: %.3f MHz%s%s\n", pfx, s->meta.tsc_hz / 1e6,
			s->meta.flags & BP_META_TSC_INVARIANT ? ", invariant" : "",
			icount ? "; QEMU -icount: one tick per instruction" : "");
	}
	for (size_t i = 0; i < s->nevents; i++) {
		const struct bp_record_event_desc *e = &s->events[i];
		bool ns = e->config == BP_CONFIG_SOFT_CPU_CLOCK || !strcmp(e->name, "cpu-clock");
		if (e->sample_period)
			fprintf(f, "%sevent: %s, config 0x%" PRIx64 ", sampled every %" PRIu64 "%s\n",
				pfx, term_escape(e1, sizeof(e1), e->name), e->config, e->sample_period,
				ns ? " ns" : "");
		else
			fprintf(f, "%sevent: %s, config 0x%" PRIx64 ", counted (bareperf stat)\n", pfx,
				term_escape(e1, sizeof(e1), e->name), e->config);
	}
	/* One line per run: every CPU writes APP_START/APP_STOP, only one ran
	 * the app (session_app_cpu()). */
	for (size_t i = 0; i < s->napps; i++) {
		const struct session_app *a = &s->apps[i];
		bool first = true;
		size_t ncpu = 0;
		for (size_t j = 0; j < i && first; j++)
			first = s->apps[j].app_id != a->app_id;
		if (!first)
			continue;
		int cpu = session_app_cpu(s, i);
		for (size_t j = i; j < s->napps; j++) {
			if (s->apps[j].app_id != a->app_id)
				continue;
			ncpu++;
			if (cpu >= 0 && s->apps[j].cpu == (uint32_t)cpu)
				a = &s->apps[j];
		}
		char where[96];
		if (cpu >= 0)
			snprintf(where, sizeof(where), " on cpu %d", cpu);
		else
			snprintf(where, sizeof(where), " (%zu CPUs; which ran it is not in the capture)",
				 ncpu);
		if (a->stopped) {
			fmt_ns(session_tsc_to_ns(s, a->stop_time) - session_tsc_to_ns(s, a->start_time),
			       buf, sizeof(buf));
			fprintf(f, "%sapp: %s (run %u)%s: %s, exit status %" PRId64 "\n", pfx,
				term_escape(e1, sizeof(e1), a->name),
				a->app_id, where, buf, a->status);
		} else {
			fprintf(f, "%sapp: %s (run %u)%s: no APP_STOP arrived\n", pfx,
				term_escape(e1, sizeof(e1), a->name),
				a->app_id, where);
		}
	}
	if (s->nsamples) {
		fmt_ns(session_tsc_to_ns(s, s->last_time) - session_tsc_to_ns(s, s->first_time),
		       buf, sizeof(buf));
		fprintf(f, "%ssamples: %zu over %s\n", pfx, s->nsamples, buf);
	}
	header_print_coverage(f, s, pfx);
}

/*
 * tools/util/session_info.c — what a loaded session says beyond its
 * records (tools/util/session.h): TSC to ns, the kernel's build-id, how
 * the run ended and on which CPU, and the losses, printed as every
 * command prints them. tools/util/session.c loads it.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/session.h"
#include "tools/util/util.h"

uint64_t session_tsc_to_ns(const struct session *s, uint64_t tsc)
{
	uint64_t d, shift, mult;

	if (!s->have_meta)
		return tsc;
	d = tsc > s->meta.start_tsc ? tsc - s->meta.start_tsc : 0;
	shift = s->meta.time_shift;
	mult = s->meta.time_mult;
	if (mult && shift < 64)
		return (d >> shift) * mult + (((d & ((1ull << shift) - 1)) * mult) >> shift);
	if (s->meta.tsc_hz)
		return (uint64_t)((unsigned __int128)d * 1000000000u / s->meta.tsc_hz);
	return d;
}

bool session_build_id(const struct session *s, const uint8_t **id, size_t *len)
{
	static const uint8_t zero[20];

	if (s->have_meta && memcmp(s->meta.build_id, zero, sizeof(zero))) {
		*id = s->meta.build_id;
		*len = sizeof(s->meta.build_id);
		return true;
	}
	if (s->capture.build_id_size) {
		*id = s->capture.build_id;
		*len = s->capture.build_id_size;
		return true;
	}
	*id = NULL;
	*len = 0;
	return false;
}

const char *session_exit_name(int64_t code)
{
	switch (code) {
	case 0: return "ok";
	case 1: return "failure reported";
	case 2: return "bad usage";
	case 3: return "panic";
	default: return "?";
	}
}

bool session_refused_no_pmu(const struct session *s)
{
	return !s->napps && s->dec.ends && (s->dec.end_flags & WIRE_END_HALT) &&
	       WIRE_END_REASON(s->dec.end_flags) == WIRE_END_REASON_NO_PMU;
}

bool session_run_failed(const struct session *s, uint32_t *code, char *reason, size_t n)
{
	static const char tag[] = "bareperf: ", halt[] = "bareperf: halted";
	const char *c = s->console, *best = NULL;
	size_t best_len = 0;

	if (n)
		reason[0] = 0;
	if (!s->dec.ends || !(s->dec.end_flags & WIRE_END_HALT) || !s->dec.end_status)
		return false;
	*code = s->dec.end_status;
	for (size_t i = 0; c && i < s->console_len;) {
		size_t len = strcspn(c + i, "\r\n");
		if (len >= sizeof(tag) - 1 && !memcmp(c + i, tag, sizeof(tag) - 1) &&
		    !(len >= sizeof(halt) - 1 && !memcmp(c + i, halt, sizeof(halt) - 1))) {
			best = c + i;
			best_len = len;
		}
		i += len + 1;
	}
	if (best && n) {
		size_t k = best_len < n - 1 ? best_len : n - 1;
		for (size_t i = 0; i < k; i++)
			reason[i] = (unsigned char)best[i] < 0x20 || best[i] == 0x7f ? '?' : best[i];
		reason[k] = 0;
	}
	return true;
}

int session_app_cpu(const struct session *s, size_t i)
{
	const struct session_app *a = &s->apps[i];
	size_t ncpu = 0;

	if (a->main_cpu && a->main_cpu <= SESSION_MAX_CPUS)
		return (int)a->main_cpu - 1;
	for (size_t j = 0; j < s->napps; j++)
		ncpu += s->apps[j].app_id == a->app_id;
	return ncpu == 1 ? (int)a->cpu : -1;
}

static const char *const channel_names[WIRE_NR_CHANNELS] = {
	"console", "records", "aux", "control",
};

/* What the soft PMU's TICKS records say beyond the loss counters. */
static int print_tick_losses(const struct session *s, FILE *out, const char *prefix)
{
	int lines = 0;

	for (size_t i = 0; i < s->napps; i++) {
		const struct session_app *a = &s->apps[i];
		if (!s->have_meta || !(s->meta.flags & BP_META_SOFT_PMU) || !a->stopped ||
		    session_ticks_of(s, a->app_id, a->cpu))
			continue;
		fprintf(out, "%sticks unaccounted on cpu %u (run %u): no TICKS record arrived, "
			"so the soft PMU's ticks due and lost there are unknown\n", prefix, a->cpu,
			a->app_id);
		lines++;
	}
	for (size_t i = 0; i < s->nticks; i++) {
		const struct session_ticks *t = &s->ticks[i];
		if (!t->rec.period) {
			fprintf(out, "%sticks due unknown on cpu %u (run %u): no HPET, cpu-clock ran "
				"on the APIC timer, which misses ticks while interrupts are off "
				"without counting them\n", prefix, t->rec.cpu, t->rec.app_id);
			lines++;
		}
		if (t->received >= t->rec.samples)
			continue;
		fprintf(out, "%ssamples missing: %" PRIu64 " of the %" PRIu64 " SAMPLE records "
			"cpu %u wrote (run %u) did not arrive\n", prefix,
			t->rec.samples - t->received, t->rec.samples, t->rec.cpu, t->rec.app_id);
		lines++;
	}
	return lines;
}

int session_print_losses(const struct session *s, FILE *out, const char *prefix)
{
	const struct session_loss *l = &s->loss;
	int lines = 0;

	for (unsigned c = 0; c < SESSION_MAX_CPUS; c++) {
		if (l->ring_lost[c]) {
			fprintf(out, "%sLOST: %" PRIu64 " records dropped on cpu %u: its ring was full "
				"(raise ring_pages= or lower the rate)\n", prefix, l->ring_lost[c], c);
			lines++;
		}
		if (l->lost_samples[c]) {
			fprintf(out, "%sLOST_SAMPLES: %" PRIu64 " samples not taken on cpu %u "
				"(ticks merged or dropped by the PMU)\n", prefix, l->lost_samples[c], c);
			lines++;
		}
	}
	if (l->nthrottle) {
		fprintf(out, "%sthrottled: %" PRIu32 " interval%s with sampling stopped "
			"(too many samples per tick)\n", prefix, l->nthrottle,
			l->nthrottle == 1 ? "" : "s");
		lines++;
	}
	lines += print_tick_losses(s, out, prefix);
	for (unsigned ch = 0; ch < WIRE_NR_CHANNELS; ch++)
		for (unsigned c = 0; c < SESSION_MAX_CPUS; c++)
			if (l->frames_lost[ch][c]) {
				fprintf(out, "%sframes lost in transit: %" PRIu64 " %s frame%s from cpu %u\n",
					prefix, l->frames_lost[ch][c], channel_names[ch],
					l->frames_lost[ch][c] == 1 ? "" : "s", c);
				lines++;
			}
	for (unsigned ch = 0; ch < WIRE_NR_CHANNELS; ch++)
		for (unsigned c = 0; c < SESSION_MAX_CPUS; c++)
			if (l->frames_before_first[ch][c]) {
				fprintf(out, "%snot in the capture: %" PRIu64 " %s frame%s of cpu %u before "
					"the first one received (recording joined a running stream, or "
					"they were lost)\n", prefix, l->frames_before_first[ch][c],
					channel_names[ch], l->frames_before_first[ch][c] == 1 ? "" : "s", c);
				lines++;
			}
	if (l->crc_errors || l->bad_frames) {
		fprintf(out, "%sdamaged frames: %" PRIu64 " CRC errors, %" PRIu64 " other bad frames "
			"(dropped whole)\n", prefix, l->crc_errors, l->bad_frames);
		lines++;
	}
	if (l->duplicates) {
		fprintf(out, "%sduplicate frames dropped: %" PRIu64 "\n", prefix, l->duplicates);
		lines++;
	}
	if (l->bad_samples) {
		fprintf(out, "%sunreadable samples: %" PRIu64 " (no EVENT_DESC before them, or "
			"malformed)\n", prefix, l->bad_samples);
		lines++;
	}
	if (l->repeat_mismatch) {
		fprintf(out, "%srepeated descriptors that differ from the first sending: %" PRIu64
			" (damage; the first kept)\n", prefix, l->repeat_mismatch);
		lines++;
	}
	if (l->aux_truncated) {
		fprintf(out, "%sAUX data truncated %" PRIu64 " time%s (AUX area full)\n", prefix,
			l->aux_truncated, l->aux_truncated == 1 ? "" : "s");
		lines++;
	}
	if (s->truncated) {
		const char *how = s->state;

		/* capture_describe's "truncated: N of M data bytes present" */
		if (!strncmp(how, "truncated: ", 11))
			how += 11;
		fprintf(out, "%scapture truncated: %s\n", prefix, how);
		lines++;
	}
	if (s->dec.foreign_frames) {
		fprintf(out, "%sframes of another boot refused: %" PRIu64 " (boot %08" PRIx32
			", not this capture's %08" PRIx32 "): spliced in from another capture, "
			"or the machine was reset while recording\n", prefix, s->dec.foreign_frames,
			s->dec.foreign_boot, s->dec.boot);
		lines++;
	}
	if (!s->complete) {
		char open_apps[96] = "";
		size_t k = 0;
		/* The runs whose end is among what is missing. */
		for (size_t i = 0; i < s->napps && k + 16 < sizeof(open_apps); i++)
			if (!s->apps[i].stopped)
				k += (size_t)snprintf(open_apps + k, sizeof(open_apps) - k, "%s%s",
						      k ? ", " : "; no APP_STOP from ",
						      s->apps[i].name);
		fprintf(out, "%sthe capture has no end: %s; whatever the kernel sent after its "
			"last %s is unknown (samples, losses, APP_STOP, counts%s)\n", prefix,
			s->dec.cut_bytes ? "it stops inside a frame" :
			s->dec.ends ? "frames arrived after the kernel's last END" :
			"the kernel's END never arrived (the recording stopped early, or the "
			"stream was cut)", s->dec.frames_ok ? "frame" : "byte", open_apps);
		lines++;
	}
	if (s->console_dropped) {
		fprintf(out, "%sconsole text not kept: %" PRIu64 " bytes past the first %u (no "
			"frame among them: noise?)\n", prefix, s->console_dropped,
			SESSION_CONSOLE_MAX);
		lines++;
	}
	return lines;
}

int session_warn(const struct session *s, const char *cmd)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "bareperf %s: warning: ", cmd);
	return session_print_losses(s, stderr, prefix);
}

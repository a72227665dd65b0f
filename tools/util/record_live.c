/*
 * tools/util/record_live.c — what `bareperf record` shows while it
 * receives and when it is done (tools/util/record_live.h).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <string.h>

#include "tools/util/record_live.h"
#include "tools/util/util.h"

#define MAX_CPUS	SESSION_MAX_CPUS

void live_clear_status(struct live *L)
{
	if (L->status_shown) {
		fputs("\r\033[K", stderr);
		L->status_shown = false;
	}
}

void live_flush_line(struct live *L)
{
	char *t;

	if (!L->linelen)
		return;
	if (!L->ours_started && !(L->linelen >= 8 && !memcmp(L->line, "bareperf", 8))) {
		if (!L->show_firmware) {
			size_t n = L->linelen + 1;
			if (L->fwlen + n <= sizeof(L->firmware)) {
				memcpy(L->firmware + L->fwlen, L->line, L->linelen);
				L->firmware[L->fwlen + L->linelen] = '\n';
				L->fwlen += n;
			} else {
				L->fw_dropped++;
			}
			L->linelen = 0;
			return;
		}
	} else {
		L->ours_started = true;
	}
	/* The kernel's warnings ("bareperf: warning: ...") are shown always. */
	if (L->show_console || (!L->quiet && L->linelen >= 19 &&
				!memcmp(L->line, "bareperf: warning: ", 19))) {
		live_clear_status(L);
		fwrite(L->line, 1, L->linelen, stderr);
		fputc('\n', stderr);
	}
	/* The last lines, for when the run fails and the console was not shown. */
	t = L->tail[L->ntail++ % TAIL_LINES];
	snprintf(t, sizeof(L->tail[0]), "%.*s", (int)L->linelen, L->line);
	L->linelen = 0;
}

/* The halt line ("bareperf: halted ..."), or a start of it that the exit
 * cut short: neither is the kernel's reason. */
static bool halt_line(const char *t)
{
	static const char halt[] = "bareperf: halted";
	size_t n = strlen(t);

	return n && !strncmp(t, halt, n < sizeof(halt) - 1 ? n : sizeof(halt) - 1);
}

/*
 * The kernel's reason, when the run failed and its console was not shown
 * (stderr is not a terminal): from its last "bareperf: ..." line (how it
 * reports a refusal, a bad command line, a panic) on, else the last lines.
 */
void live_last_words(const struct live *L)
{
	unsigned n = L->ntail < TAIL_LINES ? L->ntail : TAIL_LINES, from = n > 8 ? n - 8 : 0;

	for (unsigned i = n; i-- > 0;) {
		const char *t = L->tail[(L->ntail - n + i) % TAIL_LINES];
		if (!strncmp(t, "bareperf: ", 10) && !halt_line(t)) {
			from = i;
			break;
		}
	}
	if (from >= n)
		return;
	fprintf(stderr, "bareperf record: the kernel said:\n");
	for (unsigned i = from; i < n; i++) {
		const char *t = L->tail[(L->ntail - n + i) % TAIL_LINES];
		if (!halt_line(t))
			fprintf(stderr, "  | %s\n", t);
	}
}

/* Console text, shown a whole line at a time (the status line would
 * overwrite a partial one). CRs are dropped: the kernel ends lines CRLF.
 * Escape sequences (OVMF clears the screen and moves the cursor: ECMA-48
 * CSI sequences, ESC [ ... final byte 0x40-0x7e) and other control
 * characters never reach the user's terminal. */
void live_console_text(struct live *L, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = (char)p[i];
		if (L->esc == 1) {
			L->esc = c == '[' ? 2 : 0;
			continue;
		}
		if (L->esc == 2) {
			if (p[i] >= 0x40 && p[i] <= 0x7e)
				L->esc = 0;
			continue;
		}
		if (c == '\033') {
			L->esc = 1;
			continue;
		}
		if (c == '\r' || ((unsigned char)c < 0x20 && c != '\n' && c != '\t'))
			continue;
		if (c == '\n' || L->linelen == sizeof(L->line)) {
			live_flush_line(L);
			if (c == '\n')
				continue;
		}
		L->line[L->linelen++] = c;
	}
}

static uint64_t sum(const uint64_t *v)
{
	uint64_t s = 0;

	for (int i = 0; i < MAX_CPUS; i++)
		s += v[i];
	return s;
}

void live_draw_status(struct live *L, const struct wire_dec *d, bool force)
{
	const struct wire_dec_stats *st = wire_dec_stats(d);
	double t = now_s();

	if (!L->progress || (!force && t - L->last_draw < 0.1))
		return;
	/* Redraw on news, or every 2 s to show it is alive. */
	if (!force && L->status_shown && L->w->written == L->drawn_bytes && t - L->last_draw < 2)
		return;
	L->last_draw = t;
	L->drawn_bytes = L->w->written;
	fprintf(stderr, "\r\033[Krecord: %.1f KiB, %" PRIu64 " frames, %" PRIu64 " samples, %"
		PRIu64 " lost, %" PRIu64 " frames lost in transit", L->w->written / 1024.0,
		st->frames_ok, st->samples, sum(L->ring_lost) + sum(L->lost_samples),
		st->lost_frames - L->before_first_total);
	L->status_shown = true;
	fflush(stderr);
}

static void on_record(void *ctx, const struct wire_dec_frame *f, const struct bp_record_header *h)
{
	struct live *L = ctx;
	uint32_t cpu = f->cpu < MAX_CPUS ? f->cpu : MAX_CPUS - 1;

	if (h->type == BP_RECORD_RUN_META)
		L->meta_heard = true;
	if (f->flags & WIRE_F_REPEAT)
		return;		/* descriptors sent again: the run is not new */
	switch (h->type) {
	case BP_RECORD_SAMPLE:
		L->samples[cpu]++;
		break;
	case BP_RECORD_LOST:
		if (h->size >= sizeof(struct bp_record_lost))
			L->ring_lost[cpu] += ((const struct bp_record_lost *)h)->lost;
		break;
	case BP_RECORD_LOST_SAMPLES:
		if (h->size >= sizeof(struct bp_record_lost_samples))
			L->lost_samples[cpu] += ((const struct bp_record_lost_samples *)h)->lost;
		break;
	case BP_RECORD_THROTTLE:
		L->throttles++;
		break;
	case BP_RECORD_RUN_META:
		if (h->size >= sizeof(struct bp_record_run_meta)) {
			const struct bp_record_run_meta *m = (const void *)h;
			static const uint8_t zero[20];
			L->have_meta = true;
			L->nr_cpus = m->nr_cpus;
			/* A new run: its APP_STOPs are what we wait for. */
			memset(L->stopped, 0, sizeof(L->stopped));
			L->nstopped = 0;
			if (memcmp(m->build_id, zero, sizeof(zero)))
				capture_set_build_id(L->w, m->build_id, sizeof(m->build_id));
		}
		break;
	case BP_RECORD_APP_STOP:
		if (h->size >= sizeof(struct bp_record_app_stop)) {
			const struct bp_record_app_stop *a = (const void *)h;
			if (a->cpu < MAX_CPUS && !L->stopped[a->cpu]) {
				L->stopped[a->cpu] = true;
				L->nstopped++;
			}
			if (a->status)
				L->app_status = a->status;
		}
		break;
	default:
		break;
	}
}

static void on_data(void *ctx, const struct wire_dec_frame *f, const uint8_t *p, size_t n)
{
	struct live *L = ctx;

	if (f->channel == WIRE_CH_CONSOLE && L->console_from_stream) {
		/* A CONSOLE frame is our kernel's text, whatever its first line
		 * says: a run asked for over --tty in a boot that served others
		 * starts with "app: ...", never a "bareperf" line. */
		if (!L->linelen)
			L->ours_started = true;
		live_console_text(L, p, n);
	}
	/* The kernel's answer to START_RUN (OK "exit N" or ERROR "why"), its END. */
	if (f->channel == WIRE_CH_CONTROL && f->cpu != WIRE_CPU_HOST)
		ctl_reply_feed(&L->ctl, L->control, p, n);
}

/* Plain text outside the stream after it started: a halted machine's last line. */
static void on_text(void *ctx, uint64_t off, const uint8_t *p, size_t n)
{
	struct live *L = ctx;

	(void)off;
	if (L->console_from_stream && (L->seen_zero || !L->live_boot_text))
		live_console_text(L, p, n);
}

static void on_frame(void *ctx, const struct wire_dec_frame *f)
{
	struct live *L = ctx;

	L->frames_seen++;
	if (f->channel < WIRE_NR_CHANNELS && f->cpu < MAX_CPUS && !L->seen[f->channel][f->cpu]) {
		L->seen[f->channel][f->cpu] = true;
		L->before_first[f->channel][f->cpu] = f->lost_before;
		L->before_first_total += f->lost_before;
	}
}

/* Stream bytes as they arrive: into the capture first, then the live view. */
int live_stream_bytes(struct live *L, struct wire_dec *d, const uint8_t *p, size_t n,
			char *err, size_t errlen)
{
	if (capture_append(L->w, p, n, err, errlen))
		return -1;
	if (!L->seen_zero) {
		/* Boot text: shown as it comes, not when the first 0x00 ends it
		 * (the decoder passes it to on_text only then). Not on a line we
		 * may have joined mid-stream: there the first bytes can be a
		 * frame, which the decoder tells from text. */
		const uint8_t *z = memchr(p, 0, n);
		if (L->live_boot_text && L->console_from_stream)
			live_console_text(L, p, z ? (size_t)(z - p) : n);
		wire_dec_feed(d, p, n);
		L->seen_zero = z != NULL;
		return 0;
	}
	wire_dec_feed(d, p, n);
	return 0;
}

const struct wire_dec_ops live_dec_ops = { on_frame, on_record, on_data, NULL, on_text, NULL };

void live_summary(const struct live *L, const struct wire_dec *d, const char *out, bool tty,
		  const char *state, int code_kind, int code)
{
	struct wire_dec_stats stats = *wire_dec_stats(d);
	const struct wire_dec_stats *st = &stats;
	uint32_t ncpu = L->nr_cpus;

	stats.lost_frames -= L->before_first_total;

	for (uint32_t c = 0; c < MAX_CPUS; c++)
		if ((L->samples[c] || L->ring_lost[c] || L->lost_samples[c]) && c + 1 > ncpu)
			ncpu = c + 1;
	fprintf(stderr, "bareperf record: %s: %.1f KiB, %" PRIu64 " frames, %" PRIu64 " samples (%s)\n",
		out, L->w->written / 1024.0, st->frames_ok, st->samples, state);
	for (uint32_t c = 0; c < ncpu; c++)
		fprintf(stderr, "  cpu %u: %" PRIu64 " samples, LOST %" PRIu64 " (ring full), "
			"LOST_SAMPLES %" PRIu64 "%s\n", c, L->samples[c], L->ring_lost[c],
			L->lost_samples[c], L->have_meta && !L->stopped[c] ? ", no APP_STOP" : "");
	if (L->throttles)
		fprintf(stderr, "  throttled %" PRIu64 " time%s\n", L->throttles,
			L->throttles == 1 ? "" : "s");
	fprintf(stderr, "  link: %" PRIu64 " frames lost in transit, %" PRIu64 " CRC errors, %"
		PRIu64 " other damaged frames, %" PRIu64 " duplicates\n", st->lost_frames,
		st->crc_errors, st->cobs_errors + st->short_frames + st->bad_version +
		st->bad_channel + st->bad_payload, st->duplicates);
	if (st->foreign_frames)
		fprintf(stderr, "  %" PRIu64 " frames of another boot refused (boot %08" PRIx32
			", not this stream's %08" PRIx32 ")\n", st->foreign_frames, st->foreign_boot,
			st->boot);
	for (unsigned ch = 0; ch < WIRE_NR_CHANNELS; ch++)
		for (unsigned c = 0; c < MAX_CPUS; c++) {
			static const char *const names[] = { "console", "records", "aux", "control" };
			const struct wire_dec_stream *ws = wire_dec_stream(d, ch, c);
			uint64_t early = L->before_first[ch][c];
			if (ws && ws->lost > early)
				fprintf(stderr, "    %" PRIu64 " %s frames of cpu %u lost\n",
					ws->lost - early, names[ch], c);
			if (early)
				fprintf(stderr, "    %" PRIu64 " %s frames of cpu %u before the first one "
					"received (joined a running stream, or lost)\n", early, names[ch], c);
		}
	/* A kernel that failed says why (live_last_words()); one that did not
	 * and sent nothing was not streaming. */
	if (!st->frames_ok && !code)
		fprintf(stderr, "  no frame arrived: %s\n", tty ?
			"is the machine's bareperf.cfg set to stream=uart, and the line's speed right?" :
			"did the kernel start the stream (stream=uart/virtio)?");
	if (st->frames_ok && !wire_dec_complete(d))
		fprintf(stderr, "  the stream's END did not arrive: what the kernel sent after the "
			"last frame is unknown\n");
	if (code_kind == 1)
		fprintf(stderr, "  kernel exit code %d (%s)\n", code, session_exit_name(code));
	else if (code_kind == 2)
		fprintf(stderr, "  app exit status %d\n", code);
	else if (code_kind == 3)
		fprintf(stderr, "  kernel exit code %d (%s), from QEMU's exit status only: the kernel "
			"sent no END\n", code, session_exit_name(code));
}

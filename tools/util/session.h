/*
 * tools/util/session.h — a capture, decoded into what the analysis commands
 * read (report, stat, script, convert, flamegraph), and the symbol table
 * of the kernel.elf that ran.
 *
 * session_load() streams the capture through the wire decoder
 * (wire/decode.h, tools/util/capture.h) once and keeps:
 *   - the run metadata records (RUN_META, CPU_INFO, PMU_CAPS, EVENT_DESC),
 *   - app runs (APP_START/APP_STOP pairs),
 *   - every SAMPLE, decoded into struct bp_sample_rec (callchains in one
 *     shared array), in arrival order per CPU, then merged by time,
 *   - every record in order, for `script` (type, cpu, offset into a copy),
 *   - the loss accounting: ring LOST counts per CPU, LOST_SAMPLES,
 *     THROTTLE intervals, frames lost in transit per (channel, cpu) and
 *     the decoder's error counts, and whether the capture was truncated
 *     or interrupted,
 *   - the console text (CONSOLE frames and the plain text outside the
 *     stream: boot text, a halted machine's last line), up to
 *     SESSION_CONSOLE_MAX bytes,
 *   - whether the stream's end (the kernel's END) is in the capture,
 *   - the PROGRAM records: where the programs the kernel loaded went.
 * A session never hides a loss: every count above is available and the
 * commands print the nonzero ones.
 *
 * Errors: 0 or -1 with one line in err naming the file and the problem
 * (not a capture, newer version, truncated header, ...). A truncated
 * capture loads what it holds and sets `truncated`.
 */
#ifndef BAREPERF_TOOLS_SESSION_H
#define BAREPERF_TOOLS_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uapi/perf_ring.h"
#include "uapi/wire.h"
#include "wire/decode.h"
#include "tools/util/symbol.h"

#define SESSION_MAX_CPUS	256

struct bp_sample_rec {
	uint64_t time;			/* TSC */
	uint64_t ip;
	uint64_t period;
	uint64_t id;			/* event id (EVENT_DESC.id) */
	uint32_t cpu;
	uint32_t pid, tid;		/* pid = app run id (APP_START.app_id) */
	uint32_t nr_ips;		/* callchain length, 0 if none */
	uint64_t ips_off;		/* index of ips[0] in session.ips */
	uint16_t misc;
};

struct session_app {
	uint32_t app_id;
	uint32_t cpu;
	uint32_t main_cpu;		/* APP_START's: the app's CPU plus one, 0 not said */
	char     name[32];
	uint64_t start_time, stop_time;	/* TSC; stop 0 if no APP_STOP arrived */
	int64_t  status;
	bool     stopped;
};

struct session_throttle {
	uint32_t cpu;
	uint64_t start, end;		/* TSC; end 0 if never unthrottled */
};

struct session_loss {
	uint64_t ring_lost[SESSION_MAX_CPUS];	/* LOST records: ring overflow */
	uint64_t lost_samples[SESSION_MAX_CPUS];	/* LOST_SAMPLES: PMU/soft-PMU drops */
	uint64_t frames_lost[WIRE_NR_CHANNELS][SESSION_MAX_CPUS];	/* in transit */
	uint64_t frames_lost_total;
	uint64_t crc_errors, bad_frames, garbage_bytes, duplicates;
	uint32_t nthrottle;
	/* Appended (session.c): */
	uint64_t bad_samples;		/* SAMPLE records that could not be parsed:
					 * no EVENT_DESC before them, or malformed */
	uint64_t aux_truncated;		/* AUX records with BP_AUX_FLAG_TRUNCATED */
	/* Frames missing before the first one of a (channel, cpu) that arrived:
	 * the recorder joined a running stream (a serial line opened while the
	 * machine was already streaming), or the very first frames were lost.
	 * Counted here, not in frames_lost. (A control request's frames are
	 * numbered from 0 of their own: none are missing before them.) */
	uint64_t frames_before_first[WIRE_NR_CHANNELS][SESSION_MAX_CPUS];
	uint64_t frames_before_first_total;
	/* Repeated descriptors (uapi/wire.h §3) that differ from the ones of
	 * their run the session has: damage, not read. */
	uint64_t repeat_mismatch;
};

struct session_count {			/* one entry of a COUNTS record (perf_ring.h) */
	uint32_t app_id, cpu;		/* the run (APP_START.app_id) and CPU counted on */
	uint64_t id;			/* the event: EVENT_DESC id (sample_period 0) */
	uint64_t count, time_enabled, time_running;	/* TSC ticks; running < enabled:
							 * multiplexed; 0: never counted */
};

struct session_ticks {			/* a TICKS record (perf_ring.h): a soft-PMU run's account */
	struct bp_record_ticks rec;	/* as the kernel sent it */
	uint64_t received;		/* SAMPLEs of its CPU that arrived since that CPU's
					 * previous TICKS: compare with rec.samples */
};

struct session_program {		/* a PROGRAM record (perf_ring.h), once per placement */
	struct bp_record_program rec;	/* as the kernel sent it (name NUL-terminated) */
	struct bp_program_section *sec;	/* rec.nr sections that arrived */
	uint32_t nsec;
};

struct session_record {			/* for `script`: every record, in stream order */
	uint32_t cpu;
	uint32_t type;
	uint64_t off;			/* byte offset into session.rec_data */
};

struct session {
	char path[256];
	struct wire_capture_header capture;	/* as read (fields the reader knows) */
	bool truncated;			/* file shorter than its header says */
	bool interrupted;		/* WIRE_CAPF_INTERRUPTED, or not closed */

	bool have_meta;
	struct bp_record_run_meta meta;
	uint32_t ncpus;			/* CPUs that sent anything */
	struct bp_record_cpu_info cpu_info[SESSION_MAX_CPUS];
	struct bp_record_pmu_caps pmu_caps[SESSION_MAX_CPUS];
	bool have_cpu_info[SESSION_MAX_CPUS];

	struct bp_record_event_desc *events;
	size_t nevents;

	struct session_app *apps;
	size_t napps;

	struct bp_sample_rec *samples;	/* sorted by time (stable per CPU) */
	size_t nsamples;
	uint64_t *ips;			/* all callchains, back to back */
	size_t nips;

	struct session_throttle *throttle;
	size_t nthrottle;

	struct session_record *records;	/* every record, stream order */
	size_t nrecords;
	uint8_t *rec_data;		/* copies of the records */
	size_t rec_data_len;

	char *console;			/* NUL-terminated console text */
	size_t console_len;

	struct session_loss loss;
	uint64_t first_time, last_time;	/* TSC of the first and last sample */

	/* Appended (session.c): */
	char state[160];		/* capture_describe(): "complete: 1234 bytes", ... */
	uint64_t data_bytes;		/* stream bytes read from the capture */
	struct wire_dec_stats dec;	/* the decoder's counts for the whole stream */
	uint64_t aux_bytes;		/* AUX data received */
	uint32_t max_cpu;		/* highest CPU index that sent anything, + 1 */
	uint64_t nruns;			/* RUN_META records seen (meta holds the first) */
	uint64_t noise_bytes;		/* unframed bytes after the stream started */
	size_t samples_mapped;		/* samples is an mmap of this many bytes (0: malloc) */
	struct session_count *counts;	/* COUNTS entries, stream order */
	size_t ncounts;
	struct bp_record_bench *benches;	/* BENCH records, stream order (strings
						 * NUL-terminated), kept whatever the flags */
	size_t nbenches;
	struct session_ticks *ticks;	/* TICKS records, stream order, whatever the flags */
	size_t nticks;
	struct bp_record_bench_end *bench_ends;	/* BENCH_END records, stream order */
	size_t nbench_ends;
	/*
	 * The stream's end arrived (wire_dec_complete(): the kernel's END, and
	 * nothing cut after it). Without it, what the kernel sent after the
	 * last frame here is unknown: session_print_losses() says so.
	 */
	bool complete;
	uint64_t console_dropped;	/* console bytes past SESSION_CONSOLE_MAX, not kept */
	/* PROGRAM records, stream order, whatever the flags; a run of a program
	 * placed as an earlier one was adds none. */
	struct session_program *programs;
	size_t nprograms;
};

/* The console text kept at most (boot text, CONSOLE frames): a file of noise
 * without one frame must not be held whole in memory. */
#define SESSION_CONSOLE_MAX	(4u << 20)

int session_load(struct session *s, const char *path, char *err, size_t errlen);
void session_free(struct session *s);

/*
 * session_load() with flags: what the caller does not need is not kept
 * (a 10-million-sample capture holds ~500 MB of record copies).
 * session_load() is session_load_flags(s, path, 0, ...).
 */
#define SESSION_NO_RECORDS	(1u << 0)	/* leave records/rec_data empty */
#define SESSION_NO_CONSOLE	(1u << 1)	/* leave console empty */
int session_load_flags(struct session *s, const char *path, unsigned flags,
		       char *err, size_t errlen);
/*
 * Streaming: each parsed SAMPLE goes to cb as it is decoded (stream
 * order, not time order) and is not kept, so memory does not grow with
 * the capture: s->samples and s->ips stay empty, s->nsamples,
 * first_time and last_time are still counted. ips is r->nr_ips
 * addresses, valid during the call; r->ips_off is not set. The metadata
 * records before a sample (EVENT_DESC, APP_START, ...) are in s when it
 * arrives. cb returns 0, or nonzero to stop (session_load_cb fails:
 * "out of memory").
 */
typedef int (*session_sample_fn)(void *ctx, const struct session *s,
				 const struct bp_sample_rec *r, const uint64_t *ips);
int session_load_cb(struct session *s, const char *path, unsigned flags,
		    session_sample_fn cb, void *ctx, char *err, size_t errlen);

/*
 * A tap on the stream session_load reads: each function (any may be NULL)
 * sees every frame, record and data payload (CONSOLE, CONTROL, AUX after
 * its aux_pos) as the loader reads it, after the session has taken what
 * it keeps, so s already counts it (a RUN_META is in s->nruns). The trace
 * decoder assembles the AUX data this way (tools/util/trace/aux.c).
 */
struct session_tap {
	void (*frame)(void *ctx, const struct session *s, const struct wire_dec_frame *f);
	void (*record)(void *ctx, const struct session *s, const struct wire_dec_frame *f,
		       const struct bp_record_header *h);
	void (*data)(void *ctx, const struct session *s, const struct wire_dec_frame *f,
		     const uint8_t *p, size_t n);
};
int session_load_tap(struct session *s, const char *path, unsigned flags,
		     const struct session_tap *tap, void *ctx, char *err, size_t errlen);

/* The event's name ("cpu-clock", "cycles", "event 3" if unknown); never NULL. */
const char *session_event_name(const struct session *s, uint64_t id, char *buf, size_t n);
/*
 * The kernel's build-id as the capture tells it: RUN_META's (the kernel's
 * own word) if it sent one, else the capture header's. false if unknown.
 */
bool session_build_id(const struct session *s, const uint8_t **id, size_t *len);
/*
 * Parse one SAMPLE record (of stream CPU cpu) as the session's events say;
 * r->ips_off is not set: *chain points at the record's r->nr_ips return
 * addresses (u64, unaligned-safe reads only). 0, or -1 if it cannot be.
 */
int session_parse_sample(const struct session *s, uint32_t cpu, const struct bp_record_header *h,
			 struct bp_sample_rec *r, const uint8_t **chain);
/* "ok", "failure reported", "bad usage", "panic" for a kernel exit code. */
const char *session_exit_name(int64_t code);
/*
 * Whether the run failed: the kernel's halting END carries a nonzero exit
 * code (*code). reason gets its last "bareperf: ..." console line (how it
 * says why: a refusal, a bad command line, a panic), control characters
 * shown as '?', or "" when the console holds none (not loaded:
 * SESSION_NO_CONSOLE).
 */
bool session_run_failed(const struct session *s, uint32_t *code, char *reason, size_t n);
/*
 * Whether the kernel refused the run before any app ran because an event
 * it asked for needs a hardware PMU the machine lacks: the halting END's
 * reason code (WIRE_END_REASON_NO_PMU), whatever the console says.
 */
bool session_refused_no_pmu(const struct session *s);
/*
 * The CPU that ran the main of apps[i]'s run, or -1 if the capture does
 * not say. Every CPU of a run writes APP_START/APP_STOP, each naming the
 * app's CPU (main_cpu); an older kernel's did not, and then only a run on
 * one CPU names it.
 */
int session_app_cpu(const struct session *s, size_t i);

/* The event's description, NULL if the capture never sent one. */
const struct bp_record_event_desc *session_event(const struct session *s, uint64_t id);
/* TSC to nanoseconds since the run's start, from RUN_META's time_mult/shift. */
uint64_t session_tsc_to_ns(const struct session *s, uint64_t tsc);
/* The TICKS of run app_id on cpu, NULL if none arrived. */
const struct session_ticks *session_ticks_of(const struct session *s, uint32_t app_id,
					     uint32_t cpu);
/* One line per nonzero loss, prefixed, for reports; returns lines printed.
 * Besides the loss counters: a soft-PMU run's CPU whose TICKS never came
 * (what it lost is unknown), and samples a TICKS says were written that
 * did not arrive. */
int session_print_losses(const struct session *s, FILE *out, const char *prefix);
/*
 * The same lines on stderr, each "bareperf CMD: warning: ...": every
 * command that reads a capture says what was lost or damaged, whatever
 * its output holds. Returns lines printed.
 */
int session_warn(const struct session *s, const char *cmd);

/* ---- the kernel.elf of a session and its programs' objects
 * (tools/util/session_symbols.c) ---------------------------------------- */

/*
 * The kernel.elf for a session: `explicit` if not NULL (its build-id must
 * match, unless force), else the first of "CAPTURE.kernel.elf" (the copy
 * `record --qemu` keeps of the kernel it booted: x.bpc -> x.kernel.elf),
 * "kernel.elf next to the capture", the default kernel (paths_kernel(),
 * tools/util/paths.h: build/kernel.elf in a build tree) whose build-id
 * matches the capture's. force: load even on a mismatch (a warning line
 * on stderr). Returns 0 or -1 with one line in err; *used names the file
 * loaded.
 */
void session_kernel_copy_path(const char *capture, char *buf, size_t n);
/* The kernel.elf for a capture when no session is loaded (trace decoding):
 * explicit if given, else the copy `record` keeps beside the capture if it
 * exists (in buf), else the default kernel (paths_kernel()). */
const char *session_kernel_for(const char *capture, const char *explicit, char *buf, size_t n);
int session_symtab(const struct session *s, const char *explicit, bool force,
		   struct symtab **out, char *used, size_t usedlen, char *err, size_t errlen);
/*
 * The object of a program of the session: "STEM.NAME.o" beside the capture
 * (capture STEM.bpc), else perf's build-id cache's copy, the first whose
 * build-id matches the record's, in buf; -1 if none does (err says what
 * was looked for). session_symtab gives each program's table to the
 * kernel's; a program whose object is missing is said once on stderr and
 * its addresses show as [NAME]+0x...
 */
int session_program_object(const struct session *s, const struct session_program *p,
			   char *buf, size_t n, char *err, size_t errlen);
/* Give t the tables of the session's programs it does not hold yet (those
 * whose PROGRAM came after session_symtab: a streamed capture). */
void session_symtab_programs(const struct session *s, struct symtab *t);

#endif

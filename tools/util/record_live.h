/*
 * tools/util/record_live.h — `bareperf record`'s view of the stream as it
 * arrives: the kernel's console (boot text, then CONSOLE frames) a whole
 * line at a time on stderr, the firmware's text held back, a one-line
 * progress display, the counts the decoder's callbacks keep (samples and
 * every loss per CPU, APP_STOPs, the control channel's reply and END),
 * and the closing summary with every loss, exactly counted. The
 * recording loop (tools/builtin-record.c) owns the struct live and feeds
 * it; nothing here touches the link.
 */
#ifndef BAREPERF_TOOLS_UTIL_RECORD_LIVE_H
#define BAREPERF_TOOLS_UTIL_RECORD_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/util/capture.h"
#include "tools/util/control.h"
#include "tools/util/session.h"
#include "wire/decode.h"

#define TAIL_LINES	40

/* What the live view and the summary count, from the decoder's callbacks. */
struct live {
	bool show_console, progress, status_shown, quiet;
	bool console_from_stream;	/* CONSOLE frames are shown (UART transport) */
	bool seen_zero;			/* the stream's first 0x00 went by */
	bool live_boot_text;		/* show the text before it as it comes (--qemu) */
	char line[1024];		/* console text of the current line */
	size_t linelen;
	char tail[TAIL_LINES][256];	/* the last console lines, a ring */
	unsigned ntail;			/* lines ever put in it */
	int esc;			/* in an escape sequence: 1 after ESC, 2 in a CSI */
	/* Firmware text, before the first line our code prints (the loader's
	 * "bareperf-boot: ..." or the kernel's "bareperf: ..."): held back,
	 * shown with -v -v, or at the end if our code never started. */
	bool ours_started, show_firmware;
	char firmware[8192];
	size_t fwlen, fw_dropped;
	uint64_t samples[SESSION_MAX_CPUS], ring_lost[SESSION_MAX_CPUS], lost_samples[SESSION_MAX_CPUS];
	uint64_t throttles;
	bool have_meta;
	bool meta_heard;		/* a RUN_META came, first or repeated */
	uint32_t nr_cpus;
	bool stopped[SESSION_MAX_CPUS];
	uint32_t nstopped;
	int64_t app_status;
	struct capture_writer *w;
	double last_draw;
	uint64_t drawn_bytes;
	/* The control channel (--tty with an app): the kernel's reply, and
	 * its END (after the reply, with control). */
	bool control;
	struct ctl_reply ctl;
	uint64_t frames_seen;
	/* Frames before the first of each (channel, cpu) that arrived (session.h). */
	bool seen[WIRE_NR_CHANNELS][SESSION_MAX_CPUS];
	uint64_t before_first[WIRE_NR_CHANNELS][SESSION_MAX_CPUS], before_first_total;
};

/* The decoder's callbacks: ctx is the struct live. */
extern const struct wire_dec_ops live_dec_ops;

/*
 * Stream bytes as they arrive: into the capture (L->w) first, then the
 * decoder d and the live view. 0, or -1 with err when the capture write
 * failed.
 */
int live_stream_bytes(struct live *L, struct wire_dec *d, const uint8_t *p, size_t n,
		      char *err, size_t errlen);

/* Console text that is not in the stream (virtio: the UART's plain console). */
void live_console_text(struct live *L, const uint8_t *p, size_t n);

/* The line being assembled, shown (or held back, or kept in the tail) now. */
void live_flush_line(struct live *L);

/* Erase the progress line, if it is shown. */
void live_clear_status(struct live *L);

/* Redraw the progress line: on news at most every 0.1 s, else every 2 s
 * (force: now). */
void live_draw_status(struct live *L, const struct wire_dec *d, bool force);

/*
 * The kernel's reason, when the run failed and its console was not shown
 * (stderr is not a terminal): from its last "bareperf: ..." line on, else
 * the last lines.
 */
void live_last_words(const struct live *L);

/*
 * The closing summary on stderr: the capture (out, its state), per CPU
 * its samples and losses, the link's losses, and the exit code: code_kind
 * 1 the kernel's (from END), 2 the app's, 3 the kernel's from QEMU's
 * status only, 0 none. tty: the hint for a stream that never came names
 * the machine's bareperf.cfg.
 */
void live_summary(const struct live *L, const struct wire_dec *d, const char *out, bool tty,
		  const char *state, int code_kind, int code);

#endif

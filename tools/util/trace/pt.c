/*
 * tools/util/trace/pt.c — Intel PT decoded with libipt (trace.h): libipt
 * walks the packets over the image's code, each instruction it reports
 * goes to the sink with capstone's view of it (insn.c).
 */
#include <inttypes.h>
#include <string.h>

#include <intel-pt.h>

#include "tools/util/trace/internal.h"

static int pt_read_mem(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip,
		       void *ctx)
{
	size_t avail;
	const uint8_t *p = trace_image_bytes(ctx, ip, &avail);

	(void)asid;
	if (!p)
		return -pte_nomap;
	if (size > avail)
		size = avail;
	memcpy(buf, p, size);
	return (int)size;
}

static void pt_run(struct trace_image *im, uint8_t *buf, size_t len, const struct trace_sink *sink,
		   void *ctx, struct trace_dec_stats *st, uint64_t *count, const char *why_before)
{
	struct pt_config cfg;
	struct pt_insn_decoder *dec;
	int status;
	bool first = true;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + len;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec) {
		st->errors++;
		return;
	}
	pt_image_set_callback(pt_insn_get_image(dec), pt_read_mem, im);
	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status < 0)
			break;
		st->syncs++;
		if (!first || why_before) {
			st->gaps++;
			st->gaps_unknown++;
			if (sink->gap)
				sink->gap(ctx, *count, TRACE_GAP_UNKNOWN,
					  first ? why_before : "PT decode error");
		}
		first = false;
		for (;;) {
			while (status & pts_event_pending) {
				struct pt_event ev;
				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				if (ev.type == ptev_overflow) {
					st->gaps++;
					st->gaps_unknown++;
					if (sink->gap)
						sink->gap(ctx, *count, TRACE_GAP_UNKNOWN,
							  "PT internal buffer overflow");
				}
				if (ev.has_tsc && sink->sync)
					sink->sync(ctx, *count, ev.tsc);
			}
			if (status < 0)
				break;
			struct pt_insn insn;
			memset(&insn, 0, sizeof(insn));
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status >= 0 && insn.iclass != ptic_error) {
				const struct trace_insn *ii = trace_insn_at(im, insn.ip);
				(*count)++;
				if (ii) {
					st->insns++;
					if (sink->insn)
						sink->insn(ctx, *count, ii);
				} else {
					/* libipt walked it, capstone cannot decode it: say so. */
					st->errors++;
					if (!st->first_error[0])
						snprintf(st->first_error, sizeof(st->first_error),
							 "capstone cannot decode the instruction at %#"
							 PRIx64 " libipt stepped over", insn.ip);
					st->gaps++;
					st->gap_insns++;
					if (sink->gap)
						sink->gap(ctx, *count - 1, 1, "undecodable instruction");
				}
			}
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
		st->errors++;
		if (!st->first_error[0])
			snprintf(st->first_error, sizeof(st->first_error), "libipt: %s",
				 pt_errstr(pt_errcode(status)));
	}
	pt_insn_free_decoder(dec);
}

void trace_decode_pt(struct trace_image *im, const struct trace_piece *pieces,
		     size_t npieces, const struct trace_sink *sink, void *ctx,
		     struct trace_dec_stats *st)
{
	uint64_t count = 0;
	size_t i = 0;

	memset(st, 0, sizeof(*st));
	while (i < npieces) {
		size_t len = 0, j = i;
		const char *why = i == 0 ? NULL : pieces[i].join == TJ_PAUSE ? "AUX area full" :
			"AUX data missing";
		do
			len += pieces[j++].len;
		while (j < npieces && pieces[j].join == TJ_CONT);
		uint8_t *buf = xrealloc(NULL, len), *p = buf;
		for (size_t k = i; k < j; k++) {
			memcpy(p, pieces[k].data, pieces[k].len);
			p += pieces[k].len;
		}
		st->bytes += len;
		pt_run(im, buf, len, sink, ctx, st, &count, why);
		free(buf);
		i = j;
	}
}


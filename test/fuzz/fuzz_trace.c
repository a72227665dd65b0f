/*
 * fuzz_trace — libFuzzer target for the instruction-trace decoders
 * (tools/util/trace/), ASan + UBSan. The first input byte picks:
 *
 *   0  single-step tracer packets (include/uapi/itrace.h), cut into AUX
 *      pieces: each piece is a join byte (TJ_*, low 2 bits), a 16-bit
 *      length and its bytes; decoded over the simulated program of
 *      test/host/trace_sim.c
 *   1  one packet at a time (trace_pkt_decode), and SYNC search
 *   2  Intel PT bytes through libipt, the same program as the image
 *   3  a capture's stream behind a flag byte (bit 0: COMPLETE; bit 3: keep
 *      the frames' CRCs, else test/fuzz/fuzz_frames.c repairs them):
 *      loaded by trace_capture_load (AUX frames and records joined into
 *      pieces per CPU), each CPU's pieces decoded over the same program
 *
 * Checked: nothing crashes or reads out of bounds; every instruction the
 * sink gets decodes in the image; step numbers only grow, by one, except
 * across a reported gap (or at a new traced call after a STOP END); the
 * statistics match what the sink saw. Seeds: test/fuzz/trace_seeds.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/fuzz/fuzz_frames.h"
#include "tools/util/capture.h"
#include "tools/util/trace/trace.h"
#include "test/host/trace_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct trace_image *im;

struct seen {
	uint64_t insns, gaps, last_step;
	bool free_next;
};

static void s_insn(void *ctx, uint64_t step, const struct trace_insn *ii)
{
	struct seen *s = ctx;
	size_t avail;

	if (!ii || !trace_image_bytes(im, ii->ip, &avail) || !ii->len)
		abort();
	/* In a run, steps count up by one. A new run starts after a gap or
	 * a SYNC (a new traced call, or decoding joined mid-stream). */
	if (!s->free_next && s->insns && step != s->last_step + 1)
		abort();
	s->free_next = false;
	s->last_step = step;
	s->insns++;
}

static void s_gap(void *ctx, uint64_t step, uint64_t n, const char *why)
{
	struct seen *s = ctx;

	if (!why || !*why)
		abort();
	(void)step, (void)n;
	s->gaps++;
	s->free_next = true;
}

static void s_sync(void *ctx, uint64_t steps, uint64_t tsc)
{
	struct seen *s = ctx;

	(void)steps, (void)tsc;
	s->free_next = true;
}

static const struct trace_sink sink = { s_insn, s_gap, s_sync };

/* Mode 3: a capture, through the loader the trace commands use. */
static void capture(const uint8_t *p, size_t n)
{
	struct wire_capture_header h;
	struct trace_capture tc;
	char path[64], err[256];
	uint8_t flag;
	int fd;

	if (!n)
		return;
	flag = p[0];
	p++, n--;
	if (!(flag & 8))
		p = fuzz_fixed_stream(p, &n);
	fuzz_capture_header(&h, flag & 1 ? WIRE_CAPF_COMPLETE : 0, n);
	fd = fuzz_capture_memfd(&h, p, n, path, sizeof(path));
	if (!trace_capture_load(&tc, path, err, sizeof(err))) {
		for (size_t c = 0; c < tc.ncpus; c++) {
			const struct trace_cpu_data *d = &tc.cpus[c];
			struct trace_dec_stats st;
			struct seen s = { 0 };
			for (size_t i = 0; i < d->npieces; i++)
				if (d->pieces[i].len && !d->pieces[i].data)
					abort();
			if (trace_detect_format(d->pieces, d->npieces) == TF_PT)
				trace_decode_pt(im, d->pieces, d->npieces, &sink, &s, &st);
			else
				trace_decode_sstep(im, d->pieces, d->npieces, &sink, &s, &st);
			if (st.insns != s.insns)
				abort();
		}
		trace_capture_free(&tc);
	} else if (!err[0]) {
		abort();	/* a refusal says why */
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_piece pieces[64];
	size_t np = 0, off = 1;
	struct trace_dec_stats st;
	struct seen s = { 0 };

	if (!im && !(im = sim_image()))
		abort();
	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0:
		while (off + 3 <= size && np < 64) {
			size_t len = data[off + 1] | (size_t)data[off + 2] << 8;
			int join = data[off] & 3;
			off += 3;
			if (len > size - off)
				len = size - off;
			pieces[np++] = (struct trace_piece){ data + off, len, off,
							     join > TJ_LOSS ? TJ_LOSS : join };
			off += len;
		}
		trace_decode_sstep(im, pieces, np, &sink, &s, &st);
		if (st.insns != s.insns || st.gaps != s.gaps)
			abort();
		break;
	case 1:
		for (off = 1; off < size;) {
			struct trace_pkt pk;
			long r = trace_pkt_decode(data + off, size - off, &pk);
			if (r > (long)(size - off))
				abort();
			if (r <= 0) {
				long at = trace_pkt_find_sync(data + off + 1, size - off - 1);
				if (at < 0)
					break;
				off += 1 + (size_t)at;
				continue;
			}
			if (pk.type == TP_TNT && (pk.tnt_n < 1 || pk.tnt_n > 6))
				abort();
			off += (size_t)r;
		}
		break;
	case 2:
		pieces[0] = (struct trace_piece){ data + 1, size - 1, 0, TJ_CONT };
		trace_decode_pt(im, pieces, 1, &sink, &s, &st);
		if (st.insns != s.insns)
			abort();
		break;
	case 3:
		capture(data + 1, size - 1);
		break;
	}
	return 0;
}

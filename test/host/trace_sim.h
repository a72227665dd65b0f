/*
 * trace_sim.h — a simulated single-step trace for host tests and the
 * fuzzer: a small x86-64 program (trace_sim.c, never executed) with loops,
 * calls, an indirect call through a table, an indirect jump, a binary
 * recursion, a REP string instruction, a short forward jcc and a return
 * that skips a frame, walked by a simulator whose branch outcomes follow
 * a fixed script. Every instruction it "executes" goes through the real
 * producer (pmu/trace/itrace.c) into a real ring with an AUX area
 * (ringbuf/); a drain like kernel/stream.c's turns records and AUX data
 * into wire frames (wire/record.c), and the result can be written as a
 * capture file (tools/util/capture.c). The ground truth is the list of the
 * traced instructions' addresses, index = step - 1.
 */
#ifndef BAREPERF_TEST_HOST_TRACE_SIM_H
#define BAREPERF_TEST_HOST_TRACE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmu/trace/itrace.h"
#include "tools/util/trace/trace.h"

struct sim_opts {
	uint32_t aux_pages;		/* AUX area (default 16) */
	uint32_t drain_every;		/* steps between drains; 0: only at the end */
	bool ranged;			/* trace only [sim_begin, sim_end): sim_out runs untraced */
	bool async;			/* one flow against its class (ASYNC) */
	int drop_aux_frame;		/* index of an AUX frame lost in transit; -1: none */
	uint32_t calls;			/* traced calls in a row (default 1) */
	uint32_t rounds;		/* loops A and C run this many times longer (default 1) */
};

struct sim_result {
	uint64_t *truth;		/* traced instructions in order */
	size_t ntruth;
	uint64_t *rep_collapsed;	/* the same, REP iterations counted once (PT's view) */
	size_t nrep;
	uint8_t *stream;		/* wire stream: 0x00, frames */
	size_t stream_len;
	struct itrace_stats st;		/* producer's counts, summed over calls */
	uint64_t steps;			/* producer's step count of the last call */
	uint64_t aux_frames;		/* AUX frames sent (dropped ones included) */
	uint64_t sim_insns;		/* instructions simulated (in range or not) */
};

/* The program's addresses. */
uint64_t sim_addr(const char *name);	/* sim_main, sim_begin, sim_end, sim_out, ... */
/* An image of the program (trace_image_mem), with its function symbols. */
struct trace_image *sim_image(void);

int sim_run(const struct sim_opts *o, struct sim_result *r);
void sim_free(struct sim_result *r);
/* Write r's stream as a capture file. */
int sim_write_capture(const struct sim_result *r, const char *path);

/*
 * The same executed path as Intel PT packets (libipt's encoder): PSB,
 * MODE.Exec, TIP.PGE, TNT, TIP, TIP.PGD. Returns the bytes written.
 */
size_t sim_pt_encode(const struct sim_opts *o, uint8_t *buf, size_t cap);

#endif

/*
 * ringbuf/bench/sample40.c — the measured call site: begin + copy + end
 * of a 40-byte SAMPLE record (IP, TID, TIME, CPU), as an NMI handler
 * writes it. Built with the kernel's code-generation flags.
 */
#include "ringbuf/bench/sample40.h"

int bench_sample40(struct bp_ring *rb, const struct sample40 *s)
{
	struct bp_ring_handle h;
	int err;

	err = bp_ring_output_begin(rb, &h, sizeof(*s));
	if (err)
		return err;
	bp_ring_output_copy(&h, s, sizeof(*s));
	bp_ring_output_end(&h);
	return 0;
}

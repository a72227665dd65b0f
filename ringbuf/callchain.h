/*
 * callchain.h — the frame-pointer walk of a SAMPLE's call chain, one rule
 * for the sampling NMI (profile/sample.c, inline) and for bp_callchain_fp
 * (ringbuf.c). Freestanding: it reads only the stack it is given.
 *
 * An x86-64 frame with frame pointers (push %rbp; mov %rsp, %rbp): [fp] =
 * the caller's fp, [fp + 8] = the return address. ips[0] = ip, then the
 * return address of each frame from fp up, while the frame is 8-aligned
 * and wholly inside [lo, hi), its return address is not 0 and the next
 * frame is higher up the stack; at most max (>= 1) entries.
 *
 * The tests are cheapened for the NMI that walks on every sample: fp is
 * checked against lo once, as each frame after the first is above the one
 * before, and "wholly inside" is one compare against hi - 16.
 *
 * stop: a return address after which the walk ends, with the frame it
 * would have gone on to in *next (a trap's entry frame: the caller walks
 * on from there itself); 0 for none, which costs the walk nothing. *next
 * is written only then.
 */
#ifndef BAREPERF_RINGBUF_CALLCHAIN_H
#define BAREPERF_RINGBUF_CALLCHAIN_H

#include <stdint.h>

#define BP_FRAME_BYTES	16

static inline __attribute__((always_inline)) uint32_t
bp_walk_frames(uint64_t ip, uint64_t fp, uint64_t lo, uint64_t hi, uint64_t *ips, uint32_t max,
	       uint64_t stop, uint64_t *next)
{
	uint64_t *p = ips, *end = ips + max;

	*p++ = ip;
	if (fp < lo || hi < BP_FRAME_BYTES)
		return 1;
	for (uint64_t top = hi - BP_FRAME_BYTES; p < end;) {
		const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;
		uint64_t ret;
		if (fp > top || (fp & 7) || !(ret = frame[1]))
			break;
		*p++ = ret;
		if (frame[0] <= fp)
			break;
		fp = frame[0];
		if (ret == stop) {
			*next = fp;
			break;
		}
	}
	return (uint32_t)(p - ips);
}

#endif

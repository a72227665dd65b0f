/*
 * test/fuzz/fuzz_frames.c — CRC repair for fuzzed streams (fuzz_frames.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ringbuf/wire.h"
#include "test/fuzz/fuzz_frames.h"

static uint8_t frame[WIRE_FRAME_MAX];

size_t fuzz_fix_frames(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t o = 0, at = 0;

	while (at < n) {
		const uint8_t *z = memchr(in + at, 0, n - at);
		size_t len = z ? (size_t)(z - (in + at)) : n - at;
		long got = len && len <= WIRE_COBS_MAX(WIRE_FRAME_MAX) ?
			   wire_cobs_decode(in + at, len, frame, sizeof(frame)) : -1;

		if (got >= (long)WIRE_FRAME_MIN && WIRE_VC_VERSION(frame[0]) == WIRE_VERSION) {
			uint32_t crc = wire_crc32c(0, frame, (size_t)got - WIRE_CRC_SIZE);
			memcpy(frame + got - WIRE_CRC_SIZE, &crc, sizeof(crc));
			o += wire_cobs_encode(frame, (size_t)got, out + o);
		} else {
			memcpy(out + o, in + at, len);
			o += len;
		}
		at += len;
		if (z) {
			out[o++] = 0;
			at++;
		}
	}
	return o;
}

const uint8_t *fuzz_fixed_stream(const uint8_t *in, size_t *n)
{
	static uint8_t *fixed;
	static size_t fixed_cap;

	if (fuzz_fix_frames_cap(*n) > fixed_cap) {
		free(fixed);
		fixed_cap = fuzz_fix_frames_cap(*n);
		if (!(fixed = malloc(fixed_cap)))
			abort();
	}
	*n = fuzz_fix_frames(in, *n, fixed);
	return fixed;
}

/*
 * test/fuzz/fuzz_frames.h — give a fuzzed stream's frames their CRCs back.
 *
 * A stream is COBS frames between 0x00 delimiters, each ending in a
 * CRC32C (include/uapi/wire.h). A mutation inside a frame nearly always
 * breaks its CRC, and the decoder then drops the frame before any parser
 * sees it: the fuzzer would only ever test the CRC check. fuzz_fix_frames
 * copies the stream, recomputing the CRC of every piece that COBS-decodes
 * to a frame of the current wire version, so a mutated payload reaches
 * the record, console, AUX and control parsers. Pieces that are not
 * frames (boot text, noise) are copied unchanged.
 *
 * out must hold fuzz_fix_frames_cap(n) bytes. Returns the bytes written.
 *
 * fuzz_fixed_stream does the same into a buffer of its own, grown as
 * needed (abort when memory runs out): it returns the repaired copy of
 * in[0..*n) and sets *n to its length. The copy is valid until the next
 * call; one buffer serves the process (libFuzzer runs one input at a time).
 */
#ifndef BAREPERF_TEST_FUZZ_FRAMES_H
#define BAREPERF_TEST_FUZZ_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "uapi/wire.h"

/* A re-encoded frame is at most its decoded length + 1 + len/254 + 1. */
#define fuzz_fix_frames_cap(n)	((n) + (n) / 128 + 16)

size_t fuzz_fix_frames(const uint8_t *in, size_t n, uint8_t *out);
const uint8_t *fuzz_fixed_stream(const uint8_t *in, size_t *n);

/* A valid capture header (uapi/wire.h §6: this build's versions and wire
 * version, link WIRE_LINK_UNKNOWN) with flags (WIRE_CAPF_*) and data_size. */
void fuzz_capture_header(struct wire_capture_header *h, uint32_t flags, uint64_t data_size);
/* A capture in a new memfd: h, then n bytes of stream; its /proc/self/fd
 * name in path[cap]. Returns the fd for the caller to close; aborts when
 * the memfd cannot be made or written. */
int fuzz_capture_memfd(const struct wire_capture_header *h, const uint8_t *stream, size_t n,
		       char *path, size_t cap);

#endif

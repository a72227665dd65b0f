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

/* A re-encoded frame is at most its decoded length + 1 + len/254 + 1. */
#define fuzz_fix_frames_cap(n)	((n) + (n) / 128 + 16)

size_t fuzz_fix_frames(const uint8_t *in, size_t n, uint8_t *out);
const uint8_t *fuzz_fixed_stream(const uint8_t *in, size_t *n);

#endif

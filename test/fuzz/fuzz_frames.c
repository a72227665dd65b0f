/*
 * test/fuzz/fuzz_frames.c — CRC repair for fuzzed streams, and the
 * capture around them (fuzz_frames.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wire/record.h"
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

void fuzz_capture_header(struct wire_capture_header *h, uint32_t flags, uint64_t data_size)
{
	static const uint8_t magic[] = WIRE_CAPTURE_MAGIC;

	memset(h, 0, sizeof(*h));
	memcpy(h->magic, magic, sizeof(h->magic));
	h->version = WIRE_CAPTURE_VERSION;
	h->compat_version = WIRE_CAPTURE_COMPAT_VERSION;
	h->header_size = sizeof(*h);
	h->wire_version = WIRE_VERSION;
	h->flags = flags;
	h->data_size = data_size;
}

int fuzz_capture_memfd(const struct wire_capture_header *h, const uint8_t *stream, size_t n,
		       char *path, size_t cap)
{
	int fd = memfd_create("capture", 0);

	if (fd < 0 || write(fd, h, sizeof(*h)) != (ssize_t)sizeof(*h) ||
	    (n && write(fd, stream, n) != (ssize_t)n))
		abort();
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

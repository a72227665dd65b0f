/*
 * unaligned.h — little-endian loads at any alignment, for the wire codec
 * and the host's readers of what it wrote (x86 is little-endian; a
 * constant-size __builtin_memcpy compiles to one move, and needs neither
 * the kernel's string.h nor libc's).
 */
#ifndef BAREPERF_KERNEL_LIB_UNALIGNED_H
#define BAREPERF_KERNEL_LIB_UNALIGNED_H

#include <stdint.h>

static inline uint16_t ld16(const uint8_t *p)
{
	uint16_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

#endif

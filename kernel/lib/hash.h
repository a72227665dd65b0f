/* hash.h — FNV-1a, 64-bit: a change to any word or byte fed in changes
 * the hash (each step is a bijection of the running value). For telling
 * whether memory changed, not for tables or security. */
#ifndef BAREPERF_KERNEL_LIB_HASH_H
#define BAREPERF_KERNEL_LIB_HASH_H

#include <stdint.h>

#define FNV1A_START	0xcbf29ce484222325ul

static inline uint64_t fnv1a(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ul;
}

#endif

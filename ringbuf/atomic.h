/*
 * ringbuf/atomic.h — the only atomics ringbuf/ uses.
 *
 * Two kinds:
 *
 *  - Shared state, read or written by another CPU (the control page heads
 *    and tails, pause and wakeup bits): C11 atomics, acquire and release
 *    where ordering matters, so the host build is checked by
 *    ThreadSanitizer. The pairs A/B/C/D are described in
 *    include/uapi/perf_ring.h.
 *
 *  - Local state, touched only by the ring's own CPU and the NMIs that
 *    interrupt it (the producer's head, nest count, cached tail): plain
 *    integers, as Linux's local_t. Reads and writes are single volatile
 *    accesses. Read-modify-writes need only be atomic against an
 *    interrupt on the same CPU: on x86-64 an instruction is never split by
 *    one (SDM Vol. 3A §6.6: interrupts are taken at instruction
 *    boundaries), so one unlocked instruction suffices; a lock prefix would
 *    drain the store buffer on every record for nothing. Elsewhere, or
 *    with BP_ATOMIC_GENERIC (the TSan build, so every RMW is
 *    instrumented), they fall back to C11 RMWs, which are stronger.
 *
 * Every local RMW and every C11 RMW helper here is also a compiler
 * barrier, so the code between them keeps its order against an NMI on the
 * same CPU.
 *
 * Freestanding: needs only <stdatomic.h>, <stdbool.h>, <stdint.h>.
 */
#ifndef BAREPERF_RINGBUF_ATOMIC_H
#define BAREPERF_RINGBUF_ATOMIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The control page is an ABI struct with plain uint64_t fields; view them
 * as atomics. Valid because gcc and clang give _Atomic uint64_t the same
 * size and alignment as uint64_t on the targets we build for.
 */
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t), "atomic u64 layout");
_Static_assert(_Alignof(_Atomic uint64_t) == _Alignof(uint64_t), "atomic u64 layout");
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "atomic u32 layout");
#define bp_atomic64(p)		((_Atomic uint64_t *)(p))
#define bp_atomic32(p)		((_Atomic uint32_t *)(p))

#define bp_load_acquire(p)	atomic_load_explicit((p), memory_order_acquire)
#define bp_store_release(p, v)	atomic_store_explicit((p), (v), memory_order_release)
#define bp_load_relaxed(p)	atomic_load_explicit((p), memory_order_relaxed)
#define bp_store_relaxed(p, v)	atomic_store_explicit((p), (v), memory_order_relaxed)

/*
 * Compiler barrier: orders this CPU's accesses against an NMI on the same
 * CPU (a signal handler on the same thread, on the host). No instruction.
 */
#define bp_barrier()		atomic_signal_fence(memory_order_seq_cst)

/* Local state: one load or one store, never split, never cached. */
#define bp_local_read(p)	(*(const volatile __typeof__(*(p)) *)(p))
#define bp_local_set(p, v)	(*(volatile __typeof__(*(p)) *)(p) = (v))

#if defined(__x86_64__) && !defined(BP_ATOMIC_GENERIC)

static inline bool bp_local_cmpxchg64(uint64_t *p, uint64_t old, uint64_t new)
{
	bool ok;

	__asm__ __volatile__("cmpxchgq %3, %1"
			     : "=@ccz"(ok), "+m"(*p), "+a"(old)
			     : "r"(new)
			     : "memory");
	return ok;
}

/* Add v to *p; returns the value before. */
static inline uint64_t bp_local_fetch_add64(uint64_t *p, uint64_t v)
{
	__asm__ __volatile__("xaddq %0, %1" : "+r"(v), "+m"(*p) : : "memory", "cc");
	return v;
}

static inline void bp_local_inc32(uint32_t *p)
{
	__asm__ __volatile__("incl %0" : "+m"(*p) : : "memory", "cc");
}

static inline void bp_local_dec32(uint32_t *p)
{
	__asm__ __volatile__("decl %0" : "+m"(*p) : : "memory", "cc");
}

#else

static inline bool bp_local_cmpxchg64(uint64_t *p, uint64_t old, uint64_t new)
{
	bool ok;

	bp_barrier();
	ok = atomic_compare_exchange_strong_explicit(bp_atomic64(p), &old, new,
						     memory_order_relaxed,
						     memory_order_relaxed);
	bp_barrier();
	return ok;
}

static inline uint64_t bp_local_fetch_add64(uint64_t *p, uint64_t v)
{
	bp_barrier();
	v = atomic_fetch_add_explicit(bp_atomic64(p), v, memory_order_relaxed);
	bp_barrier();
	return v;
}

static inline void bp_local_inc32(uint32_t *p)
{
	bp_barrier();
	atomic_fetch_add_explicit(bp_atomic32(p), 1, memory_order_relaxed);
	bp_barrier();
}

static inline void bp_local_dec32(uint32_t *p)
{
	bp_barrier();
	atomic_fetch_sub_explicit(bp_atomic32(p), 1, memory_order_relaxed);
	bp_barrier();
}

#endif

/* Off the fast path: C11 read-modify-writes, atomic across CPUs too. */
static inline uint32_t bp_local_xchg32(uint32_t *p, uint32_t v)
{
	bp_barrier();
	v = atomic_exchange_explicit(bp_atomic32(p), v, memory_order_relaxed);
	bp_barrier();
	return v;
}

static inline uint32_t bp_xchg32(_Atomic uint32_t *p, uint32_t v)
{
	bp_barrier();
	v = atomic_exchange_explicit(p, v, memory_order_relaxed);
	bp_barrier();
	return v;
}

static inline uint64_t bp_fetch_and64(_Atomic uint64_t *p, uint64_t v)
{
	bp_barrier();
	v = atomic_fetch_and_explicit(p, v, memory_order_relaxed);
	bp_barrier();
	return v;
}

static inline void bp_or64(_Atomic uint64_t *p, uint64_t v)
{
	bp_barrier();
	atomic_fetch_or_explicit(p, v, memory_order_relaxed);
	bp_barrier();
}

static inline void bp_add64(_Atomic uint64_t *p, uint64_t v)
{
	bp_barrier();
	atomic_fetch_add_explicit(p, v, memory_order_relaxed);
	bp_barrier();
}

static inline void bp_or32(_Atomic uint32_t *p, uint32_t v)
{
	bp_barrier();
	atomic_fetch_or_explicit(p, v, memory_order_relaxed);
	bp_barrier();
}

#define bp_likely(x)		__builtin_expect(!!(x), 1)
#define bp_unlikely(x)		__builtin_expect(!!(x), 0)

#endif

/*
 * bareperf.h — the SDK of programs the kernel loads (`bareperf record --
 * FILE.c`): a program is a relocatable x86-64 object built with the flags
 * `bareperf cflags` prints, with an `int main(int argc, char **argv)`. The
 * kernel links it against the functions declared here (and only these),
 * maps it (text read-only executable, data no-execute) and runs main in
 * ring 0 as an app: sampled, counted, its exit status replied.
 *
 * Freestanding: include nothing but <stdint.h>, <stddef.h>, <stdarg.h>.
 * No constructors (.init_array), no thread-local data; a fault in the
 * program ends its run (the reply names the function), and so does running
 * longer than the run's timeout (60 s unless the host asks otherwise).
 */
#ifndef BAREPERF_SDK_H
#define BAREPERF_SDK_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* The SDK this header describes. A kernel refuses a program built for a
 * newer one than it has. */
#define BAREPERF_SDK_VERSION	1

/* The version the program was built for, read by the loader from this
 * section (a u32 per translation unit; none of them may be newer). */
static const uint32_t bareperf_sdk_version
	__attribute__((used, section(".bareperf.sdk"), aligned(4))) = BAREPERF_SDK_VERSION;

/* Console text (the run's console frames): the kernel's printf, which has
 * no floating point conversions. */
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int snprintf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int vsnprintf(char *buf, size_t n, const char *fmt, va_list ap);
int puts(const char *s);
int putchar(int c);

/* Memory from the program's arena: at most BP_MALLOC_LIMIT bytes, or a
 * quarter of the machine's free memory if that is less. Out of memory,
 * malloc returns NULL and the end of the run says the arena ran out. Every
 * allocation is freed when the run ends; free gives back only the most
 * recent one before that. 16-byte aligned. */
#define BP_MALLOC_LIMIT		(64u << 20)
void *malloc(size_t n);
void *calloc(size_t nmemb, size_t size);
void free(void *p);

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);

/* Time: nanoseconds since boot, and the TSC itself. */
uint64_t bp_ns(void);
static inline uint64_t bp_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* CPUs: how many, which one this is (0 .. bp_cpus() - 1). */
unsigned bp_cpus(void);
unsigned bp_cpu(void);

/* Run fn(arg) on another CPU, and wait until it returned (at most
 * BP_WAIT_MS; -1 then). bp_run_on returns 0, or -1 if that CPU cannot take
 * it (no such CPU, still busy, or the CPU driving the run). A fault on
 * another CPU is not the program's to survive: it stops the machine. */
#define BP_WAIT_MS		10000u
int bp_run_on(unsigned cpu, void (*fn)(void *), void *arg);
int bp_wait(unsigned cpu);

/* Measure fn as the kernel's microbenchmarks are (nanoBench's method):
 * fn(arg, iters) runs iters copies of the work; it is timed with n and 2n
 * copies, and the difference per copy is reported as a BENCH row of table
 * "program" (`bareperf stat --bench`, and the console). name: < 32 bytes. */
void bp_bench(const char *name, void (*fn)(void *arg, uint64_t iters), void *arg);

#endif

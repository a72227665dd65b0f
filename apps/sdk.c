/*
 * sdk.c — the functions programs may call (include/bareperf.h,
 * apps/sdk.h): the kernel's printf and string functions, a per-run
 * malloc arena, time, CPUs, and the microbenchmark harness (apps/bench.h)
 * as bp_bench. Only what the header declares is exported.
 */
#include "kernel/kernel.h"
#include "apps/bench.h"
#include "apps/sdk.h"

extern const struct sdk_export __start_sdk_exports[], __stop_sdk_exports[];

const struct sdk_export *sdk_export_find(const char *name)
{
	for (const struct sdk_export *e = __start_sdk_exports; e < __stop_sdk_exports; e++)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

bool sdk_export_holds(u64 pc)
{
	u64 off;

	if (!ksym_lookup(pc, &off, NULL))
		return false;
	for (const struct sdk_export *e = __start_sdk_exports; e < __stop_sdk_exports; e++)
		if ((u64)e->addr == pc - off)
			return true;
	return false;
}

/* Console text. */

static int sdk_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}
SDK_EXPORT(printf, sdk_printf);

static int sdk_snprintf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int r = kvsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return r;
}
SDK_EXPORT(snprintf, sdk_snprintf);
SDK_EXPORT(vsnprintf, kvsnprintf);

static int sdk_puts(const char *s)
{
	return kprintf("%s\n", s);
}
SDK_EXPORT(puts, sdk_puts);

static int sdk_putchar(int c)
{
	char ch = (char)c;

	console_write(&ch, 1);
	return (unsigned char)c;
}
SDK_EXPORT(putchar, sdk_putchar);

SDK_EXPORT(memcpy, memcpy);
SDK_EXPORT(memmove, memmove);
SDK_EXPORT(memset, memset);
SDK_EXPORT(memcmp, memcmp);
SDK_EXPORT(strlen, strlen);
SDK_EXPORT(strcmp, strcmp);

/*
 * The arena: chunks of physical pages (identity-mapped, read-write,
 * no-execute), carved from the front; free gives back only the most recent
 * allocation, and everything goes back to pmm when the run ends. A lock,
 * since bp_run_on's functions on other CPUs may allocate too.
 */
#define ARENA_CHUNK_PAGES	256		/* 1 MiB */
#define ARENA_CHUNKS		128
#define ARENA_ALIGN		16

static struct {
	struct { u64 pa; size_t pages; } chunk[ARENA_CHUNKS];
	u32 nchunks;
	u64 cur, end;			/* free space in the last chunk */
	u64 last, last_from;		/* the most recent allocation, where cur was */
	size_t pages, limit;		/* held, at most */
	u64 refused, refused_bytes;	/* allocations that found no memory */
	const char *program;
	u32 driver;			/* the CPU driving the run */
	bool benched;
	int lock;
} arena;

static void arena_lock(void)
{
	while (__atomic_exchange_n(&arena.lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
}

static void arena_unlock(void)
{
	__atomic_store_n(&arena.lock, 0, __ATOMIC_RELEASE);
}

static bool arena_grow(size_t n)
{
	size_t pages = MAX((size_t)ARENA_CHUNK_PAGES, ALIGN_UP(n, PAGE_SIZE) / PAGE_SIZE);

	if (arena.nchunks == ARENA_CHUNKS || arena.pages + pages > arena.limit)
		return false;
	u64 pa = pmm_alloc(pages);
	if (!pa)
		return false;
	arena.chunk[arena.nchunks].pa = pa;
	arena.chunk[arena.nchunks++].pages = pages;
	arena.pages += pages;
	arena.cur = pa;
	arena.end = pa + pages * PAGE_SIZE;
	return true;
}

static void *sdk_malloc(size_t n)
{
	void *p = NULL;

	n = ALIGN_UP(MAX(n, (size_t)1), (size_t)ARENA_ALIGN);
	if (!n)
		return NULL;			/* wrapped: more than there is */
	arena_lock();
	if (arena.end - arena.cur >= n || arena_grow(n)) {
		arena.last_from = arena.cur;
		arena.last = arena.cur;
		arena.cur += n;
		p = (void *)arena.last;
	} else {
		arena.refused++;
		arena.refused_bytes += n;
	}
	arena_unlock();
	return p;
}
SDK_EXPORT(malloc, sdk_malloc);

static void *sdk_calloc(size_t nmemb, size_t size)
{
	if (size && nmemb > ~(size_t)0 / size)
		return NULL;
	void *p = sdk_malloc(nmemb * size);
	if (p)
		memset(p, 0, nmemb * size);
	return p;
}
SDK_EXPORT(calloc, sdk_calloc);

static void sdk_free(void *p)
{
	arena_lock();
	if (p && (u64)p == arena.last) {
		arena.cur = arena.last_from;
		arena.last = 0;
	}
	arena_unlock();
}
SDK_EXPORT(free, sdk_free);

void sdk_run_begin(const char *program)
{
	memset(&arena, 0, sizeof(arena));
	arena.limit = MIN((size_t)(SDK_MALLOC_LIMIT / PAGE_SIZE), pmm_free_pages() / 4);
	arena.program = program;
	arena.driver = this_cpu_id();
}

void sdk_run_end(void)
{
	if (arena.refused)
		kprintf("program '%s': malloc ran out of memory: %lu allocations (%lu bytes) found "
			"none, %lu MiB held, the arena's limit %lu MiB\n", arena.program,
			arena.refused, arena.refused_bytes, arena.pages * PAGE_SIZE >> 20,
			arena.limit * PAGE_SIZE >> 20);
	for (u32 i = 0; i < arena.nchunks; i++)
		pmm_free(arena.chunk[i].pa, arena.chunk[i].pages);
	memset(&arena, 0, sizeof(arena));
}

void sdk_main_end(void)
{
	if (arena.benched) {
		struct bench_opts o;
		bench_opts_default(&o);
		bench_end(&o);
		arena.benched = false;
	}
}

/* Time and CPUs. */

static u64 sdk_ns(void)
{
	return tsc_to_ns(rdtsc());
}
SDK_EXPORT(bp_ns, sdk_ns);

static unsigned sdk_cpus(void)
{
	return smp_cpus();
}
SDK_EXPORT(bp_cpus, sdk_cpus);

static unsigned sdk_cpu(void)
{
	return this_cpu_id();
}
SDK_EXPORT(bp_cpu, sdk_cpu);

/* The CPU driving the run waits for the program and takes no call. */
static int sdk_run_on(unsigned cpu, void (*fn)(void *), void *arg)
{
	if (cpu >= smp_cpus() || (cpu == arena.driver && cpu != this_cpu_id()))
		return -1;
	return smp_call(cpu, fn, arg, false) ? -1 : 0;
}
SDK_EXPORT(bp_run_on, sdk_run_on);

static int sdk_wait(unsigned cpu)
{
	u64 t0 = rdtsc_ordered();

	while (!smp_call_done(cpu)) {
		if (tsc_since_ns(t0, SDK_WAIT_MS * 1000000ul))
			return -1;
		cpu_relax();
	}
	return 0;
}
SDK_EXPORT(bp_wait, sdk_wait);

/* bp_bench: a C body, 100 and 200 copies a measurement. */
static void sdk_bench(const char *name, void (*fn)(void *arg, u64 iters), void *arg)
{
	static struct bench_result r[BENCH_MAX_RESULTS];
	struct bench_opts o;
	struct bench b = {
		.table = "program", .name = name, .work_unit = BP_BENCH_WORK_COPY,
		.loops = 1, .unroll = 100, .body = fn, .arg = arg,
	};

	bench_opts_default(&o);
	arena.benched = true;
	bench_run(&b, &o, 51, 5, r, BENCH_MAX_RESULTS);
}
SDK_EXPORT(bp_bench, sdk_bench);

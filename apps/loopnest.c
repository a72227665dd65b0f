/*
 * loopnest — the default app: three kernels of known, unequal weight, so a
 * profile of it has a clear hot spot (matmul), a warm one (sieve) and a
 * cold one (checksum). Each checks its own answer.
 */
#include "kernel/kernel.h"
#include "apps/app.h"

#define N	48
#define SIEVE_LIMIT	100000
#define PRIMES_BELOW_100000	9592	/* pi(10^5) */

static u32 a[N][N], b[N][N], c[N][N];
static u8 composite[SIEVE_LIMIT];

static void __attribute__((noinline)) matmul(void)
{
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			u32 s = 0;
			for (int k = 0; k < N; k++)
				s += a[i][k] * b[k][j];
			c[i][j] = s;
		}
}

static u32 __attribute__((noinline)) sieve(void)
{
	u32 count = 0;

	memset(composite, 0, sizeof(composite));
	for (u32 i = 2; i < SIEVE_LIMIT; i++) {
		if (composite[i])
			continue;
		count++;
		for (u32 j = i * 2; j < SIEVE_LIMIT; j += i)
			composite[j] = 1;
	}
	return count;
}

static u32 __attribute__((noinline)) checksum(const void *p, size_t len)
{
	const u8 *s = p;
	u32 h = 2166136261u;		/* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

static int loopnest_main(int argc, char **argv)
{
	int rounds = 20;
	u32 primes = 0, sum = 0;

	(void)argc, (void)argv;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			a[i][j] = i + j;
			b[i][j] = i == j;	/* identity: c must equal a */
		}
	u64 t0 = rdtsc_ordered();
	for (int r = 0; r < rounds; r++) {
		matmul();
		if (r % 4 == 0)
			primes = sieve();
		sum = checksum(c, sizeof(c));
	}
	u64 t1 = rdtsc_ordered();

	bool ok = primes == PRIMES_BELOW_100000 && !memcmp(a, c, sizeof(a)) &&
		  sum == checksum(a, sizeof(a));
	kprintf("loopnest: %d rounds of %dx%d matmul, sieve to %d (%u primes), "
		"checksum %08x: %s, %lu TSC ticks\n", rounds, N, N, SIEVE_LIMIT, primes,
		sum, ok ? "results correct" : "RESULTS WRONG", t1 - t0);
	return ok ? EXIT_OK : EXIT_FAIL;
}

APP(loopnest, "matrix multiply + prime sieve + checksum: a loop nest with a known hot spot",
    loopnest_main, 0);

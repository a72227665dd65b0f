/*
 * gen_capture — a synthetic capture of N samples, for benchmarking the
 * analysis commands (BENCH report_msamples_per_s) and for trying them on
 * large inputs:
 *
 *	gen_capture -n N -o FILE [-k build/kernel.elf] [-c CPUS] [-g]
 *
 * The stream is what the kernel would send for a soft-PMU run: RUN_META
 * (with kernel.elf's build-id, so `bareperf report -k` accepts it),
 * CPU_INFO/PMU_CAPS, one EVENT_DESC (cpu-clock, 250000 ns), APP_START,
 * N compact SAMPLEs framed by the kernel's encoder, APP_STOP. Sample IPs
 * fall in kernel.elf's functions with a skewed, deterministic spread
 * (half in one function, the rest over the next 255 by a 1/rank law), a
 * few bytes apart inside each, like a real hot loop.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/host/capgen.h"
#include "tools/util/session.h"

#define PERIOD_NS	250000u
#define TSC_HZ		2000000000u
#define NFUNCS		256

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *kernel = "build/kernel.elf";
	uint64_t n = 0, funcs[NFUNCS], sizes[NFUNCS], cum[NFUNCS], total = 0;
	unsigned cpus = 1, nf = 0;
	bool chains = false;
	struct symtab *t;
	struct capgen *g;
	char err[512];
	int c;

	while ((c = getopt(argc, argv, "n:o:k:c:g")) != -1) {
		switch (c) {
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 'o': out = optarg; break;
		case 'k': kernel = optarg; break;
		case 'c': cpus = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'g': chains = true; break;
		default: goto usage;
		}
	}
	if (!out || !n || !cpus || cpus > CAPGEN_MAX_CPUS) {
usage:
		fprintf(stderr, "usage: gen_capture -n SAMPLES -o FILE [-k kernel.elf] [-c CPUS] [-g]\n");
		return 2;
	}
	if (symtab_load(&t, kernel, NULL, 0, err, sizeof(err))) {
		fprintf(stderr, "gen_capture: %s\n", err);
		return 1;
	}
	/* The biggest functions, in address order, are the candidates. */
	for (size_t i = 0; i < symtab_count(t) && nf < NFUNCS; i++) {
		struct symbol s = symtab_at(t, i);
		if (s.size >= 64) {
			funcs[nf] = s.start;
			sizes[nf++] = s.size;
		}
	}
	if (!nf) {
		fprintf(stderr, "gen_capture: %s has no functions of 64 bytes or more\n", kernel);
		return 1;
	}
	/* Function 0 takes half; function k > 0 weighs 1/k of the rest. */
	for (unsigned i = 0; i < nf; i++) {
		total += i == 0 ? 0 : 1000000u / i;
		cum[i] = total;
	}
	size_t idlen;
	const uint8_t *id = symtab_build_id(t, &idlen);
	g = malloc(sizeof(*g));
	uint64_t st = CAPGEN_ST | (chains ? BP_SAMPLE_CALLCHAIN : 0);
	if (!g || capgen_open(g, out, st, "gen_capture: synthetic boot text\r\n", err, sizeof(err))) {
		fprintf(stderr, "gen_capture: %s\n", g ? err : "out of memory");
		return 1;
	}
	capgen_meta(g, cpus, TSC_HZ, 1000, id, idlen);
	capgen_event(g, 0, "cpu-clock", 0, PERIOD_NS);
	for (unsigned c2 = 0; c2 < cpus; c2++) {
		capgen_cpu(g, c2, BP_PMU_SOFT);
		capgen_app(g, c2, true, 1, "synthetic", 1000, 0);
	}
	uint64_t tick = (uint64_t)TSC_HZ / (1000000000u / PERIOD_NS);
	for (uint64_t i = 0; i < n; i++) {
		unsigned cpu = (unsigned)(i % cpus), f = 0;
		uint64_t r = next();
		if (r & 1) {
			uint64_t x = (r >> 1) % total;
			unsigned lo = 1, hi = nf - 1;
			while (lo < hi) {
				unsigned mid = (lo + hi) / 2;
				if (cum[mid] <= x)
					lo = mid + 1;
				else
					hi = mid;
			}
			f = nf > 1 ? lo : 0;
		}
		uint64_t ip = funcs[f] + ((r >> 20) % (sizes[f] < 64 ? sizes[f] : 64) & ~3ull);
		uint64_t ips[3] = { ip, funcs[(f + 1) % nf] + 5, funcs[(f + 2) % nf] + 5 };
		capgen_sample(g, cpu, 0, ip, 1000 + (i / cpus + 1) * tick, PERIOD_NS, 1,
			      chains ? 3 : 0, ips);
	}
	for (unsigned c2 = 0; c2 < cpus; c2++)
		capgen_app(g, c2, false, 1, "synthetic", 1000 + (n / cpus + 2) * tick, 0);
	if (capgen_close(g, 0, err, sizeof(err))) {
		fprintf(stderr, "gen_capture: %s\n", err);
		return 1;
	}
	free(g);
	symtab_free(t);
	return 0;
}

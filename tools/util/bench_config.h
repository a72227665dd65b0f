/*
 * tools/util/bench_config.h — nanoBench's event files for `bareperf
 * bench`: -config (counters read with RDPMC) and -msr_config (counters
 * read with RDMSR).
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_CONFIG_H
#define BAREPERF_TOOLS_UTIL_BENCH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The MSRs a -config line may set beside its PERFEVTSEL (SDM Vol. 4). */
#define BENCH_MSR_PEBS_LD_LAT		0x3f6	/* MSR_3F6H: the load-latency threshold */
#define BENCH_MSR_PEBS_FRONTEND		0x3f7	/* MSR_PF */
#define BENCH_MSR_OFFCORE_RSP0		0x1a6	/* MSR_RSP0 */
#define BENCH_MSR_OFFCORE_RSP1		0x1a7	/* MSR_RSP1 */

/* Intel's perfmon event tables number fixed counter N as counter 32 + N. */
#define BENCH_CTR_FIXED_BASE		32

#define BENCH_MSR_WRITES		16	/* per line, the most either format sets */

struct bench_msr_write {
	uint32_t msr;
	uint64_t value;
};

/*
 * One -config line: "EvtSel.UMASK(.CMSK=N)(.AnyT)(.EDG)(.INV)(.TakenAlone)
 * (.CTR=N)(.MSR_3F6H=V)(.MSR_PF=V)(.MSR_RSP0=V)(.MSR_RSP1=V) Name".
 */
struct bench_event {
	unsigned evtsel;		/* 8 bits (AMD: 12) */
	unsigned umask, cmask;
	bool any, edge, inv, taken_alone;
	int ctr;			/* CTR=: -1 none, else as written (see BENCH_CTR_FIXED_BASE) */
	int nmsr;
	struct bench_msr_write msr[4];	/* MSR_3F6H, MSR_PF, MSR_RSP0, MSR_RSP1, in line order */
	char spec[32];			/* "r<hex>" for the kernel (pmu/events.c): AnyT included */
	char *name;			/* the rest of the line, or the fields when there is none */
	int line;
};

/* One -msr_config line: "msr_X=V(.msr_Y=W)* msr_Z Name". */
struct bench_msr_event {
	int nwrite;
	struct bench_msr_write write[BENCH_MSR_WRITES];
	uint32_t rdmsr;
	char *name;
	int line;
};

/* A file read: its lines, and how many were refused. */
struct bench_config {
	struct bench_event *ev;
	int nev;
	struct bench_msr_event *msr;
	int nmsr;
	int nrefused;
};

/*
 * Parse one line of either format (the trailing newline may be there).
 * Returns 1 with *ev or *m filled (its name malloc'd), 0 for a blank or
 * '#' line, or -1 with the reason in why (no file or line named).
 */
int bench_config_parse_line(const char *line, struct bench_event *ev, char *why, size_t len);
int bench_msr_config_parse_line(const char *line, struct bench_msr_event *m, char *why,
				size_t len);

/*
 * Append the lines of path to *c, -config's format or (msr) -msr_config's.
 * A refused line is a warning on stderr naming path:line and why, and the
 * rest of the file is read. Returns 0, or -1 (one line on stderr) when the
 * file cannot be read or holds no line that parses.
 */
int bench_config_read(const char *path, bool msr, struct bench_config *c);
void bench_config_free(struct bench_config *c);

#endif

/*
 * bench_out.c — `bareperf bench`'s results in nanoBench's words
 * (tools/builtin-bench.c): the lines a script written for nanoBench
 * parses, and -verbose's readings.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "tools/util/bench_out.h"
#include "uapi/perf_ring.h"

const char *bench_nb_name(const char *event, unsigned flags)
{
	/* nanoBench's names for the fixed counters (its kernel module's output) */
	static const struct {
		const char *event, *name;
	} fixed[] = {
		{ "cycles", "Core cycles" },
		{ "instructions", "Instructions retired" },
		{ "ref-cycles", "Reference cycles" },
	};

	if (flags & BP_BENCH_F_TSC)
		return "TSC";
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!strcmp(event, fixed[i].event))
			return fixed[i].name;
	return event;
}

void bench_nb_line(FILE *f, const char *name, double value)
{
	fprintf(f, "%s: %.2f\n", name, value);
}

void bench_nb_range_line(FILE *f, const char *name, double value, double min, double max)
{
	fprintf(f, "%s: %.2f [%.2f;%.2f]\n", name, value, min, max);
}

const char bench_cpuid_note[] =
	"LFENCE does not serialize on that CPU: its counters were read serialized "
	"by CPUID, a larger and noisier overhead";

const char *bench_nb_note(unsigned flags)
{
	if (flags & BP_BENCH_F_DISTURBED)
		return "disturbed: most measurements took an NMI or SMI, the value is untrusted";
	if (flags & BP_BENCH_F_NOISE)
		return "below the noise floor of its measurements";
	return NULL;
}

int bench_parse_readings(const char *item, char *event, size_t len, unsigned *first,
			 uint64_t (*pairs)[2], int max)
{
	const char *ev = item + 8, *p;
	char *end;

	if (strncmp(item, "reading\t", 8) || !(p = strchr(ev, '\t')) || (size_t)(p - ev) >= len)
		return -1;
	memcpy(event, ev, (size_t)(p - ev));
	event[p - ev] = 0;
	unsigned long k = strtoul(p + 1, &end, 10);
	if (end == p + 1)
		return -1;
	*first = (unsigned)k;
	int n = 0;
	for (p = end; *p == '\t' && n < max; n++) {
		pairs[n][0] = strtoull(p + 1, &end, 10);
		if (end == p + 1 || *end != ',')
			return -1;
		p = end + 1;
		pairs[n][1] = strtoull(p, &end, 10);
		if (end == p)
			return -1;
		p = end;
	}
	return *p && n < max ? -1 : n;	/* past max: not read */
}

/*
 * bench_opts.c — the harness's options: bench_parse_args' "key=value"
 * words into struct bench_opts (apps/bench.h).
 */
#include "apps/bench.h"

void bench_opts_default(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cpu = this_cpu_id();
	o->pages = "both";
}

static int parse_size(const char *s, u64 *out)
{
	char num[24];
	size_t n = strlen(s);
	u64 mult = 1;

	if (!n || n >= sizeof(num))
		return -1;
	switch (s[n - 1]) {
	case 'k': case 'K': mult = 1ul << 10; n--; break;
	case 'm': case 'M': mult = 1ul << 20; n--; break;
	case 'g': case 'G': mult = 1ul << 30; n--; break;
	}
	memcpy(num, s, n);
	num[n] = 0;
	if (parse_u64(num, out) || *out > (~0ul / mult))
		return -1;
	*out *= mult;
	return 0;
}

static int set_events(struct bench_opts *o, const char *list)
{
	o->nevents = 0;
	while (*list) {
		const char *end = strchr(list, ',');
		size_t len = end ? (size_t)(end - list) : strlen(list);
		if (o->nevents == BENCH_MAX_EVENTS || !len || len >= BENCH_NAME_MAX) {
			kprintf("bench: events: at most %d events of fewer than %d characters\n",
				BENCH_MAX_EVENTS, BENCH_NAME_MAX);
			return -E_INVAL;
		}
		memcpy(o->events[o->nevents], list, len);
		o->events[o->nevents++][len] = 0;
		list += len + (end ? 1 : 0);
	}
	return 0;
}

int bench_parse_args(int argc, char **argv, struct bench_opts *o)
{
	bench_opts_default(o);
	for (int i = 1; i < argc; i++) {
		char *a = argv[i], *v = strchr(a, '=');
		u64 x;
		int bad = 0;

		if (!v) {
			kprintf("bench: '%s' is not key=value\n", a);
			return -E_INVAL;
		}
		size_t klen = v++ - a;
#define KEY(k) (klen == sizeof(k) - 1 && !strncmp(a, k, klen))
		if (KEY("cpu")) {
			if (!strcmp(v, "all"))
				o->cpu = -1, o->cpu_column = true;
			else if (parse_u64(v, &x) || x >= smp_cpus())
				bad = 1;
			else
				o->cpu = x;
		} else if (KEY("events")) {
			if (set_events(o, v))
				return -E_INVAL;
		} else if (KEY("reps")) {
			bad = parse_u64(v, &x) || x < 1 || x > BENCH_MAX_REPS;
			o->reps = x;
		} else if (KEY("warmup")) {
			bad = parse_u64(v, &x) || x > 1000;
			o->warmup = x;
		} else if (KEY("min")) {
			bad = parse_size(v, &o->min_bytes);
		} else if (KEY("max")) {
			bad = parse_size(v, &o->max_bytes);
		} else if (KEY("pattern")) {
			bad = parse_u64(v, &x) || x < 2 || x > (1u << 24) || (x & (x - 1));
			o->max_pattern = x;
		} else if (KEY("pages")) {
			bad = strcmp(v, "4k") && strcmp(v, "2m") && strcmp(v, "both");
			o->pages = v;
		} else if (KEY("quick")) {
			o->quick = strcmp(v, "0");
		} else if (KEY("quiet")) {
			o->quiet = strcmp(v, "0");
		} else if (KEY("records")) {
			o->no_records = !strcmp(v, "0");
		} else if (KEY("drain")) {
			o->no_drain = !strcmp(v, "0");
		} else if (KEY("agg")) {
			int g = bench_agg_parse(v);
			bad = g < 0;
			o->agg = g < 0 ? 0 : (u16)g;
		} else {
			kprintf("bench: unknown option '%s'; options: cpu=N|all events=LIST "
				"reps=N warmup=N min=SIZE max=SIZE pattern=N pages=4k|2m|both "
				"quick=0|1 quiet=0|1 records=0|1 drain=0|1 agg=median|min|avg\n", a);
			return -E_INVAL;
		}
#undef KEY
		if (bad) {
			kprintf("bench: bad value in '%s'%s\n", a,
				!strncmp(a, "cpu", 3) ? " (a CPU number or all)" :
				!strncmp(a, "reps", 4) ? " (1 to 1001)" :
				!strncmp(a, "agg", 3) ? " (median, min or avg: nanoBench's aggregates)" :
				!strncmp(a, "pattern", 7) ? " (a power of two, 2 to 2^24)" : "");
			return -E_INVAL;
		}
	}
	return 0;
}

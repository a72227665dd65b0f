/*
 * bench_events.c — the events of one `bareperf bench` (bench_events.h):
 * gathered from -e, -config and -msr_config, laid out in runs of the
 * snippet, and written as each run's RUN_CODE parameters.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/bench_events.h"
#include "uapi/wire.h"

_Static_assert(BENCH_CTR_FIXED_BASE == WIRE_CODE_CTR_FIXED, "CTR= is the wire's numbering");
_Static_assert(BENCH_MSR_WRITES <= WIRE_CODE_EVENT_MSRS, "an event's MSRs fit a request");

struct bench_run_event *bench_events_insert(struct bench_events *l, int at, const char *spec,
					    const char *label, const char *origin)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->ev = realloc(l->ev, l->cap * sizeof(*l->ev));
		if (!l->ev) {
			perror("bareperf bench");
			exit(1);
		}
	}
	memmove(&l->ev[at + 1], &l->ev[at], (l->n - at) * sizeof(*l->ev));
	l->n++;
	struct bench_run_event *e = &l->ev[at];
	memset(e, 0, sizeof(*e));
	e->ctr = -1;
	snprintf(e->spec, sizeof(e->spec), "%s", spec);
	snprintf(e->label, sizeof(e->label), "%.63s", label);
	snprintf(e->origin, sizeof(e->origin), "%s", origin);
	return e;
}

int bench_events_load(struct bench_events *l, const char *path, bool msr, int *nrefused)
{
	const char *opt = msr ? "-msr_config" : "-config";
	struct bench_config c = { 0 };
	char spec[32], origin[96];

	int rc = bench_config_read(path, msr, &c);

	*nrefused += c.nrefused;
	if (rc) {
		bench_config_free(&c);
		return -1;
	}
	for (int i = 0; i < c.nev; i++) {
		const struct bench_event *ev = &c.ev[i];
		snprintf(origin, sizeof(origin), "%s %.60s:%d", opt, path, ev->line);
		struct bench_run_event *e = bench_events_insert(l, l->n, ev->spec, ev->name, origin);
		e->line = ev->line;
		e->any = ev->any;
		e->ctr = ev->ctr;
		e->alone = ev->taken_alone;
		e->nmsr = ev->nmsr;
		memcpy(e->msr, ev->msr, ev->nmsr * sizeof(ev->msr[0]));
	}
	for (int i = 0; i < c.nmsr; i++) {
		const struct bench_msr_event *m = &c.msr[i];
		snprintf(origin, sizeof(origin), "%s %.60s:%d", opt, path, m->line);
		snprintf(spec, sizeof(spec), "msr:%#x", m->rdmsr);
		struct bench_run_event *e = bench_events_insert(l, l->n, spec, m->name, origin);
		e->line = m->line;
		e->rdmsr = true;
		e->nmsr = m->nwrite;
		memcpy(e->msr, m->write, m->nwrite * sizeof(m->write[0]));
	}
	bench_config_free(&c);
	return 0;
}

/* Can e join the run that holds ev[first, n)? */
static bool fits(const struct bench_events *l, int first, int n, const struct bench_run_event *e,
		 int per_run)
{
	if (n - first >= per_run || e->alone || (n > first && l->ev[first].alone))
		return false;
	for (int i = first; i < n; i++) {
		const struct bench_run_event *o = &l->ev[i];
		if (e->ctr >= 0 && o->ctr == e->ctr)
			return false;
		for (int a = 0; a < e->nmsr; a++)
			for (int b = 0; b < o->nmsr; b++)
				if (e->msr[a].msr == o->msr[b].msr && e->msr[a].value != o->msr[b].value)
					return false;
	}
	return true;
}

int bench_events_runs(struct bench_events *l, int per_run)
{
	int first = 0, run = 0;

	for (int i = 0; i < l->n; i++) {
		if (i > first && !fits(l, first, i, &l->ev[i], per_run)) {
			first = i;
			run++;
		}
		l->ev[i].run = run;
	}
	l->nruns = run + 1;
	return l->nruns;
}

int bench_events_first(const struct bench_events *l, int r)
{
	int i = 0;

	while (i < l->n && l->ev[i].run < r)
		i++;
	return i;
}

/* One {type, len, value} triple (uapi/wire.h), as control.c's ctl_put. */
static size_t put(uint8_t *buf, size_t at, size_t cap, uint16_t type, const void *v, size_t len)
{
	struct wire_ctl_msg t = { type, (uint16_t)len };

	if (at > cap || at + sizeof(t) + len > cap)
		return cap + 1;
	memcpy(buf + at, &t, sizeof(t));
	memcpy(buf + at + sizeof(t), v, len);
	return at + sizeof(t) + len;
}

size_t bench_events_put(const struct bench_events *l, int r, uint8_t *buf, size_t at, size_t cap)
{
	for (int i = bench_events_first(l, r); i < l->n && l->ev[i].run == r; i++) {
		const struct bench_run_event *e = &l->ev[i];
		at = put(buf, at, cap, WIRE_CODE_EVENT, e->spec, strlen(e->spec));
		if (e->ctr >= 0) {
			uint64_t ctr = (uint64_t)e->ctr;
			at = put(buf, at, cap, WIRE_CODE_EVENT_CTR, &ctr, sizeof(ctr));
		}
		for (int k = 0; k < e->nmsr; k++) {
			struct wire_code_msr m = { e->msr[k].msr, 0, e->msr[k].value };
			at = put(buf, at, cap, WIRE_CODE_EVENT_MSR, &m, sizeof(m));
		}
	}
	return at;
}

void bench_events_free(struct bench_events *l)
{
	free(l->ev);
	memset(l, 0, sizeof(*l));
}

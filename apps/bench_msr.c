/*
 * bench_msr.c — the harness's MSRs: an event's MSR writes (nanoBench's
 * -config MSR_* fields and -msr_config's msr_X=V), made around its
 * measurement and put back, and the "msr:0xZ" event, an MSR read around
 * each run like a counter (apps/bench_internal.h). Every access that may
 * fault goes through the _safe accessors: a CPU (or a hypervisor, QEMU's
 * TCG) without the MSR refuses that event alone, with the reason.
 */
#include "apps/bench_internal.h"
#include <uapi/wire.h>

int bench_msr_apply(const struct bench_event_opts *x, u64 *old, char *why, size_t len)
{
	for (u32 i = 0; x && i < x->nmsr; i++) {
		u32 msr = x->msr[i].msr;
		bool rd = rdmsr_safe(msr, &old[i]) == 0;
		if (rd && !wrmsr_safe(msr, x->msr[i].value))
			continue;
		ksnprintf(why, len, "%s of MSR %#x faults (#GP): this machine does not %s it",
			  rd ? "a write" : "a read (to put it back after the write)", msr,
			  rd ? "take" : "have");
		while (i--)
			(void)wrmsr_safe(x->msr[i].msr, old[i]);
		return -E_FAULT;
	}
	return 0;
}

void bench_msr_restore(const struct bench_event_opts *x, const u64 *old)
{
	for (u32 i = x ? x->nmsr : 0; i--; )
		(void)wrmsr_safe(x->msr[i].msr, old[i]);
}

int bench_msr_event(struct bench_event *e)
{
	u64 msr, v;

	if (strncmp(e->name, "msr:", 4) || parse_u64(e->name + 4, &msr) || msr > 0xffffffffull)
		return -E_INVAL;
	e->rdmsr = true;
	e->msr = (u32)msr;
	if (e->x && e->x->on_counter)
		strlcpy(e->refused, "an MSR is no PMU counter: it takes no counter",
			sizeof(e->refused));
	else if (rdmsr_safe(e->msr, &v))
		ksnprintf(e->refused, sizeof(e->refused), "a read of MSR %#lx faults (#GP): this "
			  "machine does not have it", msr);
	return 0;
}

_Static_assert(WIRE_CODE_CTR_FIXED == PMU_COUNTER_FIXED, "the wire numbers counters as pmu/");
_Static_assert(WIRE_CODE_EVENT_MSRS == BENCH_EVENT_MSRS, "an event's MSRs");

int bench_event_opt_take(struct bench_opts *o, u16 type, const void *v, size_t len)
{
	struct bench_event_opts *x = &o->event_opts[o->nevents - 1];
	struct wire_code_msr m;
	u64 ctr;

	if (!o->nevents)
		return -E_INVAL;
	if (type == WIRE_CODE_EVENT_CTR) {
		if (len != sizeof(ctr))
			return -E_INVAL;
		memcpy(&ctr, v, sizeof(ctr));
		if (x->on_counter || ctr >= WIRE_CODE_CTR_FIXED + 32)
			return -E_INVAL;
		x->on_counter = true;
		x->counter = (u32)ctr;
		return 0;
	}
	if (len != sizeof(m) || x->nmsr == BENCH_EVENT_MSRS)
		return -E_INVAL;
	memcpy(&m, v, sizeof(m));
	if (m.reserved)
		return -E_INVAL;
	x->msr[x->nmsr++] = (struct bench_msr_write){ m.msr, m.value };
	return 0;
}

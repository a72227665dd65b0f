/*
 * bench_lvt.c — the local APIC's LVT entries masked while the harness
 * measures (apps/bench.h says which and why), and put back after.
 */
#include "apps/bench_internal.h"
#include "kernel/platform/apic.h"

void bench_lvt_mask(struct lvt_state *s)
{
	u32 max_lvt = (apic_read(APIC_VERSION) >> 16) & 0xff;

	/* MaxLVT + 1 entries: 5 = timer, thermal, PC, LINT0, LINT1, error. */
	s->has_therm = max_lvt >= 5;
	/* A run on the hardware PMU owns LVT PC: a PMI lost while masked
	 * would leave its counter silent, so leave it (its NMIs are retried).
	 * Masking the timer pauses the run tick (multiplexing, re-tuning,
	 * the drain) for the length of one benchmark. */
	s->mask_pc = max_lvt >= 4 && !bench_run_uses_pmu();
	s->timer = apic_read(APIC_LVT_TIMER);
	apic_write(APIC_LVT_TIMER, s->timer | APIC_LVT_MASKED);
	if (s->has_therm) {
		s->therm = apic_read(APIC_LVT_THERM);
		apic_write(APIC_LVT_THERM, s->therm | APIC_LVT_MASKED);
	}
	if (s->mask_pc) {
		s->pc = apic_read(APIC_LVT_PC);
		apic_write(APIC_LVT_PC, s->pc | APIC_LVT_MASKED);
	}
	s->error = apic_read(APIC_LVT_ERROR);
	apic_write(APIC_LVT_ERROR, s->error | APIC_LVT_MASKED);
}

void bench_lvt_restore(const struct lvt_state *s)
{
	apic_write(APIC_LVT_ERROR, s->error);
	if (s->mask_pc)
		apic_write(APIC_LVT_PC, s->pc);
	if (s->has_therm)
		apic_write(APIC_LVT_THERM, s->therm);
	apic_write(APIC_LVT_TIMER, s->timer);
}

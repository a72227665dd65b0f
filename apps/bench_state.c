/*
 * bench_state.c — what a snippet may change (apps/bench_state.h): saved,
 * compared, put back and named.
 */
#include "apps/bench_state.h"
#include "kernel/kernel.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/lib/string.h"
#include "kernel/lib/printf.h"

#define MSR_EFER_NUM	0xc0000080u	/* IA32_EFER, SDM Vol. 4 table 2-2 */

static const struct { u32 reg; const char *name; } lvt_regs[] = {
	{ APIC_TPR, "APIC TPR" }, { APIC_SVR, "APIC SVR" },
	{ APIC_LVT_TIMER, "LVT timer" }, { APIC_LVT_THERM, "LVT thermal" },
	{ APIC_LVT_PC, "LVT PC" }, { APIC_LVT_LINT0, "LVT LINT0" },
	{ APIC_LVT_LINT1, "LVT LINT1" }, { APIC_LVT_ERROR, "LVT error" },
};
#define NLVT ARRAY_SIZE(lvt_regs)
_Static_assert(NLVT == BENCH_STATE_NLVT, "the saved APIC registers");

void bench_state_save(struct sys_state *s)
{
	memset(s, 0, sizeof(*s));
	s->cr0 = read_cr0();
	s->cr3 = read_cr3();
	s->cr4 = read_cr4();
	s->efer = rdmsr(MSR_EFER_NUM);
	asm volatile("sgdt %0; sidt %1" : "=m"(s->gdt), "=m"(s->idt));
	u32 max_lvt = (apic_read(APIC_VERSION) >> 16) & 0xff;
	for (u32 i = 0; i < NLVT; i++)
		if (lvt_regs[i].reg != APIC_LVT_THERM || max_lvt >= 5)
			s->lvt[i] = apic_read(lvt_regs[i].reg);
	s->nlvt = max_lvt >= 5 ? NLVT : NLVT - 1;
	pmu_save_state(pmu_cpu_caps(this_cpu_id()), &s->pmu);
}

/* Append "NAME (was A, now B)" to the text being built. */
static void said(char *buf, size_t n, const char *name, u64 was, u64 now)
{
	size_t have = strlen(buf);

	if (have < n)
		ksnprintf(buf + have, n - have, "%s%s (was %#lx, now %#lx)", have ? ", " : "", name,
			  was, now);
}

/* The text being built, for pmu_restore_state. */
struct said_to {
	char *buf;
	size_t n;
};

static void pmu_said(void *arg, const char *name, u64 was, u64 now)
{
	struct said_to *t = arg;

	said(t->buf, t->n, name, was, now);
}

void bench_state_check(const struct sys_state *s, char *buf, size_t n)
{
	struct sys_state now;
	u64 v;

	/* The control registers first: the rest is read through paging. */
	buf[0] = 0;
	if ((v = read_cr0()) != s->cr0)
		said(buf, n, "CR0", s->cr0, v), write_cr0(s->cr0);
	if ((v = read_cr4()) != s->cr4)
		said(buf, n, "CR4", s->cr4, v), write_cr4(s->cr4);
	if ((v = read_cr3()) != s->cr3)
		said(buf, n, "CR3", s->cr3, v), write_cr3(s->cr3);
	if ((v = rdmsr(MSR_EFER_NUM)) != s->efer)
		said(buf, n, "EFER", s->efer, v), wrmsr(MSR_EFER_NUM, s->efer);
	bench_state_save(&now);
	if (now.gdt.base != s->gdt.base)
		said(buf, n, "GDTR base", s->gdt.base, now.gdt.base);
	if (now.gdt.limit != s->gdt.limit)
		said(buf, n, "GDTR limit", s->gdt.limit, now.gdt.limit);
	if (memcmp(&now.gdt, &s->gdt, sizeof(s->gdt)))
		lgdt(&s->gdt);
	if (now.idt.base != s->idt.base)
		said(buf, n, "IDTR base", s->idt.base, now.idt.base);
	if (now.idt.limit != s->idt.limit)
		said(buf, n, "IDTR limit", s->idt.limit, now.idt.limit);
	if (memcmp(&now.idt, &s->idt, sizeof(s->idt)))
		lidt(&s->idt);
	for (u32 i = 0; i < NLVT; i++)
		if (now.lvt[i] != s->lvt[i])
			said(buf, n, lvt_regs[i].name, s->lvt[i], now.lvt[i]),
			apic_write(lvt_regs[i].reg, s->lvt[i]);
	struct said_to to = { buf, n };
	pmu_restore_state(pmu_cpu_caps(this_cpu_id()), &s->pmu, pmu_said, &to);
}

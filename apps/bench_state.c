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
#define APIC_BASE_EN	(1ul << 11)	/* IA32_APIC_BASE: xAPIC global enable */
#define APIC_BASE_EXTD	(1ul << 10)	/* IA32_APIC_BASE: x2APIC mode */
#define DR7_OFF		0x400ul		/* DR7 with no breakpoint (bit 10 reads 1) */
#define FCW_INIT	0x37f		/* x87 control word after FNINIT */
#define MXCSR_INIT	0x1f80		/* MXCSR at reset: every exception masked */

/*
 * MSRs a snippet may write that later snippets run under, each saved where
 * it reads without a #GP (rdmsr_safe): the memory types, speculation
 * control, the quiet machine's turbo and prefetcher settings
 * (kernel/platform/quiet.c), the TSC's offset, FS and the SYSCALL targets.
 */
static const struct { u32 msr; const char *name; } msrs[] = {
	{ 0x277, "IA32_PAT" }, { 0x2ff, "IA32_MTRR_DEF_TYPE" },
	{ 0x48, "IA32_SPEC_CTRL" }, { 0x1a0, "IA32_MISC_ENABLE" },
	{ 0x1a4, "MSR 0x1A4 (prefetcher control)" }, { 0x3b, "IA32_TSC_ADJUST" },
	{ 0xc0000100, "FS_BASE" }, { 0xc0000081, "STAR" }, { 0xc0000082, "LSTAR" },
	{ 0xc0000083, "CSTAR" }, { 0xc0000084, "SFMASK" },
};
_Static_assert(ARRAY_SIZE(msrs) == BENCH_STATE_NMSR, "the saved MSRs");

static const struct { u32 reg; const char *name; } lvt_regs[] = {
	{ APIC_TPR, "APIC TPR" }, { APIC_SVR, "APIC SVR" },
	{ APIC_LVT_TIMER, "LVT timer" }, { APIC_LVT_THERM, "LVT thermal" },
	{ APIC_LVT_PC, "LVT PC" }, { APIC_LVT_LINT0, "LVT LINT0" },
	{ APIC_LVT_LINT1, "LVT LINT1" }, { APIC_LVT_ERROR, "LVT error" },
};
#define NLVT ARRAY_SIZE(lvt_regs)
_Static_assert(NLVT == BENCH_STATE_NLVT, "the saved APIC registers");

static u64 read_dr(int i)
{
	u64 v = 0;

	switch (i) {
	case 0: asm volatile("mov %%dr0, %0" : "=r"(v)); break;
	case 1: asm volatile("mov %%dr1, %0" : "=r"(v)); break;
	case 2: asm volatile("mov %%dr2, %0" : "=r"(v)); break;
	case 3: asm volatile("mov %%dr3, %0" : "=r"(v)); break;
	case 7: asm volatile("mov %%dr7, %0" : "=r"(v)); break;
	}
	return v;
}

static void write_dr(int i, u64 v)
{
	switch (i) {
	case 0: asm volatile("mov %0, %%dr0" : : "r"(v)); break;
	case 1: asm volatile("mov %0, %%dr1" : : "r"(v)); break;
	case 2: asm volatile("mov %0, %%dr2" : : "r"(v)); break;
	case 3: asm volatile("mov %0, %%dr3" : : "r"(v)); break;
	case 7: asm volatile("mov %0, %%dr7" : : "r"(v)); break;
	}
}

static u64 xgetbv0(void)
{
	u32 lo, hi;

	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (u64)hi << 32 | lo;
}

static bool os_xsave(u64 cr4)
{
	return cpu_features.xsave && (cr4 & CR4_OSXSAVE);
}

void bench_state_save(struct sys_state *s)
{
	memset(s, 0, sizeof(*s));
	s->cr0 = read_cr0();
	s->cr3 = read_cr3();
	s->cr4 = read_cr4();
	s->efer = rdmsr(MSR_EFER_NUM);
	if (os_xsave(s->cr4))
		s->xcr0 = xgetbv0();
	for (int i = 0; i < 4; i++)
		s->dr[i] = read_dr(i);
	s->dr6 = read_dr6();
	s->dr7 = read_dr(7);
	s->has_apic_base = !rdmsr_safe(MSR_IA32_APIC_BASE, &s->apic_base);
	for (u32 i = 0; i < ARRAY_SIZE(msrs); i++)
		if (!rdmsr_safe(msrs[i].msr, &s->msr[i]))
			s->msr_have |= 1u << i;
	asm volatile("sgdt %0; sidt %1" : "=m"(s->gdt), "=m"(s->idt));
	s->tss = this_cpu()->tss;
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

/* ---- the extended state (x87, SSE, AVX) --------------------------------- */

/*
 * XSAVE areas in the standard form (SDM Vol. 1 13.4): the legacy region
 * (FCW at byte 0, MXCSR at 24), the header at 512 (XSTATE_BV), the AVX
 * component (the upper halves of YMM0-15) at 576. Without XSAVE, FXSAVE's
 * 512 bytes.
 */
#define XS_SIZE		4096
#define XS_FCW		0
#define XS_MXCSR	24
#define XS_BV		512
#define XS_YMM_HI	576

static u8 harness_xs[XS_SIZE] __attribute__((aligned(64)));	/* the harness's */
static u8 code_xs[XS_SIZE] __attribute__((aligned(64)));	/* what the code left */
static u8 clean_xs[XS_SIZE] __attribute__((aligned(64)));	/* the code's start */
static bool use_xsave;		/* XSAVE on and its area fits XS_SIZE */

static void xs_save(u8 *area)
{
	if (use_xsave)
		asm volatile("xsave64 %0" : "+m"(*(u8(*)[XS_SIZE])area) : "a"(-1), "d"(-1));
	else
		asm volatile("fxsave64 %0" : "+m"(*(u8(*)[512])area));
}

static void xs_load(const u8 *area)
{
	if (use_xsave)
		asm volatile("xrstor64 %0" : : "m"(*(const u8(*)[XS_SIZE])area), "a"(-1), "d"(-1));
	else
		asm volatile("fxrstor64 %0" : : "m"(*(const u8(*)[512])area));
}

/*
 * The code's start: every component in its init state (XSTATE_BV = 0, so
 * XRSTOR initializes them: zero registers, upper YMM halves clean, as after
 * VZEROUPPER) with the x87 control word and MXCSR at their defaults.
 */
void bench_state_enter(void)
{
	u32 a, b, c, d;

	use_xsave = false;
	if (os_xsave(read_cr4())) {
		cpuid_count(0xd, 0, &a, &b, &c, &d);
		use_xsave = b <= XS_SIZE;
	}
	xs_save(harness_xs);
	memset(clean_xs, 0, sizeof(clean_xs));
	*(u16 *)(clean_xs + XS_FCW) = FCW_INIT;
	*(u32 *)(clean_xs + XS_MXCSR) = MXCSR_INIT;
	xs_load(clean_xs);
}

/* Name what the code left in the extended state; load the harness's. */
static void state_leave_xs(char *buf, size_t n)
{
	memset(code_xs, 0, sizeof(code_xs));
	xs_save(code_xs);
	u64 bv = use_xsave ? *(u64 *)(code_xs + XS_BV) : XCR0_X87 | XCR0_SSE;
	u16 fcw = bv & XCR0_X87 ? *(u16 *)(code_xs + XS_FCW) : FCW_INIT;
	u32 mxcsr = *(u32 *)(code_xs + XS_MXCSR);

	if (fcw != FCW_INIT)
		said(buf, n, "the x87 control word", FCW_INIT, fcw);
	if (mxcsr != MXCSR_INIT)
		said(buf, n, "MXCSR", MXCSR_INIT, mxcsr);
	if (bv & XCR0_AVX) {
		u64 dirty = 0;
		for (int r = 0; r < 16; r++)
			for (int i = 0; i < 16; i++)
				if (code_xs[XS_YMM_HI + 16 * r + i])
					dirty |= 1ul << r;
		if (dirty)
			said(buf, n, "the upper halves of YMM registers (a bit each; VZEROUPPER "
			     "not run)", 0, dirty);
	}
	xs_load(harness_xs);
}

/* ---- putting it back ---------------------------------------------------- */

static bool debug_taken;	/* bench_state_debug_off ran since the save */
static u64 code_dr6, code_dr7;	/* what the code left there */

void bench_state_debug_off(void)
{
	if (debug_taken)
		return;
	code_dr7 = read_dr(7);
	write_dr(7, DR7_OFF);
	code_dr6 = read_dr6();
	write_dr6(DR6_CLEAR);
	debug_taken = true;
}

void bench_state_early(const struct sys_state *s, char *buf, size_t n)
{
	static const char *const dr_names[] = { "DR0", "DR1", "DR2", "DR3" };
	u64 v;

	buf[0] = 0;
	bench_state_debug_off();
	for (int i = 0; i < 4; i++)
		if ((v = read_dr(i)) != s->dr[i])
			said(buf, n, dr_names[i], s->dr[i], v), write_dr(i, s->dr[i]);
	if (code_dr6 != s->dr6)
		said(buf, n, "DR6", s->dr6, code_dr6);
	write_dr6(s->dr6);
	if (code_dr7 != s->dr7)
		said(buf, n, "DR7", s->dr7, code_dr7);
	write_dr(7, s->dr7);
	debug_taken = false;
	/* The control registers and EFER next: the rest is read through paging. */
	if ((v = read_cr0()) != s->cr0)
		said(buf, n, "CR0", s->cr0, v), write_cr0(s->cr0);
	if ((v = read_cr4()) != s->cr4)
		said(buf, n, "CR4", s->cr4, v), write_cr4(s->cr4);
	if ((v = read_cr3()) != s->cr3)
		said(buf, n, "CR3", s->cr3, v), write_cr3(s->cr3);
	if ((v = rdmsr(MSR_EFER_NUM)) != s->efer)
		said(buf, n, "EFER", s->efer, v), wrmsr(MSR_EFER_NUM, s->efer);
	if (os_xsave(s->cr4) && (v = xgetbv0()) != s->xcr0)
		said(buf, n, "XCR0", s->xcr0, v), xsetbv(0, s->xcr0);
	state_leave_xs(buf, n);
}

/* IA32_APIC_BASE: from x2APIC back to xAPIC, or from off back on, through
 * the disabled state (SDM Vol. 3A 11.12.5); false if it did not come back. */
static bool apic_base_back(const struct sys_state *s, char *buf, size_t n)
{
	u64 v;

	if (!s->has_apic_base || rdmsr_safe(MSR_IA32_APIC_BASE, &v) || v == s->apic_base)
		return true;
	said(buf, n, "IA32_APIC_BASE", s->apic_base, v);
	if ((v ^ s->apic_base) & (APIC_BASE_EN | APIC_BASE_EXTD))
		wrmsr_safe(MSR_IA32_APIC_BASE, v & ~(APIC_BASE_EN | APIC_BASE_EXTD));
	wrmsr_safe(MSR_IA32_APIC_BASE, s->apic_base);
	return !rdmsr_safe(MSR_IA32_APIC_BASE, &v) && v == s->apic_base;
}

static void tss_back(const struct sys_state *s, char *buf, size_t n)
{
	static const char *const rsp_names[] = { "TSS RSP0", "TSS RSP1", "TSS RSP2" };
	static const char *const ist_names[] = { "TSS IST1", "TSS IST2", "TSS IST3", "TSS IST4",
						 "TSS IST5", "TSS IST6", "TSS IST7" };
	struct tss *t = &this_cpu()->tss;

	for (int i = 0; i < 3; i++)
		if (t->rsp[i] != s->tss.rsp[i])
			said(buf, n, rsp_names[i], s->tss.rsp[i], t->rsp[i]), t->rsp[i] = s->tss.rsp[i];
	for (int i = 0; i < 7; i++)
		if (t->ist[i] != s->tss.ist[i])
			said(buf, n, ist_names[i], s->tss.ist[i], t->ist[i]), t->ist[i] = s->tss.ist[i];
}

void bench_state_check(const struct sys_state *s, char *buf, size_t n, char *lost, size_t nlost)
{
	struct sys_state now;
	u64 v;

	lost[0] = 0;
	if (!apic_base_back(s, buf, n) && !rdmsr_safe(MSR_IA32_APIC_BASE, &v))
		ksnprintf(lost, nlost, "IA32_APIC_BASE stays %#lx after %#lx was written back", v,
			  s->apic_base);
	for (u32 i = 0; i < ARRAY_SIZE(msrs); i++) {
		if (!(s->msr_have & 1u << i) || rdmsr_safe(msrs[i].msr, &v) || v == s->msr[i])
			continue;
		said(buf, n, msrs[i].name, s->msr[i], v);
		if ((wrmsr_safe(msrs[i].msr, s->msr[i]) || rdmsr_safe(msrs[i].msr, &v) ||
		     v != s->msr[i]) && !lost[0])
			ksnprintf(lost, nlost, "%s stays %#lx after %#lx was written back",
				  msrs[i].name, v, s->msr[i]);
	}
	tss_back(s, buf, n);
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

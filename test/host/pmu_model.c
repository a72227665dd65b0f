/*
 * pmu_model.c — the register-level PMU model (see pmu_model.h).
 *
 * Rules, with where they come from (each also checked against Linux KVM's
 * vPMU, arch/x86/kvm/pmu.c, vmx/pmu_intel.c, svm/pmu.c, and the scenarios
 * of kvm-unit-tests x86/pmu.c):
 *
 * Intel (SDM Vol. 3B ch. 21):
 *  - GP counter i: IA32_PMCi = 0xC1+i, IA32_PERFEVTSELi = 0x186+i; counts
 *    when PERFEVTSEL.EN, the OS/USR bit for the current CPL, and (v2+)
 *    IA32_PERF_GLOBAL_CTRL bit i are set (21.2.1.1, 21.2.2).
 *  - Writes to IA32_PMCi take EAX[31:0] sign-extended to the width (21.2.6);
 *    IA32_A_PMCi = 0x4C1+i takes the full width, exists only when
 *    IA32_PERF_CAPABILITIES[13] is set, and #GPs on bits above the width
 *    (KVM: intel_pmu_set_msr; kvm-unit-tests check_gp_counters_write_width).
 *  - PERFEVTSEL bits 63:32 are reserved (#GP); AnyThread (bit 21) only from
 *    v3 (KVM reserves 0xffffffff00200000 for its v2).
 *  - Fixed counter i = 0x309+i exists if (v5) CPUID.0AH:ECX[i] or EDX[4:0] > i
 *    (21.2.5); IA32_FIXED_CTR_CTRL 0x38D has 4 bits per counter: OS, USR,
 *    AnyThread (v3+), PMI; others reserved. Fixed counters count
 *    INST_RETIRED.ANY, CPU_CLK_UNHALTED.THREAD, .REF_TSC, TOPDOWN.SLOTS.
 *  - IA32_PERF_GLOBAL_STATUS 0x38E is read-only (a write #GPs); overflow of
 *    counter i sets bit i (fixed: 32+i); IA32_PERF_GLOBAL_OVF_CTRL 0x390 (v4:
 *    STATUS_RESET) clears bits, reserved bits #GP; v4 adds STATUS_SET 0x391.
 *  - A PMI is raised when an overflowing counter has INT (PMI) set; the local
 *    APIC delivers it through LVT PC unless masked, and sets the LVT mask on
 *    delivery (SDM Vol. 3A 11.5.1; KVM kvm_apic_local_deliver does so for
 *    Intel guests only).
 *  - DEBUGCTL.FREEZE_PERFMON_ON_PMI (bit 12): v2-v3 clear GLOBAL_CTRL when a
 *    PMI is raised; v4 sets GLOBAL_STATUS.CTR_FRZ (bit 59) and counting stops
 *    until software clears it through STATUS_RESET.
 *  - RDPMC: ECX[30] selects fixed counters, ECX[31] "fast" read returns the
 *    low 32 bits where supported (#GP otherwise); an index with no counter
 *    #GPs (SDM Vol. 2B RDPMC; KVM intel_rdpmc_ecx_to_pmc).
 *  - Reset: GLOBAL_CTRL has the GP enable bits set (SDM 21.2.2; KVM
 *    kvm_pmu_refresh).
 *  - DEBUGCTL.FREEZE_WHILE_SMM (bit 14) exists when PERF_CAPABILITIES[12]
 *    says so (SDM 17.4.1, 21.8): set, no counter counts while in SMM;
 *    clear, the cycles SMM takes are counted (at CPL 0); MSR_SMI_COUNT
 *    (0x34) counts SMIs, read-only (SDM Vol. 4).
 *  - Haswell and later (unmask_refires): an LVT PC unmask while the
 *    counters are globally disabled, in a PMI handler that acknowledged an
 *    overflow, raises another, spurious PMI; Linux unmasks after
 *    re-enabling there (late_ack).
 *  - Broadwell (bdw_errata, BDM11/BDM55): INST_RETIRED.ALL with a period
 *    below 100 or with bits 5:0 set loses its PMI (Linux bdw_limit_period).
 *  - A counter written with -1 (one event to go) loses its PMI ("certain
 *    CPUs don't like it if just 1 event is left": Linux's minimum period
 *    of 2 in x86_perf_event_set_period).
 * KVM (kvm): DEBUGCTL takes only LBR, BTF, FREEZE_LBRS_ON_PMI
 *  (vmx_get_supported_debugctl: bits 12 and 14 #GP); kvm_apic_local_deliver
 *  masks LVT PC on every PMI for every vendor (commit a16eb25b09c0, in
 *  stable kernels until the fix that limits it to Intel guests); RDPMC's
 *  fast-read bit #GPs; the host's perf may take a counter away for a while
 *  (host_steal_every): the guest's count falls short, never over. KVM
 *  counts the instructions it emulates in software (kvm_pmu_incr_counter)
 *  and raises their overflow's PMI itself; emulated_pmi_lost models a vPMU
 *  that does not.
 * AMD (APM Vol. 2 §13.2):
 *  - 48-bit counters, full-width writes; legacy PerfEvtSel0-3 0xC0010000,
 *    PerfCtr0-3 0xC0010004; with PerfCtrExtCore six CTL/CTR pairs at
 *    0xC0010200 (stride 2) of which the first four alias the legacy MSRs.
 *  - Writes to reserved PerfEvtSel bits and to read-only MSRs are ignored,
 *    not #GP (KVM: "AMD ignores writes to reserved bits and read-only PMU
 *    MSRs"); EventSelect[11:8] lives at bits 35:32; 40/41 are Guest/HostOnly.
 *  - PerfMonV2: PerfCntrGlobalStatus 0xC0000300 (read-only), GlobalCtl
 *    0xC0000301, StatusClr 0xC0000302, StatusSet 0xC0000303.
 *  - No LVT mask on PMI (Linux amd_pmu_v2_handle_irq).
 *  - Zen 1-5 (families 17h-1Ah): PMCx02B LsSmiRx counts SMIs received
 *    (the PPRs); there is no MSR_SMI_COUNT.
 *  - RDPMC index >= number of counters #GPs (KVM amd_check_rdpmc_early).
 *  - DE_CFG 0xC0011029 bit 1 makes LFENCE dispatch-serializing (Linux
 *    init_amd sets it; APM Vol. 3 LFENCE).
 * MSR_OFFCORE_RSP_0/1 (0x1A6/0x1A7), MSR_PEBS_LD_LAT (0x3F6) and
 *  MSR_PEBS_FRONTEND (0x3F7) exist per model (SDM Vol. 4's model tables:
 *  offcore and load latency from Nehalem, the front end from Skylake, on
 *  the big cores); elsewhere, and under KVM, which does not expose them,
 *  they #GP. Their values are kept as written.
 * Alder and Raptor Lake (extra_gp, extra_fixed): CPUID.0AH reports the
 *  E-cores' 6 GP and 3 fixed counters on every core and there is no leaf
 *  23H; the P-cores have IA32_PMC6-7 (and their PERFEVTSEL, A_PMC and
 *  GLOBAL_CTRL bits) and fixed counter 3 (Linux's hybrid model tables:
 *  P-cores 8 GP and 4 fixed). CPUID.1AH gives the core type.
 * QEMU TCG (measured under QEMU 10.0): CPUID.0AH zero, RDMSR of anything reads 0,
 * WRMSR is dropped, RDPMC raises #UD.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"
#include "pmu/hw.h"
#include "test/host/pmu_model.h"

struct pmu_model *pmu_model;

/* Register numbers, from the manuals (deliberately not pmu/regs.h). */
enum {
	I_OFFCORE0 = 0x1a6, I_OFFCORE1 = 0x1a7, I_LD_LAT = 0x3f6, I_FRONTEND = 0x3f7,
	I_PMC0 = 0xc1, I_EVTSEL0 = 0x186, I_FIXED0 = 0x309, I_PERF_CAPS = 0x345,
	I_FIXED_CTRL = 0x38d, I_STATUS = 0x38e, I_CTRL = 0x38f, I_OVF_CTRL = 0x390,
	I_STATUS_SET = 0x391, I_A_PMC0 = 0x4c1, I_DEBUGCTL = 0x1d9, I_SMI_COUNT = 0x34,
};
#define A_DE_CFG	0xc0011029u
#define A_K7_SEL0	0xc0010000u
#define A_K7_CTR0	0xc0010004u
#define A_EXT_CTL0	0xc0010200u
#define A_STATUS	0xc0000300u
#define A_CTL		0xc0000301u
#define A_CLR		0xc0000302u
#define A_SET		0xc0000303u

#define EV_USR		(1ull << 16)
#define EV_OS		(1ull << 17)
#define EV_EDGE		(1ull << 18)
#define EV_INT		(1ull << 20)
#define EV_ANY		(1ull << 21)
#define EV_EN		(1ull << 22)
#define EV_INV		(1ull << 23)
#define ST_CTR_FRZ	(1ull << 59)
#define ST_LBR_FRZ	(1ull << 58)
#define ST_OVF_BUF	(1ull << 62)
#define ST_COND_CHGD	(1ull << 63)
#define DBG_FREEZE_PMON	(1ull << 12)
#define DBG_FREEZE_SMM	(1ull << 14)
#define ST_UNC_OVF	(1ull << 61)
#define LVT_MASK	(1u << 16)
#define VEC_GP_		13
#define VEC_UD_		6

static const struct model_cfg presets[MODEL_FLAVOURS] = {
	[MODEL_TCG_INTEL] = { .name = "tcg-intel", .intel = true, .tcg = true, .family = 6, .model = 0x55,
			      .hypervisor = "TCGTCGTCGTCG" },
	[MODEL_TCG_AMD] = { .name = "tcg-amd", .amd = true, .tcg = true, .family = 0xf, .model = 0x6b,
			    .hypervisor = "TCGTCGTCGTCG" },
	[MODEL_INTEL_V1] = { .name = "intel-v1", .intel = true, .family = 6, .model = 0x0e,
			     .version = 1, .nr_gp = 2, .gp_width = 40, .ebx_len = 7 },
	[MODEL_INTEL_V2] = { .name = "intel-v2", .intel = true, .family = 6, .model = 0x17,
			     .version = 2, .nr_gp = 4, .gp_width = 48, .nr_fixed_edx = 3,
			     .fixed_width = 48, .ebx_len = 7, .pdcm = true },
	[MODEL_KVM_V2] = { .name = "kvm-v2", .intel = true, .family = 6, .model = 0x55,
			   .hypervisor = "KVMKVMKVM\0\0\0", .version = 2, .nr_gp = 4, .gp_width = 48,
			   .nr_fixed_edx = 3, .fixed_width = 48, .ebx_len = 7, .pdcm = true,
			   .fw_write = true, .kvm = true },
	[MODEL_INTEL_V4] = { .name = "intel-v4", .intel = true, .family = 6, .model = 0x5e,
			     .version = 4, .nr_gp = 4, .gp_width = 48, .nr_fixed_edx = 3,
			     .fixed_width = 48, .ebx_len = 7, .pdcm = true, .fw_write = true,
			     .fast_rdpmc = true, .smm_freeze = true, .unmask_refires = true,
			      .xmsr = MODEL_XMSR_OFFCORE | MODEL_XMSR_LD_LAT | MODEL_XMSR_FRONTEND },
	[MODEL_INTEL_V5] = { .name = "intel-v5", .intel = true, .family = 6, .model = 0x8f,
			     .version = 5, .nr_gp = 8, .gp_width = 48, .nr_fixed_edx = 2,
			     .fixed_ecx = 0xb, .fixed_width = 48, .ebx_len = 8, .pdcm = true,
			     .fw_write = true, .smm_freeze = true, .unmask_refires = true,
			      .xmsr = MODEL_XMSR_OFFCORE | MODEL_XMSR_LD_LAT | MODEL_XMSR_FRONTEND },
	[MODEL_INTEL_BDW] = { .name = "intel-bdw", .intel = true, .family = 6, .model = 0x3d,
			      .version = 3, .nr_gp = 4, .gp_width = 48, .nr_fixed_edx = 3,
			      .fixed_width = 48, .ebx_len = 7, .pdcm = true, .fw_write = true,
			      .smm_freeze = true, .unmask_refires = true, .bdw_errata = true,
			      .xmsr = MODEL_XMSR_OFFCORE | MODEL_XMSR_LD_LAT },
	[MODEL_INTEL_SNB] = { .name = "intel-snb", .intel = true, .family = 6, .model = 0x2a,
			      .version = 3, .nr_gp = 4, .gp_width = 48, .nr_fixed_edx = 3,
			      .fixed_width = 48, .ebx_len = 7, .pdcm = true,
			      .xmsr = MODEL_XMSR_OFFCORE | MODEL_XMSR_LD_LAT },
	[MODEL_INTEL_TREMONT] = { .name = "intel-tremont", .intel = true, .family = 6, .model = 0x86,
				  .version = 5, .nr_gp = 4, .gp_width = 48, .nr_fixed_edx = 3,
				  .fixed_width = 48, .ebx_len = 8, .pdcm = true, .fw_write = true },
	[MODEL_INTEL_GRACEMONT] = { .name = "intel-gracemont", .intel = true, .family = 6,
				    .model = 0xbe, .version = 5, .nr_gp = 6, .gp_width = 48,
				    .nr_fixed_edx = 3, .fixed_width = 48, .ebx_len = 8, .pdcm = true,
				    .fw_write = true },
	[MODEL_INTEL_CWF] = { .name = "intel-cwf", .intel = true, .family = 6, .model = 0xdd,
			      .version = 5, .nr_gp = 8, .gp_width = 48, .nr_fixed_edx = 3,
			      .fixed_width = 48, .ebx_len = 8, .pdcm = true, .fw_write = true },
	[MODEL_INTEL_ADL_P] = { .name = "intel-adl-p", .intel = true, .family = 6, .model = 0x97,
				.version = 5, .nr_gp = 6, .gp_width = 48, .nr_fixed_edx = 3,
				.fixed_width = 48, .ebx_len = 7, .pdcm = true, .fw_write = true,
				.smm_freeze = true, .unmask_refires = true, .extra_gp = 2,
				.extra_fixed = 1u << 3, .core_type = 0x40,
			      .xmsr = MODEL_XMSR_OFFCORE | MODEL_XMSR_LD_LAT | MODEL_XMSR_FRONTEND },
	[MODEL_INTEL_ADL_E] = { .name = "intel-adl-e", .intel = true, .family = 6, .model = 0x97,
				.version = 5, .nr_gp = 6, .gp_width = 48, .nr_fixed_edx = 3,
				.fixed_width = 48, .ebx_len = 7, .pdcm = true, .fw_write = true,
				.smm_freeze = true, .core_type = 0x20 },
	[MODEL_KVM_ADL_P] = { .name = "kvm-adl-p", .intel = true, .family = 6, .model = 0x97,
			      .hypervisor = "KVMKVMKVM\0\0\0", .version = 5, .nr_gp = 6, .gp_width = 48,
			      .nr_fixed_edx = 3, .fixed_width = 48, .ebx_len = 7, .pdcm = true,
			      .fw_write = true, .kvm = true, .core_type = 0x40 },
	[MODEL_AMD_LEGACY] = { .name = "amd-legacy", .amd = true, .family = 0x10, .model = 2 },
	[MODEL_AMD_CORE_EXT] = { .name = "amd-core-ext", .amd = true, .family = 0x15, .model = 2,
				 .core_ext = true },
	[MODEL_AMD_V2] = { .name = "amd-v2", .amd = true, .family = 0x19, .model = 0x61,
			   .core_ext = true, .perfmon_v2 = true, .amd_nr = 6 },
	[MODEL_KVM_AMD] = { .name = "kvm-amd", .amd = true, .family = 0x17, .model = 0x31,
			    .hypervisor = "KVMKVMKVM\0\0\0", .core_ext = true, .kvm = true },
	[MODEL_KVM_AMD_V2] = { .name = "kvm-amd-v2", .amd = true, .family = 0x19, .model = 0x11,
			       .hypervisor = "KVMKVMKVM\0\0\0", .core_ext = true, .perfmon_v2 = true,
			       .amd_nr = 6, .kvm = true },
};

const struct model_cfg *model_preset(enum model_flavour f)
{
	return &presets[f];
}

static void default_unexpected(struct pmu_model *m, const char *what)
{
	(void)m;
	fprintf(stderr, "pmu_model: unexpected fault in a non-_safe access: %s\n", what);
	abort();
}

static mu64 mask_bits(mu32 w)
{
	return w >= 64 ? ~0ull : (1ull << w) - 1;
}

void model_init(struct pmu_model *m, const struct model_cfg *cfg)
{
	memset(m, 0, sizeof(*m));
	m->cfg = *cfg;
	m->unexpected_fault = default_unexpected;
	m->lvtpc = LVT_MASK;		/* LVT entries come out of reset masked */
	memset(m->gp_written, 0xff, sizeof(m->gp_written));
	memset(m->fixed_written, 0xff, sizeof(m->fixed_written));
	if (cfg->intel && !cfg->tcg) {
		m->nr_gp = cfg->nr_gp + cfg->extra_gp;
		m->gp_mask = mask_bits(cfg->gp_width);
		if (cfg->version >= 2) {
			mu32 bm = ((1u << cfg->nr_fixed_edx) - 1) | cfg->extra_fixed;
			if (cfg->version >= 5)
				bm |= cfg->fixed_ecx;
			m->fixed_present = bm & ((1u << MODEL_FIXED_MAX) - 1);
			m->fixed_mask = mask_bits(cfg->fixed_width);
			m->global_ctrl = (1ull << m->nr_gp) - 1;
		}
	} else if (cfg->amd && !cfg->tcg) {
		m->nr_gp = cfg->perfmon_v2 ? cfg->amd_nr : cfg->core_ext ? 6 : 4;
		m->gp_mask = mask_bits(48);
		if (cfg->perfmon_v2)
			m->global_ctrl = (1ull << m->nr_gp) - 1;
		if (cfg->kvm)
			m->de_cfg = 1ull << 1;	/* the host set LFENCE_SERIALIZE */
	}
	pmu_model = m;
}

void model_firmware_handoff(struct pmu_model *m, mu32 gp)
{
	const struct model_cfg *cfg = &m->cfg;
	int last = (int)gp;

	if (cfg->tcg || gp >= m->nr_gp)
		return;
	/* CPU_CLK_UNHALTED (Intel 3c/00, AMD 76), OS+USR, INT, EN. */
	m->evtsel[last] = (cfg->intel ? 0x3c : 0x76) | EV_USR | EV_OS | EV_INT | EV_EN;
	m->gp[last] = m->gp_mask - 5000;
	if (cfg->intel && cfg->version >= 2) {
		m->fixed_ctrl = 0x3;			/* fixed 0, OS+USR, no PMI */
		m->global_ctrl = (1ull << m->nr_gp) - 1;	/* reset value */
		if (!cfg->kvm)
			m->debugctl |= DBG_FREEZE_PMON;
	}
	m->lvtpc = 0x400;				/* NMI, unmasked */
}

static int fault(struct pmu_model *m, int vec, const char *fmt, ...)
{
	va_list ap;

	m->faults++;
	m->last_vector = vec;
	va_start(ap, fmt);
	vsnprintf(m->last_fault, sizeof(m->last_fault), fmt, ap);
	va_end(ap);
	return -E_FAULT;
}

/* ---- Counting ---- */

static enum model_signal intel_signal(mu64 sel)
{
	mu32 eu = sel & 0xffff;

	switch (eu) {
	case 0x003c: return SIG_CYCLES;
	case 0x013c: return SIG_REF_CYCLES;
	case 0x00c0: return SIG_INSTRUCTIONS;
	case 0x01c0: return SIG_INSTRUCTIONS;	/* INST_RETIRED.ALL (PREC_DIST) */
	case 0x00c4: return SIG_BRANCHES;
	case 0x00c5: return SIG_BRANCH_MISSES;
	case 0x4f2e: return SIG_LLC_REF;
	case 0x412e: return SIG_LLC_MISS;
	case 0x01a4: return SIG_SLOTS;
	default: return SIG_COUNT;
	}
}

static enum model_signal amd_signal(const struct pmu_model *m, mu64 sel)
{
	mu32 ev = (sel & 0xff) | ((sel >> 32) & 0xf) << 8, um = (sel >> 8) & 0xff;

	switch (ev) {
	case 0x076: return SIG_CYCLES;
	case 0x0c0: return SIG_INSTRUCTIONS;
	case 0x0c2: return SIG_BRANCHES;
	case 0x0c3: return SIG_BRANCH_MISSES;
	}
	if (m->cfg.family < 0x17) {
		if (ev == 0x07d && um == 0x07) return SIG_LLC_REF;
		if (ev == 0x07e && um == 0x07) return SIG_LLC_MISS;
		if (ev == 0x0d0) return SIG_FE_STALL;
		if (ev == 0x0d1) return SIG_BE_STALL;
	} else {
		if (ev == 0x060 && um == 0xff) return SIG_LLC_REF;
		if (ev == 0x064 && um == 0x09) return SIG_LLC_MISS;
		if (ev == 0x087 && um == 0x02) return SIG_FE_STALL;	/* Zen1 */
		if (ev == 0x087 && um == 0x01) return SIG_BE_STALL;
		if (ev == 0x0a9 && um == 0x00) return SIG_FE_STALL;	/* Zen2+ */
		if (ev == 0x02b && m->cfg.family <= 0x1a) return SIG_SMI;	/* LsSmiRx */
	}
	return SIG_COUNT;
}

static bool has_global(const struct pmu_model *m)
{
	return (m->cfg.intel && m->cfg.version >= 2) || (m->cfg.amd && m->cfg.perfmon_v2);
}

static bool frozen(const struct pmu_model *m)
{
	return m->cfg.intel && (m->global_status & ST_CTR_FRZ);
}

static bool gp_enabled(const struct pmu_model *m, int i)
{
	mu64 s = m->evtsel[i];

	if (!(s & EV_EN) || frozen(m))
		return false;
	if (has_global(m) && !(m->global_ctrl >> i & 1))
		return false;
	return m->cpl == 0 ? (s & EV_OS) : (s & EV_USR);
}

static bool fixed_enabled(const struct pmu_model *m, int i)
{
	mu64 f = m->fixed_ctrl >> (4 * i) & 0xf;

	if (!(m->fixed_present >> i & 1) || frozen(m) || !(m->global_ctrl >> (32 + i) & 1))
		return false;
	return m->cpl == 0 ? (f & 1) : (f & 2);
}

static mu32 signal_count(const struct model_cycle *c, enum model_signal s)
{
	if (s == SIG_CYCLES || s == SIG_REF_CYCLES)
		return 1;
	return s < SIG_COUNT ? c->n[s] : 0;
}

/* Events one GP counter adds in one cycle; updates the edge state. */
static mu32 gp_inc(struct pmu_model *m, int i, const struct model_cycle *c, bool commit)
{
	mu64 s = m->evtsel[i];
	mu32 k = signal_count(c, m->cfg.intel ? intel_signal(s) : amd_signal(m, s));
	mu32 cmask = (s >> 24) & 0xff;
	bool edge = s & EV_EDGE, inv = s & EV_INV;

	if (!cmask && !edge)
		return k;
	/* SDM 21.2.1.1: with CMASK, count cycles where the events in the cycle
	 * are >= CMASK (< CMASK with INV); EDGE counts 0->1 transitions. */
	bool cond = cmask ? (inv ? k < cmask : k >= cmask) : k > 0;
	mu32 inc = edge ? (cond && !m->cond_prev[i]) : cond;
	if (commit)
		m->cond_prev[i] = cond;
	return inc;
}

static void raise_pmi(struct pmu_model *m);

static void deliver_nmi(struct pmu_model *m)
{
	if (m->in_nmi) {
		/* Blocked until IRET; one NMI can be latched, more collapse. */
		m->nmi_pending = true;
		m->pmi_latched++;
		return;
	}
	do {
		m->nmi_pending = false;
		m->pmi_delivered++;
		m->in_nmi = true;
		m->acked_in_nmi = false;
		m->ack_seen = ACK_NONE;
		m->status_read_in_nmi = false;
		if (m->nmi)
			m->nmi(m, m->nmi_arg);
		m->in_nmi = false;
	} while (m->nmi_pending);
}

static void raise_pmi(struct pmu_model *m)
{
	m->pmi_raised++;
	if (m->cfg.intel && (m->debugctl & DBG_FREEZE_PMON)) {
		if (m->cfg.version >= 4)
			m->global_status |= ST_CTR_FRZ;		/* streamlined freeze */
		else
			m->global_ctrl = 0;			/* legacy freeze */
	}
	if (m->lvtpc & LVT_MASK) {
		m->pmi_lost_masked++;
		return;
	}
	if (m->cfg.intel || m->cfg.kvm)
		m->lvtpc |= LVT_MASK;
	deliver_nmi(m);
}

/* The errata above that swallow an overflow's PMI, judged from the value
 * software last wrote to the counter. */
static bool erratum_eats_pmi(const struct pmu_model *m, bool fx, mu32 j)
{
	mu64 mask = fx ? m->fixed_mask : m->gp_mask;
	mu64 w = fx ? m->fixed_written[j] : m->gp_written[j];
	mu64 left = (0 - w) & mask;

	if (w == ~0ull)
		return false;			/* never written */
	if (left == 1)
		return true;
	if (!fx && m->cfg.bdw_errata && (m->evtsel[j] & 0xffff) == 0x01c0)
		return left < 100 || (left & 0x3f);
	return false;
}

/* Overflows found in one step: status bits, then (maybe) one PMI. */
static void overflowed(struct pmu_model *m, mu64 bits, bool pmi)
{
	if (has_global(m))
		m->global_status |= bits;
	if (pmi)
		raise_pmi(m);
}

/*
 * Advance up to n identical cycles; stops early after the first cycle in
 * which a counter overflows (so the PMI lands at the overflow, with the
 * state the handler leaves used for the rest). Returns cycles done.
 */
static mu64 step(struct pmu_model *m, const struct model_cycle *c, mu64 n)
{
	mu64 rate[MODEL_GP_MAX + MODEL_FIXED_MAX] = { 0 };
	bool first_differs = false;

	for (mu32 i = 0; i < m->nr_gp; i++) {
		if (!gp_enabled(m, (int)i))
			continue;
		mu64 s = m->evtsel[i];
		if (s & EV_EDGE) {
			mu32 cmask = (s >> 24) & 0xff;
			mu32 k = signal_count(c, m->cfg.intel ? intel_signal(s) : amd_signal(m, s));
			bool cond = cmask ? ((s & EV_INV) ? k < cmask : k >= cmask) : k > 0;
			if (cond != m->cond_prev[i])
				first_differs = true;
		}
		rate[i] = gp_inc(m, (int)i, c, false);
	}
	if (first_differs)
		n = 1;		/* an edge counter's state changes: one cycle alone */
	for (mu32 i = 0; i < MODEL_FIXED_MAX; i++) {
		static const enum model_signal fixed_sig[4] = {
			SIG_INSTRUCTIONS, SIG_CYCLES, SIG_REF_CYCLES, SIG_SLOTS };
		if (fixed_enabled(m, (int)i))
			rate[MODEL_GP_MAX + i] = i < 4 ? signal_count(c, fixed_sig[i]) : 0;
	}
	/* Cycles until the first counter wraps. */
	mu64 d = n;
	for (mu32 i = 0; i < MODEL_GP_MAX + MODEL_FIXED_MAX; i++) {
		if (!rate[i])
			continue;
		bool fx = i >= MODEL_GP_MAX;
		mu64 v = fx ? m->fixed[i - MODEL_GP_MAX] : m->gp[i];
		mu64 mask = fx ? m->fixed_mask : m->gp_mask;
		mu64 until = (mask - v) / rate[i] + 1;
		if (until < d)
			d = until;
	}
	mu64 bits = 0;
	bool pmi = false;
	for (mu32 i = 0; i < MODEL_GP_MAX + MODEL_FIXED_MAX; i++) {
		if (!rate[i])
			continue;
		bool fx = i >= MODEL_GP_MAX;
		mu32 j = fx ? i - MODEL_GP_MAX : i;
		mu64 *v = fx ? &m->fixed[j] : &m->gp[j];
		mu64 mask = fx ? m->fixed_mask : m->gp_mask;
		mu64 add = rate[i] * d;
		if (m->cfg.kvm && m->host_steal_every) {
			mu64 lost = add / m->host_steal_every;
			add -= lost;
			m->stolen += lost;
		}
		if (*v + add > mask) {
			bits |= 1ull << (fx ? 32 + j : j);
			bool want = fx ? (m->fixed_ctrl >> (4 * j) & 8) != 0 : (m->evtsel[j] & EV_INT) != 0;
			if (want && erratum_eats_pmi(m, fx, j))
				m->erratum_hits++;
			else
				pmi |= want;
		}
		*v = (*v + add) & mask;
		*(fx ? &m->fixed_counted[j] : &m->gp_counted[j]) += add;
	}
	m->tsc += d;
	/* Edge state after these cycles (constant inside a step). */
	for (mu32 i = 0; i < m->nr_gp; i++)
		if (gp_enabled(m, (int)i))
			(void)gp_inc(m, (int)i, c, true);
	if (bits)
		overflowed(m, bits, pmi && !(m->emulating && m->emulated_pmi_lost));
	return d;
}

void model_run(struct pmu_model *m, const struct model_cycle *c, mu64 ncycles)
{
	while (ncycles)
		ncycles -= step(m, c, ncycles);
}

void model_smi(struct pmu_model *m, mu64 ncycles)
{
	struct model_cycle c = { 0 }, rx = { .n = { [SIG_SMI] = 1 } };
	int cpl = m->cpl;

	m->smi_count++;
	if (m->cfg.intel && (m->debugctl & DBG_FREEZE_SMM)) {
		m->tsc += ncycles;		/* frozen: time passes, nothing counts */
		return;
	}
	m->cpl = 0;
	if (ncycles) {
		model_run(m, &rx, 1);		/* received in its first cycle */
		model_run(m, &c, ncycles - 1);
	}
	m->cpl = cpl;
}

void model_retire(struct pmu_model *m, mu64 ninsns)
{
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 1 } };

	model_run(m, &c, ninsns);
}

void model_emulate(struct pmu_model *m, mu64 ninsns)
{
	m->emulating = true;
	model_retire(m, ninsns);
	m->emulating = false;
}

/* ---- MSRs ---- */

/* The xmsr MSR msr where this model has it, else NULL. */
static mu64 *xmsr(struct pmu_model *m, mu32 msr)
{
	mu32 x = m->cfg.kvm ? 0 : m->cfg.xmsr;

	if ((x & MODEL_XMSR_OFFCORE) && (msr == I_OFFCORE0 || msr == I_OFFCORE1))
		return &m->offcore[msr - I_OFFCORE0];
	if ((x & MODEL_XMSR_LD_LAT) && msr == I_LD_LAT)
		return &m->ld_lat;
	if ((x & MODEL_XMSR_FRONTEND) && msr == I_FRONTEND)
		return &m->frontend;
	return NULL;
}

static int intel_rdmsr(struct pmu_model *m, mu32 msr, mu64 *val)
{
	const struct model_cfg *cfg = &m->cfg;
	bool v2 = cfg->version >= 2;

	if (msr >= I_PMC0 && msr < I_PMC0 + m->nr_gp) {
		*val = m->gp[msr - I_PMC0];
	} else if (cfg->fw_write && msr >= I_A_PMC0 && msr < I_A_PMC0 + m->nr_gp) {
		*val = m->gp[msr - I_A_PMC0];
	} else if (msr >= I_EVTSEL0 && msr < I_EVTSEL0 + m->nr_gp) {
		*val = m->evtsel[msr - I_EVTSEL0];
	} else if (msr >= I_FIXED0 && msr < I_FIXED0 + MODEL_FIXED_MAX &&
		   (m->fixed_present >> (msr - I_FIXED0) & 1)) {
		*val = m->fixed[msr - I_FIXED0];
	} else if (v2 && msr == I_FIXED_CTRL) {
		*val = m->fixed_ctrl;
	} else if (v2 && msr == I_STATUS) {
		*val = m->global_status | m->stuck_status;
		m->status_read_in_nmi |= m->in_nmi;
	} else if (v2 && msr == I_CTRL) {
		*val = m->global_ctrl;
	} else if (v2 && msr == I_OVF_CTRL) {
		*val = 0;
	} else if (cfg->pdcm && msr == I_PERF_CAPS) {
		*val = (cfg->fw_write ? 1ull << 13 : 0) | (cfg->smm_freeze ? 1ull << 12 : 0);
	} else if (msr == I_DEBUGCTL) {
		*val = m->debugctl;
	} else if (msr == I_SMI_COUNT) {
		*val = m->smi_count & 0xffffffffull;
	} else if (xmsr(m, msr)) {
		*val = *xmsr(m, msr);
	} else {
		return fault(m, VEC_GP_, "#GP: rdmsr 0x%x: no such MSR", msr);
	}
	return 0;
}

static mu64 intel_status_bits(const struct pmu_model *m)
{
	mu64 v = ((1ull << m->nr_gp) - 1) | (mu64)m->fixed_present << 32 | ST_OVF_BUF | ST_COND_CHGD |
		 ST_UNC_OVF;

	if (m->cfg.version >= 4)
		v |= ST_CTR_FRZ | ST_LBR_FRZ;
	return v;
}

static int intel_wrmsr(struct pmu_model *m, mu32 msr, mu64 val)
{
	const struct model_cfg *cfg = &m->cfg;
	bool v2 = cfg->version >= 2;

	if (msr >= I_PMC0 && msr < I_PMC0 + m->nr_gp) {
		/* SDM 21.2.6: EAX sign-extended; EDX ignored. */
		m->gp[msr - I_PMC0] = (mu64)(int64_t)(int32_t)(mu32)val & m->gp_mask;
		m->gp_written[msr - I_PMC0] = m->gp[msr - I_PMC0];
	} else if (cfg->fw_write && msr >= I_A_PMC0 && msr < I_A_PMC0 + m->nr_gp) {
		if (val & ~m->gp_mask)
			return fault(m, VEC_GP_, "#GP: wrmsr IA32_A_PMC%u = 0x%llx: bits above the %u-bit width",
				     msr - I_A_PMC0, (unsigned long long)val, cfg->gp_width);
		m->gp[msr - I_A_PMC0] = val;
		m->gp_written[msr - I_A_PMC0] = val;
	} else if (msr >= I_EVTSEL0 && msr < I_EVTSEL0 + m->nr_gp) {
		mu64 rsvd = 0xffffffff00000000ull | (cfg->version < 3 ? EV_ANY : 0);
		if (val & rsvd)
			return fault(m, VEC_GP_, "#GP: wrmsr IA32_PERFEVTSEL%u = 0x%llx: reserved bits 0x%llx",
				     msr - I_EVTSEL0, (unsigned long long)val,
				     (unsigned long long)(val & rsvd));
		m->evtsel[msr - I_EVTSEL0] = val;
	} else if (msr >= I_FIXED0 && msr < I_FIXED0 + MODEL_FIXED_MAX &&
		   (m->fixed_present >> (msr - I_FIXED0) & 1)) {
		m->fixed[msr - I_FIXED0] = val & m->fixed_mask;
		m->fixed_written[msr - I_FIXED0] = val & m->fixed_mask;
	} else if (v2 && msr == I_FIXED_CTRL) {
		mu64 ok = 0;
		for (int i = 0; i < MODEL_FIXED_MAX; i++)
			if (m->fixed_present >> i & 1)
				ok |= (mu64)(cfg->version >= 3 ? 0xf : 0xb) << (4 * i);
		if (val & ~ok)
			return fault(m, VEC_GP_, "#GP: wrmsr IA32_FIXED_CTR_CTRL = 0x%llx: reserved bits 0x%llx",
				     (unsigned long long)val, (unsigned long long)(val & ~ok));
		m->fixed_ctrl = val;
	} else if (v2 && msr == I_STATUS) {
		return fault(m, VEC_GP_, "#GP: wrmsr IA32_PERF_GLOBAL_STATUS: read-only");
	} else if (v2 && msr == I_CTRL) {
		mu64 ok = ((1ull << m->nr_gp) - 1) | (mu64)m->fixed_present << 32;
		if (val & ~ok)
			return fault(m, VEC_GP_, "#GP: wrmsr IA32_PERF_GLOBAL_CTRL = 0x%llx: reserved bits 0x%llx",
				     (unsigned long long)val, (unsigned long long)(val & ~ok));
		m->global_ctrl = val;
	} else if (v2 && msr == I_OVF_CTRL) {
		if (val & ~intel_status_bits(m))
			return fault(m, VEC_GP_, "#GP: wrmsr IA32_PERF_GLOBAL_OVF_CTRL = 0x%llx: reserved bits",
				     (unsigned long long)val);
		if (m->in_nmi && (m->global_status & val))
			m->acked_in_nmi = true;
		m->global_status &= ~val;
	} else if (cfg->version >= 4 && msr == I_STATUS_SET) {
		if (val & ~intel_status_bits(m))
			return fault(m, VEC_GP_, "#GP: wrmsr IA32_PERF_GLOBAL_STATUS_SET: reserved bits");
		m->global_status |= val;
	} else if (cfg->pdcm && msr == I_PERF_CAPS) {
		return fault(m, VEC_GP_, "#GP: wrmsr IA32_PERF_CAPABILITIES: read-only");
	} else if (msr == I_SMI_COUNT) {
		return fault(m, VEC_GP_, "#GP: wrmsr MSR_SMI_COUNT: read-only");
	} else if (xmsr(m, msr)) {
		*xmsr(m, msr) = val;
	} else if (msr == I_DEBUGCTL) {
		/* LBR, BTF, FREEZE_LBRS_ON_PMI; the perfmon freezes where the
		 * CPU has them (KVM: never). */
		mu64 ok = 0x3 | 1ull << 11;
		if (!cfg->kvm)
			ok |= (v2 ? DBG_FREEZE_PMON : 0) | (cfg->smm_freeze ? DBG_FREEZE_SMM : 0);
		if (val & ~ok)
			return fault(m, VEC_GP_, "#GP: wrmsr IA32_DEBUGCTL = 0x%llx: reserved bits",
				     (unsigned long long)val);
		m->debugctl = val;
	} else {
		return fault(m, VEC_GP_, "#GP: wrmsr 0x%x = 0x%llx: no such MSR", msr,
			     (unsigned long long)val);
	}
	return 0;
}

/* AMD: which counter an MSR addresses, and whether it is the control. */
static int amd_decode(const struct pmu_model *m, mu32 msr, bool *ctl)
{
	if (msr >= A_K7_SEL0 && msr < A_K7_SEL0 + 4) {
		*ctl = true;
		return (int)(msr - A_K7_SEL0);
	}
	if (msr >= A_K7_CTR0 && msr < A_K7_CTR0 + 4) {
		*ctl = false;
		return (int)(msr - A_K7_CTR0);
	}
	if (m->cfg.core_ext && msr >= A_EXT_CTL0 && msr < A_EXT_CTL0 + 2 * m->nr_gp) {
		*ctl = !((msr - A_EXT_CTL0) & 1);
		return (int)((msr - A_EXT_CTL0) / 2);
	}
	return -1;
}

/* Bits 19, 21, 39:36 and 63:42 of PerfEvtSel are reserved (APM §13.2.1). */
#define AMD_EVTSEL_RSVD	(1ull << 19 | 1ull << 21 | 0xfull << 36 | ~0ull << 42)

static int amd_rdmsr(struct pmu_model *m, mu32 msr, mu64 *val)
{
	bool ctl;
	int i = amd_decode(m, msr, &ctl);

	if (i >= 0)
		*val = ctl ? m->evtsel[i] : m->gp[i];
	else if (m->cfg.perfmon_v2 && msr == A_STATUS) {
		*val = m->global_status | m->stuck_status;
		m->status_read_in_nmi |= m->in_nmi;
	}
	else if (m->cfg.perfmon_v2 && msr == A_CTL)
		*val = m->global_ctrl;
	else if (m->cfg.perfmon_v2 && (msr == A_CLR || msr == A_SET))
		*val = 0;
	else if (msr == A_DE_CFG)
		*val = m->de_cfg;
	else
		return fault(m, VEC_GP_, "#GP: rdmsr 0x%x: no such MSR", msr);
	return 0;
}

static int amd_wrmsr(struct pmu_model *m, mu32 msr, mu64 val)
{
	bool ctl;
	int i = amd_decode(m, msr, &ctl);
	mu64 cnt = (1ull << m->nr_gp) - 1;

	if (i >= 0 && ctl)
		m->evtsel[i] = val & ~AMD_EVTSEL_RSVD;
	else if (i >= 0)
		m->gp[i] = m->gp_written[i] = val & m->gp_mask;
	else if (m->cfg.perfmon_v2 && msr == A_STATUS)
		;		/* read-only: ignored */
	else if (m->cfg.perfmon_v2 && msr == A_CTL)
		m->global_ctrl = val & cnt;
	else if (m->cfg.perfmon_v2 && msr == A_CLR)
		m->global_status &= m->status_clr_all ? 0 : ~val;
	else if (m->cfg.perfmon_v2 && msr == A_SET)
		m->global_status |= val & cnt;
	else if (msr == A_DE_CFG)
		m->de_cfg = val;
	else
		return fault(m, VEC_GP_, "#GP: wrmsr 0x%x = 0x%llx: no such MSR", msr,
			     (unsigned long long)val);
	return 0;
}

/* nmi_msr_cycles: the handler's own time, spent before each access. */
static void handler_time(struct pmu_model *m)
{
	static const struct model_cycle idle;

	mu64 n = m->msr_cycles + (m->in_nmi ? m->nmi_msr_cycles : 0);

	if (n)
		model_run(m, &idle, n);
}

int model_rdmsr(struct pmu_model *m, mu32 msr, mu64 *val)
{
	handler_time(m);
	m->rdmsrs++;
	*val = 0;
	if (m->cfg.tcg)
		return 0;
	return m->cfg.intel ? intel_rdmsr(m, msr, val) : amd_rdmsr(m, msr, val);
}

int model_wrmsr(struct pmu_model *m, mu32 msr, mu64 val)
{
	handler_time(m);
	m->wrmsrs++;
	if (m->cfg.tcg)
		return 0;
	return m->cfg.intel ? intel_wrmsr(m, msr, val) : amd_wrmsr(m, msr, val);
}

int model_rdpmc(struct pmu_model *m, mu32 ecx, mu64 *val)
{
	m->rdpmcs++;
	*val = 0;
	if (m->cfg.tcg)
		return fault(m, VEC_UD_, "#UD: rdpmc under TCG");
	if (m->cfg.amd) {
		if (ecx >= m->nr_gp)
			return fault(m, VEC_GP_, "#GP: rdpmc 0x%x: no such counter", ecx);
		*val = m->gp[ecx];
		return 0;
	}
	bool fixed = ecx & (1u << 30), fast = ecx & (1u << 31);
	mu32 idx = ecx & ~(3u << 30);
	if (fast && (!m->cfg.fast_rdpmc || m->cfg.kvm))
		return fault(m, VEC_GP_, "#GP: rdpmc 0x%x: no fast-read mode", ecx);
	if (fixed && m->cfg.rdpmc_no_fixed)
		return fault(m, VEC_GP_, "#GP: rdpmc 0x%x: fixed counters not emulated", ecx);
	if (fixed) {
		if (idx >= MODEL_FIXED_MAX || !(m->fixed_present >> idx & 1))
			return fault(m, VEC_GP_, "#GP: rdpmc 0x%x: no fixed counter %u", ecx, idx);
		*val = m->fixed[idx];
	} else {
		if (idx >= m->nr_gp)
			return fault(m, VEC_GP_, "#GP: rdpmc 0x%x: no GP counter %u", ecx, idx);
		*val = m->gp[idx];
	}
	if (fast)
		*val &= 0xffffffffull;
	return 0;
}

/* ---- pmu/hw.h for the host build ---- */

static void cpuid_vendor(const struct model_cfg *cfg, mu32 r[4])
{
	const char *v = cfg->intel ? "GenuineIntel" : "AuthenticAMD";

	r[0] = cfg->core_type ? 0x20 : 0xd;
	memcpy(&r[1], v, 4);
	memcpy(&r[3], v + 4, 4);
	memcpy(&r[2], v + 8, 4);
}

void pmu_hw_cpuid(mu32 leaf, mu32 sub, mu32 r[4])
{
	const struct pmu_model *m = pmu_model;
	const struct model_cfg *cfg = &m->cfg;

	r[0] = r[1] = r[2] = r[3] = 0;
	if (m->cpuid_hook) {
		m->cpuid_hook(leaf, sub, r);
		return;
	}
	switch (leaf) {
	case 0:
		cpuid_vendor(cfg, r);
		break;
	case 1: {
		mu32 fam = cfg->family, base = fam >= 0xf ? 0xf : fam, ext = fam >= 0xf ? fam - 0xf : 0;
		r[0] = (cfg->model & 0xf) << 4 | base << 8 | (cfg->model >> 4) << 16 | ext << 20;
		r[2] = (cfg->pdcm ? 1u << 15 : 0) | (cfg->hypervisor ? 1u << 31 : 0);
		break;
	}
	case 0xa:
		if (cfg->intel && !cfg->tcg) {
			r[0] = cfg->version | cfg->nr_gp << 8 | cfg->gp_width << 16 | cfg->ebx_len << 24;
			r[1] = cfg->ebx_unavail;
			r[2] = cfg->version >= 5 ? cfg->fixed_ecx : 0;
			r[3] = cfg->version >= 2 ? (cfg->nr_fixed_edx | cfg->fixed_width << 5) : 0;
		}
		break;
	case 0x1a:
		r[0] = cfg->core_type << 24;
		break;
	case 0x40000000:
		if (cfg->hypervisor) {
			r[0] = 0x40000001;
			memcpy(&r[1], cfg->hypervisor, 4);
			memcpy(&r[2], cfg->hypervisor + 4, 4);
			memcpy(&r[3], cfg->hypervisor + 8, 4);
		}
		break;
	case 0x80000000:
		r[0] = cfg->amd ? 0x80000022 : 0x80000008;
		break;
	case 0x80000001:
		r[2] = cfg->amd && cfg->core_ext && !cfg->tcg ? 1u << 23 : 0;
		break;
	case 0x80000022:
		if (cfg->amd && cfg->perfmon_v2 && !cfg->tcg) {
			r[0] = 1;
			r[1] = cfg->amd_nr;
		}
		break;
	}
}

static void unexpected(struct pmu_model *m)
{
	m->unexpected_fault(m, m->last_fault);
}

mu64 pmu_hw_rdmsr(mu32 msr)
{
	mu64 v;

	if (model_rdmsr(pmu_model, msr, &v))
		unexpected(pmu_model);
	return v;
}

void pmu_hw_wrmsr(mu32 msr, mu64 val)
{
	if (model_wrmsr(pmu_model, msr, val))
		unexpected(pmu_model);
}

int pmu_hw_rdmsr_safe(mu32 msr, mu64 *val)
{
	return model_rdmsr(pmu_model, msr, val);
}

int pmu_hw_wrmsr_safe(mu32 msr, mu64 val)
{
	return model_wrmsr(pmu_model, msr, val);
}

mu64 pmu_hw_rdpmc(mu32 ecx)
{
	mu64 v;

	if (model_rdpmc(pmu_model, ecx, &v))
		unexpected(pmu_model);
	return v;
}

int pmu_hw_rdpmc_safe(mu32 ecx, mu64 *val)
{
	return model_rdpmc(pmu_model, ecx, val);
}

mu64 pmu_hw_rdtsc(void)
{
	return pmu_model->tsc;
}

mu32 pmu_lvtpc_read(void)
{
	return pmu_model->lvtpc;
}

/* Are the counters enabled as a whole (GLOBAL_CTRL, or without one any
 * PERFEVTSEL.EN)? */
static bool model_counting_enabled(const struct pmu_model *m)
{
	if (has_global(m))
		return m->global_ctrl != 0;
	for (mu32 i = 0; i < m->nr_gp; i++)
		if (m->evtsel[i] & EV_EN)
			return true;
	return false;
}

void pmu_lvtpc_write(mu32 v)
{
	struct pmu_model *m = pmu_model;
	bool unmask = (m->lvtpc & LVT_MASK) && !(v & LVT_MASK);

	handler_time(m);
	if (m->in_nmi && !(v & LVT_MASK) && m->ack_seen == ACK_NONE)
		m->ack_seen = !m->status_read_in_nmi ? ACK_EARLY :
			      model_counting_enabled(m) ? ACK_LATE : ACK_MID;
	m->lvtpc = v;
	/* unmask_refires: a PMI with no overflow behind it, delivered once
	 * the current NMI returns. */
	if (unmask && m->cfg.unmask_refires && m->in_nmi && m->acked_in_nmi && m->global_ctrl == 0) {
		m->pmi_spurious++;
		m->pmi_raised++;
		m->lvtpc |= LVT_MASK;
		deliver_nmi(m);
	}
}

/*
 * pmu_model.h — a register-level model of the x86 PMU for host tests.
 *
 * It implements pmu/hw.h for the host build (-DPMU_HOST_MODEL): CPUID,
 * RDMSR/WRMSR (+ _safe), RDPMC (+ _safe) and the LVT PC entry, with the
 * semantics of Intel architectural perfmon v1/v2/v4/v5 and AMD legacy,
 * core-extension and PerfMonV2 counters, so the real drivers in pmu/ run
 * against it unchanged. Its register numbers and rules are written here
 * from the manuals (Intel SDM Vol. 3B ch. 21, AMD APM Vol. 2 §13.2), not
 * taken from pmu/regs.h, so a wrong constant in the driver shows up as a
 * #GP or a wrong count rather than agreeing with itself.
 *
 * Work is described as signals per cycle (instructions, branches, ...); the
 * model maps each counter's event encoding to a signal with its own table.
 */
#ifndef BAREPERF_TEST_HOST_PMU_MODEL_H
#define BAREPERF_TEST_HOST_PMU_MODEL_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t mu64;
typedef uint32_t mu32;

enum model_flavour {
	MODEL_TCG_INTEL,	/* QEMU TCG with an Intel CPU model: CPUID.0AH zero */
	MODEL_TCG_AMD,		/* QEMU TCG qemu64 (AMD): MSRs read 0, writes dropped */
	MODEL_INTEL_V1,		/* 2 GP x 40 bits, no fixed, no global MSRs */
	MODEL_INTEL_V2,		/* 4 GP x 48, 3 fixed x 48, legacy writes only */
	MODEL_KVM_V2,		/* KVM's vPMU: v2, 4 x 48, 3 fixed, FW writes, "KVMKVMKVM" */
	MODEL_INTEL_V4,		/* 4 GP x 48, 3 fixed, full-width writes, streamlined freeze */
	MODEL_INTEL_V5,		/* 8 GP x 48, fixed bitmap 0,1,3 (hole at 2), FW writes */
	MODEL_AMD_LEGACY,	/* family 10h: 4 x 48 at 0xC0010000/4 */
	MODEL_AMD_CORE_EXT,	/* family 15h: 6 x 48 at 0xC0010200, stride 2 */
	MODEL_AMD_V2,		/* family 19h: PerfMonV2, 6 x 48, global ctl/status */
	MODEL_KVM_AMD,		/* KVM on AMD: core ext, masks LVT PC on each PMI */
	MODEL_KVM_AMD_V2,	/* KVM on AMD with PerfMonV2 */
	MODEL_INTEL_BDW,	/* Broadwell: v3, INST_RETIRED.ALL period errata */
	MODEL_INTEL_SNB,	/* Sandy Bridge: v3, LVT PC unmasked early */
	MODEL_INTEL_TREMONT,	/* Tremont (Atom): v5, LVT PC unmasked early */
	MODEL_INTEL_GRACEMONT,	/* Gracemont (Alder Lake-N): v5, unmasked mid-handler */
	MODEL_INTEL_CWF,	/* Clearwater Forest (Darkmont, 0xDD): v5, unmasked mid-handler */
	MODEL_INTEL_ADL_P,	/* Alder Lake P-core: CPUID.0AH says 6 GP, 3 fixed; has 8 GP, 4 fixed */
	MODEL_INTEL_ADL_E,	/* Alder Lake E-core: 6 GP, 3 fixed, as CPUID.0AH says */
	MODEL_KVM_ADL_P,	/* KVM on Alder Lake, the P-core's CPUID passed through: 6 GP, 3 fixed */
	MODEL_FLAVOURS,
};

enum model_signal {
	SIG_CYCLES, SIG_REF_CYCLES, SIG_INSTRUCTIONS, SIG_BRANCHES, SIG_BRANCH_MISSES,
	SIG_LLC_REF, SIG_LLC_MISS, SIG_SLOTS, SIG_FE_STALL, SIG_BE_STALL,
	SIG_SMI,		/* an SMI received (AMD Zen PMCx02B; model_smi) */
	SIG_COUNT,
};

/* What happens in one cycle (cycles and ref-cycles are always 1). */
struct model_cycle {
	mu32 n[SIG_COUNT];
};

struct model_cfg {
	const char *name;
	bool intel, amd, tcg;
	mu32 family, model;
	const char *hypervisor;		/* CPUID 4000_0000 vendor, or NULL */
	/* Intel */
	mu32 version, nr_gp, gp_width, nr_fixed_edx, fixed_ecx, fixed_width;
	mu32 ebx_unavail, ebx_len;
	bool pdcm, fw_write, fast_rdpmc;
	/* Counters the core has beyond what CPUID.0AH reports (Alder and
	 * Raptor Lake P-cores: GP 6-7 and fixed counter 3). */
	mu32 extra_gp, extra_fixed;
	mu32 core_type;			/* CPUID.1AH:EAX[31:24] on hybrids, else 0 */
	/* RDPMC of a fixed counter #GPs: a hypervisor that emulates RDPMC
	 * of the GP counters only. */
	bool rdpmc_no_fixed;
	bool smm_freeze;		/* PERF_CAPABILITIES[12]: DEBUGCTL.FREEZE_WHILE_SMM */
	/* Haswell and later big cores: unmasking LVT PC while the counters are
	 * globally disabled in the PMI handler raises one more, spurious PMI
	 * (Linux's late_ack, "avoids spurious NMIs on Haswell"). */
	bool unmask_refires;
	/* Broadwell BDM11/BDM55: INST_RETIRED.ALL (c0/01) with a period below
	 * 100 or with any of bits 5:0 set loses its PMI. */
	bool bdw_errata;
	/* KVM's vPMU (arch/x86/kvm): DEBUGCTL takes only LBR, BTF and
	 * FREEZE_LBRS_ON_PMI (bit 12 and 14 #GP); LVT PC is masked on every
	 * PMI whatever the vendor (commit a16eb25b09c0, in stable kernels);
	 * RDPMC's fast-read bit #GPs; a counter the host's perf takes away
	 * undercounts (host_steal). */
	bool kvm;
	/* The MSRs some events' selection reads beside PERFEVTSEL (SDM Vol. 4,
	 * the model's own table): MODEL_XMSR_*; without them they #GP. */
	mu32 xmsr;
	/* AMD */
	bool core_ext, perfmon_v2;
	mu32 amd_nr;
};

enum { MODEL_GP_MAX = 8, MODEL_FIXED_MAX = 8 };

/* model_cfg.xmsr */
#define MODEL_XMSR_OFFCORE	(1u << 0)	/* MSR_OFFCORE_RSP_0/1, 0x1A6/0x1A7 (Nehalem on) */
#define MODEL_XMSR_LD_LAT	(1u << 1)	/* MSR_PEBS_LD_LAT, 0x3F6 (Nehalem on) */
#define MODEL_XMSR_FRONTEND	(1u << 2)	/* MSR_PEBS_FRONTEND, 0x3F7 (Skylake on) */

struct pmu_model {
	struct model_cfg cfg;
	mu64 gp_mask, fixed_mask;
	mu32 nr_gp, fixed_present;
	mu64 evtsel[MODEL_GP_MAX], gp[MODEL_GP_MAX], fixed[MODEL_FIXED_MAX];
	/* Software's last write to each counter (the errata look at it);
	 * ~0 until written. */
	mu64 gp_written[MODEL_GP_MAX], fixed_written[MODEL_FIXED_MAX];
	/* Events each counter has counted since init, kept beside the counter
	 * itself: what a driver's 64-bit count must equal. */
	mu64 gp_counted[MODEL_GP_MAX], fixed_counted[MODEL_FIXED_MAX];
	bool cond_prev[MODEL_GP_MAX];	/* edge detect: condition in the last cycle */
	mu64 fixed_ctrl, global_ctrl, global_status, debugctl;
	mu64 de_cfg;			/* AMD DE_CFG 0xC0011029 */
	mu64 smi_count;			/* Intel MSR_SMI_COUNT 0x34: SMIs taken */
	mu64 offcore[2], ld_lat, frontend;	/* the xmsr MSRs, as last written */
	mu32 lvtpc;
	int cpl;

	/* Faults (#GP = 13, #UD = 6). */
	unsigned faults;
	int last_vector;
	char last_fault[160];
	void (*unexpected_fault)(struct pmu_model *m, const char *what);

	/* PMIs: raised by an overflow with INT; delivered as an NMI unless
	 * LVT PC is masked (then lost); one more may be latched while the NMI
	 * handler runs (SDM Vol. 3A 6.7.1: NMIs are blocked until IRET). */
	unsigned pmi_raised, pmi_delivered, pmi_lost_masked, pmi_latched;
	unsigned pmi_spurious;		/* unmask_refires PMIs (no overflow behind them) */
	void (*nmi)(struct pmu_model *m, void *arg);
	void *nmi_arg;
	bool in_nmi, nmi_pending;
	/* Where the last NMI first wrote LVT PC unmasked: before it read the
	 * overflow status (early), with the counters still disabled (mid),
	 * or after re-enabling them (late); none if it did not. */
	enum { ACK_NONE, ACK_EARLY, ACK_MID, ACK_LATE } ack_seen;
	bool status_read_in_nmi;
	bool acked_in_nmi;		/* this NMI cleared an overflow bit */
	/* Work the test wants to happen inside the NMI handler (freeze tests). */
	mu64 stuck_status;		/* ORed into GLOBAL_STATUS on every read */
	/* Time passes while the handler runs: each MSR access made inside the
	 * NMI first runs this many cycles (one per cycle, nothing retired)
	 * with the counters as they are then, so counters still enabled keep
	 * counting and may overflow between the handler's own steps. */
	mu32 nmi_msr_cycles;
	/* The same for every access, in or out of the NMI: a counter that is
	 * counting does not hold what was just written to it. */
	mu32 msr_cycles;
	/* KVM: of every host_steal_every cycles counted, the host's perf has
	 * the counter for one, which the guest's counter misses. 0 = never. */
	mu32 host_steal_every;
	mu64 stolen;			/* events missed that way */
	/* PMIs an erratum swallowed (bdw_errata, a reload of -1). */
	unsigned erratum_hits;
	/* A vPMU that counts the instructions it emulates (model_emulate)
	 * and sets their overflow's status bit, but raises no PMI for it:
	 * what the register checks must catch. */
	bool emulated_pmi_lost;
	bool emulating;			/* inside model_emulate */
	/* An AMD PerfMonV2 StatusClr write that clears every status bit, not
	 * only those written: the same. */
	bool status_clr_all;

	/* Time: one tick per cycle run (pmu_hw_rdtsc, the clock of event
	 * times); advanced before the PMI of an overflow is raised. */
	mu64 tsc;

	/* CPUID from elsewhere (a real CPU's dump): when set, it answers
	 * every leaf instead of the preset. */
	void (*cpuid_hook)(mu32 leaf, mu32 sub, mu32 r[4]);

	/* Access counters, for cost accounting in tests. */
	mu64 rdmsrs, wrmsrs, rdpmcs;
};

extern struct pmu_model *pmu_model;	/* the model pmu/hw.h talks to */

const struct model_cfg *model_preset(enum model_flavour f);
void model_init(struct pmu_model *m, const struct model_cfg *cfg);
/* Run ncycles identical cycles, delivering PMIs as overflows happen. */
void model_run(struct pmu_model *m, const struct model_cycle *c, mu64 ncycles);
/* An SMI: MSR_SMI_COUNT (Intel) goes up, one cycle signals SIG_SMI (AMD
 * Zen's PMCx02B), then ncycles in SMM, counted unless
 * DEBUGCTL.FREEZE_WHILE_SMM is set (nothing retires). */
void model_smi(struct pmu_model *m, mu64 ncycles);
/* ninsns cycles retiring one instruction each (and nothing else). */
void model_retire(struct pmu_model *m, mu64 ninsns);
/* ninsns instructions a hypervisor emulates (port I/O under KVM): counted
 * as retired, with their overflows' PMIs unless emulated_pmi_lost. */
void model_emulate(struct pmu_model *m, mu64 ninsns);
/* What firmware may leave behind at hand-off (checked against Linux's
 * check_hw_exists and the SDM reset values): GP counter gp counting
 * cycles with EN and INT, close to overflow; Intel fixed counter 0
 * enabled in IA32_FIXED_CTR_CTRL; GLOBAL_CTRL at its reset value (GP
 * enables set); LVT PC unmasked for NMI; DEBUGCTL.FREEZE_PERFMON_ON_PMI
 * set where the CPU takes it. */
void model_firmware_handoff(struct pmu_model *m, mu32 gp);
/* Raw access the tests use to check the model itself (return 0 or -E_FAULT). */
int model_rdmsr(struct pmu_model *m, mu32 msr, mu64 *val);
int model_wrmsr(struct pmu_model *m, mu32 msr, mu64 val);
int model_rdpmc(struct pmu_model *m, mu32 ecx, mu64 *val);

#endif

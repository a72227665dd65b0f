/*
 * probe.c — find out, once, which PMU this CPU has and fill struct pmu_caps.
 *
 * Intel: CPUID leaf 0AH (SDM Vol. 3B 21.2.1-21.2.5 and Vol. 2A CPUID):
 *   EAX version, GP counters, GP width, length of the EBX event mask;
 *   EBX bit i set = architectural event i not available;
 *   EDX[4:0] fixed counters, EDX[12:5] their width (v2+);
 *   ECX (v5) bitmap of fixed counters: fixed i exists if ECX[i] or
 *   EDX[4:0] > i, so the bitmap can have holes.
 *   IA32_PERF_CAPABILITIES (if CPUID.1:ECX.PDCM) bit 13: full-width writes
 *   through IA32_A_PMCx (SDM 21.2.6).
 * AMD (APM Vol. 2 §13.2): 4 legacy counters on every K7+ part; CPUID
 *   8000_0001 ECX[23] PerfCtrExtCore gives 6 at 0xC0010200 (CTL/CTR pairs);
 *   CPUID 8000_0022 EAX[0] PerfMonV2 adds the global MSRs 0xC0000300-303 and
 *   EBX[3:0] counts the core counters.
 * Hybrids (SDM Vol. 2A CPUID 1AH, 23H): each core type enumerates its own
 *   counters in leaf 23H sub-leaf 1 (EAX GP bitmap, EBX fixed bitmap),
 *   e.g. Meteor Lake P-cores have fixed counters 0-3, E-cores 0-2; the
 *   probe runs on every CPU (pmu/cpus.c) so each gets its own caps.
 *   Alder and Raptor Lake have no leaf 23H and report the E-cores' 6 GP
 *   and 3 fixed counters in leaf 0AH on every core; their P-cores' 8 GP
 *   and fixed counter 3 come from a model table, each counter kept only
 *   if it takes a write (intel_hybrid_pcore).
 * Machines without a PMU: QEMU TCG reports CPUID.0AH as zero on Intel
 * models, and on AMD models (qemu64 is "AuthenticAMD") reads 0 from every
 * MSR and drops writes, so a counter that does not hold a written value is
 * "no PMU". Firmware may own counters at hand-off: as Linux's
 * check_hw_exists(), the probe first reads which ones are enabled
 * (PERFEVTSEL.EN, IA32_FIXED_CTR_CTRL), reports them, and tests only a free
 * one (a counting counter never holds what was written). RDPMC is probed
 * with rdpmc_safe: TCG raises #UD. DEBUGCTL's freeze bits are probed with
 * a safe write and a read-back: KVM #GPs on them whatever the perfmon
 * version says.
 */
#include "pmu/internal.h"

static void cpuid_r(u32 leaf, u32 sub, u32 r[4])
{
	pmu_hw_cpuid(leaf, sub, r);
}

static void none(struct pmu_caps *caps, const char *why)
{
	caps->kind = PMU_KIND_NONE;
	caps->nr_gp = caps->nr_fixed = 0;
	caps->fixed_bitmap = 0;
	caps->has_global = false;
	strlcpy(caps->none_reason, why, sizeof(caps->none_reason));
}

/*
 * Does a counter hold what we write? The value differs from the one it
 * had in its low 16 bits (emulators that read 0 and drop writes fail
 * whatever they held) and stays below 2^31, legal for legacy (sign-
 * extended) and full-width writes. The counter must not be counting.
 */
static bool counter_holds_value(u32 ctr_msr, u64 mask)
{
	u64 old, got;

	if (pmu_hw_rdmsr_safe(ctr_msr, &old))
		return false;
	u64 probe = ((old ^ 0xffff) & 0x7fffffff) | 1;
	if (pmu_hw_wrmsr_safe(ctr_msr, probe))
		return false;
	if (pmu_hw_rdmsr_safe(ctr_msr, &got))
		return false;
	pmu_hw_wrmsr_safe(ctr_msr, 0);
	return (got & mask) == probe;
}

/* Counters firmware left enabled (Linux check_hw_exists: PERFEVTSEL.EN,
 * and IA32_FIXED_CTR_CTRL's OS/USR bits per fixed counter). */
static u64 firmware_owned(const struct pmu_caps *caps)
{
	u64 owned = 0, v;

	for (u32 i = 0; i < caps->nr_gp; i++)
		if (!pmu_hw_rdmsr_safe(caps->gp_sel_base + i * caps->stride, &v) && (v & EVTSEL_EN))
			owned |= 1ull << i;
	if (caps->fixed_bitmap && !pmu_hw_rdmsr_safe(MSR_IA32_FIXED_CTR_CTRL, &v))
		for (u32 i = 0; i < caps->nr_fixed; i++)
			if ((caps->fixed_bitmap >> i & 1) &&
			    (v >> FIXED_CTRL_SHIFT(i) & (FIXED_CTRL_OS | FIXED_CTRL_USR)))
				owned |= 1ull << PMU_FIXED_BIT(i);
	return owned;
}

/* The first GP counter firmware does not own, tested as Linux does; false
 * with why set when there is none or it does not hold a value. */
static bool free_counter_works(struct pmu_caps *caps)
{
	for (u32 i = 0; i < caps->nr_gp; i++) {
		if (caps->fw_owned >> i & 1)
			continue;
		return counter_holds_value(caps->gp_ctr_base + i * caps->stride, caps->gp_mask);
	}
	return false;
}

/* A DEBUGCTL bit that takes a write and reads back set; DEBUGCTL is put
 * back as it was. */
static bool debugctl_bit_works(u64 bit)
{
	u64 old, got;

	if (pmu_hw_rdmsr_safe(MSR_IA32_DEBUGCTL, &old))
		return false;
	if (pmu_hw_wrmsr_safe(MSR_IA32_DEBUGCTL, old | bit))
		return false;
	bool ok = !pmu_hw_rdmsr_safe(MSR_IA32_DEBUGCTL, &got) && (got & bit);
	pmu_hw_wrmsr_safe(MSR_IA32_DEBUGCTL, old);
	return ok;
}

static bool model_in(const struct pmu_caps *caps, const u8 *models, u32 n)
{
	if (caps->family != 6)
		return false;
	for (u32 i = 0; i < n; i++)
		if (caps->model == models[i])
			return true;
	return false;
}

/*
 * Where an Intel core unmasks LVT PC in the PMI handler (enum pmu_lvt_ack;
 * family 6 models from SDM Vol. 4 ch. 2). Early: the big cores before
 * Haswell (Core 2, Nehalem, Westmere, Sandy Bridge, Ivy Bridge) and the
 * Atoms Bonnell, Silvermont, Airmont, Goldmont, Goldmont Plus, Tremont.
 * Mid: the Atoms from Gracemont on (Gracemont, Crestmont, Darkmont:
 * Clearwater Forest) and every hybrid's E-cores. Late: the rest, the big
 * cores from Haswell on and what is newer than this list.
 */
static enum pmu_lvt_ack intel_lvt_ack(const struct pmu_caps *caps)
{
	static const u8 early[] = {
		0x0f, 0x16, 0x17, 0x1d,			/* Core 2 */
		0x1a, 0x1e, 0x1f, 0x2e, 0x25, 0x2c, 0x2f, /* Nehalem, Westmere */
		0x2a, 0x2d, 0x3a, 0x3e,			/* Sandy Bridge, Ivy Bridge */
		0x1c, 0x26, 0x27, 0x35, 0x36,		/* Bonnell, Saltwell */
		0x37, 0x4a, 0x4d, 0x5a, 0x5d, 0x4c, 0x75, /* Silvermont, Airmont */
		0x5c, 0x5f, 0x7a,			/* Goldmont, Goldmont Plus */
		0x86, 0x96, 0x9c,			/* Tremont */
	};
	static const u8 mid[] = {
		0xbe,					/* Gracemont (Alder Lake-N) */
		0xaf, 0xb6,				/* Crestmont (Sierra Forest, Grand Ridge) */
		0xdd,					/* Darkmont (Clearwater Forest) */
	};

	if (caps->core_type == HYBRID_CORE_ATOM || model_in(caps, mid, ARRAY_SIZE(mid)))
		return PMU_ACK_MID;
	if (model_in(caps, early, ARRAY_SIZE(early)))
		return PMU_ACK_EARLY;
	return PMU_ACK_LATE;
}

/*
 * A counter the model table says this core has beyond CPUID.0AH, tested
 * as the probe tests a free counter: it takes a write (a counter firmware
 * runs exists), and GLOBAL_CTRL takes its enable bit. The safe accessors
 * take the #GP where it is absent (a hypervisor passing the P-core's
 * CPUID through without its counters). GLOBAL_CTRL is put back.
 */
static bool extra_counter_works(const struct pmu_caps *caps, bool fixed, u32 i)
{
	u32 ctl = fixed ? MSR_IA32_FIXED_CTR_CTRL : MSR_IA32_PERFEVTSEL0 + i;
	u64 bit = 1ull << (fixed ? PMU_FIXED_BIT(i) : i), v, got;

	if (pmu_hw_rdmsr_safe(ctl, &v))
		return false;
	bool running = fixed ? (v >> FIXED_CTRL_SHIFT(i) & (FIXED_CTRL_OS | FIXED_CTRL_USR)) :
			       (v & EVTSEL_EN);
	if (!running && !counter_holds_value(fixed ? MSR_IA32_FIXED_CTR0 + i : MSR_IA32_PMC0 + i,
					     fixed ? caps->fixed_mask : caps->gp_mask))
		return false;
	if (pmu_hw_rdmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, &v) ||
	    pmu_hw_wrmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, v | bit))
		return false;
	bool ok = !pmu_hw_rdmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, &got) && (got & bit);
	pmu_hw_wrmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, v);
	return ok;
}

/*
 * Alder Lake and Raptor Lake P-cores: 8 GP counters and fixed counter 3
 * (TOPDOWN.SLOTS) where CPUID.0AH says 6 and 0-2 on every core (Linux's
 * hybrid model tables give the P-cores the same). Only without leaf 23H,
 * which enumerates each core type's counters where it exists.
 */
static void intel_hybrid_pcore(struct pmu_caps *caps, bool leaf23)
{
	static const u8 adl_rpl[] = {
		0x97, 0x9a,				/* Alder Lake S, P */
		0xb7, 0xba, 0xbf,			/* Raptor Lake S, P, S refresh */
	};

	if (leaf23 || caps->core_type != HYBRID_CORE_CORE || caps->version < 2 ||
	    !model_in(caps, adl_rpl, ARRAY_SIZE(adl_rpl)))
		return;
	while (caps->nr_gp < MIN(8u, (u32)PMU_MAX_GP) &&
	       extra_counter_works(caps, false, caps->nr_gp)) {
		caps->beyond_cpuid |= 1ull << caps->nr_gp;
		caps->nr_gp++;
	}
	/* Fixed counter 3 counts TOPDOWN.SLOTS, architectural event 7, which
	 * leaf 0AH's EBX (7 bits long there) does not enumerate either. */
	if (caps->fixed_bitmap == 0x7 && PMU_MAX_FIXED > 3 && extra_counter_works(caps, true, 3)) {
		caps->fixed_bitmap |= 1u << 3;
		caps->nr_fixed = 4;
		caps->beyond_cpuid |= 1ull << PMU_FIXED_BIT(3);
		caps->arch_events_unavail &= ~(1u << 7);
	}
}

/* Broadwell client, GT3e, Xeon, Xeon D (Linux: bdw_limit_period). */
static bool intel_broadwell(const struct pmu_caps *caps)
{
	return caps->family == 6 && (caps->model == 0x3d || caps->model == 0x47 ||
				     caps->model == 0x4f || caps->model == 0x56);
}

static u64 width_mask(u32 bits)
{
	return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

static void probe_intel(struct pmu_caps *caps, u32 max_leaf, u32 ecx1)
{
	u32 r[4];

	if (max_leaf < CPUID_ARCH_PERFMON) {
		none(caps, "CPUID has no leaf 0AH: no architectural perfmon");
		return;
	}
	cpuid_r(CPUID_ARCH_PERFMON, 0, r);
	u32 a = r[0], b = r[1], c = r[2], d = r[3];
	if (!a && !b && !c && !d) {
		none(caps, "CPUID.0AH is all zero: QEMU TCG or a hypervisor without a vPMU");
		return;
	}
	caps->version = PERFMON_EAX_VERSION(a);
	caps->nr_gp = MIN(PERFMON_EAX_NR_GP(a), (u32)PMU_MAX_GP);
	caps->gp_width = PERFMON_EAX_GP_WIDTH(a);
	caps->arch_events_len = PERFMON_EAX_EBX_LEN(a);
	/* Events past the mask length are not enumerated: treat as absent. */
	caps->arch_events_unavail = b | (caps->arch_events_len >= 32 ? 0 :
					 ~0u << caps->arch_events_len);
	if (!caps->version || !caps->nr_gp || caps->gp_width < 32) {
		none(caps, "CPUID.0AH reports perfmon version 0 or no usable GP counters");
		return;
	}
	caps->kind = PMU_KIND_INTEL_ARCH;
	caps->gp_mask = width_mask(caps->gp_width);
	caps->gp_sel_base = MSR_IA32_PERFEVTSEL0;
	caps->gp_ctr_base = MSR_IA32_PMC0;
	caps->stride = 1;

	if (caps->version >= 2) {
		u32 nfixed = PERFMON_EDX_NR_FIXED(d);
		u32 bitmap = (nfixed >= 32 ? ~0u : (1u << nfixed) - 1);

		if (caps->version >= 5)
			bitmap |= c;		/* SDM 21.2.5: FxCtr[i] = ECX[i] || EDX[4:0] > i */
		bitmap &= (1u << PMU_MAX_FIXED) - 1;
		caps->fixed_bitmap = bitmap;
		caps->nr_fixed = bitmap ? 32 - (u32)__builtin_clz(bitmap) : 0;
		caps->fixed_width = PERFMON_EDX_FIXED_WIDTH(d);
		if (caps->fixed_bitmap && !caps->fixed_width)
			caps->fixed_width = caps->gp_width;	/* some hypervisors leave it 0 */
		caps->fixed_mask = width_mask(caps->fixed_width);
		caps->has_global = true;
		caps->global_ctrl = MSR_IA32_PERF_GLOBAL_CTRL;
		caps->global_status = MSR_IA32_PERF_GLOBAL_STATUS;
		caps->global_ack = MSR_IA32_PERF_GLOBAL_OVF_CTRL;
		/* SDM 17.4.1 / 21.2.x: DEBUGCTL.Freeze_PerfMon_On_PMI, "legacy"
		 * (clears GLOBAL_CTRL) in v2-v3, "streamlined" (CTR_FRZ) in v4+.
		 * Offered only if the bit takes a write: KVM #GPs on it. */
		caps->freeze = debugctl_bit_works(DEBUGCTL_FREEZE_PERFMON_ON_PMI);
		caps->freeze_streamlined = caps->freeze && caps->version >= 4;
		caps->anythread_deprecated = d & PERFMON_EDX_ANYTHREAD_DEPRECATED;
	}
	/* Hybrids: this core type's own counters (leaf 23H sub-leaf 1). */
	bool leaf23 = false;
	if (max_leaf >= CPUID_PERFMON_EXT) {
		cpuid_r(CPUID_EXT_FEATURES_7, 1, r);
		if (r[0] & CPUID7_1_EAX_PERFMON_EXT) {
			cpuid_r(CPUID_PERFMON_EXT, 0, r);
			if (r[0] & (1u << PERFMON_EXT_SUB_COUNTERS)) {
				leaf23 = true;
				cpuid_r(CPUID_PERFMON_EXT, PERFMON_EXT_SUB_COUNTERS, r);
				/* The GP bitmap is contiguous from 0 on every part
				 * so far; use its low run, never a hole. */
				u32 gp = r[0], n = 0;
				while (n < 32 && (gp >> n & 1))
					n++;
				if (n)
					caps->nr_gp = MIN(n, (u32)PMU_MAX_GP);
				if (caps->version >= 2) {
					caps->fixed_bitmap = r[1] & ((1u << PMU_MAX_FIXED) - 1);
					caps->nr_fixed = caps->fixed_bitmap ?
						32 - (u32)__builtin_clz(caps->fixed_bitmap) : 0;
				}
			}
		}
	}
	if (max_leaf >= CPUID_HYBRID) {
		cpuid_r(CPUID_HYBRID, 0, r);
		caps->core_type = HYBRID_EAX_CORE_TYPE(r[0]);
	}
	intel_hybrid_pcore(caps, leaf23);
	caps->lvt_ack = intel_lvt_ack(caps);
	caps->limit_inst_retired = intel_broadwell(caps);
	/* SMIs: MSR_SMI_COUNT (SDM Vol. 4, family 6 from Nehalem; KVM emulates
	 * it), read safely. FREEZE_WHILE_SMM where IA32_PERF_CAPABILITIES[12]
	 * says the CPU has it (SDM 17.4.1) and the bit takes a write. */
	u64 smi;
	caps->smi_count = !pmu_hw_rdmsr_safe(MSR_SMI_COUNT, &smi);
	if (ecx1 & CPUID1_ECX_PDCM) {
		u64 v;
		if (!pmu_hw_rdmsr_safe(MSR_IA32_PERF_CAPABILITIES, &v)) {
			caps->perf_capabilities = v;
			caps->fw_write = v & PERF_CAP_FW_WRITE;
		}
	}
	if (caps->fw_write)
		caps->gp_fw_base = MSR_IA32_A_PMC0;
	if (caps->version >= 2 && (caps->perf_capabilities & PERF_CAP_SMM_FREEZE))
		caps->freeze_smm = debugctl_bit_works(DEBUGCTL_FREEZE_WHILE_SMM);
	/*
	 * Legacy IA32_PMCx writes take EAX sign-extended from bit 31 (SDM
	 * 21.2.6), so -period fits only for period < 2^31; full-width writes
	 * reach the counter's width, less one bit so the reload stays negative.
	 */
	caps->max_period = caps->fw_write ? caps->gp_mask >> 1 : (1ull << 31) - 1;
	if (caps->fixed_bitmap && !caps->fw_write)
		caps->max_period = MIN(caps->max_period, caps->fixed_mask >> 1);

	caps->fw_owned = firmware_owned(caps);
	if (!(~caps->fw_owned & ((1ull << caps->nr_gp) - 1)))
		none(caps, "firmware has every GP counter enabled: none is free to test");
	else if (!free_counter_works(caps))
		none(caps, "a free IA32_PMCx does not hold a written value: the vPMU is not functional");
}

static void probe_amd(struct pmu_caps *caps, u32 max_ext)
{
	u32 r[4];
	u32 ecx81 = 0;

	if (caps->family < 6) {
		none(caps, "AMD before K7 has no performance counters");
		return;
	}
	if (max_ext >= CPUID_EXT_FEATURES) {
		cpuid_r(CPUID_EXT_FEATURES, 0, r);
		ecx81 = r[2];
	}
	caps->version = 1;
	caps->gp_width = AMD_CTR_WIDTH;
	caps->gp_mask = width_mask(AMD_CTR_WIDTH);
	/* The top bit tells "overflowed" on PMUs without a status register
	 * (Linux amd_pmu: max_period = 2^47 - 1). */
	caps->max_period = (1ull << (AMD_CTR_WIDTH - 1)) - 1;
	if (ecx81 & CPUID81_ECX_PERFCTR_CORE) {
		caps->kind = PMU_KIND_AMD_CORE_EXT;
		caps->nr_gp = AMD_NR_CORE_EXT;
		caps->gp_sel_base = MSR_F15H_PERF_CTL0;
		caps->gp_ctr_base = MSR_F15H_PERF_CTR0;
		caps->stride = 2;
		if (max_ext >= CPUID_AMD_PERFMON) {
			cpuid_r(CPUID_AMD_PERFMON, 0, r);
			if (r[0] & AMD_PERFMON_EAX_V2) {
				caps->kind = PMU_KIND_AMD_V2;
				caps->version = 2;
				if (AMD_PERFMON_EBX_NR_CORE(r[1]))
					caps->nr_gp = MIN(AMD_PERFMON_EBX_NR_CORE(r[1]), (u32)PMU_MAX_GP);
				caps->has_global = true;
				caps->global_ctrl = MSR_AMD_PERF_CNTR_GLOBAL_CTL;
				caps->global_status = MSR_AMD_PERF_CNTR_GLOBAL_STATUS;
				caps->global_ack = MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR;
			}
		}
	} else {
		caps->kind = PMU_KIND_AMD_LEGACY;
		caps->nr_gp = AMD_NR_LEGACY;
		caps->gp_sel_base = MSR_K7_EVNTSEL0;
		caps->gp_ctr_base = MSR_K7_PERFCTR0;
		caps->stride = 1;
	}
	/* AMD: after handling, before re-enabling (see pmu/amd.c on LVT PC). */
	caps->lvt_ack = PMU_ACK_MID;
	/* SMIs: PMCx02B on Zen 1-5 (pmu_smi_count), on a counter of its own. */
	caps->smi_count = caps->family >= AMD_SMI_FAMILY_FIRST &&
			  caps->family <= AMD_SMI_FAMILY_LAST && caps->nr_gp >= 2;
	caps->fw_owned = firmware_owned(caps);
	if (!(~caps->fw_owned & ((1ull << caps->nr_gp) - 1)))
		none(caps, "firmware has every counter enabled: none is free to test");
	else if (!free_counter_works(caps))
		none(caps, "the AMD counter MSRs do not hold a written value: "
		     "QEMU TCG or a hypervisor without a vPMU");
}

/*
 * RDPMC of every counter the caps name: #UD under TCG, #GP for an index the
 * CPU or a hypervisor does not take (SDM Vol. 2B RDPMC). The driver reads
 * counters with a plain RDPMC, also in NMI context, so one index that
 * faults turns RDPMC off for all of them: RDMSR reads then.
 */
static bool rdpmc_every_index_works(const struct pmu_caps *caps)
{
	u64 v;

	for (u32 i = 0; i < caps->nr_gp; i++)
		if (pmu_hw_rdpmc_safe(i, &v))
			return false;
	for (u32 i = 0; i < PMU_MAX_FIXED; i++)
		if ((caps->fixed_bitmap >> i & 1) && pmu_hw_rdpmc_safe(RDPMC_FIXED | i, &v))
			return false;
	return true;
}

int pmu_probe(struct pmu_caps *caps)
{
	u32 r[4];
	char vendor[13];

	memset(caps, 0, sizeof(*caps));
	cpuid_r(CPUID_VENDOR, 0, r);
	u32 max_leaf = r[0];
	memcpy(vendor + 0, &r[1], 4);
	memcpy(vendor + 4, &r[3], 4);
	memcpy(vendor + 8, &r[2], 4);
	vendor[12] = 0;
	caps->intel = !strcmp(vendor, "GenuineIntel");
	caps->amd = !strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine");

	u32 ecx1 = 0;
	if (max_leaf >= CPUID_FEATURES) {
		cpuid_r(CPUID_FEATURES, 0, r);
		u32 a = r[0];
		ecx1 = r[2];
		/* SDM Vol. 2A CPUID.01H:EAX display family/model. */
		caps->family = (a >> 8) & 0xf;
		caps->model = (a >> 4) & 0xf;
		if (caps->family == 0xf)
			caps->family += (a >> 20) & 0xff;
		if (caps->family == 0x6 || caps->family >= 0xf)
			caps->model |= ((a >> 16) & 0xf) << 4;
		caps->hypervisor = ecx1 & CPUID1_ECX_HYPERVISOR;
	}
	if (caps->hypervisor) {
		cpuid_r(CPUID_HYPERVISOR, 0, r);
		memcpy(caps->hypervisor_id + 0, &r[1], 4);
		memcpy(caps->hypervisor_id + 4, &r[2], 4);
		memcpy(caps->hypervisor_id + 8, &r[3], 4);
		caps->hypervisor_id[12] = 0;
	}
	cpuid_r(CPUID_EXT_MAX, 0, r);
	u32 max_ext = r[0] >= CPUID_EXT_MAX ? r[0] : 0;

	if (caps->intel)
		probe_intel(caps, max_leaf, ecx1);
	else if (caps->amd)
		probe_amd(caps, max_ext);
	else
		none(caps, "CPU vendor is neither Intel nor AMD");

	caps->rdpmc_ok = caps->kind != PMU_KIND_NONE && rdpmc_every_index_works(caps);
	return caps->kind == PMU_KIND_NONE ? -E_NODEV : 0;
}

bool pmu_cpu_quiesce(const struct pmu_caps *caps)
{
	u64 v;

	if (caps->kind != PMU_KIND_NONE) {
		for (u32 i = 0; i < caps->nr_gp; i++)
			pmu_hw_wrmsr_safe(caps->gp_sel_base + i * caps->stride, 0);
		if (caps->fixed_bitmap)
			pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, 0);
		if (caps->has_global) {
			pmu_hw_wrmsr_safe(caps->global_ctrl, 0);
			if (!pmu_hw_rdmsr_safe(caps->global_status, &v) && v)
				pmu_hw_wrmsr_safe(caps->global_ack, v);
		}
		/* Freeze on PMI off (pmu_open asks for it); freeze in SMM on
		 * from here on, so no count taken on this CPU, a run's or
		 * the harness's, includes firmware's SMM time. */
		if (caps->intel && (caps->freeze || caps->freeze_smm) &&
		    !pmu_hw_rdmsr_safe(MSR_IA32_DEBUGCTL, &v)) {
			u64 want = v & ~DEBUGCTL_FREEZE_PERFMON_ON_PMI;
			if (caps->freeze_smm)
				want |= DEBUGCTL_FREEZE_WHILE_SMM;
			if (want != v)
				pmu_hw_wrmsr_safe(MSR_IA32_DEBUGCTL, want);
		}
	}
	if (!caps->amd)
		return caps->intel;
	/* LFENCE is dispatch-serializing by design on families 0Fh and 11h;
	 * from 10h on, DE_CFG bit 1 makes it so (Linux init_amd sets it;
	 * where the MSR is absent the safe accessors take the #GP). */
	if (caps->family == 0xf || caps->family == 0x11)
		return true;
	if (pmu_hw_rdmsr_safe(MSR_AMD64_DE_CFG, &v))
		return false;
	if (!(v & DE_CFG_LFENCE_SERIALIZE) &&
	    pmu_hw_wrmsr_safe(MSR_AMD64_DE_CFG, v | DE_CFG_LFENCE_SERIALIZE))
		return false;
	return !pmu_hw_rdmsr_safe(MSR_AMD64_DE_CFG, &v) && (v & DE_CFG_LFENCE_SERIALIZE);
}

s64 pmu_smi_count(const struct pmu_caps *caps)
{
	u64 v;

	if (!caps->smi_count)
		return -1;
	if (caps->amd) {
		u32 last = caps->nr_gp - 1;
		u64 want = AMD_EVENT_LS_SMI_RX | EVTSEL_EN;
		if (pmu_hw_rdmsr_safe(caps->gp_sel_base + last * caps->stride, &v) ||
		    (v & (EVTSEL_RAW_AMD | EVTSEL_EN)) != want ||
		    pmu_hw_rdmsr_safe(caps->gp_ctr_base + last * caps->stride, &v))
			return -1;
		return (s64)(v & caps->gp_mask);
	}
	if (pmu_hw_rdmsr_safe(MSR_SMI_COUNT, &v))
		return -1;
	return (s64)(v & 0xffffffffull);	/* bits 31:0 count (SDM Vol. 4) */
}

/* IA32_FIXED_CTR_CTRL: 4 bits per counter, 1:0 its ring enables (SDM 21.2.2). */
#define FIXED_EN_BITS	(0x1111111111111111ull * (FIXED_CTRL_OS | FIXED_CTRL_USR))

void pmu_save_state(const struct pmu_caps *c, struct pmu_state *s)
{
	u64 v;

	memset(s, 0, sizeof(*s));
	s->pmu = c && c->kind != PMU_KIND_NONE;
	if (!s->pmu)
		return;
	s->ngp = MIN(c->nr_gp, (u32)PMU_STATE_GP_MAX);
	for (u32 i = 0; i < s->ngp; i++)
		s->sel_en[i] = !pmu_hw_rdmsr_safe(c->gp_sel_base + i * c->stride, &v) ?
			       v & EVTSEL_EN : 0;
	if (c->intel && c->fixed_bitmap && !pmu_hw_rdmsr_safe(MSR_IA32_FIXED_CTR_CTRL, &v))
		s->fixed_en = v & FIXED_EN_BITS;
	if (c->has_global && !pmu_hw_rdmsr_safe(c->global_ctrl, &v))
		s->global = v;
	if (c->intel && !pmu_hw_rdmsr_safe(MSR_IA32_DEBUGCTL, &v))
		s->debugctl = v;
}

static void state_changed(pmu_state_changed_fn changed, void *arg, const char *name, u64 was,
			  u64 now)
{
	if (changed)
		changed(arg, name, was, now);
}

void pmu_restore_state(const struct pmu_caps *c, const struct pmu_state *s,
		       pmu_state_changed_fn changed, void *arg)
{
	struct pmu_state now;
	u64 v;

	if (!s->pmu)
		return;
	pmu_save_state(c, &now);
	for (u32 i = 0; i < s->ngp; i++)
		if (now.sel_en[i] != s->sel_en[i] &&
		    !pmu_hw_rdmsr_safe(c->gp_sel_base + i * c->stride, &v)) {
			state_changed(changed, arg, "an event select's enable bit", s->sel_en[i],
				      now.sel_en[i]);
			pmu_hw_wrmsr_safe(c->gp_sel_base + i * c->stride,
					  (v & ~EVTSEL_EN) | s->sel_en[i]);
		}
	if (now.fixed_en != s->fixed_en && !pmu_hw_rdmsr_safe(MSR_IA32_FIXED_CTR_CTRL, &v)) {
		state_changed(changed, arg, "IA32_FIXED_CTR_CTRL enables", s->fixed_en,
			      now.fixed_en);
		pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, (v & ~FIXED_EN_BITS) | s->fixed_en);
	}
	if (now.global != s->global) {
		state_changed(changed, arg, "the PMU's global enables", s->global, now.global);
		pmu_hw_wrmsr_safe(c->global_ctrl, s->global);
	}
	if (now.debugctl != s->debugctl) {
		state_changed(changed, arg, "IA32_DEBUGCTL", s->debugctl, now.debugctl);
		pmu_hw_wrmsr_safe(MSR_IA32_DEBUGCTL, s->debugctl);
	}
}

const char *pmu_fw_owned_describe(const struct pmu_caps *caps, char *buf, size_t len)
{
	if (!caps->fw_owned)
		buf[0] = 0;
	else if (caps->kind == PMU_KIND_NONE)
		/* pmu_cpu_quiesce drives no PMU the probe refused. */
		ksnprintf(buf, len, "firmware left counters 0x%lx enabled; left as they are: "
			  "no PMU is driven (%s)", (unsigned long)caps->fw_owned,
			  caps->none_reason);
	else
		ksnprintf(buf, len, "firmware left counters 0x%lx enabled; switched off",
			  (unsigned long)caps->fw_owned);
	return buf;
}

const char *pmu_describe(const struct pmu_caps *caps, char *buf, size_t len)
{
	char hv[64] = "", fw[64] = "", core[16] = "", smi[80] = "", beyond[64] = "";

	/* Under KVM MSR_SMI_COUNT counts the SMIs injected into the guest,
	 * and a guest's PMCx02B runs only in the guest: the host's SMIs
	 * are not visible either way. */
	if (!caps->smi_count)
		strlcpy(smi, caps->amd ? ", SMIs not detectable (before Zen)" : ", SMIs not countable",
			sizeof(smi));
	else if (caps->amd || caps->hypervisor)
		ksnprintf(smi, sizeof(smi), ", SMIs counted%s%s", caps->amd ? " (PMCx02B)" : "",
			  caps->hypervisor ? ": the guest's only, host SMIs not visible" : "");

	if (caps->hypervisor)
		ksnprintf(hv, sizeof(hv), " (virtual PMU under hypervisor \"%s\")",
			  caps->hypervisor_id);
	if (caps->fw_owned)
		ksnprintf(fw, sizeof(fw), ", firmware had counters 0x%lx enabled",
			  (unsigned long)caps->fw_owned);
	if (caps->beyond_cpuid)
		ksnprintf(beyond, sizeof(beyond), ", counters 0x%lx beyond CPUID.0AH (write-tested)",
			  (unsigned long)caps->beyond_cpuid);
	if (caps->core_type == HYBRID_CORE_ATOM)
		strlcpy(core, " (E-core)", sizeof(core));
	else if (caps->core_type == HYBRID_CORE_CORE)
		strlcpy(core, " (P-core)", sizeof(core));
	switch (caps->kind) {
	case PMU_KIND_NONE:
		ksnprintf(buf, len, "none (%s); sampling will use the soft PMU", caps->none_reason);
		break;
	case PMU_KIND_INTEL_ARCH: {
		char fixed[48] = ", no fixed counters";
		u32 nfix = pmu_popcount(caps->fixed_bitmap);

		if (nfix == caps->nr_fixed && nfix)
			ksnprintf(fixed, sizeof(fixed), ", %u fixed x %u bits", nfix, caps->fixed_width);
		else if (nfix)
			ksnprintf(fixed, sizeof(fixed), ", fixed counters 0x%x x %u bits",
				  caps->fixed_bitmap, caps->fixed_width);
		ksnprintf(buf, len, "Intel arch perfmon v%u%s, %u GP counters x %u bits%s%s%s%s%s%s%s%s%s%s",
			  caps->version, core, caps->nr_gp, caps->gp_width, fixed, beyond,
			  caps->fw_write ? ", full-width writes" : ", 31-bit reloads",
			  caps->freeze ? (caps->freeze_streamlined ? ", streamlined freeze" :
					  ", freeze on PMI") : "",
			  caps->freeze_smm ? ", freeze in SMM" : "",
			  smi,
			  caps->arch_events_unavail & 0x7f ? ", some arch events masked" : "",
			  caps->rdpmc_ok ? "" : ", rdpmc faults", fw, hv);
		break;
	}
	default:
		ksnprintf(buf, len, "AMD %s, %u counters x %u bits%s%s%s%s",
			  caps->kind == PMU_KIND_AMD_V2 ? "PerfMonV2 (global ctl/status)" :
			  caps->kind == PMU_KIND_AMD_CORE_EXT ? "core counter extension" :
			  "legacy counters",
			  caps->nr_gp, caps->gp_width,
			  smi,
			  caps->rdpmc_ok ? "" : ", rdpmc faults", fw, hv);
		break;
	}
	return buf;
}

int pmu_event_msr_check(const struct pmu_caps *caps, u32 msr, char *err, size_t errlen)
{
	static const u32 known[] = { MSR_OFFCORE_RSP_0, MSR_OFFCORE_RSP_1, MSR_PEBS_LD_LAT,
				     MSR_PEBS_FRONTEND };
	bool is_known = false;
	u64 v;

	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		is_known |= msr == known[i];
	if (!is_known) {
		pmu_err(err, errlen, "MSR %#x is none of an event's extra MSRs (0x1a6, 0x1a7, "
			"0x3f6, 0x3f7)", msr);
		return -E_INVAL;
	}
	if (!caps || !caps->intel) {
		pmu_err(err, errlen, "MSR %#x is Intel's; this CPU is not Intel", msr);
		return -E_NODEV;
	}
	/* Read, then write back what was read: a CPU without it #GPs on either. */
	if (pmu_hw_rdmsr_safe(msr, &v) || pmu_hw_wrmsr_safe(msr, v)) {
		pmu_err(err, errlen, "this CPU (family %u model %#x) has no MSR %#x (#GP)",
			caps->family, caps->model, msr);
		return -E_NODEV;
	}
	return 0;
}

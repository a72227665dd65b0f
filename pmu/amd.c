/*
 * amd.c — AMD core performance counters (APM Vol. 2 §13.2): legacy
 * PerfEvtSel0-3/PerfCtr0-3 (0xC0010000/4, stride 1), the core extension's
 * six CTL/CTR pairs (0xC0010200, stride 2), and PerfMonV2's global
 * PerfCntrGlobalCtl/Status/StatusClr (0xC0000301/300/302).
 *
 * Counters are 48 bits and take full 48-bit writes. Without PerfMonV2 there
 * is no status register: overflow is read from each counter's top bit. The
 * local APIC does not mask LVT PC when it delivers a PMI; today's KVM does
 * not either for AMD guests, but hosts from a16eb25b09c0 until the fix that
 * limits the mask to Intel guests do: core.c rewrites it after every PMI.
 */
#include "pmu/internal.h"

const struct pmu_ops pmu_ops_amd_legacy = {
	.name = "amd-legacy",
	.enable_all = pmu_evtsel_enable_all,
	.disable_all = pmu_evtsel_disable_all,
	.get_status = pmu_topbit_status,
	.ack_status = pmu_no_ack,
	.program = pmu_gp_program,
};

/* Same behaviour; the MSR bases and stride differ, and caps has them. */
const struct pmu_ops pmu_ops_amd_core_ext = {
	.name = "amd-core-ext",
	.enable_all = pmu_evtsel_enable_all,
	.disable_all = pmu_evtsel_disable_all,
	.get_status = pmu_topbit_status,
	.ack_status = pmu_no_ack,
	.program = pmu_gp_program,
};

const struct pmu_ops pmu_ops_amd_v2 = {
	.name = "amd-perfmon-v2",
	/* PerfCntrGlobalCtl, PerfCntrGlobalStatus, PerfCntrGlobalStatusClr. */
	.enable_all = pmu_global_enable_all,
	.disable_all = pmu_global_disable_all,
	.get_status = pmu_global_status,
	.ack_status = pmu_global_ack,
	.program = pmu_gp_program,
};

/*
 * cpus.c — the PMU of every CPU: its probe at
 * start-up (caps differ per core type on hybrids: SDM CPUID 1AH, 23H),
 * putting each CPU's PMU in a known state, and the default LVT PC hooks.
 */
#include "pmu/internal.h"
#include "kernel/smp.h"
#include "kernel/platform/apic.h"

struct pmu_caps pmu_boot_caps;
static struct pmu_caps cpu_caps[MAX_CPUS];
static bool cpu_probed[MAX_CPUS];
static bool cpu_lfence[MAX_CPUS];	/* pmu_cpu_quiesce's answer per CPU */
static bool boot_lfence;

static void print_quiesce(const char *who, const struct pmu_caps *caps, bool lfence)
{
	char fw[192];

	if (caps->fw_owned)
		kprintf("pmu: %s%s\n", who, pmu_fw_owned_describe(caps, fw, sizeof(fw)));
	if (caps->amd && (caps->family == 0xf || caps->family == 0x11))
		kprintf("pmu: %slfence serializes (family 0x%x: by design)\n", who, caps->family);
	else if (caps->amd)
		kprintf("pmu: %slfence %s (DE_CFG.LFENCE_SERIALIZE %s)%s\n", who,
			lfence ? "serializes" : "may not serialize", lfence ? "set" : "not settable",
			lfence ? "" : "; bench serializes its reads with cpuid");
}

void pmu_init(void)
{
	char line[256];

	pmu_probe(&pmu_boot_caps);
	bool lfence = pmu_cpu_quiesce(&pmu_boot_caps);
	boot_lfence = lfence;
	cpu_lfence[0] = lfence;
	cpu_caps[0] = pmu_boot_caps;
	cpu_probed[0] = true;
	kprintf("pmu: %s\n", pmu_describe(&pmu_boot_caps, line, sizeof(line)));
	print_quiesce("", &pmu_boot_caps, lfence);
}
BOOT_HOOK(BOOT_PLATFORM, pmu_init);

/* Caps that change what a run may program (counters, widths, kind). */
static bool same_pmu(const struct pmu_caps *a, const struct pmu_caps *b)
{
	return a->kind == b->kind && a->version == b->version && a->nr_gp == b->nr_gp &&
	       a->gp_width == b->gp_width && a->fixed_bitmap == b->fixed_bitmap &&
	       a->fixed_width == b->fixed_width && a->fw_write == b->fw_write &&
	       a->freeze == b->freeze && a->core_type == b->core_type &&
	       a->arch_events_unavail == b->arch_events_unavail;
}

void pmu_ap_init(u32 cpu)
{
	struct pmu_caps caps;
	char line[256], who[24];

	if (cpu >= MAX_CPUS)
		return;
	pmu_probe(&caps);
	bool lfence = pmu_cpu_quiesce(&caps);
	cpu_caps[cpu] = caps;
	cpu_lfence[cpu] = lfence;
	__atomic_store_n(&cpu_probed[cpu], true, __ATOMIC_RELEASE);
	ksnprintf(who, sizeof(who), "cpu %u: ", cpu);
	if (!same_pmu(&caps, &pmu_boot_caps))
		kprintf("pmu: %s%s\n", who, pmu_describe(&caps, line, sizeof(line)));
	/* Said once at boot; a CPU says it again only where it differs. */
	if (caps.fw_owned || lfence != boot_lfence)
		print_quiesce(who, &caps, lfence);
}
CPU_UP_HOOK(pmu_ap_init);

const struct pmu_caps *pmu_cpu_caps(u32 cpu)
{
	if (cpu < MAX_CPUS && __atomic_load_n(&cpu_probed[cpu], __ATOMIC_ACQUIRE))
		return &cpu_caps[cpu];
	return &pmu_boot_caps;
}

bool pmu_cpu_lfence_serializes(u32 cpu)
{
	if (cpu < MAX_CPUS && __atomic_load_n(&cpu_probed[cpu], __ATOMIC_ACQUIRE))
		return cpu_lfence[cpu];
	return boot_lfence;
}

/* LVT PC through the local APIC driver (kernel/platform/apic.h). */
u32 pmu_lvtpc_read(void)
{
	return apic_lvtpc_read();
}

void pmu_lvtpc_write(u32 v)
{
	apic_lvtpc_write(v);
}

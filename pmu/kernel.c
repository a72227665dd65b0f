/*
 * kernel.c — the kernel-only part of pmu/: the boot-time probe and the
 * default LVT PC hooks.
 */
#include "pmu/internal.h"

struct pmu_caps pmu_boot_caps;

void pmu_init(void)
{
	char line[256];

	pmu_probe(&pmu_boot_caps);
	kprintf("pmu: %s\n", pmu_describe(&pmu_boot_caps, line, sizeof(line)));
}

/*
 * The local APIC driver (kernel/) defines the real pmu_lvtpc_read/write,
 * which override these. Until it exists, PMIs cannot be routed: the read
 * reports the entry masked and the write does nothing.
 */
__attribute__((weak)) u32 pmu_lvtpc_read(void)
{
	return LVT_MASKED | LVT_DELIVERY_NMI;
}

__attribute__((weak)) void pmu_lvtpc_write(u32 v)
{
	(void)v;
}

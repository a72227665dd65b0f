/*
 * acpi_init.c — the kernel side of kernel/platform/acpi.c: find the RSDP, hand the
 * parser the identity map, probe the default IOAPIC and HPET when the
 * tables say nothing, and print what was found.
 */
#include "kernel/kernel.h"
#include "kernel/platform/acpi.h"
#include <uapi/bootinfo.h>

/* IOAPIC indirect registers (82093AA datasheet, 3.1): select, then window. */
#define IOAPIC_IOREGSEL		0x00
#define IOAPIC_IOWIN		0x10
#define IOAPIC_REG_VER		0x01
/* HPET General Capabilities and ID (IA-PC HPET 1.0a, 2.3.4), 64 bits at 0. */
#define HPET_GCAP_ID		0x00

/* Everything the kernel maps lies in the lower canonical half. */
#define IDENTITY_LIMIT		(1ull << 47)

static struct acpi_info info;
const struct acpi_info *acpi = &info;

/* Firmware memory through the identity map (kernel/paging.c), only where
 * it is present: an unmapped or absurd address yields NULL, not a #PF.
 * Page 0 is unmapped (the NULL guard), so the BDA's EBDA pointer cannot be
 * read and the RSDP search covers only 0xe0000-0xfffff; that search is a
 * last resort anyway, as UEFI and PVH both hand the RSDP over. */
static const void *map_identity(u64 phys, size_t len, void *ctx)
{
	(void)ctx;
	if (!len || phys >= IDENTITY_LIMIT || len > IDENTITY_LIMIT - phys)
		return NULL;
	return va_mapped(phys, len) ? (const void *)phys : NULL;
}

static void print_warning(const char *msg, void *ctx)
{
	(void)ctx;
	kprintf("acpi: %s\n", msg);
}

static u32 mmio_read32(u64 addr)
{
	return *(volatile const u32 *)addr;
}

static u32 probe_ioapic_version(void)
{
	if (!va_mapped(ACPI_DEFAULT_IOAPIC, IOAPIC_IOWIN + 4))
		return ~0u;
	*(volatile u32 *)(ACPI_DEFAULT_IOAPIC + IOAPIC_IOREGSEL) = IOAPIC_REG_VER;
	return mmio_read32(ACPI_DEFAULT_IOAPIC + IOAPIC_IOWIN);
}

static u64 probe_hpet_gcap(void)
{
	if (!va_mapped(ACPI_DEFAULT_HPET, 8))
		return ~0ull;
	/* Two 32-bit reads: every HPET accepts them (1.0a, 2.3.1). */
	return mmio_read32(ACPI_DEFAULT_HPET + HPET_GCAP_ID) |
	       (u64)mmio_read32(ACPI_DEFAULT_HPET + HPET_GCAP_ID + 4) << 32;
}

/* CPUID.01H:EBX[31:24], the initial APIC id of the CPU running this. */
static u32 boot_apic_id(void)
{
	u32 a, b, c, d;

	cpuid(1, &a, &b, &c, &d);
	return b >> 24;
}

static const char *inti_trigger(u16 flags)
{
	switch (flags & ACPI_INTI_TRIGGER_MASK) {
	case ACPI_INTI_TRIGGER_EDGE: return ",edge";
	case ACPI_INTI_TRIGGER_LEVEL: return ",level";
	default: return "";
	}
}

void acpi_print_summary(void)
{
	const struct acpi_madt *m = &info.madt;
	const struct acpi_hpet *h = &info.hpet;
	const struct acpi_fadt *f = &info.fadt;

	if (info.present) {
		kprintf("acpi: RSDP rev %u at %#lx (from %s), %s at %#lx, OEM %s; tables:",
			info.rsdp_revision, info.rsdp, info.rsdp_source,
			info.root == ACPI_ROOT_XSDT ? "XSDT" : "RSDT", info.root_addr, info.oem_id);
		for (u32 i = 0; i < info.ntables; i++)
			kprintf(" %s", info.tables[i]);
		kprintf("\n");
	} else {
		kprintf("acpi: no usable ACPI tables; using the documented defaults\n");
	}

	kprintf("acpi: %u CPU%s%s (APIC ids", m->cpus_enabled, m->cpus_enabled == 1 ? "" : "s",
		m->src == ACPI_SRC_DEFAULT ? " assumed, no MADT" : "");
	for (u32 i = 0; i < m->ncpus && i < 16; i++)
		if (m->cpu[i].enabled)
			kprintf(" %u", m->cpu[i].apic_id);
	kprintf("%s)", m->ncpus > 16 ? " ..." : "");
	if (m->cpus_listed > m->cpus_enabled)
		kprintf(" + %u hot-pluggable", m->cpus_listed - m->cpus_enabled);
	kprintf(", local APIC at %#lx%s\n", m->lapic_addr,
		m->lapic_addr_override ? " (64-bit override)" : "");

	kprintf("acpi: %s", m->pcat_compat ? "8259 PICs present" : "no 8259 PICs");
	for (u32 i = 0; i < m->nioapics; i++)
		kprintf(", IOAPIC id %u at %#x GSI %u", m->ioapic[i].id, m->ioapic[i].addr,
			m->ioapic[i].gsi_base);
	if (!m->nioapics)
		kprintf(", no IOAPIC");
	kprintf(", %u override%s", m->overrides_listed, m->overrides_listed == 1 ? "" : "s");
	for (u32 i = 0; i < m->noverrides; i++)
		kprintf("%s%u->%u%s", i ? " " : " (", m->override[i].source, m->override[i].gsi,
			inti_trigger(m->override[i].flags));
	kprintf("%s", m->noverrides ? ")" : "");
	for (u32 i = 0; i < m->nlapic_nmis; i++) {
		if (m->lapic_nmi[i].all_cpus)
			kprintf(", NMI on LINT%u (all CPUs)", m->lapic_nmi[i].lint);
		else
			kprintf(", NMI on LINT%u (UID %u)", m->lapic_nmi[i].lint, m->lapic_nmi[i].uid);
	}
	for (u32 i = 0; i < m->nnmi_sources; i++)
		kprintf(", NMI source GSI %u", m->nmi_source[i].gsi);
	kprintf("\n");

	kprintf("acpi: ");
	if (h->src != ACPI_SRC_NONE)
		kprintf("HPET at %#lx (%u comparators%s)", h->addr, h->comparators,
			h->src == ACPI_SRC_DEFAULT ? ", probed, no table" : "");
	else
		kprintf("no HPET");
	for (u32 i = 0; i < info.nmcfg; i++)
		kprintf(", MCFG %#lx seg %u buses %u-%u", info.mcfg[i].base, info.mcfg[i].segment,
			info.mcfg[i].bus_start, info.mcfg[i].bus_end);
	if (!info.nmcfg)
		kprintf(", no MCFG");
	if (f->pm_timer_port)
		kprintf(", PM timer port %#x (%s-bit)\n", f->pm_timer_port,
			f->pm_timer_32bit ? "32" : "24");
	else
		kprintf(", PM timer unknown%s\n", f->hw_reduced ? " (HW-reduced ACPI)" : "");
}

void acpi_init(void)
{
	const char *where = "boot_info";
	u64 rsdp = boot_info->acpi_rsdp;
	int rc = -E_NOENT;

	if (rsdp) {
		rc = acpi_parse(rsdp, map_identity, NULL, print_warning, &info);
		if (rc == -E_INVAL)
			kprintf("acpi: the RSDP from the boot loader is unusable; searching the BIOS areas\n");
	}
	if (rc == -E_INVAL || !rsdp) {
		u64 found = acpi_find_rsdp(map_identity, NULL, &where);
		if (found && found != rsdp)
			rc = acpi_parse(found, map_identity, NULL, print_warning, &info);
		else if (!found)
			kprintf("acpi: no RSDP (none handed over, none in the EBDA or 0xe0000-0xfffff)\n");
	}
	if (info.rsdp)
		info.rsdp_source = where;

	bool need_ioapic = info.madt.src == ACPI_SRC_NONE;
	bool need_hpet = info.hpet.src == ACPI_SRC_NONE;
	acpi_apply_defaults(&info, boot_apic_id(), need_ioapic ? probe_ioapic_version() : ~0u,
			    need_hpet ? probe_hpet_gcap() : ~0ull);
}

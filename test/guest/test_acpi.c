/*
 * test_acpi — what acpi_init found in QEMU's q35 tables, checked against
 * the machine itself: the RSDP checksums again, the MADT against the -smp
 * count and the CPU's own APIC base, the IOAPIC, HPET and PM timer by
 * touching their registers, and the MCFG window by reading the host
 * bridge's configuration space through it.
 *
 * Arguments (after -- on the command line):
 *   cpus=N   CPUs QEMU was given (-smp N); default 1
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "kernel/platform/acpi.h"
#include "test/guest/report.h"
#include <uapi/bootinfo.h>

#define IOAPIC_IOREGSEL		0x00
#define IOAPIC_IOWIN		0x10
#define IOAPIC_REG_ID		0x00
#define IOAPIC_REG_VER		0x01
#define HPET_GCAP_ID		0x00
#define PCI_VENDOR_ID		0x00
#define APIC_BASE_ADDR_MASK	0xffffff000ul		/* IA32_APIC_BASE[35:12] */

static const void *map_checked(u64 phys, size_t len, void *ctx)
{
	(void)ctx;
	if (!len || phys >= (1ul << 47) || len > (1ul << 47) - phys)
		return NULL;
	return va_mapped(phys, len) ? (const void *)phys : NULL;
}

static u8 sum(const u8 *p, u32 n)
{
	u8 s = 0;

	while (n--)
		s += *p++;
	return s;
}

static u32 mmio32(u64 addr)
{
	return *(volatile const u32 *)addr;
}

static u32 ioapic_read(u64 base, u32 reg)
{
	*(volatile u32 *)(base + IOAPIC_IOREGSEL) = reg;
	return mmio32(base + IOAPIC_IOWIN);
}

static void check_rsdp(void)
{
	const u8 *r = map_checked(acpi->rsdp, 20, NULL);
	bool v1 = r && !memcmp(r, "RSD PTR ", 8) && sum(r, 20) == 0;

	report(acpi->present && v1, "RSDP at %#lx (from %s), rev %u, checksum valid, %s, OEM \"%s\"",
	       acpi->rsdp, acpi->rsdp_source ? acpi->rsdp_source : "?", acpi->rsdp_revision,
	       acpi->root == ACPI_ROOT_XSDT ? "XSDT" : acpi->root == ACPI_ROOT_RSDT ? "RSDT" : "no root",
	       acpi->oem_id);
	if (v1 && acpi->rsdp_revision >= 2) {
		const u8 *x = map_checked(acpi->rsdp, 36, NULL);
		u32 len = x ? x[20] | x[21] << 8 | x[22] << 16 | (u32)x[23] << 24 : 0;
		x = len >= 36 && len <= 4096 ? map_checked(acpi->rsdp, len, NULL) : NULL;
		report(x && sum(x, len) == 0 && acpi->root == ACPI_ROOT_XSDT,
		       "RSDP rev %u: extended checksum valid over %u bytes, XSDT used",
		       acpi->rsdp_revision, len);
	}

	/* Under PVH the BIOS (qboot) put the RSDP in the legacy area, so the
	 * search (5.2.5.1) must find the same one. UEFI firmware need not put
	 * one there (5.2.5.2): the loader must have handed it over. */
	if (boot_info->source == BOOT_SOURCE_PVH) {
		const char *where = NULL;
		u64 found = acpi_find_rsdp(map_checked, NULL, &where);
		report(found == acpi->rsdp, "BIOS-area search finds the same RSDP (%#lx in %s)",
		       found, where ? where : "nowhere");
	} else {
		report(acpi->rsdp && acpi->rsdp == boot_info->acpi_rsdp,
		       "the loader handed over the RSDP used (%#lx)", boot_info->acpi_rsdp);
	}

	report(acpi->nwarnings == 0, "no parser warnings (%u%s%s)", acpi->nwarnings,
	       acpi->nwarnings ? ", first: " : "", acpi->nwarnings ? acpi->warning[0] : "");
}

static void check_madt(u32 want_cpus)
{
	const struct acpi_madt *m = &acpi->madt;
	u32 a, b, c, d;
	bool distinct = true, boot_found = false;

	report(m->src == ACPI_SRC_TABLE, "MADT read from its table");
	cpuid(1, &a, &b, &c, &d);
	u32 boot_id = b >> 24;
	for (u32 i = 0; i < m->ncpus; i++) {
		for (u32 j = 0; j < i; j++)
			distinct &= m->cpu[i].apic_id != m->cpu[j].apic_id;
		boot_found |= m->cpu[i].enabled && m->cpu[i].apic_id == boot_id;
	}
	report(m->cpus_enabled == want_cpus && m->ncpus == want_cpus && m->cpus_listed == want_cpus,
	       "MADT lists %u enabled CPUs (%u stored, %u listed), -smp %u", m->cpus_enabled,
	       m->ncpus, m->cpus_listed, want_cpus);
	report(distinct, "APIC ids are distinct");
	report(boot_found, "the boot CPU's APIC id %u is listed", boot_id);

	u64 apic_base = 0;
	int rc = rdmsr_safe(MSR_IA32_APIC_BASE, &apic_base);
	report(m->lapic_addr == ACPI_DEFAULT_LAPIC && !rc &&
	       (apic_base & APIC_BASE_ADDR_MASK) == m->lapic_addr,
	       "local APIC at %#lx, IA32_APIC_BASE says %#lx", m->lapic_addr,
	       apic_base & APIC_BASE_ADDR_MASK);
	report(m->pcat_compat, "PCAT_COMPAT: legacy 8259 PICs present");

	const struct acpi_ioapic *io = NULL;
	for (u32 i = 0; i < m->nioapics; i++)
		if (m->ioapic[i].addr == ACPI_DEFAULT_IOAPIC)
			io = &m->ioapic[i];
	report(io && io->gsi_base == 0, "IOAPIC at 0xfec00000 with GSI base 0 (%u IOAPICs)",
	       m->nioapics);
	if (io) {
		u32 id = (ioapic_read(io->addr, IOAPIC_REG_ID) >> 24) & 0xf;
		u32 ver = ioapic_read(io->addr, IOAPIC_REG_VER);
		report(id == io->id && acpi_ioapic_version_sane(ver),
		       "IOAPIC answers: id %u (MADT %u), version %#x, %u pins", id, io->id,
		       ver & 0xff, ((ver >> 16) & 0xff) + 1);
	} else {
		report(false, "IOAPIC registers: no IOAPIC to read");
	}

	bool irq0 = false;
	for (u32 i = 0; i < m->noverrides; i++)
		irq0 |= m->override[i].bus == 0 && m->override[i].source == 0 &&
			m->override[i].gsi == 2;
	report(irq0, "interrupt source override ISA IRQ0 -> GSI 2 (%u overrides)", m->noverrides);

	bool lint1 = false;
	for (u32 i = 0; i < m->nlapic_nmis; i++)
		lint1 |= m->lapic_nmi[i].all_cpus && m->lapic_nmi[i].lint == 1;
	report(lint1, "local APIC NMI on LINT1 for all CPUs");
}

static void check_hpet(void)
{
	const struct acpi_hpet *h = &acpi->hpet;

	report(h->src == ACPI_SRC_TABLE && h->addr == ACPI_DEFAULT_HPET && h->comparators >= 3,
	       "HPET table: block at %#lx, %u comparators, %s counter", h->addr, h->comparators,
	       h->counter_64bit ? "64-bit" : "32-bit");
	if (h->addr && va_mapped(h->addr, 8)) {
		u64 cap = mmio32(h->addr + HPET_GCAP_ID) | (u64)mmio32(h->addr + HPET_GCAP_ID + 4) << 32;
		report(acpi_hpet_gcap_sane(cap) && (u32)cap == h->block_id,
		       "HPET GCAP_ID %#lx agrees with the table's block id %#x", cap, h->block_id);
	} else {
		report(false, "HPET GCAP_ID: block not mapped");
	}
}

static void check_mcfg(void)
{
	report(acpi->nmcfg >= 1 && acpi->mcfg[0].base && !(acpi->mcfg[0].base & 0xfffff) &&
	       acpi->mcfg[0].segment == 0 && acpi->mcfg[0].bus_start == 0,
	       "MCFG: ECAM at %#lx, segment %u, buses %u-%u", acpi->mcfg[0].base,
	       acpi->mcfg[0].segment, acpi->mcfg[0].bus_start, acpi->mcfg[0].bus_end);
	/* Bus 0 device 0 function 0 (the host bridge) sits at the window's
	 * base (PCIe Base Spec 7.2.2): its vendor id must read back. */
	u64 cfg = acpi->mcfg[0].base;
	u16 vendor = cfg && va_mapped(cfg, 4) ? (u16)mmio32(cfg + PCI_VENDOR_ID) : 0xffff;
	report(vendor != 0xffff && vendor != 0, "ECAM read of 00:00.0: vendor %#x", vendor);
}

static void check_pm_timer(void)
{
	const struct acpi_fadt *f = &acpi->fadt;
	u16 port = f->pm_timer_port;

	report(f->src == ACPI_SRC_TABLE && !f->hw_reduced && port,
	       "FADT rev %u: PM timer at port %#x (%s-bit, from %s)", f->revision, port,
	       f->pm_timer_32bit ? "32" : "24", f->pm_timer_from_x ? "X_PM_TMR_BLK" : "PM_TMR_BLK");
	if (!port) {
		report(false, "PM timer counts: no port");
		return;
	}
	u32 mask = f->pm_timer_32bit ? 0xffffffffu : 0xffffffu;
	u32 t0 = inl(port) & mask, t1 = t0;
	for (u32 spins = 0; spins < 10000000 && t1 == t0; spins++)
		t1 = inl(port) & mask;
	report(t1 != t0 && !(t0 & ~mask), "PM timer counts (%#x -> %#x)", t0, t1);
}

static int test_acpi_main(int argc, char **argv)
{
	const char *arg = test_arg(argc, argv, "cpus");
	u64 cpus = 1;

	if (arg && (parse_u64(arg, &cpus) || !cpus || cpus > ACPI_MAX_CPUS)) {
		kprintf("test_acpi: cpus=%s is not a CPU count\n", arg);
		return EXIT_USAGE;
	}
	check_rsdp();
	check_madt((u32)cpus);
	check_hpet();
	check_mcfg();
	check_pm_timer();
	return report_summary();
}

APP(test_acpi, "guest test: ACPI tables", test_acpi_main, APP_TEST);

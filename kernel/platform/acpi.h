/*
 * acpi.h — the ACPI tables the kernel needs, read once at boot.
 *
 * What is read (ACPI 6.5 unless noted):
 *   RSDP (5.2.5) -> XSDT (5.2.8), or the RSDT (5.2.7) when there is no
 *   XSDT or it is unusable; from the tables it lists:
 *     APIC  MADT (5.2.12): local APIC address (and the 64-bit override),
 *           CPUs (local APIC and x2APIC entries), IOAPICs, interrupt
 *           source overrides, NMI sources, local APIC NMI pins;
 *     HPET  IA-PC HPET Specification 1.0a, 3.2.4 (a signature ACPI 6.5
 *           5.2.6 reserves for other specifications);
 *     MCFG  PCI Firmware Specification 3.0, 4.1.2 (PCIe ECAM windows);
 *     FACP  FADT (5.2.9): the PM timer port and width;
 *     SPCR  Microsoft's Serial Port Console Redirection Table, revisions
 *           1-4 (a signature ACPI 6.5 5.2.6 reserves for it): the UART the
 *           firmware's own console uses, when it is a 16550-compatible one.
 *
 * Trust: nothing in firmware memory is believed. The parser reads memory
 * only through a map callback, never outside a range it was granted; it
 * checks every checksum, rejects table lengths below the header or above
 * ACPI_TABLE_MAX, checks every MADT/MCFG entry against the table end,
 * bounds every loop, and stores at most the fixed array sizes below (more
 * entries are counted, not stored). A bad table is skipped with a warning
 * and the others are still used; nothing here panics or loops on bad data.
 *
 * Fallbacks (acpi_apply_defaults; the kernel prints which applied):
 *   - no RSDP, or neither XSDT nor RSDT usable: no ACPI at all, and so
 *     the rows below all apply;
 *   - no usable MADT: one CPU (the boot CPU, by its CPUID initial APIC
 *     id), xAPIC at 0xfee00000, legacy PICs assumed (PCAT_COMPAT), one
 *     IOAPIC id 0 at 0xfec00000 with GSI base 0 if its version register
 *     answers sanely, no interrupt source overrides (ISA IRQ n = GSI n),
 *     no NMI entries;
 *   - no usable HPET table: the HPET at 0xfed00000 if its capability
 *     register looks sane (revision non-zero, period 1..100 ns);
 *   - no usable FADT: PM timer unknown (port 0);
 *   - no usable MCFG: no ECAM window (PCI config through ports 0xcf8/0xcfc);
 *   - no usable SPCR (absent, redirection disabled, or a UART that is not
 *     16550-compatible): the console UART is looked for elsewhere
 *     (kernel/dev/serial.c).
 */
#ifndef BAREPERF_KERNEL_ACPI_H
#define BAREPERF_KERNEL_ACPI_H

#include <stddef.h>
#include "kernel/x86.h"

#define ACPI_MAX_CPUS		64
#define ACPI_MAX_IOAPICS	8
#define ACPI_MAX_OVERRIDES	16
#define ACPI_MAX_NMI_SOURCES	8
#define ACPI_MAX_LAPIC_NMIS	8
#define ACPI_MAX_MCFG		4
#define ACPI_MAX_TABLES		32	/* signatures remembered for the log */
#define ACPI_MAX_WARNINGS	8
#define ACPI_WARNING_LEN	96
#define ACPI_TABLE_MAX		(1u << 20)	/* longer tables are refused */
#define ACPI_MAX_ROOT_ENTRIES	256	/* tables looked at in the XSDT/RSDT */

/* Defaults (see the fallbacks above). */
#define ACPI_DEFAULT_LAPIC	0xfee00000ul
#define ACPI_DEFAULT_IOAPIC	0xfec00000ul
#define ACPI_DEFAULT_HPET	0xfed00000ul

/* The legacy BIOS areas searched for the RSDP (5.2.5.1). */
#define ACPI_BDA_EBDA_SEG	0x40e	/* u16: real-mode segment of the EBDA */
#define ACPI_EBDA_SCAN_LEN	1024
#define ACPI_BIOS_AREA		0xe0000ul
#define ACPI_BIOS_AREA_LEN	0x20000u

/*
 * Readable bytes for [phys, phys + len), or NULL. The parser never reads
 * outside a range it was granted; a pointer must stay valid until the
 * parse returns (the kernel's identity map; the host tests' copies).
 */
typedef const void *(*acpi_map_fn)(u64 phys, size_t len, void *ctx);

enum acpi_root {
	ACPI_ROOT_NONE = 0,
	ACPI_ROOT_RSDT = 1,
	ACPI_ROOT_XSDT = 2,
};

/* Where a section's data came from. */
enum acpi_src {
	ACPI_SRC_NONE = 0,	/* nothing usable: the field values are 0 */
	ACPI_SRC_TABLE = 1,	/* read from a valid ACPI table */
	ACPI_SRC_DEFAULT = 2,	/* filled by acpi_apply_defaults */
};

/* MADT local APIC / x2APIC flags (5.2.12.2, 5.2.12.12). */
#define ACPI_LAPIC_ENABLED		(1u << 0)
#define ACPI_LAPIC_ONLINE_CAPABLE	(1u << 1)
/* MADT flags (5.2.12). */
#define ACPI_MADT_PCAT_COMPAT		(1u << 0)
/* MPS INTI flags (5.2.12.5). */
#define ACPI_INTI_POLARITY_MASK		0x3
#define   ACPI_INTI_POLARITY_BUS	0x0
#define   ACPI_INTI_POLARITY_HIGH	0x1
#define   ACPI_INTI_POLARITY_LOW	0x3
#define ACPI_INTI_TRIGGER_MASK		0xc
#define   ACPI_INTI_TRIGGER_BUS		0x0
#define   ACPI_INTI_TRIGGER_EDGE	0x4
#define   ACPI_INTI_TRIGGER_LEVEL	0xc

struct acpi_cpu {
	u32 apic_id;		/* local APIC id (8 bits) or x2APIC id */
	u32 uid;		/* ACPI processor UID */
	bool enabled;		/* usable now */
	bool online_capable;	/* disabled, but may be brought online */
	bool x2apic;		/* from a type 9 (x2APIC) entry */
};

struct acpi_ioapic {
	u8  id;
	u32 addr;		/* physical MMIO base */
	u32 gsi_base;		/* first global system interrupt it serves */
};

struct acpi_override {		/* ISA IRQ `source` arrives at GSI `gsi` */
	u8  bus;		/* 0 = ISA */
	u8  source;
	u32 gsi;
	u16 flags;		/* ACPI_INTI_* */
};

struct acpi_nmi_source {	/* a GSI that is an NMI */
	u32 gsi;
	u16 flags;		/* ACPI_INTI_* */
};

struct acpi_lapic_nmi {		/* a local APIC LINT pin wired to NMI */
	u32 uid;		/* ACPI processor UID, unless all_cpus */
	bool all_cpus;		/* UID 0xff (type 4) or 0xffffffff (x2APIC type 0xA) */
	u8  lint;		/* 0 or 1 */
	u16 flags;		/* ACPI_INTI_* */
};

struct acpi_mcfg {		/* one PCIe ECAM window */
	u64 base;
	u16 segment;
	u8  bus_start, bus_end;
};

struct acpi_madt {
	enum acpi_src src;
	u64 lapic_addr;			/* after any type 5 override */
	bool lapic_addr_override;	/* a type 5 entry supplied it */
	u32 flags;			/* ACPI_MADT_* */
	bool pcat_compat;		/* legacy 8259 PICs present (mask them) */

	u32 ncpus;			/* stored in cpu[] */
	u32 cpus_listed;		/* usable entries (enabled or online-capable) */
	u32 cpus_enabled;		/* enabled entries, stored or not */
	struct acpi_cpu cpu[ACPI_MAX_CPUS];	/* in MADT order; the boot CPU should be first */

	u32 nioapics, ioapics_listed;
	struct acpi_ioapic ioapic[ACPI_MAX_IOAPICS];
	u32 noverrides, overrides_listed;
	struct acpi_override override[ACPI_MAX_OVERRIDES];
	u32 nnmi_sources, nmi_sources_listed;
	struct acpi_nmi_source nmi_source[ACPI_MAX_NMI_SOURCES];
	u32 nlapic_nmis, lapic_nmis_listed;
	struct acpi_lapic_nmi lapic_nmi[ACPI_MAX_LAPIC_NMIS];
};

struct acpi_hpet {
	enum acpi_src src;
	u64 addr;			/* MMIO base of the event timer block */
	u32 block_id;			/* Event Timer Block ID (= GCAP_ID bits 31:0) */
	u8  hw_rev;
	u8  comparators;		/* timers in the block: NUM_TIM_CAP + 1 */
	bool counter_64bit;
	bool legacy_route;		/* LegacyReplacement IRQ routing capable */
	u16 pci_vendor;
	u8  number;			/* HPET sequence number */
	u16 min_tick;			/* minimum periodic tick, in counter ticks */
	u8  page_protection;
};

struct acpi_fadt {
	enum acpi_src src;
	u8  revision;			/* table header revision */
	u8  minor;			/* FADT minor version (rev >= 5) */
	u32 flags;			/* FADT Fixed Feature Flags (5.2.9) */
	u16 iapc_boot_arch;		/* IA-PC Boot Architecture Flags (5.2.9.3) */
	u16 sci_int;
	u16 pm_timer_port;		/* 0: no PM timer known */
	bool pm_timer_32bit;		/* TMR_VAL_EXT: 32-bit, else 24-bit counter */
	bool pm_timer_from_x;		/* from X_PM_TMR_BLK, else PM_TMR_BLK */
	bool hw_reduced;		/* HW_REDUCED_ACPI: no fixed hardware */
};
#define ACPI_FADT_TMR_VAL_EXT		(1u << 8)
#define ACPI_FADT_HW_REDUCED_ACPI	(1u << 20)
#define ACPI_PM_TIMER_HZ		3579545u	/* 4.8.2.1 */

/*
 * SPCR: a 16550-compatible UART. Register n lives at addr + n * width and
 * is accessed width bytes wide (the GAS access size; I/O ports are always
 * byte-wide).
 */
struct acpi_spcr {
	enum acpi_src src;		/* ACPI_SRC_TABLE only when usable */
	u8  revision;
	u8  interface_type;		/* ACPI_SPCR_16550, _16450 or _16550_GAS */
	bool mmio;			/* memory space, else I/O space */
	u64 addr;
	u8  width;			/* bytes per register: 1 or 4 (MMIO only) */
	u32 baud;			/* 0: as the firmware left it */
	u32 clock_hz;			/* UART input clock, 0: not given (1.8432 MHz) */
	bool pci;			/* the UART is a PCI function (PCI Flags bit 0 clear) */
	u8  pci_bus, pci_dev, pci_fn;
	u16 pci_vendor, pci_device;
};
/* Interface types (SPCR rev. 1 values; rev. 2+ uses the DBG2 subtypes,
 * which keep 0 and 1 and add 0x12). */
#define ACPI_SPCR_16550		0x00
#define ACPI_SPCR_16450		0x01
#define ACPI_SPCR_16550_GAS	0x12	/* 16550-compatible, register layout in the GAS */

struct acpi_info {
	bool present;			/* RSDP and a usable XSDT or RSDT */
	u64 rsdp;			/* physical address; 0 if none */
	const char *rsdp_source;	/* "boot_info", "EBDA", "BIOS area" or NULL */
	u8  rsdp_revision;		/* 0: ACPI 1.0; 2: ACPI 2.0 and later */
	enum acpi_root root;
	u64 root_addr;
	char oem_id[7];			/* from the RSDP: NUL-terminated, padding spaces cut, unprintables as '?' */

	u32 ntables, tables_listed;	/* tables[] holds valid signatures in root order */
	char tables[ACPI_MAX_TABLES][5];

	struct acpi_madt madt;
	struct acpi_hpet hpet;
	struct acpi_fadt fadt;
	struct acpi_spcr spcr;
	u32 nmcfg, mcfg_listed;
	struct acpi_mcfg mcfg[ACPI_MAX_MCFG];

	u32 nwarnings;			/* all warnings; the first ACPI_MAX_WARNINGS are kept */
	char warning[ACPI_MAX_WARNINGS][ACPI_WARNING_LEN];
};

/*
 * Search the EBDA's first KiB (its segment is the u16 at phys 0x40e) and
 * then 0xe0000-0xfffff, on 16-byte boundaries, for "RSD PTR " with a valid
 * checksum (and a valid extended checksum if revision >= 2), 5.2.5.1.
 * Returns its physical address, or 0; *where (if not NULL) gets "EBDA" or
 * "BIOS area". Areas map refuses are skipped.
 */
u64 acpi_find_rsdp(acpi_map_fn map, void *ctx, const char **where);

/*
 * Fill *info (zeroed first) from the RSDP at rsdp_phys. Returns 0 if an
 * XSDT or RSDT was usable (individual tables may still have been skipped:
 * see info->warning), -E_INVAL if the RSDP is unreadable or invalid,
 * -E_NOENT if neither root table is usable. Warnings are also handed to
 * warn (if not NULL) as they happen. Pure: touches memory only via map.
 */
int acpi_parse(u64 rsdp_phys, acpi_map_fn map, void *ctx,
	       void (*warn)(const char *msg, void *ctx), struct acpi_info *info);

/*
 * Apply the fallbacks above to the sections acpi_parse left ACPI_SRC_NONE,
 * from register values the caller read: the boot CPU's initial APIC id,
 * the IOAPIC version register at ACPI_DEFAULT_IOAPIC (index 1) and the
 * HPET GCAP_ID register at ACPI_DEFAULT_HPET (pass ~0 for "did not read").
 * Pure.
 */
void acpi_apply_defaults(struct acpi_info *info, u32 boot_apic_id, u32 ioapic_version,
			 u64 hpet_gcap_id);

/* Was this IOAPIC version register / HPET GCAP_ID value read from a real device? */
bool acpi_ioapic_version_sane(u32 v);
bool acpi_hpet_gcap_sane(u64 cap);

/*
 * kernel/platform/acpi_init.c: find and parse the tables (boot_info->acpi_rsdp,
 * else the BIOS-area scan), apply the fallbacks and print any warnings.
 * Call once, after paging_init. acpi_print_summary prints what was found,
 * later: the boot starts the HPET in between. Not NMI-safe.
 */
void acpi_init(void);
void acpi_print_summary(void);
extern const struct acpi_info *acpi;	/* valid after acpi_init */

#endif

/*
 * pci.h — PCI configuration space, enumeration, BARs and capabilities
 * (kernel/dev/pci.c).
 *
 * Sources: PCI Local Bus Specification 3.0 (configuration header 6.1,
 * command register 6.2.2, BARs 6.2.5.1, capability list 6.7, configuration
 * mechanism #1 3.2.2.3.2), PCI Express Base Specification (enhanced
 * configuration access mechanism, ECAM, 7.2.2), PCI Firmware Specification
 * 3.0 4.1.2 (the MCFG table, read by kernel/platform/acpi.c).
 *
 * Access: ECAM through the first MCFG window (segment 0) when ACPI has one
 * and it lies in the identity map; otherwise the legacy 0xcf8/0xcfc ports,
 * which reach only the first 256 bytes of each function's space. Offsets
 * beyond what the method reaches read as all-ones and writes are dropped.
 *
 * Enumeration reads identification registers only: it changes nothing on
 * any device. BARs are sized on request (pci_bar), which briefly turns off
 * the function's decoding; call that only for devices nobody else is using.
 *
 * Not NMI-safe: the 0xcf8/0xcfc pair is an index/data pair with no lock.
 * Single-threaded use only (boot CPU, before or between app phases).
 */
#ifndef BAREPERF_KERNEL_PCI_H
#define BAREPERF_KERNEL_PCI_H

#include "kernel/x86.h"

#define PCI_MAX_DEVICES		64	/* functions kept; more are counted */
#define PCI_MAX_BUS		256
#define PCI_MAX_DEV		32
#define PCI_MAX_FN		8
#define PCI_CFG_SIZE_LEGACY	256	/* conventional space, all methods */
#define PCI_CFG_SIZE_ECAM	4096	/* PCIe extended space, ECAM only */

/* Type 0/1 configuration header (PCI 3.0 6.1). */
#define PCI_VENDOR_ID		0x00	/* u16; 0xffff: no function here */
#define PCI_DEVICE_ID		0x02	/* u16 */
#define PCI_COMMAND		0x04	/* u16 */
#define   PCI_COMMAND_IO	(1u << 0)
#define   PCI_COMMAND_MEMORY	(1u << 1)
#define   PCI_COMMAND_MASTER	(1u << 2)
#define   PCI_COMMAND_INTX_DISABLE (1u << 10)
#define PCI_STATUS		0x06	/* u16 */
#define   PCI_STATUS_CAP_LIST	(1u << 4)
#define PCI_REVISION_ID		0x08	/* u8 */
#define PCI_PROG_IF		0x09	/* u8 */
#define PCI_SUBCLASS		0x0a	/* u8 */
#define PCI_CLASS		0x0b	/* u8 */
#define PCI_HEADER_TYPE		0x0e	/* u8 */
#define   PCI_HEADER_TYPE_MASK	0x7f
#define   PCI_HEADER_NORMAL	0
#define   PCI_HEADER_BRIDGE	1
#define   PCI_HEADER_CARDBUS	2
#define   PCI_HEADER_MULTI_FN	(1u << 7)
#define PCI_BAR0		0x10	/* u32 each, 6 in type 0, 2 in type 1 */
#define   PCI_BAR_IO		(1u << 0)
#define   PCI_BAR_MEM_TYPE_MASK	(3u << 1)
#define   PCI_BAR_MEM_TYPE_32	(0u << 1)
#define   PCI_BAR_MEM_TYPE_1M	(1u << 1)	/* reserved since PCI 2.2 */
#define   PCI_BAR_MEM_TYPE_64	(2u << 1)
#define   PCI_BAR_MEM_PREFETCH	(1u << 3)
#define   PCI_BAR_MEM_MASK	(~0xfull)
#define   PCI_BAR_IO_MASK	(~0x3ull)
#define PCI_SUBSYS_VENDOR_ID	0x2c	/* u16, type 0 */
#define PCI_SUBSYS_ID		0x2e	/* u16, type 0 */
#define PCI_CAP_PTR		0x34	/* u8, type 0 and 1 */
/* Type 1 (bridge) windows (PCI-to-PCI Bridge Architecture 1.2, 3.2.5.8-9). */
#define PCI_SECONDARY_BUS	0x19	/* u8, type 1 and 2: the bus below */
#define PCI_BRIDGE_MEM_BASE	0x20	/* u16: bits 15:4 = address bits 31:20 */
#define PCI_BRIDGE_MEM_LIMIT	0x22
#define PCI_BRIDGE_PREF_BASE	0x24	/* the same, bits 3:0 = 1: 64-bit */
#define PCI_BRIDGE_PREF_LIMIT	0x26
#define PCI_BRIDGE_PREF_BASE_HI	0x28	/* u32: address bits 63:32 */
#define PCI_BRIDGE_PREF_LIMIT_HI 0x2c
#define   PCI_CAP_PTR_MASK	0xfc	/* the bottom two bits are reserved */
#define PCI_CAP_FIRST		0x40	/* capabilities live after the header */

/* Capability IDs (PCI Code and ID Assignment Specification, 2). */
#define PCI_CAP_ID_MSI		0x05
#define PCI_CAP_ID_VNDR		0x09
#define PCI_CAP_ID_EXP		0x10
#define PCI_CAP_ID_MSIX		0x11
/* Each capability: u8 id, u8 next, then its own fields. */
#define PCI_CAP_NEXT		1

/* Class codes used in messages (PCI Code and ID Assignment Specification, 1). */
#define PCI_CLASS_DISPLAY	0x03
#define PCI_CLASS_BRIDGE	0x06
#define   PCI_SUBCLASS_HOST	0x00

enum pci_method {
	PCI_METHOD_NONE = 0,	/* before pci_init */
	PCI_METHOD_ECAM = 1,
	PCI_METHOD_PORTS = 2,	/* configuration mechanism #1 */
};

/* How pci_init_with chooses the access method and the buses (flags). */
enum pci_want {
	PCI_WANT_AUTO = 0,	/* ECAM if usable, else the ports; the bridge walk */
	PCI_WANT_PORTS = 1,	/* the ports even if there is an MCFG window */
	PCI_WANT_EVERY_BUS = 2,	/* every bus in reach, not only those the walk finds */
};

struct pci_bar {
	u64 addr;		/* bus address (memory) or port number (I/O) */
	u64 size;		/* bytes; 0: the BAR is not implemented */
	bool io;		/* I/O space, else memory space */
	bool is64;		/* 64-bit memory BAR (uses the next BAR slot too) */
	bool prefetch;
	bool mapped;		/* memory BAR inside the kernel's identity map */
};

struct pci_dev {
	u8  bus, dev, fn;
	u8  header_type;	/* PCI_HEADER_TYPE without the multi-function bit */
	bool multi_fn;		/* function 0's multi-function bit (fn 0 only) */
	u16 vendor, device;
	u8  class, subclass, prog_if, revision;
	u16 subsys_vendor, subsys_id;	/* type 0 headers; 0 otherwise */
};

/*
 * Find the configuration access method and enumerate the functions on
 * bus 0 and on the secondary bus of every bridge found, as firmware
 * numbered them (each below its bridge's bus); where bus 0 holds a host
 * bridge other than 00:00.0 (another root bus, not behind a bridge), or
 * with PCI_WANT_EVERY_BUS, every bus the method reaches (ECAM: the MCFG
 * bus range; ports: buses 0-255). Functions 1-7 only where function 0
 * has the multi-function bit. Keeps
 * the first PCI_MAX_DEVICES functions in bus/dev/fn order. Prints one
 * summary line. Call after acpi_init and paging_init; may be called again
 * (the table is rebuilt). Returns the number of functions found (stored
 * or not), or -E_NODEV if no method answers (no host bridge).
 */
int pci_init(void);
int pci_init_with(enum pci_want want);

enum pci_method pci_method(void);
const char *pci_method_name(enum pci_method m);	/* "ECAM", "ports", "none" */
u64 pci_ecam_base(void);		/* 0 unless the method is ECAM */
u32 pci_count(void);			/* functions stored */
u64 pci_reads(void);			/* configuration reads made so far */
u32 pci_found(void);			/* functions found, stored or not */
struct pci_dev *pci_get(u32 i);		/* i < pci_count(), else NULL */
/* The nth (from 0) stored function with this vendor and device id, or NULL. */
struct pci_dev *pci_find(u16 vendor, u16 device, u32 nth);
/* The stored function at bus:dev.fn, or NULL. */
struct pci_dev *pci_lookup(u8 bus, u8 dev, u8 fn);

/*
 * Configuration space. Accesses are naturally aligned (off is rounded
 * down to the size); out-of-reach offsets read as all-ones. These work
 * for any bus/dev/fn the method reaches, listed or not.
 */
u8  pci_read8(const struct pci_dev *d, u16 off);
u16 pci_read16(const struct pci_dev *d, u16 off);
u32 pci_read32(const struct pci_dev *d, u16 off);
void pci_write8(const struct pci_dev *d, u16 off, u8 v);
void pci_write16(const struct pci_dev *d, u16 off, u16 v);
void pci_write32(const struct pci_dev *d, u16 off, u32 v);
/* The same with an explicit address and method (for tests comparing the
 * two mechanisms). Returns all-ones if the method is unusable. */
u32 pci_read32_at(enum pci_method m, u8 bus, u8 dev, u8 fn, u16 off);

/*
 * Decode and size BAR n (0..5 for type 0, 0..1 for type 1): type, address,
 * size (PCI 3.0 6.2.5.1: write all-ones, read back the mask, restore; the
 * function's I/O and memory decoding is off meanwhile). For a 64-bit BAR,
 * n names the low half; n + 1 then is its high half and reports size 0.
 * Returns 0, -E_INVAL (bad n for this header type), -E_NOENT (not
 * implemented: size 0) or -E_RANGE (a reserved type, or a malformed mask).
 */
int pci_bar(const struct pci_dev *d, int n, struct pci_bar *out);

/*
 * The capability list (PCI 3.0 6.7): the offset of the first capability
 * with this id that comes after `after` in list order (after = 0: from the
 * head), or 0 if none. Bounded: at most 48 entries (the size of the
 * device-specific area over 4), and a pointer below 0x40 ends the walk,
 * so a looped or corrupt list cannot hang it.
 */
u8 pci_cap_find(const struct pci_dev *d, u8 id, u8 after);

/*
 * Make every memory BAR of d usable by the kernel, then set
 * PCI_COMMAND_MEMORY and PCI_COMMAND_MASTER. A BAR that is unassigned
 * (address 0: qboot, the PVH path's firmware, assigns none) or outside the
 * identity map (OVMF puts 64-bit BARs above 4 GiB) is given a free,
 * naturally aligned address in the 32-bit hole: above the highest
 * memory-map range below 0xfec00000 and the ECAM window, below 0xfec00000,
 * clear of every memory-map range, every other function's assigned memory
 * BARs (sized, see pci_bar) and every bridge window. Only functions on the
 * root bus are placed (a function behind a bridge must fit the bridge's
 * window, which this does not manage). Prints one line per BAR it moves.
 * I/O BARs are left alone and I/O decoding is not turned on.
 * Returns 0, -E_NOMEM (no room in the hole) or -E_RANGE (behind a bridge,
 * or a BAR that does not decode properly); the reason is printed.
 */
int pci_setup_memory(const struct pci_dev *d);

/* Set bits in the command register (PCI_COMMAND_MEMORY | _MASTER, ...). */
void pci_enable(const struct pci_dev *d, u16 command_bits);

/* "00:1f.3" into buf (at least 8 bytes); returns buf. */
const char *pci_name(const struct pci_dev *d, char *buf, size_t size);

#endif

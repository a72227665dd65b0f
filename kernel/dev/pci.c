/*
 * pci.c — PCI configuration access, enumeration, BAR sizing and the
 * capability list. Contract and sources in kernel/dev/pci.h.
 */
#include "kernel/kernel.h"
#include "kernel/platform/acpi.h"
#include "kernel/dev/pci.h"
#include <uapi/bootinfo.h>

/* Configuration mechanism #1 (PCI 3.0 3.2.2.3.2): write the address of a
 * dword to CONFIG_ADDRESS, then access it through CONFIG_DATA. */
#define PCI_CONFIG_ADDRESS	0xcf8
#define   PCI_CONFIG_ENABLE	(1u << 31)
#define PCI_CONFIG_DATA		0xcfc

/* ECAM (PCIe Base 7.2.2): bus << 20 | device << 15 | function << 12 | offset. */
#define ECAM_BUS_SHIFT		20
#define ECAM_DEV_SHIFT		15
#define ECAM_FN_SHIFT		12

#define CAP_WALK_MAX		((PCI_CFG_SIZE_LEGACY - PCI_CAP_FIRST) / 4)
#define SUMMARY_MAX		12	/* functions named in the summary line */

static enum pci_method method;
static u64 ecam_base;			/* the address of bus 0 in the window */
static u8 ecam_bus_start, ecam_bus_end;
static struct pci_dev devs[PCI_MAX_DEVICES];
static u32 ndevs, nfound;
static u64 nreads;			/* configuration reads, for pci_reads */

/* ---- raw access ---- */

static volatile void *ecam_addr(u8 bus, u8 dev, u8 fn, u16 off)
{
	/* MCFG's base address is where bus 0 would be, whatever the window's
	 * first bus (PCI Firmware 3.0 4.1.2, Table 4-3); buses outside the
	 * window are refused by the caller. */
	return (volatile void *)(ecam_base + ((u64)bus << ECAM_BUS_SHIFT) +
				 ((u64)dev << ECAM_DEV_SHIFT) + ((u64)fn << ECAM_FN_SHIFT) + off);
}

static bool reachable(enum pci_method m, u8 bus, u8 dev, u8 fn, u16 off)
{
	if (dev >= PCI_MAX_DEV || fn >= PCI_MAX_FN)
		return false;
	if (m == PCI_METHOD_ECAM)
		return ecam_base && bus >= ecam_bus_start && bus <= ecam_bus_end &&
		       off < PCI_CFG_SIZE_ECAM;
	return m == PCI_METHOD_PORTS && off < PCI_CFG_SIZE_LEGACY;
}

static u32 port_address(u8 bus, u8 dev, u8 fn, u16 off)
{
	return PCI_CONFIG_ENABLE | (u32)bus << 16 | (u32)dev << 11 | (u32)fn << 8 | (off & 0xfc);
}

/* size: 1, 2 or 4; off aligned to it. */
static u32 cfg_read(enum pci_method m, u8 bus, u8 dev, u8 fn, u16 off, int size)
{
	if (!reachable(m, bus, dev, fn, off))
		return size == 4 ? 0xffffffffu : size == 2 ? 0xffff : 0xff;
	nreads++;
	if (m == PCI_METHOD_ECAM) {
		volatile void *p = ecam_addr(bus, dev, fn, off);
		return size == 4 ? *(volatile u32 *)p : size == 2 ? *(volatile u16 *)p :
		       *(volatile u8 *)p;
	}
	outl(PCI_CONFIG_ADDRESS, port_address(bus, dev, fn, off));
	u16 port = PCI_CONFIG_DATA + (off & 3);
	return size == 4 ? inl(port) : size == 2 ? inw(port) : inb(port);
}

static void cfg_write(enum pci_method m, u8 bus, u8 dev, u8 fn, u16 off, int size, u32 v)
{
	if (!reachable(m, bus, dev, fn, off))
		return;
	if (m == PCI_METHOD_ECAM) {
		volatile void *p = ecam_addr(bus, dev, fn, off);
		if (size == 4)
			*(volatile u32 *)p = v;
		else if (size == 2)
			*(volatile u16 *)p = v;
		else
			*(volatile u8 *)p = v;
		return;
	}
	outl(PCI_CONFIG_ADDRESS, port_address(bus, dev, fn, off));
	u16 port = PCI_CONFIG_DATA + (off & 3);
	if (size == 4)
		outl(port, v);
	else if (size == 2)
		outw(port, v);
	else
		outb(port, v);
}

u32 pci_read32_at(enum pci_method m, u8 bus, u8 dev, u8 fn, u16 off)
{
	return cfg_read(m, bus, dev, fn, off & ~3u, 4);
}

u8 pci_read8(const struct pci_dev *d, u16 off)
{
	return cfg_read(method, d->bus, d->dev, d->fn, off, 1);
}

u16 pci_read16(const struct pci_dev *d, u16 off)
{
	return cfg_read(method, d->bus, d->dev, d->fn, off & ~1u, 2);
}

u32 pci_read32(const struct pci_dev *d, u16 off)
{
	return cfg_read(method, d->bus, d->dev, d->fn, off & ~3u, 4);
}

void pci_write8(const struct pci_dev *d, u16 off, u8 v)
{
	cfg_write(method, d->bus, d->dev, d->fn, off, 1, v);
}

void pci_write16(const struct pci_dev *d, u16 off, u16 v)
{
	cfg_write(method, d->bus, d->dev, d->fn, off & ~1u, 2, v);
}

void pci_write32(const struct pci_dev *d, u16 off, u32 v)
{
	cfg_write(method, d->bus, d->dev, d->fn, off & ~3u, 4, v);
}

/* ---- choosing the method ---- */

static bool ecam_usable(const char **why)
{
	const struct acpi_mcfg *w = NULL;

	for (u32 i = 0; acpi && i < acpi->nmcfg; i++) {
		if (acpi->mcfg[i].segment == 0) {
			w = &acpi->mcfg[i];
			break;
		}
	}
	if (!w) {
		*why = "no MCFG window for segment 0";
		return false;
	}
	if (w->bus_end < w->bus_start) {
		*why = "MCFG bus range is empty";
		return false;
	}
	/* The window proper: from bus_start to the end of bus_end. */
	u64 lo = w->base + ((u64)w->bus_start << ECAM_BUS_SHIFT);
	u64 len = (u64)(w->bus_end - w->bus_start + 1) << ECAM_BUS_SHIFT;
	if (!va_mapped(lo, len)) {
		*why = "the MCFG window is outside the identity map";
		return false;
	}
	ecam_base = w->base;
	ecam_bus_start = w->bus_start;
	ecam_bus_end = w->bus_end;
	return true;
}

/* Mechanism #1 exists if CONFIG_ADDRESS holds what is written to it
 * (PCI 3.0 3.2.2.3.2: it is a read/write dword register). */
static bool ports_usable(void)
{
	u32 saved = inl(PCI_CONFIG_ADDRESS);

	outl(PCI_CONFIG_ADDRESS, PCI_CONFIG_ENABLE);
	bool ok = inl(PCI_CONFIG_ADDRESS) == PCI_CONFIG_ENABLE;
	outl(PCI_CONFIG_ADDRESS, saved);
	return ok;
}

/* ---- enumeration ---- */

static bool present(u16 vendor)
{
	return vendor != 0xffff && vendor != 0x0000;
}

static void add_function(u8 bus, u8 dev, u8 fn, u16 vendor, u8 header)
{
	nfound++;
	if (ndevs >= PCI_MAX_DEVICES)
		return;
	struct pci_dev *d = &devs[ndevs++];
	memset(d, 0, sizeof(*d));
	d->bus = bus;
	d->dev = dev;
	d->fn = fn;
	d->vendor = vendor;
	d->header_type = header & PCI_HEADER_TYPE_MASK;
	d->multi_fn = fn == 0 && (header & PCI_HEADER_MULTI_FN);
	d->device = pci_read16(d, PCI_DEVICE_ID);
	u32 class = pci_read32(d, PCI_REVISION_ID);
	d->revision = class;
	d->prog_if = class >> 8;
	d->subclass = class >> 16;
	d->class = class >> 24;
	if (d->header_type == PCI_HEADER_NORMAL) {
		d->subsys_vendor = pci_read16(d, PCI_SUBSYS_VENDOR_ID);
		d->subsys_id = pci_read16(d, PCI_SUBSYS_ID);
	}
}

/* The bridge walk: the buses it has yet to scan. */
struct walk {
	u64 todo[PCI_MAX_BUS / 64];	/* buses left to scan */
	bool other_root;		/* a host bridge beyond 00:00.0 */
};

static void found(struct walk *w, u8 bus, u8 dev, u8 fn, u16 vendor, u8 header)
{
	add_function(bus, dev, fn, vendor, header);
	u8 type = header & PCI_HEADER_TYPE_MASK;
	if (type == PCI_HEADER_BRIDGE || type == PCI_HEADER_CARDBUS) {
		u8 below = cfg_read(method, bus, dev, fn, PCI_SECONDARY_BUS, 1);
		if (below > bus)
			w->todo[below / 64] |= 1ul << (below % 64);
	} else if ((bus || dev || fn) &&
		   cfg_read(method, bus, dev, fn, PCI_SUBCLASS, 2) ==
		   (PCI_CLASS_BRIDGE << 8 | PCI_SUBCLASS_HOST)) {
		w->other_root = true;
	}
}

static void scan_bus(struct walk *w, u8 bus)
{
	for (u8 dev = 0; dev < PCI_MAX_DEV; dev++) {
		u16 vendor = cfg_read(method, bus, dev, 0, PCI_VENDOR_ID, 2);
		if (!present(vendor))
			continue;
		u8 header = cfg_read(method, bus, dev, 0, PCI_HEADER_TYPE, 1);
		found(w, bus, dev, 0, vendor, header);
		if (!(header & PCI_HEADER_MULTI_FN))
			continue;
		for (u8 fn = 1; fn < PCI_MAX_FN; fn++) {
			vendor = cfg_read(method, bus, dev, fn, PCI_VENDOR_ID, 2);
			if (present(vendor))
				found(w, bus, dev, fn, vendor,
				      cfg_read(method, bus, dev, fn, PCI_HEADER_TYPE, 1));
		}
	}
}

/*
 * Bus 0, then in ascending order the buses the bridges lead to: firmware
 * numbers a bridge's secondary bus above its own, so one ascending pass
 * meets every bus after its bridge and keeps the bus/dev/fn order. A
 * second root bus is not behind a bridge: then every bus is scanned.
 */
static void scan(u32 bus_first, u32 bus_last, bool every_bus)
{
	struct walk w = { 0 };

	w.todo[bus_first / 64] |= 1ul << (bus_first % 64);
	for (u32 bus = bus_first; bus <= bus_last; bus++) {
		if (every_bus || (w.todo[bus / 64] & (1ul << (bus % 64))))
			scan_bus(&w, bus);
		if (w.other_root && !every_bus) {
			ndevs = nfound = 0;
			scan(bus_first, bus_last, true);
			return;
		}
	}
}

const char *pci_method_name(enum pci_method m)
{
	return m == PCI_METHOD_ECAM ? "ECAM" : m == PCI_METHOD_PORTS ? "ports" : "none";
}

const char *pci_name(const struct pci_dev *d, char *buf, size_t size)
{
	ksnprintf(buf, size, "%02x:%02x.%x", d->bus, d->dev, d->fn);
	return buf;
}

static void print_summary(void)
{
	char line[512], name[16];
	size_t n;

	if (method == PCI_METHOD_ECAM)
		n = ksnprintf(line, sizeof(line), "pci: ECAM at %#lx (buses %u-%u)",
			      ecam_base, ecam_bus_start, ecam_bus_end);
	else
		n = ksnprintf(line, sizeof(line), "pci: ports 0xcf8/0xcfc");
	n += ksnprintf(line + n, sizeof(line) - MIN(n, sizeof(line)), ", %u function%s%s",
		       nfound, nfound == 1 ? "" : "s", ndevs ? ":" : "");
	for (u32 i = 0; i < ndevs && i < SUMMARY_MAX && n < sizeof(line); i++)
		n += ksnprintf(line + n, sizeof(line) - n, " %s %04x:%04x",
			       pci_name(&devs[i], name, sizeof(name)), devs[i].vendor, devs[i].device);
	if (ndevs > SUMMARY_MAX && n < sizeof(line))
		ksnprintf(line + n, sizeof(line) - n, " ...");
	kprintf("%s\n", line);
	if (nfound > ndevs)
		kprintf("pci: %u functions found, the first %u kept (PCI_MAX_DEVICES)\n",
			nfound, ndevs);
}

int pci_init_with(enum pci_want want)
{
	const char *why = "not tried";

	method = PCI_METHOD_NONE;
	ecam_base = 0;
	ndevs = nfound = 0;

	bool every_bus = want & PCI_WANT_EVERY_BUS;
	if (!(want & PCI_WANT_PORTS) && ecam_usable(&why)) {
		method = PCI_METHOD_ECAM;
		scan(ecam_bus_start, ecam_bus_end, every_bus);
	} else if (ports_usable()) {
		if (!(want & PCI_WANT_PORTS))
			kprintf("pci: no ECAM (%s); using ports 0xcf8/0xcfc\n", why);
		method = PCI_METHOD_PORTS;
		scan(0, PCI_MAX_BUS - 1, every_bus);
	}
	if (method == PCI_METHOD_NONE || !nfound) {
		kprintf("pci: no configuration mechanism answers (no MCFG window: %s; "
			"ports 0xcf8/0xcfc: %s)\n", why,
			method == PCI_METHOD_PORTS ? "no functions" : "absent");
		method = PCI_METHOD_NONE;
		return -E_NODEV;
	}
	print_summary();
	return nfound;
}

int pci_init(void)
{
	return pci_init_with(PCI_WANT_AUTO);
}

enum pci_method pci_method(void) { return method; }
u64 pci_ecam_base(void) { return method == PCI_METHOD_ECAM ? ecam_base : 0; }
u32 pci_count(void) { return ndevs; }
u32 pci_found(void) { return nfound; }
u64 pci_reads(void) { return nreads; }

struct pci_dev *pci_get(u32 i)
{
	return i < ndevs ? &devs[i] : NULL;
}

struct pci_dev *pci_find(u16 vendor, u16 device, u32 nth)
{
	for (u32 i = 0; i < ndevs; i++)
		if (devs[i].vendor == vendor && devs[i].device == device && nth-- == 0)
			return &devs[i];
	return NULL;
}

struct pci_dev *pci_lookup(u8 bus, u8 dev, u8 fn)
{
	for (u32 i = 0; i < ndevs; i++)
		if (devs[i].bus == bus && devs[i].dev == dev && devs[i].fn == fn)
			return &devs[i];
	return NULL;
}

/* ---- BARs ---- */

static int bar_count(const struct pci_dev *d)
{
	switch (d->header_type) {
	case PCI_HEADER_NORMAL: return 6;
	case PCI_HEADER_BRIDGE: return 2;
	default: return 0;	/* CardBus (type 2) has no BARs we use */
	}
}

/* Is BAR n the upper half of a 64-bit memory BAR at n - 1? Reads only. */
static bool upper_half(const struct pci_dev *d, int n)
{
	if (n == 0)
		return false;
	u32 below = pci_read32(d, PCI_BAR0 + 4 * (n - 1));
	return !(below & PCI_BAR_IO) &&
	       (below & PCI_BAR_MEM_TYPE_MASK) == PCI_BAR_MEM_TYPE_64 && !upper_half(d, n - 1);
}

int pci_bar(const struct pci_dev *d, int n, struct pci_bar *out)
{
	memset(out, 0, sizeof(*out));
	if (n < 0 || n >= bar_count(d))
		return -E_INVAL;
	if (upper_half(d, n))
		return -E_NOENT;

	u16 off = PCI_BAR0 + 4 * n;
	u32 lo = pci_read32(d, off);
	bool io = lo & PCI_BAR_IO;
	bool is64 = !io && (lo & PCI_BAR_MEM_TYPE_MASK) == PCI_BAR_MEM_TYPE_64;
	if (!io && (lo & PCI_BAR_MEM_TYPE_MASK) == PCI_BAR_MEM_TYPE_1M)
		return -E_RANGE;
	if (is64 && n + 1 >= bar_count(d))
		return -E_RANGE;
	u32 hi = is64 ? pci_read32(d, off + 4) : 0;

	/* Sizing (PCI 3.0 6.2.5.1): with decoding of this BAR's space off, so
	 * that the all-ones address never claims a bus cycle, write all-ones,
	 * read the mask of writable bits back, restore. The other space keeps
	 * decoding (a PCI UART's I/O BAR is not disturbed by memory sizing). */
	u16 cmd = pci_read16(d, PCI_COMMAND);
	pci_write16(d, PCI_COMMAND, cmd & ~(io ? PCI_COMMAND_IO : PCI_COMMAND_MEMORY));
	pci_write32(d, off, 0xffffffffu);
	u64 mask = pci_read32(d, off);
	pci_write32(d, off, lo);
	if (is64) {
		pci_write32(d, off + 4, 0xffffffffu);
		mask |= (u64)pci_read32(d, off + 4) << 32;
		pci_write32(d, off + 4, hi);
	}
	pci_write16(d, PCI_COMMAND, cmd);

	out->io = io;
	out->is64 = is64;
	out->prefetch = !io && (lo & PCI_BAR_MEM_PREFETCH);
	out->addr = (((u64)hi << 32) | lo) & (io ? PCI_BAR_IO_MASK : PCI_BAR_MEM_MASK);
	mask &= io ? PCI_BAR_IO_MASK : PCI_BAR_MEM_MASK;
	if (!mask)
		return -E_NOENT;	/* nothing writable: not implemented */
	if (io && !(mask & 0xffff0000ull))
		mask |= 0xffff0000ull;	/* a 16-bit I/O decoder reads 0 above */
	if (!is64)
		mask |= 0xffffffff00000000ull;	/* decodes nothing above 4 GiB */
	out->size = ~mask + 1;
	/* The writable bits run from the top down: the size is a power of two. */
	if (!out->size || (out->size & (out->size - 1))) {
		out->size = 0;
		return -E_RANGE;
	}
	out->mapped = !io && out->addr && va_mapped(out->addr, out->size);
	return 0;
}

/* ---- placing memory BARs ---- */

#define HOLE_END		0xfec00000ul	/* IOAPIC, HPET, local APIC, flash above */
#define FOUR_GIB		(1ul << 32)
#define MAX_BUSY		(BOOT_MMAP_MAX + 3 * PCI_MAX_DEVICES + 8)

struct range {
	u64 lo, hi;		/* [lo, hi) */
};

struct busy {
	struct range r[MAX_BUSY];
	u32 n;
	bool overflow;
};

static void busy_add(struct busy *b, u64 lo, u64 hi)
{
	if (lo >= FOUR_GIB || hi <= lo)
		return;
	if (b->n >= MAX_BUSY) {
		b->overflow = true;
		return;
	}
	b->r[b->n++] = (struct range){ lo, MIN(hi, FOUR_GIB) };
}

/* A bridge's memory windows (PCI-to-PCI Bridge Architecture 1.2, 3.2.5.8-9):
 * base and limit hold address bits 31:20; the limit's low 20 bits are ones. */
static void busy_add_bridge(struct busy *b, const struct pci_dev *d)
{
	u64 base = (u64)(pci_read16(d, PCI_BRIDGE_MEM_BASE) & 0xfff0) << 16;
	u64 limit = ((u64)(pci_read16(d, PCI_BRIDGE_MEM_LIMIT) & 0xfff0) << 16) | 0xfffff;
	if (base <= limit)
		busy_add(b, base, limit + 1);
	u16 pb = pci_read16(d, PCI_BRIDGE_PREF_BASE), pl = pci_read16(d, PCI_BRIDGE_PREF_LIMIT);
	base = (u64)(pb & 0xfff0) << 16;
	limit = ((u64)(pl & 0xfff0) << 16) | 0xfffff;
	if ((pb & 0xf) == 1) {		/* 64-bit window */
		base |= (u64)pci_read32(d, PCI_BRIDGE_PREF_BASE_HI) << 32;
		limit |= (u64)pci_read32(d, PCI_BRIDGE_PREF_LIMIT_HI) << 32;
	}
	if (base <= limit)
		busy_add(b, base, limit + 1);
}

/* Everything below 4 GiB that a new BAR must not overlap; the BARs of
 * `self` in skip_mask are left out (they are the ones being placed). */
static u64 busy_collect(struct busy *b, const struct pci_dev *self, u32 skip_mask)
{
	u64 hole = 0;

	b->n = 0;
	b->overflow = false;
	busy_add(b, 0, 1ull << 20);			/* real-mode area, ROMs */
	busy_add(b, HOLE_END, FOUR_GIB);
	for (u32 i = 0; boot_info && i < boot_info->mmap_count; i++) {
		const struct boot_mem_range *r = &boot_info->mmap[i];
		busy_add(b, r->base, r->base + r->length);
		if (r->base < HOLE_END)
			hole = MAX(hole, r->base + r->length);
	}
	if (method == PCI_METHOD_ECAM) {
		u64 lo = ecam_base + ((u64)ecam_bus_start << ECAM_BUS_SHIFT);
		u64 hi = ecam_base + ((u64)(ecam_bus_end + 1) << ECAM_BUS_SHIFT);
		busy_add(b, lo, hi);
		if (lo < HOLE_END)
			hole = MAX(hole, hi);
	}
	for (u32 i = 0; i < ndevs; i++) {
		const struct pci_dev *d = &devs[i];
		if (d->header_type == PCI_HEADER_BRIDGE)
			busy_add_bridge(b, d);
		for (int n = 0; n < bar_count(d); n++) {
			struct pci_bar bar;
			if (d == self && (skip_mask & (1u << n)))
				continue;
			/* Size only memory BARs holding an address below 4 GiB:
			 * sizing touches the device, so leave the rest alone. */
			u32 raw = pci_read32(d, PCI_BAR0 + 4 * n);
			if (raw & PCI_BAR_IO || upper_half(d, n))
				continue;
			u64 addr = raw & PCI_BAR_MEM_MASK & 0xffffffffu;
			if ((raw & PCI_BAR_MEM_TYPE_MASK) == PCI_BAR_MEM_TYPE_64 && n + 1 < bar_count(d))
				addr |= (u64)pci_read32(d, PCI_BAR0 + 4 * n + 4) << 32;
			if (!addr || addr >= FOUR_GIB)
				continue;
			if (!pci_bar(d, n, &bar) && !bar.io && bar.addr)
				busy_add(b, bar.addr, bar.addr + bar.size);
		}
	}
	return hole;
}

/* The lowest size-aligned [a, a + size) in [hole, HOLE_END) clear of b. */
static u64 find_free(const struct busy *b, u64 hole, u64 size)
{
	u64 a = ALIGN_UP(MAX(hole, 1ull << 20), size);

	/* Each retry moves a past the end of one busy range: bounded. */
	for (u32 tries = 0; tries <= b->n && a + size <= HOLE_END; tries++) {
		bool clash = false;
		for (u32 i = 0; i < b->n; i++) {
			if (a < b->r[i].hi && b->r[i].lo < a + size) {
				a = ALIGN_UP(b->r[i].hi, size);
				clash = true;
				break;
			}
		}
		if (!clash)
			return a;
	}
	return 0;
}

static u32 root_bus(void)
{
	return method == PCI_METHOD_ECAM ? ecam_bus_start : 0;
}

int pci_setup_memory(const struct pci_dev *d)
{
	struct pci_bar bar[6];
	u32 place = 0;
	char name[16];
	int err = 0;

	pci_name(d, name, sizeof(name));
	for (int n = 0; n < bar_count(d); n++) {
		int rc = pci_bar(d, n, &bar[n]);
		if (rc == -E_NOENT || (!rc && bar[n].io))
			continue;
		if (rc) {
			kprintf("pci: %s BAR%d: malformed (error %d)\n", name, n, rc);
			return rc;
		}
		if (!bar[n].addr || !bar[n].mapped)
			place |= 1u << n;
	}
	if (place && d->bus != root_bus()) {
		kprintf("pci: %s: a memory BAR is %s, and the function is behind a bridge "
			"(bus %02x): cannot place it\n", name,
			bar[__builtin_ctz(place)].addr ? "outside the identity map" : "unassigned",
			d->bus);
		return -E_RANGE;
	}

	u16 cmd = pci_read16(d, PCI_COMMAND);
	if (place)
		pci_write16(d, PCI_COMMAND, cmd & ~PCI_COMMAND_MEMORY);
	for (int n = 0; n < bar_count(d) && place; n++) {
		if (!(place & (1u << n)))
			continue;
		static struct busy b;		/* large; single-threaded use only */
		u64 hole = busy_collect(&b, d, place);
		u64 size = MAX(bar[n].size, PAGE_SIZE);	/* whole pages for the map */
		u64 a = b.overflow ? 0 : find_free(&b, hole, size);
		if (!a) {
			kprintf("pci: %s BAR%d: no free %lu KiB in the 32-bit hole %#lx-%#lx%s\n",
				name, n, size >> 10, hole, HOLE_END,
				b.overflow ? " (too many busy ranges)" : "");
			err = -E_NOMEM;
			break;
		}
		u16 off = PCI_BAR0 + 4 * n;
		u32 type = pci_read32(d, off) & 0xf;
		pci_write32(d, off, (u32)a | type);
		if (bar[n].is64)
			pci_write32(d, off + 4, 0);
		struct pci_bar now;
		if (pci_bar(d, n, &now) || now.addr != a || !now.mapped) {
			kprintf("pci: %s BAR%d: wrote %#lx, reads back %#lx\n", name, n, a, now.addr);
			err = -E_RANGE;
			break;
		}
		if (bar[n].addr)
			kprintf("pci: %s BAR%d (%s%s, %lu KiB): at %#lx, outside the identity map; "
				"moved to %#lx\n", name, n, bar[n].is64 ? "64-bit" : "32-bit",
				bar[n].prefetch ? " prefetchable" : "", bar[n].size >> 10, bar[n].addr, a);
		else
			kprintf("pci: %s BAR%d (%s%s, %lu KiB): unassigned; placed at %#lx\n", name, n,
				bar[n].is64 ? "64-bit" : "32-bit", bar[n].prefetch ? " prefetchable" : "",
				bar[n].size >> 10, a);
		place &= ~(1u << n);
	}
	if (err) {
		pci_write16(d, PCI_COMMAND, cmd & ~PCI_COMMAND_MEMORY);
		return err;
	}
	pci_write16(d, PCI_COMMAND, cmd | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	return 0;
}

/* ---- capabilities ---- */

u8 pci_cap_find(const struct pci_dev *d, u8 id, u8 after)
{
	if (!(pci_read16(d, PCI_STATUS) & PCI_STATUS_CAP_LIST))
		return 0;
	if (d->header_type != PCI_HEADER_NORMAL && d->header_type != PCI_HEADER_BRIDGE)
		return 0;
	bool passed = after == 0;
	u8 off = pci_read8(d, PCI_CAP_PTR) & PCI_CAP_PTR_MASK;
	for (u32 i = 0; i < CAP_WALK_MAX && off >= PCI_CAP_FIRST; i++) {
		if (passed && pci_read8(d, off) == id)
			return off;
		if (off == after)
			passed = true;
		off = pci_read8(d, off + PCI_CAP_NEXT) & PCI_CAP_PTR_MASK;
	}
	return 0;
}

void pci_enable(const struct pci_dev *d, u16 command_bits)
{
	u16 cmd = pci_read16(d, PCI_COMMAND);

	if ((cmd & command_bits) != command_bits)
		pci_write16(d, PCI_COMMAND, cmd | command_bits);
}

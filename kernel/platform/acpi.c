/*
 * acpi.c — the ACPI table parsers (what and why: kernel/platform/acpi.h).
 *
 * Pure: memory is reached only through the caller's map callback, so the
 * same code runs in the kernel and in the host tests, which feed it broken
 * tables. Every read goes through a `view` (a granted range) whose
 * accessors return 0 beyond its end; the explicit length checks before
 * each read are what produce the warnings, the accessors are the backstop.
 * Section numbers are ACPI 6.5 unless another specification is named.
 */
#include "kernel/kernel.h"
#include "kernel/platform/acpi.h"

/* RSDP (5.2.5.3). */
#define RSDP_SIG		"RSD PTR "
#define RSDP_CHECKSUM_LEN	20	/* the ACPI 1.0 part, covered by Checksum */
#define RSDP_V2_LEN		36
#define RSDP_MAX_LEN		4096	/* Length is 36 today; refuse silly values */
#define   RSDP_OEMID		9
#define   RSDP_REVISION		15
#define   RSDP_RSDT		16
#define   RSDP_LENGTH		20
#define   RSDP_XSDT		24

/* System description table header (5.2.6). */
#define HDR_LEN			36
#define   HDR_LENGTH		4
#define   HDR_REVISION		8

/* MADT (5.2.12) and its interrupt controller structures. */
#define MADT_LAPIC_ADDR		36
#define MADT_FLAGS		40
#define MADT_ENTRIES		44
enum {
	MADT_LAPIC = 0,			/* 5.2.12.2 */
	MADT_IOAPIC = 1,		/* 5.2.12.3 */
	MADT_OVERRIDE = 2,		/* 5.2.12.5 */
	MADT_NMI_SOURCE = 3,		/* 5.2.12.6 */
	MADT_LAPIC_NMI = 4,		/* 5.2.12.7 */
	MADT_LAPIC_ADDR_OVERRIDE = 5,	/* 5.2.12.8 */
	MADT_X2APIC = 9,		/* 5.2.12.12 */
	MADT_X2APIC_NMI = 0xa,		/* 5.2.12.13 */
};
/* Field offsets within each structure, after {u8 type; u8 length}. */
#define LAPIC_UID		2
#define LAPIC_ID		3
#define LAPIC_FLAGS		4
#define IOAPIC_ID		2
#define IOAPIC_ADDR		4
#define IOAPIC_GSI_BASE		8
#define ISO_BUS			2
#define ISO_SOURCE		3
#define ISO_GSI			4
#define ISO_FLAGS		8
#define NMI_SRC_FLAGS		2
#define NMI_SRC_GSI		4
#define LAPIC_NMI_UID		2
#define LAPIC_NMI_FLAGS		3
#define LAPIC_NMI_LINT		5
#define LAPIC_ADDR_OVR_ADDR	4
#define X2APIC_ID		4
#define X2APIC_FLAGS		8
#define X2APIC_UID		12
#define X2APIC_NMI_FLAGS	2
#define X2APIC_NMI_UID		4
#define X2APIC_NMI_LINT		8
#define LAPIC_NMI_ALL		0xffu		/* UID meaning "every processor" */
#define X2APIC_NMI_ALL		0xffffffffu

/* HPET description table (IA-PC HPET Specification 1.0a, 3.2.4). */
#define HPET_BLOCK_ID		36
#define HPET_BASE_GAS		40
#define HPET_NUMBER		52
#define HPET_MIN_TICK		53
#define HPET_PAGE_PROT		55
#define HPET_TABLE_LEN		56

/* MCFG (PCI Firmware Specification 3.0, 4.1.2): 8 reserved bytes, then
 * 16-byte allocation structures. */
#define MCFG_ENTRIES		44
#define MCFG_ENTRY_LEN		16
#define   MCFG_BASE		0
#define   MCFG_SEGMENT		8
#define   MCFG_BUS_START	10
#define   MCFG_BUS_END		11

/* FADT (5.2.9): only what we read. */
#define FADT_SCI_INT		46
#define FADT_PM_TMR_BLK		76
#define FADT_PM_TMR_LEN		91
#define FADT_IAPC_BOOT_ARCH	109
#define FADT_FLAGS		112
#define FADT_V1_LEN		116	/* ACPI 1.0 FADT: everything up to Flags */
#define FADT_MINOR_VERSION	131
#define FADT_X_PM_TMR_BLK	208
#define FADT_X_PM_TMR_END	220

/* Generic Address Structure (5.2.3.2). */
#define GAS_SPACE_ID		0
#define GAS_BIT_WIDTH		1
#define GAS_ACCESS_SIZE		3	/* 0 undefined, 1 byte, 2 word, 3 dword, 4 qword */
#define GAS_ADDRESS		4
#define GAS_SPACE_MEMORY	0
#define GAS_SPACE_IO		1

/* SPCR (Microsoft, "Serial Port Console Redirection Table", revision 4;
 * revision 2 is 80 bytes long, revision 3 names the UART clock in the
 * bytes that were reserved, revision 4 adds the precise baud rate). */
#define SPCR_INTERFACE		36
#define SPCR_BASE_GAS		40
#define SPCR_BAUD		58	/* 0 as is, 3 9600, 4 19200, 6 57600, 7 115200 */
#define SPCR_PCI_DEVICE_ID	64
#define SPCR_PCI_VENDOR_ID	66
#define SPCR_PCI_BUS		68
#define SPCR_PCI_DEV		69
#define SPCR_PCI_FN		70
#define SPCR_V2_LEN		80
#define SPCR_UART_CLOCK		76	/* revision >= 3 */
#define SPCR_PRECISE_BAUD	80	/* revision >= 4 */
#define SPCR_V4_MIN_LEN		88

/* HPET General Capabilities and ID register, as the table's Event Timer
 * Block ID copies its low half (IA-PC HPET 1.0a, 2.3.4). */
#define HPET_ID_REV_MASK	0xffu
#define HPET_ID_NUM_TIM_SHIFT	8
#define HPET_ID_NUM_TIM_MASK	0x1fu
#define HPET_ID_COUNT_SIZE	(1u << 13)
#define HPET_ID_LEG_RT		(1u << 15)
#define HPET_ID_VENDOR_SHIFT	16
#define HPET_PERIOD_MAX_FS	100000000ull	/* 100 ns: the spec's upper bound */

/* IOAPIC version register (82093AA datasheet, 3.2.2). */
#define IOAPIC_VER_MASK		0xffu
#define IOAPIC_MAXREDIR_SHIFT	16

/* A granted range of firmware memory. */
struct view {
	const u8 *p;
	u64 phys;
	u32 len;
};

struct parser {
	acpi_map_fn map;
	void *ctx;
	void (*warn)(const char *msg, void *ctx);
	struct acpi_info *info;
};

static void __printf(2, 3) warn(struct parser *ps, const char *fmt, ...)
{
	struct acpi_info *info = ps->info;
	char local[ACPI_WARNING_LEN];
	char *buf = info->nwarnings < ACPI_MAX_WARNINGS ? info->warning[info->nwarnings] : local;
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(buf, ACPI_WARNING_LEN, fmt, ap);
	va_end(ap);
	info->nwarnings++;
	if (ps->warn)
		ps->warn(buf, ps->ctx);
}

static bool view_map(struct parser *ps, u64 phys, u32 len, struct view *v)
{
	v->p = NULL;
	v->phys = phys;
	v->len = 0;
	if (!len || phys + len < phys)
		return false;
	v->p = ps->map(phys, len, ps->ctx);
	if (v->p)
		v->len = len;
	return v->p != NULL;
}

/* Little-endian read of n bytes at off; 0 if any of them lies outside.
 * One copy rather than a loop inlined at each field's call site: the
 * parser runs once a boot, where code costs by its size (QEMU TCG
 * translates each block the first time it runs). */
static __attribute__((noinline)) u64 rd(const struct view *v, u32 off, u32 n)
{
	u64 x = 0;

	if (n > v->len || off > v->len - n)
		return 0;
	for (u32 i = n; i-- > 0; )
		x = x << 8 | v->p[off + i];
	return x;
}

static u8 rd8(const struct view *v, u32 off) { return (u8)rd(v, off, 1); }
static u16 rd16(const struct view *v, u32 off) { return (u16)rd(v, off, 2); }
static u32 rd32(const struct view *v, u32 off) { return (u32)rd(v, off, 4); }
static u64 rd64(const struct view *v, u32 off) { return rd(v, off, 8); }

/* ACPI checksums: all bytes of the structure sum to 0 mod 256 (5.2.5.3, 5.2.6). */
static u8 sum_bytes(const u8 *p, u32 len)
{
	u8 s = 0;

	for (u32 i = 0; i < len; i++)
		s += p[i];
	return s;
}

/* Copy n bytes as a printable string (unprintables as '?'). */
static void printable(char *dst, const u8 *src, u32 n)
{
	for (u32 i = 0; i < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? (char)src[i] : '?';
	dst[n] = 0;
}

static bool sig_is(const struct view *t, const char *sig)
{
	return t->len >= 4 && !memcmp(t->p, sig, 4);
}

/* What the messages call a table. */
static const char *table_name(const char *sig)
{
	if (!strcmp(sig, "APIC"))
		return "MADT";
	if (!strcmp(sig, "FACP"))
		return "FADT";
	return sig;
}

/*
 * Map a whole table at phys after checking its header (5.2.6): a length
 * of at least min_len (>= the header) and at most ACPI_TABLE_MAX, all of
 * it readable, and a zero checksum. sig gets the signature, printable.
 * Warns and returns false on any failure.
 */
static bool table_map(struct parser *ps, u64 phys, const char *what, u32 min_len,
		      struct view *t, char sig[5])
{
	struct view h;

	sig[0] = 0;
	if (!what[0])
		what = "table";
	if (!phys) {
		warn(ps, "%s: address 0, ignoring it", what);
		return false;
	}
	if (!view_map(ps, phys, HDR_LEN, &h)) {
		warn(ps, "%s at %#lx is not readable, ignoring it", what, phys);
		return false;
	}
	printable(sig, h.p, 4);
	if (!strcmp(what, "table"))
		what = table_name(sig);
	u32 len = rd32(&h, HDR_LENGTH);
	if (len < MAX(min_len, (u32)HDR_LEN) || len > ACPI_TABLE_MAX) {
		warn(ps, "%s at %#lx: length %u out of range, ignoring it", what, phys, len);
		return false;
	}
	if (!view_map(ps, phys, len, t)) {
		warn(ps, "%s at %#lx: its %u bytes are not all readable, ignoring it",
		     what, phys, len);
		return false;
	}
	if (sum_bytes(t->p, t->len)) {
		warn(ps, "%s at %#lx: checksum bad, ignoring it", what, phys);
		return false;
	}
	return true;
}

/* ---- MADT (5.2.12) ---- */

static void madt_add_cpu(struct parser *ps, u32 apic_id, u32 uid, u32 flags, bool x2apic)
{
	struct acpi_madt *m = &ps->info->madt;
	bool enabled = flags & ACPI_LAPIC_ENABLED;
	bool online_capable = !enabled && (flags & ACPI_LAPIC_ONLINE_CAPABLE);

	/* 5.2.12.2: neither bit set means unusable; OSPM ignores the entry. */
	if (!enabled && !online_capable)
		return;
	for (u32 i = 0; i < m->ncpus; i++)
		if (m->cpu[i].apic_id == apic_id) {
			warn(ps, "MADT lists APIC id %u twice, ignoring the second", apic_id);
			return;
		}
	m->cpus_listed++;
	if (enabled)
		m->cpus_enabled++;
	if (m->ncpus < ACPI_MAX_CPUS)
		m->cpu[m->ncpus++] = (struct acpi_cpu){ .apic_id = apic_id, .uid = uid,
			.enabled = enabled, .online_capable = online_capable, .x2apic = x2apic };
}

static void madt_add_lapic_nmi(struct acpi_madt *m, u32 uid, bool all, u8 lint, u16 flags)
{
	if (m->nlapic_nmis < ACPI_MAX_LAPIC_NMIS)
		m->lapic_nmi[m->nlapic_nmis++] = (struct acpi_lapic_nmi){
			.uid = all ? 0 : uid, .all_cpus = all, .lint = lint, .flags = flags };
	m->lapic_nmis_listed++;
}

/* The smallest valid length of each structure type we read; 0: not read. */
static u8 madt_min_len(u8 type)
{
	switch (type) {
	case MADT_LAPIC:		return 8;
	case MADT_IOAPIC:		return 12;
	case MADT_OVERRIDE:		return 10;
	case MADT_NMI_SOURCE:		return 8;
	case MADT_LAPIC_NMI:		return 6;
	case MADT_LAPIC_ADDR_OVERRIDE:	return 12;
	case MADT_X2APIC:		return 16;
	case MADT_X2APIC_NMI:		return 12;
	default:			return 0;
	}
}

static void madt_entry(struct parser *ps, const struct view *e, u8 type)
{
	struct acpi_madt *m = &ps->info->madt;

	switch (type) {
	case MADT_LAPIC:
		madt_add_cpu(ps, rd8(e, LAPIC_ID), rd8(e, LAPIC_UID), rd32(e, LAPIC_FLAGS), false);
		break;
	case MADT_X2APIC:
		madt_add_cpu(ps, rd32(e, X2APIC_ID), rd32(e, X2APIC_UID), rd32(e, X2APIC_FLAGS), true);
		break;
	case MADT_IOAPIC:
		if (m->nioapics < ACPI_MAX_IOAPICS)
			m->ioapic[m->nioapics++] = (struct acpi_ioapic){
				.id = rd8(e, IOAPIC_ID), .addr = rd32(e, IOAPIC_ADDR),
				.gsi_base = rd32(e, IOAPIC_GSI_BASE) };
		m->ioapics_listed++;
		break;
	case MADT_OVERRIDE:
		if (m->noverrides < ACPI_MAX_OVERRIDES)
			m->override[m->noverrides++] = (struct acpi_override){
				.bus = rd8(e, ISO_BUS), .source = rd8(e, ISO_SOURCE),
				.gsi = rd32(e, ISO_GSI), .flags = rd16(e, ISO_FLAGS) };
		m->overrides_listed++;
		break;
	case MADT_NMI_SOURCE:
		if (m->nnmi_sources < ACPI_MAX_NMI_SOURCES)
			m->nmi_source[m->nnmi_sources++] = (struct acpi_nmi_source){
				.flags = rd16(e, NMI_SRC_FLAGS), .gsi = rd32(e, NMI_SRC_GSI) };
		m->nmi_sources_listed++;
		break;
	case MADT_LAPIC_NMI:
		madt_add_lapic_nmi(m, rd8(e, LAPIC_NMI_UID), rd8(e, LAPIC_NMI_UID) == LAPIC_NMI_ALL,
				   rd8(e, LAPIC_NMI_LINT), rd16(e, LAPIC_NMI_FLAGS));
		break;
	case MADT_X2APIC_NMI:
		madt_add_lapic_nmi(m, rd32(e, X2APIC_NMI_UID),
				   rd32(e, X2APIC_NMI_UID) == X2APIC_NMI_ALL,
				   rd8(e, X2APIC_NMI_LINT), rd16(e, X2APIC_NMI_FLAGS));
		break;
	case MADT_LAPIC_ADDR_OVERRIDE:
		/* 5.2.12.8: when present, used instead of the 32-bit field. */
		m->lapic_addr = rd64(e, LAPIC_ADDR_OVR_ADDR);
		m->lapic_addr_override = true;
		break;
	}
}

static void parse_madt(struct parser *ps, const struct view *t)
{
	struct acpi_madt *m = &ps->info->madt;

	memset(m, 0, sizeof(*m));
	m->src = ACPI_SRC_TABLE;
	m->lapic_addr = rd32(t, MADT_LAPIC_ADDR);
	m->flags = rd32(t, MADT_FLAGS);
	m->pcat_compat = m->flags & ACPI_MADT_PCAT_COMPAT;

	/* Each structure starts with {u8 type; u8 length}. A length below 2
	 * would never advance, one past the end would read beyond the table:
	 * both end the walk (the table checksummed, so the firmware is
	 * broken, not the copy), keeping what came before. */
	u32 off = MADT_ENTRIES;
	while (off < t->len) {
		if (t->len - off < 2) {
			warn(ps, "MADT: %u stray byte at offset %u, ignoring it", t->len - off, off);
			break;
		}
		u8 type = rd8(t, off), len = rd8(t, off + 1);
		if (len < 2 || len > t->len - off) {
			warn(ps, "MADT: entry type %u at offset %u has length %u (%u bytes left), "
			     "ignoring the rest", type, off, len, t->len - off);
			break;
		}
		u8 min = madt_min_len(type);
		if (len < min) {
			warn(ps, "MADT: entry type %u at offset %u is %u bytes, needs %u; skipping it",
			     type, off, len, min);
		} else if (min) {
			struct view e = { .p = t->p + off, .phys = t->phys + off, .len = len };
			madt_entry(ps, &e, type);
		}
		off += len;
	}
	if (m->cpus_listed > m->ncpus)
		warn(ps, "MADT lists %u CPUs; only the first %u are used", m->cpus_listed, m->ncpus);
	if (m->ioapics_listed > m->nioapics)
		warn(ps, "MADT lists %u IOAPICs; only the first %u are used",
		     m->ioapics_listed, m->nioapics);
	if (m->overrides_listed > m->noverrides)
		warn(ps, "MADT lists %u interrupt source overrides; only the first %u are used",
		     m->overrides_listed, m->noverrides);
	if (m->nmi_sources_listed > m->nnmi_sources)
		warn(ps, "MADT lists %u NMI sources; only the first %u are used",
		     m->nmi_sources_listed, m->nnmi_sources);
	if (m->lapic_nmis_listed > m->nlapic_nmis)
		warn(ps, "MADT lists %u local APIC NMIs; only the first %u are used",
		     m->lapic_nmis_listed, m->nlapic_nmis);
}

/* ---- HPET (IA-PC HPET 1.0a) ---- */

static void hpet_decode_id(struct acpi_hpet *h, u32 id)
{
	h->block_id = id;
	h->hw_rev = id & HPET_ID_REV_MASK;
	h->comparators = ((id >> HPET_ID_NUM_TIM_SHIFT) & HPET_ID_NUM_TIM_MASK) + 1;
	h->counter_64bit = id & HPET_ID_COUNT_SIZE;
	h->legacy_route = id & HPET_ID_LEG_RT;
	h->pci_vendor = id >> HPET_ID_VENDOR_SHIFT;
}

static void parse_hpet(struct parser *ps, const struct view *t)
{
	struct acpi_hpet *h = &ps->info->hpet;
	u8 space = rd8(t, HPET_BASE_GAS + GAS_SPACE_ID);
	u64 addr = rd64(t, HPET_BASE_GAS + GAS_ADDRESS);

	if (space != GAS_SPACE_MEMORY || !addr) {
		warn(ps, "HPET table: base %#lx in address space %u is not usable, ignoring it",
		     addr, space);
		return;
	}
	memset(h, 0, sizeof(*h));
	h->src = ACPI_SRC_TABLE;
	h->addr = addr;
	hpet_decode_id(h, rd32(t, HPET_BLOCK_ID));
	h->number = rd8(t, HPET_NUMBER);
	h->min_tick = rd16(t, HPET_MIN_TICK);
	h->page_protection = rd8(t, HPET_PAGE_PROT);
}

/* ---- MCFG (PCI Firmware 3.0, 4.1.2) ---- */

static void parse_mcfg(struct parser *ps, const struct view *t)
{
	struct acpi_info *info = ps->info;
	u32 bytes = t->len - MCFG_ENTRIES, n = bytes / MCFG_ENTRY_LEN;

	if (bytes % MCFG_ENTRY_LEN)
		warn(ps, "MCFG: %u bytes after the last whole entry, ignoring them",
		     bytes % MCFG_ENTRY_LEN);
	info->nmcfg = info->mcfg_listed = 0;
	for (u32 i = 0; i < n; i++) {
		u32 off = MCFG_ENTRIES + i * MCFG_ENTRY_LEN;
		struct acpi_mcfg c = {
			.base = rd64(t, off + MCFG_BASE), .segment = rd16(t, off + MCFG_SEGMENT),
			.bus_start = rd8(t, off + MCFG_BUS_START), .bus_end = rd8(t, off + MCFG_BUS_END),
		};
		if (!c.base || c.bus_start > c.bus_end) {
			warn(ps, "MCFG: entry %u (base %#lx, buses %u-%u) is invalid, skipping it",
			     i, c.base, c.bus_start, c.bus_end);
			continue;
		}
		if (info->nmcfg < ACPI_MAX_MCFG)
			info->mcfg[info->nmcfg++] = c;
		info->mcfg_listed++;
	}
	if (info->mcfg_listed > info->nmcfg)
		warn(ps, "MCFG lists %u ECAM windows; only the first %u are used",
		     info->mcfg_listed, info->nmcfg);
}

/* ---- FADT (5.2.9) ---- */

static void parse_fadt(struct parser *ps, const struct view *t)
{
	struct acpi_fadt *f = &ps->info->fadt;

	memset(f, 0, sizeof(*f));
	f->src = ACPI_SRC_TABLE;
	f->revision = rd8(t, HDR_REVISION);
	f->minor = t->len > FADT_MINOR_VERSION ? rd8(t, FADT_MINOR_VERSION) & 0xf : 0;
	f->flags = rd32(t, FADT_FLAGS);
	f->iapc_boot_arch = rd16(t, FADT_IAPC_BOOT_ARCH);
	f->sci_int = rd16(t, FADT_SCI_INT);
	f->hw_reduced = f->flags & ACPI_FADT_HW_REDUCED_ACPI;
	if (f->hw_reduced)		/* 4.1: no fixed hardware, so no PM timer */
		return;

	/* X_PM_TMR_BLK, when non-zero, supersedes PM_TMR_BLK (5.2.9). We
	 * read the timer with `in`, so only an I/O-space address will do. */
	if (t->len >= FADT_X_PM_TMR_END) {
		u8 space = rd8(t, FADT_X_PM_TMR_BLK + GAS_SPACE_ID);
		u64 addr = rd64(t, FADT_X_PM_TMR_BLK + GAS_ADDRESS);
		if (addr && space == GAS_SPACE_IO && addr <= 0xffff) {
			f->pm_timer_port = (u16)addr;
			f->pm_timer_from_x = true;
		} else if (addr) {
			warn(ps, "FADT: X_PM_TMR_BLK %#lx in address space %u is not an I/O port; "
			     "trying PM_TMR_BLK", addr, space);
		}
	}
	u32 blk = rd32(t, FADT_PM_TMR_BLK);
	u8 len = rd8(t, FADT_PM_TMR_LEN);
	if (!f->pm_timer_port && blk) {
		/* PM_TMR_LEN is 4 when the timer exists, 0 when it does not. */
		if (len == 4 && blk <= 0xffff)
			f->pm_timer_port = (u16)blk;
		else
			warn(ps, "FADT: PM_TMR_BLK %#x with PM_TMR_LEN %u is not usable", blk, len);
	}
	if (f->pm_timer_port)
		f->pm_timer_32bit = f->flags & ACPI_FADT_TMR_VAL_EXT;
}

/* ---- SPCR ---- */

static u32 spcr_baud(struct parser *ps, u8 code)
{
	switch (code) {
	case 0: return 0;
	case 3: return 9600;
	case 4: return 19200;
	case 6: return 57600;
	case 7: return 115200;
	}
	warn(ps, "SPCR: baud rate code %u is reserved; keeping the UART's rate as it is", code);
	return 0;
}

static void parse_spcr(struct parser *ps, const struct view *t)
{
	struct acpi_spcr *s = &ps->info->spcr;
	u8 type = rd8(t, SPCR_INTERFACE);
	u8 space = rd8(t, SPCR_BASE_GAS + GAS_SPACE_ID);
	u8 access = rd8(t, SPCR_BASE_GAS + GAS_ACCESS_SIZE);
	u8 bits = rd8(t, SPCR_BASE_GAS + GAS_BIT_WIDTH);
	u64 addr = rd64(t, SPCR_BASE_GAS + GAS_ADDRESS);
	u8 rev = rd8(t, HDR_REVISION);

	memset(s, 0, sizeof(*s));
	if (type != ACPI_SPCR_16550 && type != ACPI_SPCR_16450 && type != ACPI_SPCR_16550_GAS) {
		warn(ps, "SPCR: interface type %#x is not a 16550-compatible UART, ignoring it", type);
		return;
	}
	if (!addr)		/* the table's way of saying "console redirection off" */
		return;
	if (space != GAS_SPACE_MEMORY && space != GAS_SPACE_IO) {
		warn(ps, "SPCR: UART in address space %u, ignoring it", space);
		return;
	}
	/* The access size says how wide each register is read; an undefined
	 * one (0, older tables) falls back to the register bit width. */
	u32 width = access ? 1u << (access - 1) : bits == 32 ? 4 : 1;
	if (access > 4 || (width != 1 && width != 4) ||
	    (space == GAS_SPACE_IO && (width != 1 || addr > 0xfff8))) {
		warn(ps, "SPCR: UART at %#lx: space %u, access size %u, %u bits: not a layout "
		     "bareperf drives", addr, space, access, bits);
		return;
	}
	s->revision = rev;
	s->interface_type = type;
	s->mmio = space == GAS_SPACE_MEMORY;
	s->addr = addr;
	s->width = width;
	s->baud = spcr_baud(ps, rd8(t, SPCR_BAUD));
	if (rev >= 3 && t->len >= SPCR_V2_LEN)
		s->clock_hz = rd32(t, SPCR_UART_CLOCK);
	if (rev >= 4 && t->len >= SPCR_V4_MIN_LEN && rd32(t, SPCR_PRECISE_BAUD))
		s->baud = rd32(t, SPCR_PRECISE_BAUD);
	/* Not a PCI device: the ids are 0xffff (and 0 in tables that leave
	 * the fields blank). */
	u16 vendor = rd16(t, SPCR_PCI_VENDOR_ID);
	if (vendor != 0xffff && vendor != 0) {
		s->pci = true;
		s->pci_vendor = vendor;
		s->pci_device = rd16(t, SPCR_PCI_DEVICE_ID);
		s->pci_bus = rd8(t, SPCR_PCI_BUS);
		s->pci_dev = rd8(t, SPCR_PCI_DEV);
		s->pci_fn = rd8(t, SPCR_PCI_FN);
	}
	s->src = ACPI_SRC_TABLE;
}

/* ---- root tables (5.2.7, 5.2.8) ---- */

struct table_kind {
	const char *sig;
	u32 min_len;
	void (*parse)(struct parser *ps, const struct view *t);
};

static const struct table_kind kinds[] = {
	{ "APIC", MADT_ENTRIES, parse_madt },
	{ "HPET", HPET_TABLE_LEN, parse_hpet },
	{ "MCFG", MCFG_ENTRIES, parse_mcfg },
	{ "FACP", FADT_V1_LEN, parse_fadt },
	{ "SPCR", SPCR_V2_LEN, parse_spcr },
};

/* Has a table of this kind been taken already? */
static bool kind_done(const struct acpi_info *info, const struct table_kind *k)
{
	if (k->parse == parse_madt)
		return info->madt.src == ACPI_SRC_TABLE;
	if (k->parse == parse_hpet)
		return info->hpet.src == ACPI_SRC_TABLE;
	if (k->parse == parse_fadt)
		return info->fadt.src == ACPI_SRC_TABLE;
	if (k->parse == parse_spcr)
		return info->spcr.src == ACPI_SRC_TABLE;
	return info->mcfg_listed > 0;
}

static void take_table(struct parser *ps, u64 phys)
{
	struct acpi_info *info = ps->info;
	struct view t;
	char sig[5];

	if (!table_map(ps, phys, "", HDR_LEN, &t, sig))
		return;
	if (info->ntables < ACPI_MAX_TABLES)
		memcpy(info->tables[info->ntables++], sig, 5);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		const struct table_kind *k = &kinds[i];
		if (strcmp(sig, k->sig))
			continue;
		if (kind_done(info, k)) {
			/* The first one serves; a second HPET would be a second
			 * timer block, which nothing here needs. */
			warn(ps, "a second %s at %#lx, ignoring it", table_name(sig), phys);
		} else if (t.len < k->min_len) {
			warn(ps, "%s at %#lx: %u bytes, too short (needs %u), ignoring it",
			     table_name(sig), phys, t.len, k->min_len);
		} else {
			k->parse(ps, &t);
		}
	}
}

/* Walk an XSDT (8-byte entries) or RSDT (4-byte entries). */
static bool walk_root(struct parser *ps, u64 phys, bool xsdt)
{
	struct acpi_info *info = ps->info;
	const char *name = xsdt ? "XSDT" : "RSDT";
	u32 esz = xsdt ? 8 : 4;
	struct view t;
	char sig[5];

	if (!table_map(ps, phys, name, HDR_LEN, &t, sig))
		return false;
	if (!sig_is(&t, name)) {
		warn(ps, "%s at %#lx: signature is \"%s\", ignoring it", name, phys, sig);
		return false;
	}
	u32 bytes = t.len - HDR_LEN, n = bytes / esz;
	if (bytes % esz)
		warn(ps, "%s: %u bytes after the last whole entry, ignoring them", name, bytes % esz);
	info->tables_listed = n;
	if (n > ACPI_MAX_ROOT_ENTRIES) {
		warn(ps, "%s lists %u tables; looking at the first %u", name, n,
		     ACPI_MAX_ROOT_ENTRIES);
		n = ACPI_MAX_ROOT_ENTRIES;
	}
	info->present = true;
	info->root = xsdt ? ACPI_ROOT_XSDT : ACPI_ROOT_RSDT;
	info->root_addr = phys;
	for (u32 i = 0; i < n; i++) {
		u64 entry = rd(&t, HDR_LEN + i * esz, esz);
		if (!entry) {
			warn(ps, "%s entry %u is 0, skipping it", name, i);
			continue;
		}
		take_table(ps, entry);
	}
	return true;
}

int acpi_parse(u64 rsdp_phys, acpi_map_fn map, void *ctx,
	       void (*warnfn)(const char *msg, void *ctx), struct acpi_info *info)
{
	struct parser ps = { .map = map, .ctx = ctx, .warn = warnfn, .info = info };
	struct view r;

	memset(info, 0, sizeof(*info));
	if (!rsdp_phys || !view_map(&ps, rsdp_phys, RSDP_CHECKSUM_LEN, &r)) {
		warn(&ps, "RSDP at %#lx is not readable", rsdp_phys);
		return -E_INVAL;
	}
	if (memcmp(r.p, RSDP_SIG, 8)) {
		warn(&ps, "no \"RSD PTR \" signature at %#lx", rsdp_phys);
		return -E_INVAL;
	}
	if (sum_bytes(r.p, RSDP_CHECKSUM_LEN)) {
		warn(&ps, "RSDP at %#lx: checksum bad, ignoring it", rsdp_phys);
		return -E_INVAL;
	}
	info->rsdp = rsdp_phys;
	info->rsdp_revision = rd8(&r, RSDP_REVISION);
	printable(info->oem_id, r.p + RSDP_OEMID, 6);
	for (int i = 5; i >= 0 && info->oem_id[i] == ' '; i--)	/* space-padded */
		info->oem_id[i] = 0;
	u32 rsdt = rd32(&r, RSDP_RSDT);
	u64 xsdt = 0;

	/* Revision 2 and later (5.2.5.3): Length, the XSDT address and an
	 * extended checksum over Length bytes. A bad one costs only the XSDT. */
	if (info->rsdp_revision >= 2) {
		struct view x;
		u32 len = 0;
		if (!view_map(&ps, rsdp_phys, RSDP_V2_LEN, &x))
			warn(&ps, "RSDP: revision %u but only 20 bytes readable, ignoring its XSDT",
			     info->rsdp_revision);
		else if ((len = rd32(&x, RSDP_LENGTH)) < RSDP_V2_LEN || len > RSDP_MAX_LEN)
			warn(&ps, "RSDP: length %u out of range, ignoring its XSDT", len);
		else if (!view_map(&ps, rsdp_phys, len, &x))
			warn(&ps, "RSDP: its %u bytes are not all readable, ignoring its XSDT", len);
		else if (sum_bytes(x.p, len))
			warn(&ps, "RSDP: extended checksum bad, ignoring its XSDT");
		else
			xsdt = rd64(&x, RSDP_XSDT);
	}

	/* 5.2.5.3: an OS uses the XSDT when there is one; the RSDT is what
	 * is left when it is absent or unusable. */
	if (xsdt && walk_root(&ps, xsdt, true))
		return 0;
	if (xsdt && rsdt)
		warn(&ps, "falling back to the RSDT at %#x", rsdt);
	if (rsdt && walk_root(&ps, rsdt, false))
		return 0;
	warn(&ps, "no usable XSDT or RSDT");
	return -E_NOENT;
}

/* ---- RSDP search (5.2.5.1) ---- */

static bool rsdp_valid_at(acpi_map_fn map, void *ctx, u64 phys)
{
	const u8 *p = map(phys, RSDP_CHECKSUM_LEN, ctx);

	if (!p || memcmp(p, RSDP_SIG, 8) || sum_bytes(p, RSDP_CHECKSUM_LEN))
		return false;
	if (p[RSDP_REVISION] < 2)
		return true;
	p = map(phys, RSDP_V2_LEN, ctx);
	if (!p)
		return false;
	u32 len = p[RSDP_LENGTH] | p[RSDP_LENGTH + 1] << 8 | p[RSDP_LENGTH + 2] << 16 |
		  (u32)p[RSDP_LENGTH + 3] << 24;
	if (len < RSDP_V2_LEN || len > RSDP_MAX_LEN)
		return false;
	p = map(phys, len, ctx);
	return p && !sum_bytes(p, len);
}

static u64 scan_area(acpi_map_fn map, void *ctx, u64 base, u32 len)
{
	const u8 *p = map(base, len, ctx);

	if (!p)
		return 0;
	for (u32 off = 0; off + RSDP_CHECKSUM_LEN <= len; off += 16)
		if (!memcmp(p + off, RSDP_SIG, 8) && rsdp_valid_at(map, ctx, base + off))
			return base + off;
	return 0;
}

u64 acpi_find_rsdp(acpi_map_fn map, void *ctx, const char **where)
{
	const u8 *bda = map(ACPI_BDA_EBDA_SEG, 2, ctx);
	u64 found;

	if (where)
		*where = NULL;
	if (bda) {
		/* Only a segment between the BDA and the video area is believed. */
		u64 ebda = (u64)(bda[0] | bda[1] << 8) << 4;
		if (ebda >= 0x500 && ebda + ACPI_EBDA_SCAN_LEN <= 0xa0000 &&
		    (found = scan_area(map, ctx, ebda, ACPI_EBDA_SCAN_LEN))) {
			if (where)
				*where = "EBDA";
			return found;
		}
	}
	found = scan_area(map, ctx, ACPI_BIOS_AREA, ACPI_BIOS_AREA_LEN);
	if (found && where)
		*where = "BIOS area";
	return found;
}

/* ---- fallbacks ---- */

bool acpi_ioapic_version_sane(u32 v)
{
	u32 ver = v & IOAPIC_VER_MASK, maxredir = (v >> IOAPIC_MAXREDIR_SHIFT) & 0xff;

	/* Versions 0x1x (discrete 82093AA-style) and 0x2x (integrated, PCI
	 * 2.2); 16 to 240 redirection entries. Floating bus reads give all
	 * ones or zeros, which fail this. */
	return v != ~0u && ver >= 0x10 && ver <= 0x2f && maxredir >= 15 && maxredir < 240;
}

bool acpi_hpet_gcap_sane(u64 cap)
{
	u64 period = cap >> 32;		/* COUNTER_CLK_PERIOD, femtoseconds */

	return cap != ~0ull && (cap & HPET_ID_REV_MASK) && period && period <= HPET_PERIOD_MAX_FS;
}

void acpi_apply_defaults(struct acpi_info *info, u32 boot_apic_id, u32 ioapic_version,
			 u64 hpet_gcap_id)
{
	struct acpi_madt *m = &info->madt;
	struct acpi_hpet *h = &info->hpet;

	if (m->src == ACPI_SRC_NONE) {
		memset(m, 0, sizeof(*m));
		m->src = ACPI_SRC_DEFAULT;
		m->lapic_addr = ACPI_DEFAULT_LAPIC;
		m->flags = ACPI_MADT_PCAT_COMPAT;
		m->pcat_compat = true;
		m->cpu[0] = (struct acpi_cpu){ .apic_id = boot_apic_id, .enabled = true };
		m->ncpus = m->cpus_listed = m->cpus_enabled = 1;
		if (acpi_ioapic_version_sane(ioapic_version)) {
			m->ioapic[0] = (struct acpi_ioapic){ .addr = (u32)ACPI_DEFAULT_IOAPIC };
			m->nioapics = m->ioapics_listed = 1;
		}
	}
	if (h->src == ACPI_SRC_NONE && acpi_hpet_gcap_sane(hpet_gcap_id)) {
		memset(h, 0, sizeof(*h));
		h->src = ACPI_SRC_DEFAULT;
		h->addr = ACPI_DEFAULT_HPET;
		hpet_decode_id(h, (u32)hpet_gcap_id);
	}
}

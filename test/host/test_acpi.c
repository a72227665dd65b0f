/*
 * test_acpi — the ACPI parsers (kernel/platform/acpi.c) against tables built here
 * in a fake physical memory: good tables field by field, then every kind
 * of breakage firmware can hand over (bad checksums, truncated and absurd
 * lengths, zero-length and overlong MADT entries, absurd counts, pointers
 * to nowhere), and the RSDP search and the no-ACPI fallbacks.
 *
 * The fake map hands out a malloc'd copy of exactly the bytes asked for,
 * so AddressSanitizer reports any read outside a granted range. An alarm
 * turns a parser that loops forever into a failure.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "kernel/platform/acpi.h"

/* ---- fake physical memory ---- */

#define MEM_SIZE	(4u << 20)

static u8 *mem;
static struct { u64 base, len; } holes[8];
static unsigned nholes;
static void **grants;
static size_t ngrants, grants_cap;
static size_t max_map_len;
static unsigned map_calls;

static void hole(u64 base, u64 len)
{
	assert_true(nholes < 8);
	holes[nholes].base = base;
	holes[nholes++].len = len;
}

static const void *fake_map(u64 phys, size_t len, void *ctx)
{
	(void)ctx;
	map_calls++;
	if (len > max_map_len)
		max_map_len = len;
	if (phys >= MEM_SIZE || len > MEM_SIZE - phys)
		return NULL;
	for (unsigned i = 0; i < nholes; i++)
		if (phys < holes[i].base + holes[i].len && holes[i].base < phys + len)
			return NULL;
	void *copy = malloc(len);
	assert_non_null(copy);
	memcpy(copy, mem + phys, len);
	if (ngrants == grants_cap) {
		grants_cap = grants_cap ? grants_cap * 2 : 64;
		grants = realloc(grants, grants_cap * sizeof(*grants));
		assert_non_null(grants);
	}
	grants[ngrants++] = copy;
	return copy;
}

static int setup(void **state)
{
	(void)state;
	mem = calloc(1, MEM_SIZE);
	nholes = 0;
	max_map_len = 0;
	map_calls = 0;
	return mem ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < ngrants; i++)
		free(grants[i]);
	ngrants = 0;
	free(mem);
	mem = NULL;
	return 0;
}

/* ---- table builder ---- */

static void put8(u64 a, u8 v) { mem[a] = v; }
static void put16(u64 a, u16 v) { put8(a, (u8)v); put8(a + 1, (u8)(v >> 8)); }
static void put32(u64 a, u32 v) { put16(a, (u16)v); put16(a + 2, (u16)(v >> 16)); }
static void put64(u64 a, u64 v) { put32(a, (u32)v); put32(a + 4, (u32)(v >> 32)); }
static u32 get32(u64 a) { return mem[a] | mem[a + 1] << 8 | mem[a + 2] << 16 | (u32)mem[a + 3] << 24; }

/* Make bytes [a, a+len) sum to 0 by setting the byte at a+at. */
static void fix_sum(u64 a, u32 len, u32 at)
{
	u8 s = 0;

	mem[a + at] = 0;
	for (u32 i = 0; i < len; i++)
		s += mem[a + i];
	mem[a + at] = (u8)-s;
}

static void header(u64 a, const char *sig, u32 len, u8 rev)
{
	memcpy(mem + a, sig, 4);
	put32(a + 4, len);
	put8(a + 8, rev);
	memcpy(mem + a + 10, "BPTEST", 6);
	memcpy(mem + a + 16, "BPTABLE ", 8);
	put32(a + 24, 1);
	memcpy(mem + a + 28, "BPTC", 4);
	put32(a + 32, 1);
}

/* Recompute a table's checksum from its own length field. */
static void seal(u64 a)
{
	fix_sum(a, get32(a + 4), 9);
}

#define RSDP_AT		0xf5a40ull
#define RSDT_AT		0x100000ull
#define XSDT_AT		0x101000ull
#define MADT_AT		0x102000ull
#define HPET_AT		0x103000ull
#define MCFG_AT		0x104000ull
#define FADT_AT		0x105000ull
#define WAET_AT		0x106000ull
#define EXTRA_AT	0x107000ull	/* for a second table of a kind */
#define BIG_AT		0x200000ull	/* room for a table of up to 2 MiB */

static void rsdp(u64 a, u8 rev, u32 rsdt, u64 xsdt)
{
	memset(mem + a, 0, 36);
	memcpy(mem + a, "RSD PTR ", 8);
	memcpy(mem + a + 9, "BOCHS ", 6);
	put8(a + 15, rev);
	put32(a + 16, rsdt);
	fix_sum(a, 20, 8);
	if (rev >= 2) {			/* the extended checksum covers the first one */
		put32(a + 20, 36);
		put64(a + 24, xsdt);
		fix_sum(a, 36, 32);
	}
}

static void root(u64 a, bool xsdt, const u64 *tables, unsigned n)
{
	u32 esz = xsdt ? 8 : 4;

	header(a, xsdt ? "XSDT" : "RSDT", 36 + n * esz, 1);
	for (unsigned i = 0; i < n; i++) {
		if (xsdt)
			put64(a + 36 + i * 8, tables[i]);
		else
			put32(a + 36 + i * 4, (u32)tables[i]);
	}
	seal(a);
}

/* MADT under construction: entries appended at `end`. */
struct madt_b { u64 at, end; };

static struct madt_b madt_begin(u64 at, u32 lapic, u32 flags)
{
	struct madt_b b = { at, at + 44 };

	memset(mem + at, 0, 44);
	put32(at + 36, lapic);
	put32(at + 40, flags);
	return b;
}

static u64 madt_entry(struct madt_b *b, u8 type, u8 len)
{
	u64 e = b->end;

	memset(mem + e, 0, len >= 2 ? len : 2);
	put8(e, type);
	put8(e + 1, len);
	b->end += len >= 2 ? len : 2;
	return e;
}

static void madt_lapic(struct madt_b *b, u8 uid, u8 id, u32 flags)
{
	u64 e = madt_entry(b, 0, 8);
	put8(e + 2, uid); put8(e + 3, id); put32(e + 4, flags);
}

static void madt_ioapic(struct madt_b *b, u8 id, u32 addr, u32 gsi)
{
	u64 e = madt_entry(b, 1, 12);
	put8(e + 2, id); put32(e + 4, addr); put32(e + 8, gsi);
}

static void madt_iso(struct madt_b *b, u8 src, u32 gsi, u16 flags)
{
	u64 e = madt_entry(b, 2, 10);
	put8(e + 2, 0); put8(e + 3, src); put32(e + 4, gsi); put16(e + 8, flags);
}

static void madt_nmi_src(struct madt_b *b, u16 flags, u32 gsi)
{
	u64 e = madt_entry(b, 3, 8);
	put16(e + 2, flags); put32(e + 4, gsi);
}

static void madt_lapic_nmi(struct madt_b *b, u8 uid, u16 flags, u8 lint)
{
	u64 e = madt_entry(b, 4, 6);
	put8(e + 2, uid); put16(e + 3, flags); put8(e + 5, lint);
}

static void madt_lapic_override(struct madt_b *b, u64 addr)
{
	u64 e = madt_entry(b, 5, 12);
	put64(e + 4, addr);
}

static void madt_x2apic(struct madt_b *b, u32 id, u32 flags, u32 uid)
{
	u64 e = madt_entry(b, 9, 16);
	put32(e + 4, id); put32(e + 8, flags); put32(e + 12, uid);
}

static void madt_x2apic_nmi(struct madt_b *b, u16 flags, u32 uid, u8 lint)
{
	u64 e = madt_entry(b, 0xa, 12);
	put16(e + 2, flags); put32(e + 4, uid); put8(e + 8, lint);
}

static void madt_end(struct madt_b *b)
{
	header(b->at, "APIC", (u32)(b->end - b->at), 5);
	/* header() clears nothing past 36, so the fields written stay. */
	seal(b->at);
}

static void hpet_table(u64 a, u32 block_id, u8 space, u64 addr)
{
	memset(mem + a, 0, 56);
	header(a, "HPET", 56, 1);
	put32(a + 36, block_id);
	put8(a + 40, space);
	put8(a + 41, 64);
	put64(a + 44, addr);
	put8(a + 52, 0);
	put16(a + 53, 128);
	put8(a + 55, 0);
	seal(a);
}

struct mcfg_e { u64 base; u16 seg; u8 start, end; };

static void mcfg_table(u64 a, const struct mcfg_e *e, unsigned n)
{
	memset(mem + a, 0, 44 + n * 16);
	header(a, "MCFG", 44 + n * 16, 1);
	for (unsigned i = 0; i < n; i++) {
		put64(a + 44 + i * 16, e[i].base);
		put16(a + 44 + i * 16 + 8, e[i].seg);
		put8(a + 44 + i * 16 + 10, e[i].start);
		put8(a + 44 + i * 16 + 11, e[i].end);
	}
	seal(a);
}

/* FADT of `len` bytes: PM_TMR_BLK/LEN, flags, and X_PM_TMR_BLK if it fits. */
static void fadt_table(u64 a, u32 len, u8 rev, u32 pm_blk, u8 pm_len, u32 flags,
		       u8 x_space, u64 x_addr)
{
	memset(mem + a, 0, len);
	header(a, "FACP", len, rev);
	put16(a + 46, 9);			/* SCI_INT */
	put32(a + 76, pm_blk);
	put8(a + 91, pm_len);
	put16(a + 109, 0x0002);			/* IAPC_BOOT_ARCH: 8042 */
	put32(a + 112, flags);
	if (len > 131)
		put8(a + 131, 0x01);		/* minor version 1 */
	if (len >= 220) {
		put8(a + 208, x_space);
		put8(a + 209, 32);
		put8(a + 211, 3);
		put64(a + 212, x_addr);
	}
	seal(a);
}

static void other_table(u64 a, const char *sig)
{
	memset(mem + a, 0, 40);
	header(a, sig, 40, 1);
	seal(a);
}

/* A QEMU q35 -smp 2 look-alike, listed by both the RSDT and the XSDT. */
static const u64 std_tables[] = { FADT_AT, MADT_AT, HPET_AT, MCFG_AT, WAET_AT };

static void std_madt(void)
{
	struct madt_b b = madt_begin(MADT_AT, 0xfee00000, ACPI_MADT_PCAT_COMPAT);

	madt_lapic(&b, 0, 0, ACPI_LAPIC_ENABLED);
	madt_lapic(&b, 1, 1, ACPI_LAPIC_ENABLED);
	madt_ioapic(&b, 0, 0xfec00000, 0);
	madt_iso(&b, 0, 2, 0);
	madt_iso(&b, 9, 9, ACPI_INTI_POLARITY_HIGH | ACPI_INTI_TRIGGER_LEVEL);
	madt_nmi_src(&b, ACPI_INTI_TRIGGER_EDGE, 23);
	madt_lapic_nmi(&b, 0xff, 0, 1);
	madt_end(&b);
}

static void build_std(void)
{
	std_madt();
	hpet_table(HPET_AT, 0x8086a201, 0, 0xfed00000);
	mcfg_table(MCFG_AT, &(struct mcfg_e){ 0xb0000000, 0, 0, 255 }, 1);
	fadt_table(FADT_AT, 244, 3, 0x608, 4, 0, 1, 0x608);
	other_table(WAET_AT, "WAET");
	root(RSDT_AT, false, std_tables, 5);
	root(XSDT_AT, true, std_tables, 5);
	rsdp(RSDP_AT, 2, RSDT_AT, XSDT_AT);
}

/* ---- parse helpers ---- */

static struct acpi_info info;
static unsigned warn_calls;

static void count_warn(const char *msg, void *ctx)
{
	(void)ctx;
	assert_true(strlen(msg) < ACPI_WARNING_LEN);
	warn_calls++;
}

static int parse(u64 at)
{
	warn_calls = 0;
	int rc = acpi_parse(at, fake_map, NULL, count_warn, &info);
	assert_int_equal(warn_calls, info.nwarnings);
	return rc;
}

/* Is there a kept warning containing text? */
static bool warned(const char *text)
{
	for (u32 i = 0; i < info.nwarnings && i < ACPI_MAX_WARNINGS; i++)
		if (strstr(info.warning[i], text))
			return true;
	return false;
}

#define assert_warned(text) do {					\
	if (!warned(text)) {						\
		for (u32 i_ = 0; i_ < info.nwarnings && i_ < ACPI_MAX_WARNINGS; i_++) \
			print_message("warning %u: %s\n", i_, info.warning[i_]); \
		fail_msg("no warning containing \"%s\"", text);		\
	}								\
} while (0)

/* The std tables other than the one a test broke are still read. */
static void assert_hpet_mcfg_fadt_ok(void)
{
	assert_int_equal(info.hpet.src, ACPI_SRC_TABLE);
	assert_int_equal(info.hpet.addr, 0xfed00000);
	assert_int_equal(info.nmcfg, 1);
	assert_int_equal(info.fadt.pm_timer_port, 0x608);
}

/* ---- good tables ---- */

static void good_tables(void **state)
{
	(void)state;
	build_std();
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	assert_true(info.present);
	assert_int_equal(info.rsdp, RSDP_AT);
	assert_int_equal(info.rsdp_revision, 2);
	assert_int_equal(info.root, ACPI_ROOT_XSDT);
	assert_int_equal(info.root_addr, XSDT_AT);
	assert_string_equal(info.oem_id, "BOCHS");
	assert_int_equal(info.ntables, 5);
	assert_int_equal(info.tables_listed, 5);
	assert_string_equal(info.tables[0], "FACP");
	assert_string_equal(info.tables[1], "APIC");
	assert_string_equal(info.tables[4], "WAET");

	const struct acpi_madt *m = &info.madt;
	assert_int_equal(m->src, ACPI_SRC_TABLE);
	assert_int_equal(m->lapic_addr, 0xfee00000);
	assert_false(m->lapic_addr_override);
	assert_true(m->pcat_compat);
	assert_int_equal(m->ncpus, 2);
	assert_int_equal(m->cpus_listed, 2);
	assert_int_equal(m->cpus_enabled, 2);
	for (u32 i = 0; i < 2; i++) {
		assert_int_equal(m->cpu[i].apic_id, i);
		assert_int_equal(m->cpu[i].uid, i);
		assert_true(m->cpu[i].enabled);
		assert_false(m->cpu[i].online_capable);
		assert_false(m->cpu[i].x2apic);
	}
	assert_int_equal(m->nioapics, 1);
	assert_int_equal(m->ioapic[0].id, 0);
	assert_int_equal(m->ioapic[0].addr, 0xfec00000);
	assert_int_equal(m->ioapic[0].gsi_base, 0);
	assert_int_equal(m->noverrides, 2);
	assert_int_equal(m->override[0].source, 0);
	assert_int_equal(m->override[0].gsi, 2);
	assert_int_equal(m->override[0].flags, 0);
	assert_int_equal(m->override[1].source, 9);
	assert_int_equal(m->override[1].gsi, 9);
	assert_int_equal(m->override[1].flags & ACPI_INTI_TRIGGER_MASK, ACPI_INTI_TRIGGER_LEVEL);
	assert_int_equal(m->override[1].flags & ACPI_INTI_POLARITY_MASK, ACPI_INTI_POLARITY_HIGH);
	assert_int_equal(m->nnmi_sources, 1);
	assert_int_equal(m->nmi_source[0].gsi, 23);
	assert_int_equal(m->nmi_source[0].flags, ACPI_INTI_TRIGGER_EDGE);
	assert_int_equal(m->nlapic_nmis, 1);
	assert_true(m->lapic_nmi[0].all_cpus);
	assert_int_equal(m->lapic_nmi[0].lint, 1);

	const struct acpi_hpet *h = &info.hpet;
	assert_int_equal(h->src, ACPI_SRC_TABLE);
	assert_int_equal(h->addr, 0xfed00000);
	assert_int_equal(h->block_id, 0x8086a201);
	assert_int_equal(h->hw_rev, 1);
	assert_int_equal(h->comparators, 3);
	assert_true(h->counter_64bit);
	assert_true(h->legacy_route);
	assert_int_equal(h->pci_vendor, 0x8086);
	assert_int_equal(h->min_tick, 128);

	assert_int_equal(info.nmcfg, 1);
	assert_int_equal(info.mcfg[0].base, 0xb0000000);
	assert_int_equal(info.mcfg[0].segment, 0);
	assert_int_equal(info.mcfg[0].bus_start, 0);
	assert_int_equal(info.mcfg[0].bus_end, 255);

	const struct acpi_fadt *f = &info.fadt;
	assert_int_equal(f->src, ACPI_SRC_TABLE);
	assert_int_equal(f->revision, 3);
	assert_int_equal(f->minor, 1);
	assert_int_equal(f->sci_int, 9);
	assert_int_equal(f->iapc_boot_arch, 2);
	assert_int_equal(f->pm_timer_port, 0x608);
	assert_true(f->pm_timer_from_x);
	assert_false(f->pm_timer_32bit);
	assert_false(f->hw_reduced);
	assert_true(max_map_len <= 244);
}

/* A v1 RSDP is 20 bytes: nothing after them may be read (a hole there). */
static void rsdp_v1_uses_rsdt(void **state)
{
	(void)state;
	build_std();
	rsdp(RSDP_AT, 0, RSDT_AT, 0);
	hole(RSDP_AT + 20, 16);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	assert_int_equal(info.rsdp_revision, 0);
	assert_int_equal(info.root, ACPI_ROOT_RSDT);
	assert_int_equal(info.root_addr, RSDT_AT);
	assert_int_equal(info.madt.ncpus, 2);
	assert_hpet_mcfg_fadt_ok();
}

static void rsdp_bad_checksum(void **state)
{
	(void)state;
	build_std();
	mem[RSDP_AT + 8] ^= 1;
	assert_int_equal(parse(RSDP_AT), -E_INVAL);
	assert_false(info.present);
	assert_int_equal(info.rsdp, 0);
	assert_int_equal(info.madt.src, ACPI_SRC_NONE);
	assert_warned("RSDP at 0xf5a40: checksum bad");
}

static void rsdp_bad_signature_or_unreadable(void **state)
{
	(void)state;
	build_std();
	mem[RSDP_AT + 3] = 'X';
	fix_sum(RSDP_AT, 20, 8);
	assert_int_equal(parse(RSDP_AT), -E_INVAL);
	assert_warned("no \"RSD PTR \" signature");
	assert_int_equal(parse(0), -E_INVAL);
	assert_warned("not readable");
	assert_int_equal(parse(MEM_SIZE + 0x1000ull), -E_INVAL);
	assert_int_equal(parse(~0ull - 4), -E_INVAL);	/* phys + len wraps */
	assert_false(info.present);
}

static void rsdp_bad_extended_checksum(void **state)
{
	(void)state;
	build_std();
	mem[RSDP_AT + 33] ^= 0x40;		/* a reserved byte: only the extended sum sees it */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("extended checksum bad");
	assert_int_equal(info.root, ACPI_ROOT_RSDT);
	assert_int_equal(info.madt.ncpus, 2);
	assert_hpet_mcfg_fadt_ok();
}

static void rsdp_absurd_length(void **state)
{
	(void)state;
	build_std();
	put32(RSDP_AT + 20, 0xffffffff);
	fix_sum(RSDP_AT, 36, 32);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("RSDP: length 4294967295 out of range");
	assert_int_equal(info.root, ACPI_ROOT_RSDT);
	assert_true(max_map_len <= 4096);

	/* Revision 2 claimed, but only the first 20 bytes readable. */
	build_std();
	hole(RSDP_AT + 20, 16);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("only 20 bytes readable");
	assert_int_equal(info.root, ACPI_ROOT_RSDT);
}

static void xsdt_bad_falls_back_to_rsdt(void **state)
{
	(void)state;
	build_std();
	mem[XSDT_AT + 40] ^= 0x10;		/* first entry's address: checksum now wrong */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("XSDT at 0x101000: checksum bad, ignoring it");
	assert_warned("falling back to the RSDT at 0x100000");
	assert_int_equal(info.root, ACPI_ROOT_RSDT);
	assert_int_equal(info.root_addr, RSDT_AT);
	assert_int_equal(info.madt.ncpus, 2);
	assert_hpet_mcfg_fadt_ok();
}

static void xsdt_wrong_signature(void **state)
{
	(void)state;
	build_std();
	memcpy(mem + XSDT_AT, "RSDT", 4);
	seal(XSDT_AT);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("signature is \"RSDT\"");
	assert_int_equal(info.root, ACPI_ROOT_RSDT);
	assert_int_equal(info.root_addr, RSDT_AT);
}

static void xsdt_and_rsdt_bad(void **state)
{
	(void)state;
	build_std();
	mem[XSDT_AT + 9] ^= 1;
	mem[RSDT_AT + 9] ^= 1;
	assert_int_equal(parse(RSDP_AT), -E_NOENT);
	assert_false(info.present);
	assert_int_equal(info.root, ACPI_ROOT_NONE);
	assert_int_equal(info.rsdp, RSDP_AT);	/* the RSDP itself was fine */
	assert_warned("no usable XSDT or RSDT");
	assert_int_equal(info.madt.src, ACPI_SRC_NONE);
	assert_int_equal(info.hpet.src, ACPI_SRC_NONE);
}

/* ---- table lengths ---- */

static void table_shorter_than_header(void **state)
{
	(void)state;
	build_std();
	put32(MADT_AT + 4, 20);
	fix_sum(MADT_AT, 20, 9);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MADT at 0x102000: length 20 out of range, ignoring it");
	assert_int_equal(info.madt.src, ACPI_SRC_NONE);
	assert_int_equal(info.madt.ncpus, 0);
	assert_hpet_mcfg_fadt_ok();
}

static void table_longer_than_mapped(void **state)
{
	(void)state;
	build_std();
	put32(MADT_AT + 4, 0x800);	/* runs into the hole below */
	hole(MADT_AT + 0x400, 0x400);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MADT at 0x102000: its 2048 bytes are not all readable");
	assert_int_equal(info.madt.src, ACPI_SRC_NONE);
	assert_hpet_mcfg_fadt_ok();
	nholes = 0;

	/* ... and past the end of memory. */
	build_std();
	u64 end_at = MEM_SIZE - 0x100;
	mcfg_table(end_at, &(struct mcfg_e){ 0xb0000000, 0, 0, 255 }, 1);
	put32(end_at + 4, 0x1000);
	root(XSDT_AT, true, (u64[]){ MADT_AT, end_at }, 2);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MCFG at 0x3fff00: its 4096 bytes are not all readable");
	assert_int_equal(info.nmcfg, 0);
	assert_int_equal(info.madt.ncpus, 2);
}

static void table_length_absurd(void **state)
{
	(void)state;
	build_std();
	put32(HPET_AT + 4, 0xffffffff);
	put32(FADT_AT + 4, ACPI_TABLE_MAX + 1);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("HPET at 0x103000: length 4294967295 out of range");
	assert_warned("FADT at 0x105000: length 1048577 out of range");
	assert_int_equal(info.hpet.src, ACPI_SRC_NONE);
	assert_int_equal(info.fadt.src, ACPI_SRC_NONE);
	assert_int_equal(info.madt.ncpus, 2);
	assert_true(max_map_len <= ACPI_TABLE_MAX);
}

/* Valid header and checksum, but too short for the table's own fields. */
static void table_too_short_for_its_kind(void **state)
{
	(void)state;
	build_std();
	put32(MADT_AT + 4, 40);
	seal(MADT_AT);
	put32(HPET_AT + 4, 50);
	seal(HPET_AT);
	put32(FADT_AT + 4, 100);
	seal(FADT_AT);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MADT at 0x102000: 40 bytes, too short (needs 44)");
	assert_warned("HPET at 0x103000: 50 bytes, too short (needs 56)");
	assert_warned("FADT at 0x105000: 100 bytes, too short (needs 116)");
	assert_int_equal(info.madt.src, ACPI_SRC_NONE);
	assert_int_equal(info.hpet.src, ACPI_SRC_NONE);
	assert_int_equal(info.fadt.src, ACPI_SRC_NONE);
	assert_int_equal(info.nmcfg, 1);
}

/* ---- MADT entries ---- */

static void madt_entry_length_zero(void **state)
{
	(void)state;
	for (u8 bad = 0; bad < 2; bad++) {	/* length 0 and 1: neither advances */
		build_std();
		struct madt_b b = madt_begin(MADT_AT, 0xfee00000, 0);
		madt_lapic(&b, 0, 0, ACPI_LAPIC_ENABLED);
		madt_entry(&b, 1, bad);
		madt_lapic(&b, 1, 1, ACPI_LAPIC_ENABLED);
		madt_end(&b);
		assert_int_equal(parse(RSDP_AT), 0);
		assert_warned("MADT: entry type 1 at offset 52 has length");
		assert_int_equal(info.madt.src, ACPI_SRC_TABLE);
		assert_int_equal(info.madt.ncpus, 1);	/* the one before is kept */
		assert_int_equal(info.madt.nioapics, 0);
		assert_hpet_mcfg_fadt_ok();
	}
}

static void madt_entry_past_end(void **state)
{
	(void)state;
	build_std();
	struct madt_b b = madt_begin(MADT_AT, 0xfee00000, 0);
	madt_lapic(&b, 0, 0, ACPI_LAPIC_ENABLED);
	madt_ioapic(&b, 0, 0xfec00000, 0);
	madt_x2apic(&b, 7, ACPI_LAPIC_ENABLED, 7);
	b.end -= 8;				/* the x2APIC entry says 16, 8 remain */
	madt_end(&b);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MADT: entry type 9 at offset 64 has length 16 (8 bytes left)");
	assert_int_equal(info.madt.ncpus, 1);
	assert_int_equal(info.madt.nioapics, 1);

	/* One stray byte after the last entry. */
	build_std();
	b = madt_begin(MADT_AT, 0xfee00000, 0);
	madt_lapic(&b, 0, 0, ACPI_LAPIC_ENABLED);
	put8(b.end++, 0);
	madt_end(&b);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MADT: 1 stray byte at offset 52");
	assert_int_equal(info.madt.ncpus, 1);
}

static void madt_entry_too_short_for_type(void **state)
{
	(void)state;
	build_std();
	struct madt_b b = madt_begin(MADT_AT, 0xfee00000, 0);
	madt_entry(&b, 1, 8);			/* an IOAPIC entry needs 12 */
	madt_entry(&b, 9, 12);			/* an x2APIC entry needs 16 */
	madt_lapic(&b, 0, 5, ACPI_LAPIC_ENABLED);
	u64 big = madt_entry(&b, 0, 20);	/* longer than needed: fine */
	put8(big + 3, 6);
	put32(big + 4, ACPI_LAPIC_ENABLED);
	madt_entry(&b, 0x7f, 24);		/* unknown type: skipped quietly */
	madt_entry(&b, 0xb, 80);		/* a GICC entry: not ours, skipped */
	madt_lapic(&b, 2, 7, ACPI_LAPIC_ENABLED);
	madt_end(&b);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 2);
	assert_warned("MADT: entry type 1 at offset 44 is 8 bytes, needs 12; skipping it");
	assert_warned("MADT: entry type 9 at offset 52 is 12 bytes, needs 16; skipping it");
	assert_int_equal(info.madt.nioapics, 0);
	assert_int_equal(info.madt.ncpus, 3);
	assert_int_equal(info.madt.cpu[0].apic_id, 5);
	assert_int_equal(info.madt.cpu[1].apic_id, 6);
	assert_int_equal(info.madt.cpu[2].apic_id, 7);
}

static void madt_too_many_entries(void **state)
{
	(void)state;
	build_std();
	struct madt_b b = madt_begin(BIG_AT, 0xfee00000, 0);
	for (u32 i = 0; i < 100; i++)
		madt_lapic(&b, (u8)i, (u8)i, ACPI_LAPIC_ENABLED);
	for (u32 i = 0; i < 300; i++)
		madt_x2apic(&b, 1000 + i, ACPI_LAPIC_ENABLED, 1000 + i);
	for (u32 i = 0; i < 10; i++)
		madt_ioapic(&b, (u8)i, 0xfec00000 + i * 0x1000, i * 24);
	for (u32 i = 0; i < 30; i++)
		madt_iso(&b, (u8)i, i, 0);
	for (u32 i = 0; i < 9; i++)
		madt_nmi_src(&b, 0, i);
	for (u32 i = 0; i < 12; i++)
		madt_lapic_nmi(&b, (u8)i, 0, 1);
	madt_end(&b);
	u64 tables[] = { BIG_AT };
	root(XSDT_AT, true, tables, 1);
	assert_int_equal(parse(RSDP_AT), 0);
	const struct acpi_madt *m = &info.madt;
	assert_int_equal(m->ncpus, ACPI_MAX_CPUS);
	assert_int_equal(m->cpus_listed, 400);
	assert_int_equal(m->cpus_enabled, 400);
	assert_int_equal(m->cpu[63].apic_id, 63);
	assert_int_equal(m->nioapics, ACPI_MAX_IOAPICS);
	assert_int_equal(m->ioapics_listed, 10);
	assert_int_equal(m->noverrides, ACPI_MAX_OVERRIDES);
	assert_int_equal(m->overrides_listed, 30);
	assert_int_equal(m->override[15].source, 15);
	assert_int_equal(m->nnmi_sources, ACPI_MAX_NMI_SOURCES);
	assert_int_equal(m->nmi_sources_listed, 9);
	assert_int_equal(m->nlapic_nmis, ACPI_MAX_LAPIC_NMIS);
	assert_int_equal(m->lapic_nmis_listed, 12);
	assert_warned("MADT lists 400 CPUs; only the first 64 are used");
	assert_warned("MADT lists 10 IOAPICs");
	assert_warned("MADT lists 30 interrupt source overrides");
}

static void madt_cpu_flags_and_duplicates(void **state)
{
	(void)state;
	build_std();
	struct madt_b b = madt_begin(MADT_AT, 0xfee00000, 0);
	madt_lapic(&b, 0, 0, ACPI_LAPIC_ENABLED);
	madt_lapic(&b, 1, 1, 0);				/* unusable: ignored */
	madt_lapic(&b, 2, 2, ACPI_LAPIC_ONLINE_CAPABLE);	/* hot-pluggable */
	madt_lapic(&b, 3, 0, ACPI_LAPIC_ENABLED);		/* APIC id 0 again */
	madt_lapic(&b, 4, 4, ACPI_LAPIC_ENABLED | ACPI_LAPIC_ONLINE_CAPABLE);
	madt_end(&b);
	assert_int_equal(parse(RSDP_AT), 0);
	const struct acpi_madt *m = &info.madt;
	assert_false(m->pcat_compat);
	assert_int_equal(m->ncpus, 3);
	assert_int_equal(m->cpus_listed, 3);
	assert_int_equal(m->cpus_enabled, 2);
	assert_int_equal(m->cpu[1].apic_id, 2);
	assert_false(m->cpu[1].enabled);
	assert_true(m->cpu[1].online_capable);
	assert_int_equal(m->cpu[2].apic_id, 4);
	assert_true(m->cpu[2].enabled);
	assert_false(m->cpu[2].online_capable);	/* reserved when enabled */
	assert_warned("MADT lists APIC id 0 twice");
}

static void madt_x2apic_and_overrides(void **state)
{
	(void)state;
	build_std();
	struct madt_b b = madt_begin(MADT_AT, 0xfee00000, ACPI_MADT_PCAT_COMPAT);
	madt_x2apic(&b, 300, ACPI_LAPIC_ENABLED, 5);
	madt_x2apic(&b, 0x10000, ACPI_LAPIC_ONLINE_CAPABLE, 6);
	madt_x2apic_nmi(&b, ACPI_INTI_POLARITY_LOW, 0xffffffff, 1);
	madt_x2apic_nmi(&b, 0, 5, 0);
	madt_lapic_nmi(&b, 3, ACPI_INTI_TRIGGER_LEVEL, 0);
	madt_lapic_override(&b, 0x1fee00000ull);
	madt_end(&b);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	const struct acpi_madt *m = &info.madt;
	assert_int_equal(m->lapic_addr, 0x1fee00000ull);
	assert_true(m->lapic_addr_override);
	assert_int_equal(m->ncpus, 2);
	assert_int_equal(m->cpu[0].apic_id, 300);
	assert_int_equal(m->cpu[0].uid, 5);
	assert_true(m->cpu[0].x2apic);
	assert_true(m->cpu[0].enabled);
	assert_int_equal(m->cpu[1].apic_id, 0x10000);
	assert_true(m->cpu[1].online_capable);
	assert_int_equal(m->cpus_enabled, 1);
	assert_int_equal(m->nlapic_nmis, 3);
	assert_true(m->lapic_nmi[0].all_cpus);
	assert_int_equal(m->lapic_nmi[0].lint, 1);
	assert_int_equal(m->lapic_nmi[0].flags, ACPI_INTI_POLARITY_LOW);
	assert_false(m->lapic_nmi[1].all_cpus);
	assert_int_equal(m->lapic_nmi[1].uid, 5);
	assert_int_equal(m->lapic_nmi[1].lint, 0);
	assert_false(m->lapic_nmi[2].all_cpus);
	assert_int_equal(m->lapic_nmi[2].uid, 3);
	assert_int_equal(m->lapic_nmi[2].flags, ACPI_INTI_TRIGGER_LEVEL);
}

/* ---- root table contents ---- */

static void root_entry_count_absurd(void **state)
{
	(void)state;
	build_std();
	put32(XSDT_AT + 4, 0xffffffff);		/* 536 million entries? */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("XSDT at 0x101000: length 4294967295 out of range");
	assert_int_equal(info.root, ACPI_ROOT_RSDT);
	assert_true(max_map_len <= ACPI_TABLE_MAX);

	/* Many valid entries: only ACPI_MAX_ROOT_ENTRIES are looked at. */
	build_std();
	u64 many[300];
	for (unsigned i = 0; i < 300; i++)
		many[i] = i == 299 ? MADT_AT : WAET_AT;
	root(BIG_AT, true, many, 300);
	rsdp(RSDP_AT, 2, RSDT_AT, BIG_AT);
	map_calls = 0;
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("XSDT lists 300 tables; looking at the first 256");
	assert_int_equal(info.tables_listed, 300);
	assert_int_equal(info.ntables, ACPI_MAX_TABLES);
	assert_int_equal(info.madt.src, ACPI_SRC_NONE);	/* entry 299 not reached */
	assert_true(map_calls < 3 * 300);

	/* A length that is not a whole number of entries. */
	build_std();
	put32(XSDT_AT + 4, 36 + 5 * 8 + 3);
	seal(XSDT_AT);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("XSDT: 3 bytes after the last whole entry");
	assert_int_equal(info.root, ACPI_ROOT_XSDT);
	assert_int_equal(info.ntables, 5);
}

static void table_pointer_unmapped(void **state)
{
	(void)state;
	build_std();
	u64 tables[] = { 0x1000000000ull, MADT_AT, 0, EXTRA_AT, ~0ull - 8, HPET_AT };
	hole(EXTRA_AT, 0x1000);
	root(XSDT_AT, true, tables, 6);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("table at 0x1000000000 is not readable, ignoring it");
	assert_warned("XSDT entry 2 is 0, skipping it");
	assert_warned("table at 0x107000 is not readable");
	assert_warned("table at 0xfffffffffffffff7 is not readable");
	assert_int_equal(info.root, ACPI_ROOT_XSDT);
	assert_int_equal(info.madt.ncpus, 2);
	assert_int_equal(info.hpet.src, ACPI_SRC_TABLE);
	assert_int_equal(info.ntables, 2);
}

static void duplicate_tables(void **state)
{
	(void)state;
	build_std();
	struct madt_b b = madt_begin(EXTRA_AT, 0xfee00000, 0);
	madt_lapic(&b, 0, 9, ACPI_LAPIC_ENABLED);
	madt_end(&b);
	u64 tables[] = { MADT_AT, EXTRA_AT };
	root(XSDT_AT, true, tables, 2);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("a second MADT at 0x107000, ignoring it");
	assert_int_equal(info.madt.ncpus, 2);
	assert_int_equal(info.madt.cpu[0].apic_id, 0);

	/* A broken first MADT does not stop a good second one. */
	mem[MADT_AT + 9] ^= 1;
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MADT at 0x102000: checksum bad, ignoring it");
	assert_int_equal(info.madt.ncpus, 1);
	assert_int_equal(info.madt.cpu[0].apic_id, 9);
}

/* ---- HPET, MCFG, FADT ---- */

static void hpet_variants(void **state)
{
	(void)state;
	build_std();
	hpet_table(HPET_AT, 0x10de2f01 | (1u << 13), 0, 0xfed00000);	/* 16 timers, 64-bit */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.hpet.comparators, 16);
	assert_true(info.hpet.counter_64bit);
	assert_false(info.hpet.legacy_route);
	assert_int_equal(info.hpet.pci_vendor, 0x10de);

	hpet_table(HPET_AT, 0x8086a201, 1, 0xfed00000);	/* I/O space: nonsense */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("HPET table: base 0xfed00000 in address space 1 is not usable");
	assert_int_equal(info.hpet.src, ACPI_SRC_NONE);

	hpet_table(HPET_AT, 0x8086a201, 0, 0);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.hpet.src, ACPI_SRC_NONE);
	assert_warned("HPET table: base 0 ");
}

static void mcfg_variants(void **state)
{
	(void)state;
	build_std();
	struct mcfg_e e[] = {
		{ 0xb0000000, 0, 0, 255 }, { 0, 1, 0, 255 }, { 0xc0000000, 1, 10, 5 },
		{ 0xd0000000, 2, 0, 63 }, { 0xe0000000, 3, 0, 0 }, { 0xe1000000, 4, 0, 1 },
		{ 0xe2000000, 5, 0, 1 },
	};
	mcfg_table(MCFG_AT, e, 7);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MCFG: entry 1 (base 0, buses 0-255) is invalid");
	assert_warned("MCFG: entry 2 (base 0xc0000000, buses 10-5) is invalid");
	assert_warned("MCFG lists 5 ECAM windows; only the first 4 are used");
	assert_int_equal(info.nmcfg, 4);
	assert_int_equal(info.mcfg_listed, 5);
	assert_int_equal(info.mcfg[1].base, 0xd0000000);
	assert_int_equal(info.mcfg[1].segment, 2);
	assert_int_equal(info.mcfg[1].bus_end, 63);
	assert_int_equal(info.mcfg[3].segment, 4);

	/* A partial trailing entry is not read. */
	mcfg_table(MCFG_AT, e, 1);
	put32(MCFG_AT + 4, 44 + 16 + 10);
	put64(MCFG_AT + 60, 0xc0000000);		/* the start of an entry */
	put16(MCFG_AT + 68, 1);
	seal(MCFG_AT);
	hole(MCFG_AT + 44 + 16 + 10, 16);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("MCFG: 10 bytes after the last whole entry");
	assert_int_equal(info.nwarnings, 1);
	assert_int_equal(info.nmcfg, 1);
}

static void fadt_variants(void **state)
{
	(void)state;
	build_std();
	/* ACPI 1.0 FADT: 116 bytes, PM_TMR_BLK only, 32-bit timer. */
	fadt_table(FADT_AT, 116, 1, 0x408, 4, ACPI_FADT_TMR_VAL_EXT, 0, 0);
	hole(FADT_AT + 116, 16);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	assert_int_equal(info.fadt.pm_timer_port, 0x408);
	assert_false(info.fadt.pm_timer_from_x);
	assert_true(info.fadt.pm_timer_32bit);
	assert_int_equal(info.fadt.minor, 0);
	nholes = 0;

	/* X_PM_TMR_BLK wins over PM_TMR_BLK. */
	fadt_table(FADT_AT, 276, 6, 0x608, 4, 0, 1, 0x1008);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.fadt.pm_timer_port, 0x1008);
	assert_true(info.fadt.pm_timer_from_x);

	/* X_PM_TMR_BLK in memory space: warn, use PM_TMR_BLK. */
	fadt_table(FADT_AT, 276, 6, 0x608, 4, 0, 0, 0xfed80000);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("X_PM_TMR_BLK 0xfed80000 in address space 0 is not an I/O port");
	assert_int_equal(info.fadt.pm_timer_port, 0x608);
	assert_false(info.fadt.pm_timer_from_x);

	/* PM_TMR_LEN 0: no timer. */
	fadt_table(FADT_AT, 244, 3, 0x608, 0, 0, 0, 0);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("PM_TMR_BLK 0x608 with PM_TMR_LEN 0 is not usable");
	assert_int_equal(info.fadt.pm_timer_port, 0);
	assert_int_equal(info.fadt.src, ACPI_SRC_TABLE);

	/* No PM timer at all: no warning. */
	fadt_table(FADT_AT, 244, 3, 0, 0, 0, 0, 0);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	assert_int_equal(info.fadt.pm_timer_port, 0);

	/* HW-reduced ACPI: fixed hardware fields are ignored. */
	fadt_table(FADT_AT, 276, 6, 0x608, 4, ACPI_FADT_HW_REDUCED_ACPI, 1, 0x608);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_true(info.fadt.hw_reduced);
	assert_int_equal(info.fadt.pm_timer_port, 0);
}

/* ---- SPCR ---- */

#define SPCR_AT		0x108000ull

/* An SPCR table of len bytes (80, 88 with the revision-4 fields). */
static void spcr_table(u64 a, u32 len, u8 rev, u8 type, u8 space, u8 bits, u8 access,
		       u64 addr, u8 baud_code)
{
	memset(mem + a, 0, len);
	header(a, "SPCR", len, rev);
	put8(a + 36, type);
	put8(a + 40, space);
	put8(a + 41, bits);
	put8(a + 43, access);
	put64(a + 44, addr);
	put8(a + 58, baud_code);
	put16(a + 64, 0xffff);			/* not a PCI device */
	put16(a + 66, 0xffff);
	seal(a);
}

/* The std tables plus an SPCR, listed last by both root tables. */
static void build_with_spcr(void)
{
	static const u64 t[] = { FADT_AT, MADT_AT, HPET_AT, MCFG_AT, WAET_AT, SPCR_AT };

	build_std();
	root(RSDT_AT, false, t, 6);
	root(XSDT_AT, true, t, 6);
	rsdp(RSDP_AT, 2, RSDT_AT, XSDT_AT);
}

static void spcr_variants(void **state)
{
	(void)state;
	build_with_spcr();
	/* Revision 2, COM2 as QEMU and most PC firmware describe it. */
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0x2f8, 7);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	assert_int_equal(info.spcr.src, ACPI_SRC_TABLE);
	assert_false(info.spcr.mmio);
	assert_int_equal(info.spcr.addr, 0x2f8);
	assert_int_equal(info.spcr.width, 1);
	assert_int_equal(info.spcr.baud, 115200);
	assert_int_equal(info.spcr.clock_hz, 0);
	assert_false(info.spcr.pci);
	assert_hpet_mcfg_fadt_ok();

	/* Revision 4, MMIO with 32-bit registers, a 48 MHz clock, a precise
	 * baud rate that overrides the code, on a PCI function. */
	spcr_table(SPCR_AT, 88, 4, ACPI_SPCR_16550_GAS, 0, 32, 3, 0xfe032000, 7);
	put32(SPCR_AT + 76, 48000000);
	put32(SPCR_AT + 80, 1500000);
	put16(SPCR_AT + 64, 0x9a28);
	put16(SPCR_AT + 66, 0x8086);
	put8(SPCR_AT + 68, 0);
	put8(SPCR_AT + 69, 0x1e);
	put8(SPCR_AT + 70, 2);
	seal(SPCR_AT);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	assert_int_equal(info.spcr.src, ACPI_SRC_TABLE);
	assert_true(info.spcr.mmio);
	assert_int_equal(info.spcr.addr, 0xfe032000);
	assert_int_equal(info.spcr.width, 4);
	assert_int_equal(info.spcr.clock_hz, 48000000);
	assert_int_equal(info.spcr.baud, 1500000);
	assert_true(info.spcr.pci);
	assert_int_equal(info.spcr.pci_vendor, 0x8086);
	assert_int_equal(info.spcr.pci_device, 0x9a28);
	assert_int_equal(info.spcr.pci_dev, 0x1e);
	assert_int_equal(info.spcr.pci_fn, 2);

	/* The revision-4 fields are not read from a revision-2 table, nor
	 * past the end of a short revision-4 one. */
	spcr_table(SPCR_AT, 88, 2, ACPI_SPCR_16550, 1, 8, 1, 0x3f8, 6);
	put32(SPCR_AT + 76, 48000000);
	put32(SPCR_AT + 80, 1500000);
	seal(SPCR_AT);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.spcr.baud, 57600);
	assert_int_equal(info.spcr.clock_hz, 0);
	spcr_table(SPCR_AT, 80, 4, ACPI_SPCR_16550, 1, 8, 1, 0x3f8, 3);
	hole(SPCR_AT + 80, 16);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.spcr.baud, 9600);
	nholes = 0;

	/* Baud "as is" and a reserved code: kept as the firmware left it. */
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0x3f8, 0);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	assert_int_equal(info.spcr.baud, 0);
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0x3f8, 5);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("baud rate code 5 is reserved");
	assert_int_equal(info.spcr.src, ACPI_SRC_TABLE);
	assert_int_equal(info.spcr.baud, 0);

	/* Access size undefined (older tables): the bit width decides. */
	spcr_table(SPCR_AT, 80, 1, ACPI_SPCR_16550, 0, 32, 0, 0xfedc9000, 7);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.spcr.width, 4);

	/* Base address 0: console redirection is off; not an error. */
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0, 7);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 0);
	assert_int_equal(info.spcr.src, ACPI_SRC_NONE);
}

static void spcr_broken(void **state)
{
	(void)state;
	build_with_spcr();

	/* A UART that is not a 16550 (ARM PL011, type 3). */
	spcr_table(SPCR_AT, 80, 2, 3, 0, 32, 3, 0x9000000, 7);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("interface type 0x3 is not a 16550-compatible UART");
	assert_int_equal(info.spcr.src, ACPI_SRC_NONE);
	assert_hpet_mcfg_fadt_ok();

	/* Address spaces and layouts that cannot be driven. */
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 2, 8, 1, 0x3f8, 7);	/* PCI config */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("UART in address space 2");
	assert_int_equal(info.spcr.src, ACPI_SRC_NONE);
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 32, 3, 0x3f8, 7);	/* 32-bit I/O */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("not a layout bareperf drives");
	assert_int_equal(info.spcr.src, ACPI_SRC_NONE);
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0x12345, 7);	/* port > 64K */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("not a layout bareperf drives");
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 0, 16, 2, 0xfe000000, 7);	/* 16-bit */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("not a layout bareperf drives");
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 0, 8, 9, 0xfe000000, 7);	/* access 9 */
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("not a layout bareperf drives");
	assert_int_equal(info.spcr.src, ACPI_SRC_NONE);

	/* Too short for its kind, bad checksum, length past the mapping. */
	spcr_table(SPCR_AT, 60, 2, ACPI_SPCR_16550, 1, 8, 1, 0x3f8, 7);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("SPCR at 0x108000: 60 bytes, too short (needs 80)");
	assert_int_equal(info.spcr.src, ACPI_SRC_NONE);
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0x3f8, 7);
	mem[SPCR_AT + 44] ^= 0x10;
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("SPCR at 0x108000: checksum bad");
	assert_int_equal(info.spcr.src, ACPI_SRC_NONE);
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0x3f8, 7);
	hole(SPCR_AT + 64, 16);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("its 80 bytes are not all readable");
	assert_int_equal(info.spcr.src, ACPI_SRC_NONE);
	nholes = 0;

	/* A second SPCR: the first one serves. */
	static const u64 t[] = { SPCR_AT, EXTRA_AT };
	spcr_table(SPCR_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0x2f8, 7);
	spcr_table(EXTRA_AT, 80, 2, ACPI_SPCR_16550, 1, 8, 1, 0x3e8, 7);
	root(XSDT_AT, true, t, 2);
	rsdp(RSDP_AT, 2, 0, XSDT_AT);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_warned("a second SPCR");
	assert_int_equal(info.spcr.addr, 0x2f8);
}

/* ---- RSDP search ---- */

static void scan_finds_ebda(void **state)
{
	const char *where = "x";
	(void)state;
	build_std();
	memset(mem + RSDP_AT, 0, 36);		/* none in the BIOS area */
	put16(ACPI_BDA_EBDA_SEG, 0x9fc0);
	rsdp(0x9fc00 + 0x40, 2, RSDT_AT, XSDT_AT);
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, &where), 0x9fc40);
	assert_string_equal(where, "EBDA");
	assert_int_equal(parse(0x9fc40), 0);
	assert_int_equal(info.madt.ncpus, 2);

	/* Beyond the first KiB of the EBDA is not searched. */
	memset(mem + 0x9fc40, 0, 36);
	put16(ACPI_BDA_EBDA_SEG, 0x9000);
	rsdp(0x90000 + 1024, 2, RSDT_AT, XSDT_AT);
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, &where), 0);
	assert_null(where);
}

static void scan_finds_bios_area(void **state)
{
	const char *where = NULL;
	(void)state;
	build_std();
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, &where), RSDP_AT);
	assert_string_equal(where, "BIOS area");

	/* With page 0 unreadable (as in the kernel) the BIOS area still works,
	 * and a bogus EBDA segment is not followed. */
	hole(0, 0x1000);
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, NULL), RSDP_AT);
	nholes = 0;
	put16(ACPI_BDA_EBDA_SEG, 0xb800);
	rsdp(0xb8000, 0, RSDT_AT, 0);
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, &where), RSDP_AT);
	assert_string_equal(where, "BIOS area");
}

static void scan_skips_bad_candidates(void **state)
{
	(void)state;
	build_std();
	memset(mem + RSDP_AT, 0, 36);
	rsdp(0xe0000, 0, RSDT_AT, 0);
	mem[0xe0000 + 8] ^= 1;				/* bad checksum */
	rsdp(0xe0108, 0, RSDT_AT, 0);			/* valid, but not on 16 bytes */
	rsdp(0xe0200, 2, RSDT_AT, XSDT_AT);
	mem[0xe0200 + 33] ^= 1;				/* bad extended checksum */
	rsdp(0xe0300, 2, RSDT_AT, XSDT_AT);
	put32(0xe0300 + 20, 0xffffffff);		/* absurd length */
	fix_sum(0xe0300, 36, 32);
	rsdp(0xfffd0, 2, RSDT_AT, XSDT_AT);		/* the good one, near the end */
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, NULL), 0xfffd0);
	assert_true(max_map_len <= ACPI_BIOS_AREA_LEN);

	/* Nothing valid anywhere. */
	memset(mem + 0xfffd0, 0, 36);
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, NULL), 0);
	/* A signature in the last 16 bytes with too little room is ignored. */
	memcpy(mem + 0xffff0, "RSD PTR ", 8);
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, NULL), 0);
	/* Areas the map refuses are skipped. */
	hole(0, 0x100000);
	assert_int_equal(acpi_find_rsdp(fake_map, NULL, NULL), 0);
}

/* ---- fallbacks ---- */

#define QEMU_IOAPIC_VER	0x00170020u			/* 24 pins, version 0x20 */
#define QEMU_HPET_GCAP	(10000000ull << 32 | 0x8086a201)	/* 10 ns, 3 timers */

static void defaults_without_acpi(void **state)
{
	(void)state;
	assert_int_equal(parse(0), -E_INVAL);
	acpi_apply_defaults(&info, 3, QEMU_IOAPIC_VER, QEMU_HPET_GCAP);
	const struct acpi_madt *m = &info.madt;
	assert_int_equal(m->src, ACPI_SRC_DEFAULT);
	assert_int_equal(m->ncpus, 1);
	assert_int_equal(m->cpus_enabled, 1);
	assert_int_equal(m->cpu[0].apic_id, 3);
	assert_true(m->cpu[0].enabled);
	assert_int_equal(m->lapic_addr, ACPI_DEFAULT_LAPIC);
	assert_true(m->pcat_compat);
	assert_int_equal(m->nioapics, 1);
	assert_int_equal(m->ioapic[0].addr, ACPI_DEFAULT_IOAPIC);
	assert_int_equal(m->ioapic[0].gsi_base, 0);
	assert_int_equal(m->noverrides, 0);
	assert_int_equal(info.hpet.src, ACPI_SRC_DEFAULT);
	assert_int_equal(info.hpet.addr, ACPI_DEFAULT_HPET);
	assert_int_equal(info.hpet.comparators, 3);
	assert_int_equal(info.fadt.src, ACPI_SRC_NONE);
	assert_int_equal(info.fadt.pm_timer_port, 0);
	assert_int_equal(info.nmcfg, 0);

	/* Nothing answers at the default addresses. */
	assert_int_equal(parse(0), -E_INVAL);
	acpi_apply_defaults(&info, 0, ~0u, ~0ull);
	assert_int_equal(info.madt.ncpus, 1);
	assert_int_equal(info.madt.nioapics, 0);
	assert_int_equal(info.hpet.src, ACPI_SRC_NONE);
}

static void defaults_only_fill_gaps(void **state)
{
	(void)state;
	build_std();
	assert_int_equal(parse(RSDP_AT), 0);
	acpi_apply_defaults(&info, 7, QEMU_IOAPIC_VER, QEMU_HPET_GCAP);
	assert_int_equal(info.madt.src, ACPI_SRC_TABLE);
	assert_int_equal(info.madt.ncpus, 2);
	assert_int_equal(info.madt.cpu[0].apic_id, 0);
	assert_int_equal(info.hpet.src, ACPI_SRC_TABLE);
	assert_int_equal(info.hpet.min_tick, 128);

	/* A bad HPET table: the probed one is used; the MADT stays. */
	mem[HPET_AT + 9] ^= 1;
	assert_int_equal(parse(RSDP_AT), 0);
	acpi_apply_defaults(&info, 7, QEMU_IOAPIC_VER, QEMU_HPET_GCAP);
	assert_int_equal(info.hpet.src, ACPI_SRC_DEFAULT);
	assert_int_equal(info.madt.src, ACPI_SRC_TABLE);
	assert_int_equal(info.madt.ncpus, 2);
}

static void probe_sanity(void **state)
{
	(void)state;
	assert_true(acpi_ioapic_version_sane(QEMU_IOAPIC_VER));
	assert_true(acpi_ioapic_version_sane(0x00170011));	/* 82093AA */
	assert_false(acpi_ioapic_version_sane(~0u));
	assert_false(acpi_ioapic_version_sane(0));
	assert_false(acpi_ioapic_version_sane(0x00170001));	/* version 1 */
	assert_false(acpi_ioapic_version_sane(0x00000020));	/* 1 pin */
	assert_true(acpi_hpet_gcap_sane(QEMU_HPET_GCAP));
	assert_true(acpi_hpet_gcap_sane(69841279ull << 32 | 0x8086a701));	/* 14.318 MHz */
	assert_false(acpi_hpet_gcap_sane(~0ull));
	assert_false(acpi_hpet_gcap_sane(0));
	assert_false(acpi_hpet_gcap_sane(0x8086a201));			/* period 0 */
	assert_false(acpi_hpet_gcap_sane(100000001ull << 32 | 0x8086a201));	/* > 100 ns */
	assert_false(acpi_hpet_gcap_sane(10000000ull << 32 | 0x8086a200));	/* revision 0 */
}

/* ---- warnings ---- */

static void warnings_are_bounded(void **state)
{
	(void)state;
	build_std();
	struct madt_b b = madt_begin(MADT_AT, 0xfee00000, 0);
	for (int i = 0; i < 20; i++)
		madt_entry(&b, 1, 4);		/* 20 short IOAPIC entries */
	madt_end(&b);
	assert_int_equal(parse(RSDP_AT), 0);
	assert_int_equal(info.nwarnings, 20);
	assert_int_equal(warn_calls, 20);
	for (int i = 0; i < ACPI_MAX_WARNINGS; i++)
		assert_true(strlen(info.warning[i]) < ACPI_WARNING_LEN);
	assert_non_null(strstr(info.warning[ACPI_MAX_WARNINGS - 1], "offset 72 is 4 bytes"));
}

/* ---- robustness ---- */

/* Random byte damage, checksums repaired so the parser goes deep: it must
 * neither crash nor read outside what it was granted (ASan), nor hang. */
static void random_damage(void **state)
{
	static const u64 tabs[] = { MADT_AT, HPET_AT, MCFG_AT, FADT_AT, XSDT_AT, RSDT_AT };
	unsigned seed = 12345;
	(void)state;

	for (int round = 0; round < 3000; round++) {
		build_std();
		u64 t = tabs[round % 6];
		u32 len = get32(t + 4);
		for (int k = 0; k < 1 + round % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			u32 off = (seed >> 8) % (len + 8);
			mem[t + off] = (u8)(seed >> 24);
		}
		if (round & 1) {
			u32 nlen = get32(t + 4);
			if (nlen >= 10 && nlen <= 0x2000)
				seal(t);
		}
		int rc = parse(RSDP_AT);
		assert_true(rc == 0 || rc == -E_NOENT);
		assert_true(info.madt.ncpus <= ACPI_MAX_CPUS);
		assert_true(max_map_len <= ACPI_TABLE_MAX);
		for (size_t i = 0; i < ngrants; i++)
			free(grants[i]);
		ngrants = 0;
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "not ok - test_acpi: timed out (a parser loops forever?)\n";
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(good_tables),
		T(rsdp_v1_uses_rsdt),
		T(rsdp_bad_checksum),
		T(rsdp_bad_signature_or_unreadable),
		T(rsdp_bad_extended_checksum),
		T(rsdp_absurd_length),
		T(xsdt_bad_falls_back_to_rsdt),
		T(xsdt_wrong_signature),
		T(xsdt_and_rsdt_bad),
		T(table_shorter_than_header),
		T(table_longer_than_mapped),
		T(table_length_absurd),
		T(table_too_short_for_its_kind),
		T(madt_entry_length_zero),
		T(madt_entry_past_end),
		T(madt_entry_too_short_for_type),
		T(madt_too_many_entries),
		T(madt_cpu_flags_and_duplicates),
		T(madt_x2apic_and_overrides),
		T(root_entry_count_absurd),
		T(table_pointer_unmapped),
		T(duplicate_tables),
		T(hpet_variants),
		T(mcfg_variants),
		T(fadt_variants),
		T(spcr_variants),
		T(spcr_broken),
		T(scan_finds_ebda),
		T(scan_finds_bios_area),
		T(scan_skips_bad_candidates),
		T(defaults_without_acpi),
		T(defaults_only_fill_gaps),
		T(probe_sanity),
		T(warnings_are_bounded),
		T(random_damage),
	};
	signal(SIGALRM, on_alarm);
	alarm(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_cpuid_real — pmu_probe and the TSC derivation against the CPUID of
 * real processors (test/host/cpuid_real.tab, from InstLatx64's dumps),
 * every core type of every CPU in it. Each row is decoded here a second
 * time, independently, from the SDM (Vol. 2A CPUID 0AH, 1AH, 23H, 15H,
 * 16H; Vol. 3B 19.7.3, 21.2) and the APM (Vol. 2 §13.2; Vol. 3 CPUID
 * 8000_0001, 8000_0022); the register model is configured from that
 * decoding, so a context opened on each CPU touches only counters that
 * CPU has (the model #GPs on any other: an E-core never reaches a
 * P-core's fixed counter 3).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "kernel/platform/tsc_cpuid.h"
#include "pmu/pmu.h"
#include "test/host/pmu_model.h"

#ifndef TABLE
#define TABLE "test/host/cpuid_real.tab"
#endif

enum { C_MAX, C_1A, C_1C, C_71A, C_AA, C_AB, C_AC, C_AD, C_15A, C_15B, C_15C, C_16A, C_1AA,
       C_230A, C_231A, C_231B, C_EMAX, C_E1C, C_E22A, C_E22B, C_N };

struct row {
	char name[48];
	char vendor;
	u32 v[C_N];
};

static struct row rows[1024];
static int nrows;
static const struct row *cur;
static struct pmu_model M;
static char fault_msg[200];

static void load_table(void)
{
	FILE *f = fopen(TABLE, "r");
	char line[512];

	if (!f) {
		fprintf(stderr, "cannot open %s\n", TABLE);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		struct row r;
		char *p = line;
		int n;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(p, "%47s %c%n", r.name, &r.vendor, &n) != 2)
			goto bad;
		p += n;
		for (int i = 0; i < C_N; i++) {
			if (sscanf(p, "%x%n", &r.v[i], &n) != 1)
				goto bad;
			p += n;
		}
		if (nrows == (int)ARRAY_SIZE(rows))
			break;
		rows[nrows++] = r;
		continue;
bad:
		fprintf(stderr, "%s: bad row: %s", TABLE, line);
		exit(1);
	}
	fclose(f);
}

static void row_cpuid(u32 leaf, u32 sub, u32 r[4])
{
	const u32 *v = cur->v;
	const char *vendor = cur->vendor == 'I' ? "GenuineIntel" : "AuthenticAMD";
	bool ext = leaf >= 0x80000000;

	if ((!ext && leaf > v[C_MAX]) || (ext && leaf > v[C_EMAX]))
		return;				/* not reported: zeros */
	switch (leaf) {
	case 0:
		r[0] = v[C_MAX];
		memcpy(&r[1], vendor, 4);
		memcpy(&r[3], vendor + 4, 4);
		memcpy(&r[2], vendor + 8, 4);
		break;
	case 1: r[0] = v[C_1A]; r[2] = v[C_1C]; break;
	case 7: if (sub == 1) r[0] = v[C_71A]; break;
	case 0xa: r[0] = v[C_AA]; r[1] = v[C_AB]; r[2] = v[C_AC]; r[3] = v[C_AD]; break;
	case 0x15: r[0] = v[C_15A]; r[1] = v[C_15B]; r[2] = v[C_15C]; break;
	case 0x16: r[0] = v[C_16A]; break;
	case 0x1a: r[0] = v[C_1AA]; break;
	case 0x23:
		if (sub == 0)
			r[0] = v[C_230A];
		else if (sub == 1)
			r[0] = v[C_231A], r[1] = v[C_231B];
		break;
	case 0x80000000: r[0] = v[C_EMAX]; break;
	case 0x80000001: r[2] = v[C_E1C]; break;
	case 0x80000022: r[0] = v[C_E22A]; r[1] = v[C_E22B]; break;
	}
}

static void on_fault(struct pmu_model *m, const char *what)
{
	(void)m;
	snprintf(fault_msg, sizeof(fault_msg), "%s", what);
}

/* The SDM's and APM's decoding, written apart from pmu/probe.c. */
struct expect {
	enum pmu_kind kind;
	u32 version, nr_gp, gp_width, fixed_bitmap, fixed_width, core_type;
	bool pdcm;
};

static u32 display_family(u32 eax1)
{
	u32 fam = eax1 >> 8 & 0xf;
	return fam == 0xf ? fam + (eax1 >> 20 & 0xff) : fam;
}

static u32 display_model(u32 eax1)
{
	u32 fam = eax1 >> 8 & 0xf, model = eax1 >> 4 & 0xf;
	return fam == 6 || fam == 0xf ? model | (eax1 >> 16 & 0xf) << 4 : model;
}

static struct expect decode(const struct row *r)
{
	const u32 *v = r->v;
	struct expect e = { .kind = PMU_KIND_NONE };

	if (r->vendor == 'A') {
		bool ext_core = v[C_EMAX] >= 0x80000001 && (v[C_E1C] >> 23 & 1);
		bool v2 = v[C_EMAX] >= 0x80000022 && (v[C_E22A] & 1);
		e.gp_width = 48;
		if (v2) {
			e.kind = PMU_KIND_AMD_V2;
			e.nr_gp = (v[C_E22B] & 0xf) ? (v[C_E22B] & 0xf) : 6;
			e.version = 2;
		} else if (ext_core) {
			e.kind = PMU_KIND_AMD_CORE_EXT;
			e.nr_gp = 6;
			e.version = 1;
		} else {
			e.kind = PMU_KIND_AMD_LEGACY;
			e.nr_gp = 4;
			e.version = 1;
		}
		if (e.nr_gp > 8)
			e.nr_gp = 8;
		return e;
	}
	e.pdcm = v[C_1C] >> 15 & 1;
	if (v[C_MAX] < 0xa)
		return e;
	u32 a = v[C_AA], d = v[C_AD];
	e.version = a & 0xff;
	e.nr_gp = a >> 8 & 0xff;
	e.gp_width = a >> 16 & 0xff;
	if (!e.version || !e.nr_gp || e.gp_width < 32)
		return e;
	e.kind = PMU_KIND_INTEL_ARCH;
	if (e.version >= 2) {
		u32 n = d & 0x1f;
		e.fixed_bitmap = (n >= 32 ? ~0u : (1u << n) - 1) | (e.version >= 5 ? v[C_AC] : 0);
		e.fixed_width = d >> 5 & 0xff;
	}
	/* Leaf 23H, where CPUID.(7,1):EAX[8] says it exists and its sub-leaf
	 * 1 is valid: this core type's GP and fixed counter bitmaps. */
	if (v[C_MAX] >= 0x23 && (v[C_71A] >> 8 & 1) && (v[C_230A] >> 1 & 1)) {
		u32 gp = v[C_231A], n = 0;
		while (gp & 1) {
			n++;
			gp >>= 1;
		}
		if (n)
			e.nr_gp = n;
		e.fixed_bitmap = v[C_231B];
	}
	if (v[C_MAX] >= 0x1a)
		e.core_type = v[C_1AA] >> 24;
	/* Alder Lake and Raptor Lake have no leaf 23H, and leaf 0AH gives
	 * every core the E-cores' 6 GP and fixed 0-2; their P-cores have 8 GP
	 * and fixed 0-3 (Linux's hybrid model tables, SDM Vol. 3B 21.2.8). */
	u32 model = display_model(v[C_1A]);
	bool adl_rpl = display_family(v[C_1A]) == 6 && (model == 0x97 || model == 0x9a ||
							 model == 0xb7 || model == 0xba || model == 0xbf);
	if (adl_rpl && e.core_type == 0x40 && v[C_MAX] < 0x23) {
		e.nr_gp = 8;
		e.fixed_bitmap = 0xf;
	}
	if (e.nr_gp > 8)
		e.nr_gp = 8;
	e.fixed_bitmap &= 0xff;
	if (e.fixed_bitmap && !e.fixed_width)
		e.fixed_width = e.gp_width;
	return e;
}

static void model_for(const struct row *r, const struct expect *e)
{
	struct model_cfg cfg = { .name = r->name };

	if (r->vendor == 'I') {
		cfg.intel = true;
		cfg.version = e->version;
		cfg.nr_gp = e->nr_gp;
		cfg.gp_width = e->gp_width;
		cfg.fixed_width = e->fixed_width;
		cfg.ebx_len = r->v[C_AA] >> 24;
		/* Fixed counters as the row has them, through the v5 bitmap. */
		cfg.version = e->version >= 5 ? e->version : e->version;
		if (e->version >= 5)
			cfg.fixed_ecx = e->fixed_bitmap;
		else
			cfg.nr_fixed_edx = (u32)__builtin_popcount(e->fixed_bitmap);
		cfg.pdcm = e->pdcm;
		cfg.fw_write = e->pdcm;
	} else {
		cfg.amd = true;
		cfg.core_ext = e->kind != PMU_KIND_AMD_LEGACY;
		cfg.perfmon_v2 = e->kind == PMU_KIND_AMD_V2;
		cfg.amd_nr = e->nr_gp;
	}
	cfg.family = display_family(r->v[C_1A]);
	cfg.model = display_model(r->v[C_1A]);
	model_init(&M, &cfg);
	M.unexpected_fault = on_fault;
	M.cpuid_hook = row_cpuid;
	M.lvtpc = 0x400;
}

static void every_cpu_probes(void **state)
{
	(void)state;
	int with_pmu = 0, hybrid_e = 0, hybrid_p = 0, beyond = 0;

	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		struct expect e = decode(r);
		struct pmu_caps caps;
		char line[256];

		cur = r;
		fault_msg[0] = 0;
		model_for(r, &e);
		int rc = pmu_probe(&caps);
		pmu_describe(&caps, line, sizeof(line));
		if (caps.kind != e.kind || (e.kind != PMU_KIND_NONE) != (rc == 0))
			fail_msg("%s: kind %d (rc %d), the SDM/APM say %d: %s", r->name, caps.kind, rc,
				 e.kind, line);
		if (e.kind == PMU_KIND_NONE)
			continue;
		with_pmu++;
		if (caps.nr_gp != e.nr_gp || caps.gp_width != e.gp_width ||
		    caps.fixed_bitmap != e.fixed_bitmap || (e.fixed_bitmap && caps.fixed_width != e.fixed_width) ||
		    caps.version != e.version || caps.core_type != e.core_type)
			fail_msg("%s: probe %u GP x %u, fixed 0x%x x %u, v%u, core 0x%x; decoded %u x %u, "
				 "0x%x x %u, v%u, core 0x%x", r->name, caps.nr_gp, caps.gp_width,
				 caps.fixed_bitmap, caps.fixed_width, caps.version, caps.core_type, e.nr_gp,
				 e.gp_width, e.fixed_bitmap, e.fixed_width, e.version, e.core_type);
		if (e.core_type == 0x20) {
			hybrid_e++;
			if (caps.lvt_ack != PMU_ACK_MID)
				fail_msg("%s: an Atom core does not unmask LVT PC mid-handler", r->name);
		} else if (e.core_type == 0x40) {
			hybrid_p++;
			beyond += caps.beyond_cpuid != 0;
		}
		/* A context with every counter this CPU has: cycles,
		 * instructions, ref-cycles on the fixed ones, then GP events. */
		struct pmu_event_attr a[PMU_MAX_EVENTS];
		char err[200];
		int n = 0;
		const char *names[] = { "instructions", "cycles", "ref-cycles", "branches",
					"branch-misses", "cache-references", "cache-misses",
					"instructions", "cycles", "branches", "instructions" };
		for (u32 k = 0; k < ARRAY_SIZE(names) && n < (int)(caps.nr_gp + 2) && n < PMU_MAX_EVENTS; k++)
			if (!pmu_event_parse(names[k], &caps, &a[n], err, sizeof(err)))
				n++;
		struct pmu_ctx ctx;
		if (pmu_open(&ctx, &caps, a, n, PMU_OPEN_MULTIPLEX, err, sizeof(err)))
			fail_msg("%s: pmu_open: %s", r->name, err);
		pmu_start(&ctx);
		model_retire(&M, 1000);
		pmu_tick(&ctx);
		model_retire(&M, 1000);
		pmu_stop(&ctx);
		if (fault_msg[0])
			fail_msg("%s: touched what it lacks: %s", r->name, fault_msg);
		/* A fixed counter this core type lacks is never asked for. */
		if (caps.intel && !(caps.fixed_bitmap & 8)) {
			struct pmu_event_attr slots;
			if (!pmu_event_parse("topdown-slots", &caps, &slots, err, sizeof(err)) &&
			    !pmu_open(&ctx, &caps, &slots, 1, 0, err, sizeof(err)))
				fail_msg("%s: topdown-slots opened without fixed counter 3", r->name);
		}
	}
	print_message("# %d rows, %d with a PMU, %d hybrid E-core and %d P-core rows, %d of them "
		      "with counters beyond CPUID.0AH\n", nrows, with_pmu, hybrid_e, hybrid_p, beyond);
	assert_true(nrows >= 100);
	assert_true(hybrid_e >= 10 && hybrid_p >= 10);
	assert_true(beyond >= 10);		/* the Alder and Raptor Lake P-core rows */
}

/* The TSC from CPUID, decoded here from the SDM: the crystal of 15H when
 * given; for family 6 Skylake/Kaby/Coffee/Comet Lake client parts the
 * SDM's nominal 24 MHz crystal, Goldmont's 19.2 MHz (Vol. 3B 19.7.3) and
 * Denverton's 25 MHz (Linux native_calibrate_tsc); otherwise 16H's base. */
static void tsc_from_cpuid(void **state)
{
	(void)state;
	int crystal = 0, model = 0, base = 0, none = 0;

	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		const u32 *v = r->v;
		if (r->vendor != 'I')
			continue;
		struct tsc_cpuid c = {
			.max_leaf = v[C_MAX], .intel = true, .family = display_family(v[C_1A]),
			.model = display_model(v[C_1A]),
			.l15_eax = v[C_MAX] >= 0x15 ? v[C_15A] : 0, .l15_ebx = v[C_MAX] >= 0x15 ? v[C_15B] : 0,
			.l15_ecx = v[C_MAX] >= 0x15 ? v[C_15C] : 0, .l16_eax = v[C_MAX] >= 0x16 ? v[C_16A] : 0,
		};
		enum tsc_cpuid_how how;
		u64 hz = tsc_hz_from_cpuid(&c, &how), want = 0;
		u64 mhz = (u64)(c.l16_eax & 0xffff) * 1000000;
		bool ratio = c.l15_eax && c.l15_ebx;
		/* A nominal crystal that puts the TSC more than 2% from the
		 * base is not the part's: Kaby Lake-X (06_9EH, i7-7740X) reads
		 * 2/342, 4104 MHz on 24 MHz, where its base is 4300 MHz. */
		u64 at24 = ratio ? 24000000ull * c.l15_ebx / c.l15_eax : 0;
		if (mhz && (at24 * 50 < mhz * 49 || at24 * 50 > mhz * 51))
			ratio = ratio && c.l15_ecx;
		bool skl = c.family == 6 && (c.model == 0x4e || c.model == 0x5e || c.model == 0x8e ||
					     c.model == 0x9e || c.model == 0xa5 || c.model == 0xa6);
		if (ratio && c.l15_ecx) {
			want = (u64)c.l15_ecx * c.l15_ebx / c.l15_eax;
			crystal++;
		} else if (ratio && skl) {
			want = 24000000ull * c.l15_ebx / c.l15_eax;
			model++;
		} else if (ratio && c.family == 6 && c.model == 0x5c) {	/* Goldmont: 19.2 MHz */
			want = 19200000ull * c.l15_ebx / c.l15_eax;
			model++;
		} else if (ratio && c.family == 6 && c.model == 0x5f) {	/* Denverton: 25 MHz */
			want = 25000000ull * c.l15_ebx / c.l15_eax;
			model++;
		} else if (mhz) {
			/* 16H, directly or through the crystal it implies:
			 * within 1 kHz of the base either way. */
			if (hz + 1000 < mhz || hz > mhz)
				fail_msg("%s: TSC %lu Hz from %s, base %lu", r->name, (unsigned long)hz,
					 tsc_cpuid_how_name(how), (unsigned long)mhz);
			base++;
			continue;
		} else {
			none++;
		}
		if (hz != want)
			fail_msg("%s: TSC %lu Hz from %s; decoded %lu", r->name, (unsigned long)hz,
				 tsc_cpuid_how_name(how), (unsigned long)want);
	}
	print_message("# TSC: %d from the crystal, %d from the model's crystal, %d from 16H, "
		      "%d unknown (calibrated)\n", crystal, model, base, none);
	assert_true(crystal >= 10 && model >= 5 && base >= 5);
}

/* Two figures known outside CPUID: Meteor Lake's 15H reads 2/156 of a
 * 38.4 MHz crystal (2995.2 MHz); a Skylake-U part (06_4EH) reads 2/216 with
 * no crystal: 2592 MHz on its 24 MHz crystal, where 16H says 2600. */
static void tsc_known(void **state)
{
	(void)state;
	enum tsc_cpuid_how how;
	struct tsc_cpuid mtl = { 0x23, true, 6, 0xaa, 2, 0x9c, 38400000, 0xbb8, 0 };
	struct tsc_cpuid skl = { 0x16, true, 6, 0x4e, 2, 0xd8, 0, 0xa28, 0 };
	assert_int_equal(tsc_hz_from_cpuid(&mtl, &how), 2995200000ull);
	assert_int_equal(how, TSC_CPUID_CRYSTAL);
	assert_int_equal(tsc_hz_from_cpuid(&skl, &how), 2592000000ull);
	assert_int_equal(how, TSC_CPUID_MODEL_CRYSTAL);
	/* A model crystal that disagrees with 16H by more than 2% is not
	 * trusted: 16H's base, through the ratio. */
	skl.l16_eax = 3000;
	u64 hz = tsc_hz_from_cpuid(&skl, &how);
	assert_true(hz <= 3000000000ull && hz + 1000 > 3000000000ull);
	assert_int_equal(how, TSC_CPUID_BASE);
	/* No 15H, no 16H: calibrate. */
	struct tsc_cpuid old = { 0xd, true, 6, 0x3c, 0, 0, 0, 0, 0 };
	assert_int_equal(tsc_hz_from_cpuid(&old, &how), 0);
	assert_int_equal(how, TSC_CPUID_NONE);
	/* A hypervisor's timing leaf comes first, even over 15H's crystal. */
	old.hv_tsc_khz = 2495998;
	assert_int_equal(tsc_hz_from_cpuid(&old, &how), 2495998000ull);
	assert_int_equal(how, TSC_CPUID_HYPERVISOR);
	mtl.hv_tsc_khz = 1000000;
	assert_int_equal(tsc_hz_from_cpuid(&mtl, &how), 1000000000ull);
	assert_int_equal(how, TSC_CPUID_HYPERVISOR);
}

int main(void)
{
	load_table();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cpu_probes),
		cmocka_unit_test(tsc_from_cpuid),
		cmocka_unit_test(tsc_known),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

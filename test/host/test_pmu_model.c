/*
 * test_pmu_model — the PMU model's own register semantics, checked directly
 * through its MSR/RDPMC interface (no driver involved), so that the driver
 * tests stand on a model known to follow the manuals. Mirrors the register
 * checks of kvm-unit-tests x86/pmu.c: GP and fixed counting, rdpmc incl.
 * fast mode and invalid indexes, overflow preset, status and its clearing,
 * PMI with and without INT, cmask, writes to a running counter, legacy vs
 * full-width writes; plus reserved bits, the v5 fixed bitmap, AMD aliasing
 * and PerfMonV2, freeze on PMI and TCG.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "test/host/pmu_model.h"

#define EN	(1ull << 22)
#define INT	(1ull << 20)
#define OS	(1ull << 17)
#define USR	(1ull << 16)
#define INSN	0xc0ull
#define FAULT	(-E_FAULT)

static struct pmu_model M;
static unsigned nmis;

static void count_nmi(struct pmu_model *m, void *arg)
{
	(void)m;
	(void)arg;
	nmis++;
}

static void init(enum model_flavour f)
{
	model_init(&M, model_preset(f));
	M.nmi = count_nmi;
	M.lvtpc = 0x400;
	nmis = 0;
}

static u64 rd(u32 msr)
{
	u64 v;
	assert_int_equal(model_rdmsr(&M, msr, &v), 0);
	return v;
}

static void wr(u32 msr, u64 v)
{
	assert_int_equal(model_wrmsr(&M, msr, v), 0);
}

static u64 pmc(u32 ecx)
{
	u64 v;
	assert_int_equal(model_rdpmc(&M, ecx, &v), 0);
	return v;
}

static void gp_counting_intel(void **state)
{
	(void)state;
	init(MODEL_INTEL_V2);
	assert_int_equal(rd(0x38f), 0xf);		/* reset: GP enables set */
	wr(0x186, INSN | OS | USR | EN);
	model_retire(&M, 1000);
	assert_int_equal(rd(0xc1), 1000);
	assert_int_equal(pmc(0), 1000);
	wr(0x38f, 0);					/* global gate off */
	model_retire(&M, 1000);
	assert_int_equal(rd(0xc1), 1000);
	wr(0x38f, 1);
	wr(0x186, INSN | USR | EN);			/* USR only, at CPL 0 */
	model_retire(&M, 1000);
	assert_int_equal(rd(0xc1), 1000);
	M.cpl = 3;
	model_retire(&M, 10);
	assert_int_equal(rd(0xc1), 1010);
	wr(0x186, INSN | USR);				/* no EN */
	model_retire(&M, 10);
	assert_int_equal(rd(0xc1), 1010);
}

static void fixed_counting(void **state)
{
	(void)state;
	init(MODEL_INTEL_V2);
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 2 } };
	wr(0x38d, 0x333);				/* fixed 0-2: OS|USR */
	wr(0x38f, 7ull << 32);
	model_run(&M, &c, 100);
	assert_int_equal(rd(0x309), 200);
	assert_int_equal(rd(0x30a), 100);
	assert_int_equal(rd(0x30b), 100);
	assert_int_equal(pmc(1u << 30), 200);
	assert_int_equal(pmc((1u << 30) | 2), 100);
}

static void rdpmc_rules(void **state)
{
	(void)state;
	u64 v;
	init(MODEL_INTEL_V2);
	wr(0xc1, 0x23456789);
	assert_int_equal(model_rdpmc(&M, 64, &v), FAULT);	/* kvm-unit-tests: #GP on RDPMC(64) */
	assert_int_equal(M.last_vector, 13);
	assert_int_equal(model_rdpmc(&M, 4, &v), FAULT);
	assert_int_equal(model_rdpmc(&M, (1u << 30) | 3, &v), FAULT);
	assert_int_equal(model_rdpmc(&M, 1u << 31, &v), FAULT);	/* no fast mode here */
	init(MODEL_INTEL_V4);
	wr(0x4c1, 0xff0123456789);
	assert_int_equal(pmc(0), 0xff0123456789);
	assert_int_equal(pmc(1u << 31), 0x23456789);		/* fast: low 32 bits */
	wr(0x309, 0xff0123456789);
	assert_int_equal(pmc(3u << 30), 0x23456789);
	init(MODEL_AMD_LEGACY);
	assert_int_equal(model_rdpmc(&M, 3, &v), 0);
	assert_int_equal(model_rdpmc(&M, 4, &v), FAULT);
	assert_int_equal(model_rdpmc(&M, 1u << 30, &v), FAULT);
	init(MODEL_AMD_CORE_EXT);
	assert_int_equal(model_rdpmc(&M, 5, &v), 0);
	assert_int_equal(model_rdpmc(&M, 6, &v), FAULT);
}

/* kvm-unit-tests check_gp_counters_write_width and check_rdpmc. */
static void write_width(void **state)
{
	(void)state;
	u64 v;
	const u64 v64 = 0xffffff0123456789ull, v32 = v64 & 0xffffffff, vmax = v64 & ((1ull << 48) - 1);

	init(MODEL_INTEL_V4);
	wr(0xc1, v32);
	assert_int_equal(rd(0xc1), v32);
	assert_int_equal(rd(0x4c1), v32);
	wr(0xc1, v64);					/* only EAX counts */
	assert_int_equal(rd(0xc1), v32);
	wr(0xc1, 0x80000000);				/* sign-extended from bit 31 */
	assert_int_equal(rd(0xc1), 0xffff80000000ull);
	wr(0x4c1, vmax);
	assert_int_equal(rd(0xc1), vmax);
	assert_int_equal(model_wrmsr(&M, 0x4c1, v64), FAULT);
	assert_non_null(strstr(M.last_fault, "width"));
	init(MODEL_INTEL_V2);				/* no FW_WRITE: no IA32_A_PMCx */
	assert_int_equal(model_wrmsr(&M, 0x4c1, 1), FAULT);
	assert_int_equal(model_rdmsr(&M, 0x4c1, &v), FAULT);
	assert_int_equal(rd(0x345), 0);
	assert_int_equal(model_wrmsr(&M, 0x345, 0), FAULT);	/* read-only */
	init(MODEL_AMD_V2);				/* AMD: 48-bit writes, no sign extension */
	wr(0xc0010201, v64);
	assert_int_equal(rd(0xc0010201), vmax);
	wr(0xc0010201, 0x80000000);
	assert_int_equal(rd(0xc0010201), 0x80000000);
}

static void overflow_status_pmi(void **state)
{
	(void)state;
	for (int with_int = 0; with_int < 2; with_int++) {
		init(MODEL_INTEL_V2);
		wr(0x186, INSN | OS | EN | (with_int ? INT : 0));
		wr(0xc1, 1 - 100);			/* overflow preset (kvm-unit-tests) */
		model_retire(&M, 100);
		assert_int_equal(rd(0xc1), 1);
		assert_int_equal(rd(0x38e) & 1, 1);
		assert_int_equal(M.pmi_raised, with_int);
		assert_int_equal(nmis, with_int);
		assert_int_equal(!!(M.lvtpc & (1u << 16)), with_int);	/* Intel masks on delivery */
		wr(0x390, 1);
		assert_int_equal(rd(0x38e), 0);
	}
	/* A masked LVT PC loses the PMI, the status stays. */
	init(MODEL_INTEL_V2);
	M.lvtpc |= 1u << 16;
	wr(0x186, INSN | OS | EN | INT);
	wr(0xc1, 0xfffffff0);
	model_retire(&M, 100);
	assert_int_equal(nmis, 0);
	assert_int_equal(M.pmi_lost_masked, 1);
	assert_int_equal(rd(0x38e), 1);
	/* AMD: no LVT mask on delivery; legacy has no status register. */
	init(MODEL_AMD_LEGACY);
	wr(0xc0010000, INSN | OS | EN | INT);
	wr(0xc0010004, (1ull << 48) - 10);
	model_retire(&M, 100);
	assert_int_equal(nmis, 1);
	assert_int_equal(M.lvtpc, 0x400);
	assert_int_equal(rd(0xc0010004), 90);
	u64 v;
	assert_int_equal(model_rdmsr(&M, 0xc0000300, &v), FAULT);
	init(MODEL_AMD_V2);
	wr(0xc0010200, INSN | OS | EN | INT);
	wr(0xc0010201, (1ull << 48) - 10);
	model_retire(&M, 100);
	assert_int_equal(nmis, 1);
	assert_int_equal(rd(0xc0000300), 1);
	wr(0xc0000300, 0);				/* read-only: ignored, no #GP */
	assert_int_equal(rd(0xc0000300), 1);
	wr(0xc0000302, 1);
	assert_int_equal(rd(0xc0000300), 0);
	wr(0xc0000303, 2);
	assert_int_equal(rd(0xc0000300), 2);
}

/* NMIs are blocked while one runs: one more latches, the rest collapse. */
static struct pmu_model *nested_m;
static void nested_nmi(struct pmu_model *m, void *arg)
{
	(void)arg;
	nmis++;
	if (nmis == 1) {
		m->lvtpc = 0x400;
		model_retire(m, 200);		/* two more overflows inside the NMI */
	}
}

static void nmi_latching(void **state)
{
	(void)state;
	init(MODEL_AMD_V2);
	nested_m = &M;
	M.nmi = nested_nmi;
	wr(0xc0010200, INSN | OS | EN | INT);
	wr(0xc0010201, (1ull << 48) - 100);
	wr(0xc0010202, INSN | OS | EN | INT);
	wr(0xc0010203, (1ull << 48) - 150);
	model_retire(&M, 100);
	assert_int_equal(M.pmi_raised, 2);
	assert_int_equal(M.pmi_latched, 1);
	assert_int_equal(nmis, 2);
}

static void reserved_bits(void **state)
{
	(void)state;
	u64 v;
	init(MODEL_INTEL_V2);
	assert_int_equal(model_wrmsr(&M, 0x186, 1ull << 32), FAULT);
	assert_int_equal(model_wrmsr(&M, 0x186, 1ull << 21), FAULT);	/* AnyThread: v3+ */
	assert_int_equal(model_wrmsr(&M, 0x38d, 0x4), FAULT);
	assert_int_equal(model_wrmsr(&M, 0x38d, 0xb000), FAULT);	/* no fixed 3 */
	assert_int_equal(model_wrmsr(&M, 0x38f, 1ull << 4), FAULT);
	assert_int_equal(model_wrmsr(&M, 0x38f, 1ull << 35), FAULT);
	assert_int_equal(model_wrmsr(&M, 0x38e, 0), FAULT);		/* status read-only */
	assert_int_equal(model_wrmsr(&M, 0x390, 1ull << 40), FAULT);
	assert_int_equal(model_wrmsr(&M, 0x391, 1), FAULT);		/* v4 only */
	assert_int_equal(model_rdmsr(&M, 0x189, &v), 0);		/* PERFEVTSEL3 exists */
	assert_int_equal(model_rdmsr(&M, 0x18a, &v), FAULT);		/* ... 4 does not */
	assert_int_equal(model_rdmsr(&M, 0x30c, &v), FAULT);
	assert_int_equal(model_wrmsr(&M, 0x1d9, 1ull << 40), FAULT);
	assert_int_equal(M.faults, 12);
	init(MODEL_INTEL_V4);
	wr(0x186, 1ull << 21);
	wr(0x391, 1ull << 59);
	assert_int_equal(rd(0x38e), 1ull << 59);
	init(MODEL_AMD_CORE_EXT);					/* AMD drops them */
	wr(0xc0010200, ~0ull);
	assert_int_equal(rd(0xc0010200), ~(1ull << 19 | 1ull << 21 | 0xfull << 36 | ~0ull << 42));
	assert_int_equal(model_rdmsr(&M, 0xc001020c, &v), FAULT);	/* no 7th counter */
	init(MODEL_AMD_LEGACY);
	assert_int_equal(model_rdmsr(&M, 0xc0010200, &v), FAULT);	/* no core ext */
}

static void v5_bitmap(void **state)
{
	(void)state;
	u64 v;
	init(MODEL_INTEL_V5);
	assert_int_equal(model_rdmsr(&M, 0x30b, &v), FAULT);		/* fixed 2 missing */
	assert_int_equal(rd(0x30c), 0);					/* fixed 3 present */
	assert_int_equal(model_wrmsr(&M, 0x38d, 0x300), FAULT);
	wr(0x38d, 0x3033);
	assert_int_equal(model_wrmsr(&M, 0x38f, 1ull << 34), FAULT);
	wr(0x38f, 0xbull << 32);
	assert_int_equal(model_rdpmc(&M, (1u << 30) | 2, &v), FAULT);
	struct model_cycle c = { .n = { [SIG_SLOTS] = 5 } };
	model_run(&M, &c, 10);
	assert_int_equal(pmc((1u << 30) | 3), 50);
}

static void cmask_edge(void **state)
{
	(void)state;
	struct model_cycle two = { .n = { [SIG_INSTRUCTIONS] = 2 } }, one = { .n = { [SIG_INSTRUCTIONS] = 1 } };
	init(MODEL_INTEL_V4);
	wr(0x186, INSN | OS | EN);
	wr(0x187, INSN | OS | EN | 2ull << 24);
	wr(0x188, INSN | OS | EN | 2ull << 24 | (1ull << 23));
	wr(0x189, INSN | OS | EN | 2ull << 24 | (1ull << 18));
	for (int i = 0; i < 10; i++) {
		model_run(&M, &two, 4);
		model_run(&M, &one, 6);
	}
	assert_int_equal(rd(0xc1), 140);
	assert_int_equal(rd(0xc2), 40);		/* cmask 2: "less than the instruction count" */
	assert_int_equal(rd(0xc3), 60);
	assert_int_equal(rd(0xc4), 10);
}

/* kvm-unit-tests check_running_counter_wrmsr. */
static void running_counter_write(void **state)
{
	(void)state;
	init(MODEL_INTEL_V2);
	wr(0x186, INSN | OS | EN);
	model_retire(&M, 1000);
	wr(0xc1, 0);
	model_retire(&M, 5);
	assert_int_equal(rd(0xc1), 5);
	wr(0xc1, ~0ull);				/* -1: the next event overflows */
	model_retire(&M, 1);
	assert_int_equal(rd(0x38e) & 1, 1);
	assert_int_equal(rd(0xc1), 0);
}

static void freeze(void **state)
{
	(void)state;
	init(MODEL_INTEL_V2);
	wr(0x1d9, 1ull << 12);
	wr(0x186, INSN | OS | EN | INT);
	wr(0xc1, 0xfffffff0);
	model_retire(&M, 100);
	assert_int_equal(rd(0x38f), 0);			/* legacy: GLOBAL_CTRL cleared */
	init(MODEL_INTEL_V4);
	wr(0x1d9, 1ull << 12);
	wr(0x186, INSN | OS | EN | INT);
	wr(0x4c1, (1ull << 48) - 16);
	model_retire(&M, 100);
	assert_int_equal(rd(0x38e), 1ull << 59 | 1);	/* streamlined: CTR_FRZ */
	assert_int_equal(rd(0xc1), 0);			/* frozen at the overflow */
	wr(0x390, 1ull << 59 | 1);
	model_retire(&M, 7);
	assert_int_equal(rd(0xc1), 7);
}

/* KVM's vPMU: DEBUGCTL bits 12 and 14 #GP (LBR bits do not); LVT PC is
 * masked on each PMI on AMD too; RDPMC's fast bit #GPs; SMI_COUNT reads. */
static void kvm_rules(void **state)
{
	(void)state;
	init(MODEL_KVM_V2);
	assert_int_equal(model_wrmsr(&M, 0x1d9, 1ull << 12), FAULT);
	assert_int_equal(model_wrmsr(&M, 0x1d9, 1ull << 14), FAULT);
	wr(0x1d9, 1 | 1ull << 11);
	u64 v;
	assert_int_equal(model_rdpmc(&M, 1u << 31, &v), FAULT);
	assert_int_equal(rd(0x34), 0);
	assert_int_equal(model_wrmsr(&M, 0x34, 1), FAULT);
	init(MODEL_KVM_AMD);
	wr(0xc0010200, 0x76 | OS | EN | INT);
	wr(0xc0010201, (1ull << 48) - 10);
	model_run(&M, &(struct model_cycle){ 0 }, 20);
	assert_int_equal(nmis, 1);
	assert_int_equal(M.lvtpc, 0x400 | 1u << 16);	/* masked by the delivery */
	init(MODEL_AMD_CORE_EXT);
	wr(0xc0010200, 0x76 | OS | EN | INT);
	wr(0xc0010201, (1ull << 48) - 10);
	model_run(&M, &(struct model_cycle){ 0 }, 20);
	assert_int_equal(M.lvtpc, 0x400);		/* bare AMD: not masked */
	assert_int_equal(rd(0xc0011029), 0);		/* DE_CFG */
	wr(0xc0011029, 2);
	assert_int_equal(rd(0xc0011029), 2);
	init(MODEL_INTEL_V2);					/* no SMM freeze capability */
	assert_int_equal(model_wrmsr(&M, 0x1d9, 1ull << 14), FAULT);
	init(MODEL_INTEL_V4);
	wr(0x1d9, 1ull << 12 | 1ull << 14);
	assert_int_equal(rd(0x345) & (1ull << 12), 1ull << 12);
}

/* Firmware hand-off state, and the errata that swallow a PMI. */
static void handoff_and_errata(void **state)
{
	(void)state;
	init(MODEL_INTEL_V4);
	model_firmware_handoff(&M, 0);
	assert_int_equal(rd(0x186) & EN, EN);
	assert_int_equal(rd(0x38d), 3);
	assert_int_equal(rd(0x38f), 0xf);
	assert_int_equal(rd(0x1d9) & (1ull << 12), 1ull << 12);
	init(MODEL_INTEL_V4);
	wr(0x186, INSN | OS | EN | INT);
	wr(0x4c1, (1ull << 48) - 1);			/* one event to go */
	model_retire(&M, 5);
	assert_int_equal(M.erratum_hits, 1);
	assert_int_equal(nmis, 0);
	init(MODEL_INTEL_BDW);
	wr(0x186, 0x1c0 | OS | EN | INT);		/* INST_RETIRED.ALL */
	wr(0x4c1, (1ull << 48) - 100);			/* bits 5:0 set */
	model_retire(&M, 200);
	assert_int_equal(M.erratum_hits, 1);
	wr(0x4c1, (1ull << 48) - 128);
	model_retire(&M, 200);
	assert_int_equal(M.erratum_hits, 1);
	assert_int_equal(nmis, 1);
}

static void amd_alias(void **state)
{
	(void)state;
	init(MODEL_AMD_CORE_EXT);
	wr(0xc0010001, INSN | OS | EN);			/* legacy select 1 = ext CTL1 */
	assert_int_equal(rd(0xc0010202), INSN | OS | EN);
	model_retire(&M, 33);
	assert_int_equal(rd(0xc0010203), 33);
	assert_int_equal(rd(0xc0010005), 33);
	assert_int_equal(pmc(1), 33);
}

static void tcg(void **state)
{
	(void)state;
	u64 v = 5;
	init(MODEL_TCG_AMD);
	assert_int_equal(model_rdmsr(&M, 0xc0010004, &v), 0);
	assert_int_equal(v, 0);
	wr(0xc0010004, 1234);
	assert_int_equal(rd(0xc0010004), 0);
	assert_int_equal(model_rdpmc(&M, 0, &v), FAULT);
	assert_int_equal(M.last_vector, 6);		/* #UD */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gp_counting_intel),
		cmocka_unit_test(fixed_counting),
		cmocka_unit_test(rdpmc_rules),
		cmocka_unit_test(write_width),
		cmocka_unit_test(overflow_status_pmi),
		cmocka_unit_test(nmi_latching),
		cmocka_unit_test(reserved_bits),
		cmocka_unit_test(v5_bitmap),
		cmocka_unit_test(cmask_edge),
		cmocka_unit_test(running_counter_write),
		cmocka_unit_test(freeze),
		cmocka_unit_test(amd_alias),
		cmocka_unit_test(kvm_rules),
		cmocka_unit_test(handoff_and_errata),
		cmocka_unit_test(tcg),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

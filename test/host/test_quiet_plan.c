/*
 * test_quiet_plan — quiet_plan (kernel/platform/quiet_plan.c) on presets of
 * the CPUs it must tell apart: bare metal against a guest for turbo=off,
 * and MSR 1A4H's prefetcher bits per core type for prefetch=off, with the
 * expected bits written here from the SDM Vol. 4 tables and Intel's own
 * prefetcher tool (pepc's MSR 1A4H lists), not from the code under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "kernel/platform/quiet_plan.h"

#define TURBO		BP_QUIET_TURBO_OFF
#define PREFETCH	BP_QUIET_PREFETCH_OFF
#define ATOM		0x20
#define CORE		0x40
#define MISC_TURBO_DIS	(1ull << 38)

struct plan {
	int rc, nc;
	struct quiet_change c[QUIET_PLAN_MAX];
	char why[160];
};

static struct plan plan(const struct quiet_cpu *cpu, u32 what)
{
	struct plan p;

	memset(&p, 0, sizeof(p));
	p.rc = quiet_plan(cpu, what, p.c, &p.nc, p.why, sizeof(p.why));
	return p;
}

static struct quiet_cpu intel(u32 model, u32 core_type)
{
	return (struct quiet_cpu){ .intel = true, .family = 6, .model = model,
				   .core_type = core_type, .l06_eax = 1u << 1 };
}

/* Bare metal with turbo: MISC_ENABLE[38] and PERF_CTL[32]; without it,
 * nothing to do. */
static void turbo_bare_metal(void **state)
{
	(void)state;
	struct quiet_cpu skl = intel(0x5e, 0);
	struct plan p = plan(&skl, TURBO);
	assert_int_equal(p.rc, 0);
	assert_int_equal(p.nc, 2);
	assert_int_equal(p.c[0].msr, 0x1a0);
	assert_true(p.c[0].bits == MISC_TURBO_DIS);
	assert_int_equal(p.c[1].msr, 0x199);
	assert_true(p.c[1].bits == 1ull << 32);
	/* Turbo already disabled by firmware: 06H:EAX[1] reads 0, still planned. */
	skl.l06_eax = 0;
	skl.misc_enable = MISC_TURBO_DIS;
	assert_int_equal(plan(&skl, TURBO).nc, 2);
	skl.misc_enable = 0;
	p = plan(&skl, TURBO);
	assert_int_equal(p.rc, 0);
	assert_int_equal(p.nc, 0);
	assert_non_null(strstr(p.why, "no turbo"));
	struct quiet_cpu zen = { .amd = true, .family = 0x19, .model = 0x21,
				 .l80000007_edx = 1u << 9 };
	p = plan(&zen, TURBO);
	assert_int_equal(p.rc, 0);
	assert_int_equal(p.nc, 1);
	assert_int_equal(p.c[0].msr, 0xc0010015);
	assert_true(p.c[0].bits == 1ull << 25);
}

/* KVM guests: 06H:EAX[1] is 0 and MISC_ENABLE keeps what is written, so
 * neither "no turbo" nor a write that holds may be reported: the host's
 * turbo is not the guest's to switch. */
static void turbo_kvm_guest_not_controllable(void **state)
{
	(void)state;
	struct quiet_cpu kvm = intel(0x55, 0);
	kvm.hypervisor = true;
	kvm.l06_eax = 0;
	struct plan p = plan(&kvm, TURBO);
	assert_int_equal(p.nc, 0);
	assert_int_not_equal(p.rc, 0);
	assert_non_null(strstr(p.why, "not controllable from a guest"));
	kvm.l06_eax = 1u << 1;
	p = plan(&kvm, TURBO);
	assert_int_equal(p.nc, 0);
	assert_non_null(strstr(p.why, "not controllable from a guest"));
	struct quiet_cpu kvm_amd = { .amd = true, .family = 0x19, .model = 0x11, .hypervisor = true,
				     .l80000007_edx = 1u << 9 };
	p = plan(&kvm_amd, TURBO);
	assert_int_equal(p.nc, 0);
	assert_int_not_equal(p.rc, 0);
	assert_non_null(strstr(p.why, "not controllable from a guest"));
	/* Prefetch stays a write and a read-back in a guest (KVM #GPs on 1A4H). */
	p = plan(&kvm, PREFETCH);
	assert_int_equal(p.rc, 0);
	assert_int_equal(p.nc, 1);
}

static u64 prefetch_bits(u32 model, u32 core_type)
{
	struct quiet_cpu cpu = intel(model, core_type);
	struct plan p = plan(&cpu, PREFETCH);

	if (p.rc)
		return 0;
	assert_int_equal(p.nc, 1);
	assert_int_equal(p.c[0].msr, 0x1a4);
	return p.c[0].bits;
}

/* MSR 1A4H: bits 0-3 on the big cores; only bits 0 (L2) and 2 (DCU) on
 * Goldmont, Goldmont Plus, Tremont and Silvermont-D, whose bits 1 and 3
 * are reserved (a write of 0xF would #GP); Xeon Phi's L2 and DCU at bits 1
 * and 0. */
static void prefetch_bits_per_core_type(void **state)
{
	(void)state;
	assert_true(prefetch_bits(0x5e, 0) == 0xf);		/* Skylake */
	assert_true(prefetch_bits(0x4f, 0) == 0xf);		/* Broadwell-X */
	assert_true(prefetch_bits(0x5c, 0) == 0x5);		/* Goldmont */
	assert_true(prefetch_bits(0x5f, 0) == 0x5);		/* Goldmont-D */
	assert_true(prefetch_bits(0x7a, 0) == 0x5);		/* Goldmont Plus */
	assert_true(prefetch_bits(0x86, 0) == 0x5);		/* Tremont-D */
	assert_true(prefetch_bits(0x9c, 0) == 0x5);		/* Jasper Lake */
	assert_true(prefetch_bits(0x4d, 0) == 0x5);		/* Silvermont-D */
	assert_true(prefetch_bits(0x57, 0) == 0x3);		/* Xeon Phi */
	/* Lakefield: a Sunny Cove P-core and Tremont E-cores. */
	assert_true(prefetch_bits(0x8a, CORE) == 0xf);
	assert_true(prefetch_bits(0x8a, ATOM) == 0x5);
	/* Alder and Raptor Lake, and Crestmont: four bits on both core types. */
	assert_true(prefetch_bits(0x97, CORE) == 0xf);
	assert_true(prefetch_bits(0xb7, ATOM) == 0xf);
	assert_true(prefetch_bits(0xaf, 0) == 0xf);
	/* Client Silvermont and Airmont: no documented control. */
	assert_true(prefetch_bits(0x37, 0) == 0);
	assert_true(prefetch_bits(0x4c, 0) == 0);
	/* AMD: PrefetchControl from family 19h, none before. */
	struct quiet_cpu zen3 = { .amd = true, .family = 0x19 }, zen2 = { .amd = true, .family = 0x17 };
	struct plan p = plan(&zen3, PREFETCH);
	assert_int_equal(p.rc, 0);
	assert_int_equal(p.c[0].msr, 0xc0000108);
	p = plan(&zen2, PREFETCH);
	assert_int_equal(p.rc, -E_NODEV);
	assert_non_null(strstr(p.why, "no documented control on AuthenticAMD family 0x17"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(turbo_bare_metal),
		cmocka_unit_test(turbo_kvm_guest_not_controllable),
		cmocka_unit_test(prefetch_bits_per_core_type),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

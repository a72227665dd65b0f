/*
 * test_pmu_regs — the register-level checks of test/pmu_regs_check.c (the
 * ones `make test-kvm` runs in the guest on real counters) on the register
 * model, for every preset with a PMU: each must pass there, so that a
 * failure under KVM or on bare metal is the machine's, not the check's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "pmu/hw.h"
#include "pmu/regs.h"
#include "test/host/pmu_model.h"
#include "test/pmu_regs_check.h"

static struct pmu_model M;
static struct pmu_caps caps;
static u64 nmis;
static int failures;

static void on_nmi(struct pmu_model *m, void *arg)
{
	(void)m;
	(void)arg;
	nmis++;
}

/* dec, jnz: two instructions and a taken branch a cycle. */
static void work(void *arg, u64 n)
{
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 2, [SIG_BRANCHES] = 1,
					[SIG_SLOTS] = 4 } };

	(void)arg;
	model_run(&M, &c, n / 2);
}

/* Nothing is emulated on the model: instructions, one a cycle. */
static void emulated(void *arg, u64 n)
{
	(void)arg;
	model_retire(&M, n);
}

static u64 pmis(void *arg)
{
	(void)arg;
	return nmis;
}

static void report(bool pass, const char *fmt, ...)
{
	va_list ap;
	char line[256];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	print_message("# %s %s: %s\n", pass ? "ok" : "FAIL", M.cfg.name, line);
	failures += !pass;
}

static void skipped(const char *fmt, ...)
{
	va_list ap;
	char line[256];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	print_message("# skip %s: %s\n", M.cfg.name, line);
}

static void every_preset(void **state)
{
	(void)state;
	int ran = 0;

	for (int f = 0; f < MODEL_FLAVOURS; f++) {
		const struct model_cfg *cfg = model_preset(f);
		if (cfg->tcg)
			continue;
		model_init(&M, cfg);
		M.nmi = on_nmi;
		M.lvtpc = LVT_DELIVERY_NMI;
		nmis = 0;
		assert_int_equal(pmu_probe(&caps), 0);
		unsigned faults = M.faults;
		struct pmu_regs_env env = { &caps, work, emulated, pmis, NULL, report,
					    skipped };
		pmu_regs_check(&env);
		/* The bits-above-the-width write is the one #GP a check asks for. */
		unsigned want = caps.intel && caps.fw_write ? caps.nr_gp : 0;
		if (M.faults - faults != want)
			report(false, "%u faults in the checks (want %u): last %s", M.faults - faults,
			       want, M.last_fault);
		ran++;
	}
	assert_true(ran >= 15);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_preset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

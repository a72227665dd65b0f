/*
 * test_pmu_regs — the register-level checks of test/pmu_regs_check.c (the
 * ones `make test-kvm` runs in the guest on real counters) on the register
 * model, for every preset with a PMU: each must pass there, so that a
 * failure under KVM or on bare metal is the machine's, not the check's.
 * And the other way: a model given a defect (a vPMU that loses the PMI of
 * an emulated instruction's overflow; a PerfMonV2 status bit that will not
 * clear, or a StatusClr that clears them all) fails the check written for
 * it.
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
static char failed[4096];		/* the failing lines, one a line */
static unsigned v2_lines;		/* PerfMonV2 lines reported */

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

/* Instructions the hypervisor emulates, one a cycle. */
static void emulated(void *arg, u64 n)
{
	(void)arg;
	model_emulate(&M, n);
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
	v2_lines += !strncmp(line, "PerfMonV2: ", 11);
	if (!pass && strlen(failed) + strlen(line) + 2 < sizeof(failed))
		strcat(strcat(failed, line), "\n");
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

static struct pmu_regs_env env = { &caps, work, emulated, pmis, NULL, report, skipped };

/* The model of preset f, probed; the faults so far. */
static unsigned start(enum model_flavour f)
{
	model_init(&M, model_preset(f));
	M.nmi = on_nmi;
	M.lvtpc = LVT_DELIVERY_NMI;
	nmis = 0;
	assert_int_equal(pmu_probe(&caps), 0);
	return M.faults;
}

static void every_preset(void **state)
{
	(void)state;
	int ran = 0;

	for (int f = 0; f < MODEL_FLAVOURS; f++) {
		const struct model_cfg *cfg = model_preset(f);
		if (cfg->tcg)
			continue;
		unsigned faults = start(f);
		v2_lines = 0;
		pmu_regs_check(&env);
		assert_int_equal(v2_lines, cfg->amd && cfg->perfmon_v2 ? 4 : 0);
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

/* The checks on preset f with a defect set by `defect`: true if a line
 * that starts with `line` failed. */
static bool caught(enum model_flavour f, void (*defect)(struct pmu_model *m), const char *line)
{
	start(f);
	defect(&M);
	failed[0] = 0;
	pmu_regs_check(&env);
	for (const char *p = failed; *p; p = strchr(p, '\n') + 1)
		if (!strncmp(p, line, strlen(line)))
			return true;
	return false;
}

static void lose_emulated_pmi(struct pmu_model *m) { m->emulated_pmi_lost = true; }
static void stick_status_bit(struct pmu_model *m) { m->stuck_status = 1ull << 2; }
static void clear_all_status(struct pmu_model *m) { m->status_clr_all = true; }

static void defects_caught(void **state)
{
	(void)state;
	assert_true(caught(MODEL_KVM_V2, lose_emulated_pmi, "an overflow in 10000 emulated"));
	assert_true(caught(MODEL_KVM_AMD_V2, lose_emulated_pmi, "an overflow in 10000 emulated"));
	assert_true(caught(MODEL_AMD_V2, stick_status_bit, "PerfMonV2: StatusSet"));
	assert_true(caught(MODEL_KVM_AMD_V2, stick_status_bit, "PerfMonV2: StatusSet"));
	/* A StatusClr that clears every bit passes the overflow checks, which
	 * look at one bit at a time: only the PerfMonV2 ones see it. */
	assert_true(caught(MODEL_AMD_V2, clear_all_status, "PerfMonV2: StatusSet"));
	assert_true(caught(MODEL_AMD_V2, clear_all_status, "PerfMonV2: an overflow"));
	assert_false(caught(MODEL_AMD_V2, clear_all_status, "each of the"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_preset),
		cmocka_unit_test(defects_caught),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

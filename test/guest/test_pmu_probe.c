/*
 * test_pmu_probe — the PMU probe on the machine we booted on. Under QEMU
 * TCG there is no PMU: the probe must say so (with the reason) and every
 * probing instruction that faults there (rdpmc raises #UD) must come back
 * as an error, not a crash. With a PMU (KVM, bare metal) it counts a loop.
 *
 * Arguments: expect=none   the machine is known to have no PMU (TCG)
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "pmu/pmu.h"
#include "test/guest/report.h"

static void __attribute__((noinline)) spin(u64 n)
{
	for (volatile u64 i = 0; i < n; i++)
		;
}

static bool contains(const char *s, const char *w)
{
	size_t n = strlen(w);

	for (; *s; s++)
		if (!strncmp(s, w, n))
			return true;
	return false;
}

static void check_absent(const struct pmu_caps *caps)
{
	char line[256], err[200];
	struct pmu_event_attr a;
	struct pmu_ctx ctx;
	u64 v = 0;

	report(caps->kind == PMU_KIND_NONE && caps->none_reason[0],
	       "no PMU detected: %s", caps->none_reason);
	pmu_describe(caps, line, sizeof(line));
	report(!strncmp(line, "none (", 6) && contains(line, "soft PMU"),
	       "boot line: pmu: %s", line);
	report(!caps->rdpmc_ok, "rdpmc is not usable");
	int rc = rdpmc_safe(0, &v);
	report(rc == -E_FAULT, "rdpmc_safe(0) faulted and returned -E_FAULT (rc %d)", rc);
	rc = rdpmc_safe(1u << 30 /* fixed counter 0 */, &v);
	report(rc == -E_FAULT, "rdpmc_safe(fixed 0) faulted and returned -E_FAULT (rc %d)", rc);
	rc = pmu_event_parse("cycles", caps, &a, err, sizeof(err));
	report(rc == -E_NODEV && err[0], "'cycles' is refused: %s", err);
	rc = pmu_event_parse("cyles", caps, &a, err, sizeof(err));
	report(rc == -E_NOENT, "unknown names still get suggestions: %s", err);
	a.config = 0x3c;
	rc = pmu_open(&ctx, caps, &a, 1, 0, err, sizeof(err));
	report(rc == -E_NODEV, "pmu_open refuses: %s", err);
}

static void check_present(const struct pmu_caps *caps)
{
	char line[256], err[200];
	struct pmu_event_attr a[2];
	struct pmu_ctx ctx;

	report(caps->kind != PMU_KIND_NONE, "PMU detected: %s", pmu_describe(caps, line, sizeof(line)));
	report(pmu_event_parse("instructions", caps, &a[0], err, sizeof(err)) == 0,
	       "parse instructions %s", err);
	report(pmu_event_parse("cycles", caps, &a[1], err, sizeof(err)) == 0, "parse cycles %s", err);
	int rc = pmu_open(&ctx, caps, a, 2, caps->rdpmc_ok ? 0 : PMU_OPEN_RDMSR, err, sizeof(err));
	report(rc == 0, "open instructions+cycles %s", err);
	if (rc)
		return;
	pmu_start(&ctx);
	spin(1000000);
	pmu_stop(&ctx);
	u64 insn = pmu_read(&ctx, 0), cyc = pmu_read(&ctx, 1);
	report(insn >= 1000000, "a 1e6-iteration loop retired %lu instructions", insn);
	report(cyc > 0, "and took %lu cycles", cyc);
}

static int test_pmu_probe_main(int argc, char **argv)
{
	struct pmu_caps caps;
	const char *expect = test_arg(argc, argv, "expect");
	char line[256];

	int rc = pmu_probe(&caps);
	kprintf("pmu: %s\n", pmu_describe(&caps, line, sizeof(line)));
	report(rc == (caps.kind == PMU_KIND_NONE ? -E_NODEV : 0),
	       "pmu_probe returns %d for kind %d", rc, caps.kind);
	if (expect && !strcmp(expect, "none"))
		check_absent(&caps);
	else if (caps.kind == PMU_KIND_NONE)
		report_skip("no PMU on this machine: %s", caps.none_reason);
	else
		check_present(&caps);
	return report_summary();
}

APP(test_pmu_probe, "guest test: PMU probe, absence under TCG, rdpmc faults", test_pmu_probe_main, APP_TEST);

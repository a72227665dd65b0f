/*
 * test_pmu_libpfm — the built-in generic event table against libpfm4, an
 * independent source of event encodings, for several Intel and AMD models.
 * libpfm4 encodes for a named PMU that is not the host's when
 * LIBPFM_ENCODE_INACTIVE=1 is set before pfm_initialize(). Without the
 * library (Debian libpfm4-dev) the test reports a SKIP.
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
#include "pmu/pmu.h"
#include "test/host/pmu_model.h"

#ifdef HAVE_LIBPFM
#include <perfmon/pfmlib.h>

/* PERFEVTSEL bits an event spec may set: event, umask, edge, inv, cmask
 * and AMD EventSelect[11:8]; libpfm adds EN, INT, OS, USR. */
#define SPEC_BITS 0xfff84ffffull

struct check {
	const char *pmu;	/* libpfm PMU */
	enum model_flavour f;
	u32 family, model;	/* 0: the flavour's */
	const char *ours, *theirs;
};

static const struct check checks[] = {
	/* Intel Core 2, Sandy Bridge, Skylake, Ice Lake, Sapphire Rapids. */
	{ "core", MODEL_INTEL_V2, 0, 0, "cycles", "UNHALTED_CORE_CYCLES" },
	{ "core", MODEL_INTEL_V2, 0, 0, "instructions", "INSTRUCTION_RETIRED" },
	{ "core", MODEL_INTEL_V2, 0, 0, "ref-cycles", "UNHALTED_REFERENCE_CYCLES" },
	{ "core", MODEL_INTEL_V2, 0, 0, "bus-cycles", "CPU_CLK_UNHALTED:BUS" },
	{ "core", MODEL_INTEL_V2, 0, 0, "branches", "BRANCH_INSTRUCTIONS_RETIRED" },
	{ "core", MODEL_INTEL_V2, 0, 0, "branch-misses", "MISPREDICTED_BRANCH_RETIRED" },
	{ "core", MODEL_INTEL_V2, 0, 0, "cache-references", "LLC_REFERENCES" },
	{ "core", MODEL_INTEL_V2, 0, 0, "cache-misses", "LLC_MISSES" },
	{ "snb", MODEL_INTEL_V4, 0, 0, "cache-misses", "LLC_MISSES" },
	{ "snb", MODEL_INTEL_V4, 0, 0, "cycles", "UNHALTED_CORE_CYCLES" },
	{ "hsw", MODEL_INTEL_V4, 0, 0, "bus-cycles", "CPU_CLK_UNHALTED:REF_XCLK" },
	{ "skl", MODEL_INTEL_V4, 0, 0, "cycles", "UNHALTED_CORE_CYCLES" },
	{ "skl", MODEL_INTEL_V4, 0, 0, "instructions", "INSTRUCTION_RETIRED" },
	{ "skl", MODEL_INTEL_V4, 0, 0, "ref-cycles", "UNHALTED_REFERENCE_CYCLES" },
	{ "skl", MODEL_INTEL_V4, 0, 0, "branches", "BR_INST_RETIRED:ALL_BRANCHES" },
	{ "skl", MODEL_INTEL_V4, 0, 0, "branch-misses", "BR_MISP_RETIRED:ALL_BRANCHES" },
	{ "skl", MODEL_INTEL_V4, 0, 0, "cache-references", "LONGEST_LAT_CACHE:REFERENCE" },
	{ "skl", MODEL_INTEL_V4, 0, 0, "cache-misses", "LONGEST_LAT_CACHE:MISS" },
	{ "icl", MODEL_INTEL_V5, 0, 0, "branches", "BR_INST_RETIRED:ALL_BRANCHES" },
	{ "icl", MODEL_INTEL_V5, 0, 0, "instructions", "INSTRUCTION_RETIRED" },
	{ "spr", MODEL_INTEL_V5, 0, 0, "topdown-slots", "TOPDOWN:SLOTS_P" },
	{ "spr", MODEL_INTEL_V5, 0, 0, "cache-misses", "LONGEST_LAT_CACHE:MISS" },
	{ "spr", MODEL_INTEL_V5, 0, 0, "branch-misses", "BR_MISP_RETIRED:ALL_BRANCHES" },
	/* AMD K8, family 10h, 15h, Zen 1, Zen 2, Zen 3, Zen 4. */
	{ "amd64_k8_revg", MODEL_AMD_LEGACY, 0xf, 0x41, "cycles", "CPU_CLK_UNHALTED" },
	{ "amd64_k8_revg", MODEL_AMD_LEGACY, 0xf, 0x41, "instructions", "RETIRED_INSTRUCTIONS" },
	{ "amd64_fam10h_barcelona", MODEL_AMD_LEGACY, 0x10, 2, "branches", "RETIRED_BRANCH_INSTRUCTIONS" },
	{ "amd64_fam10h_barcelona", MODEL_AMD_LEGACY, 0x10, 2, "branch-misses",
	  "RETIRED_MISPREDICTED_BRANCH_INSTRUCTIONS" },
	{ "amd64_fam10h_barcelona", MODEL_AMD_LEGACY, 0x10, 2, "cache-references",
	  "REQUESTS_TO_L2:INSTRUCTIONS:DATA:TLB_WALK" },
	{ "amd64_fam10h_barcelona", MODEL_AMD_LEGACY, 0x10, 2, "cache-misses",
	  "L2_CACHE_MISS:INSTRUCTIONS:DATA:TLB_WALK" },
	{ "amd64_fam15h_interlagos", MODEL_AMD_CORE_EXT, 0x15, 2, "stalled-cycles-frontend", "DECODER_EMPTY" },
	{ "amd64_fam15h_interlagos", MODEL_AMD_CORE_EXT, 0x15, 2, "stalled-cycles-backend", "DISPATCH_STALLS" },
	{ "amd64_fam15h_interlagos", MODEL_AMD_CORE_EXT, 0x15, 2, "cycles", "CPU_CLK_UNHALTED" },
	{ "amd64_fam17h_zen1", MODEL_AMD_CORE_EXT, 0x17, 1, "cycles", "CYCLES_NOT_IN_HALT" },
	{ "amd64_fam17h_zen1", MODEL_AMD_CORE_EXT, 0x17, 1, "cache-references",
	  "REQUESTS_TO_L2_GROUP1:RD_BLK_L:RD_BLK_X:LS_RD_BLK_C_S:CACHEABLE_IC_READ:CHANGE_TO_X:"
	  "PREFETCH_L2:L2_HW_PF:OTHER_REQUESTS" },
	{ "amd64_fam17h_zen1", MODEL_AMD_CORE_EXT, 0x17, 1, "cache-misses",
	  "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C:IC_FILL_MISS" },
	{ "amd64_fam17h_zen1", MODEL_AMD_CORE_EXT, 0x17, 1, "stalled-cycles-frontend",
	  "INSTRUCTION_PIPE_STALL:IC_STALL_DQ_EMPTY" },
	{ "amd64_fam17h_zen1", MODEL_AMD_CORE_EXT, 0x17, 1, "stalled-cycles-backend",
	  "INSTRUCTION_PIPE_STALL:IC_STALL_BACK_PRESSURE" },
	{ "amd64_fam17h_zen2", MODEL_AMD_CORE_EXT, 0x17, 0x31, "stalled-cycles-frontend", "UOPS_QUEUE_EMPTY" },
	{ "amd64_fam17h_zen2", MODEL_AMD_CORE_EXT, 0x17, 0x31, "branch-misses",
	  "RETIRED_BRANCH_INSTRUCTIONS_MISPREDICTED" },
	{ "amd64_fam19h_zen3", MODEL_AMD_V2, 0x19, 0x21, "instructions", "RETIRED_INSTRUCTIONS" },
	{ "amd64_fam19h_zen3", MODEL_AMD_V2, 0x19, 0x21, "stalled-cycles-frontend", "UOPS_QUEUE_EMPTY" },
	{ "amd64_fam19h_zen4", MODEL_AMD_V2, 0x19, 0x61, "cycles", "CYCLES_NOT_IN_HALT" },
	{ "amd64_fam19h_zen4", MODEL_AMD_V2, 0x19, 0x61, "branches", "RETIRED_BRANCH_INSTRUCTIONS" },
	{ "amd64_fam19h_zen4", MODEL_AMD_V2, 0x19, 0x61, "cache-references",
	  "REQUESTS_TO_L2_GROUP1:RD_BLK_L:RD_BLK_X:LS_RD_BLK_C_S:CACHEABLE_IC_READ:CHANGE_TO_X:"
	  "PREFETCH_L2_CMD:L2_HW_PF:MISC" },
	{ "amd64_fam19h_zen4", MODEL_AMD_V2, 0x19, 0x61, "cache-misses",
	  "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C:IC_FILL_MISS" },
};

static u64 pfm_encode(const char *pmu, const char *event)
{
	char spec[256];
	uint64_t codes[4] = { 0 };
	pfm_pmu_encode_arg_t e;

	snprintf(spec, sizeof(spec), "%s::%s", pmu, event);
	memset(&e, 0, sizeof(e));
	e.size = sizeof(e);
	e.codes = codes;
	e.count = 4;
	int rc = pfm_get_os_event_encoding(spec, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &e);
	if (rc != PFM_SUCCESS)
		fail_msg("libpfm4 cannot encode %s: %s", spec, pfm_strerror(rc));
	assert_int_equal(e.count, 1);
	return codes[0];
}

static void generic_events_match_libpfm(void **state)
{
	(void)state;
	struct pmu_model m;
	struct pmu_caps caps;
	struct pmu_event_attr a;
	char err[256];
	unsigned n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(checks); i++) {
		const struct check *c = &checks[i];
		struct model_cfg cfg = *model_preset(c->f);
		if (c->family) {
			cfg.family = c->family;
			cfg.model = c->model;
		}
		model_init(&m, &cfg);
		assert_int_equal(pmu_probe(&caps), 0);
		if (pmu_event_parse(c->ours, &caps, &a, err, sizeof(err)))
			fail_msg("%s on %s: %s", c->ours, c->pmu, err);
		u64 want = pfm_encode(c->pmu, c->theirs) & SPEC_BITS;
		if (a.config != want)
			fail_msg("%s on %s: ours 0x%llx, libpfm4's %s 0x%llx", c->ours, c->pmu,
				 (unsigned long long)a.config, c->theirs, (unsigned long long)want);
		n++;
	}
	print_message("# %u encodings agree with libpfm4\n", n);
}

/* The raw-field parser against libpfm4's modifiers (c=, i, e). */
static void raw_fields_match_libpfm(void **state)
{
	(void)state;
	struct pmu_model m;
	struct pmu_caps caps;
	struct pmu_event_attr a;
	char err[256];
	static const struct { const char *ours, *theirs; } raw[] = {
		{ "cpu/event=0xc0,cmask=2,inv/", "INST_RETIRED:ANY_P:c=2:i" },
		{ "cpu/event=0xc0,cmask=3/", "INST_RETIRED:ANY_P:c=3" },
		{ "cpu/event=0xc5,umask=0,edge,cmask=1/", "BR_MISP_RETIRED:ALL_BRANCHES:e:c=1" },
		{ "r1c4", "BR_INST_RETIRED:CONDITIONAL" },
	};

	model_init(&m, model_preset(MODEL_INTEL_V4));
	assert_int_equal(pmu_probe(&caps), 0);
	for (size_t i = 0; i < ARRAY_SIZE(raw); i++) {
		assert_int_equal(pmu_event_parse(raw[i].ours, &caps, &a, err, sizeof(err)), 0);
		u64 want = pfm_encode("skl", raw[i].theirs) & SPEC_BITS;
		if (a.config != want)
			fail_msg("%s: ours 0x%llx, libpfm4's %s 0x%llx", raw[i].ours,
				 (unsigned long long)a.config, raw[i].theirs, (unsigned long long)want);
	}
}

static int setup(void **state)
{
	(void)state;
	setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
	return pfm_initialize() == PFM_SUCCESS ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(generic_events_match_libpfm),
		cmocka_unit_test(raw_fields_match_libpfm),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

#else

int main(void)
{
	printf("1..1\nok 1 - generic events vs libpfm4 # SKIP libpfm4-dev is not installed\n");
	return 0;
}

#endif

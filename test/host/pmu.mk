# Host tests of pmu/: the drivers against the register-level PMU model,
# linked with pmu/'s host library ($(PMU_HOST_LIB), pmu/pmu.mk).
# Included from the top-level Makefile after pmu/pmu.mk.

$(BUILD)/hpmu/test/%.o: test/%.c Makefile test/host/pmu.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMU_HOSTCFLAGS) -c $< -o $@

PMU_TEST_LIBS := $(BUILD)/hpmu/test/host/pmu_model.o $(PMU_HOST_LIB) \
	$(BUILD)/h/kernel/lib/printf.o $(BUILD)/h/klib/string.o

HOST_TESTS += $(BUILD)/host/test_pmu_model $(BUILD)/host/test_pmu \
	$(BUILD)/host/test_pmu_events $(BUILD)/host/test_pmu_libpfm

$(BUILD)/host/test_pmu_model $(BUILD)/host/test_pmu $(BUILD)/host/test_pmu_events: \
		$(BUILD)/host/%: $(BUILD)/hpmu/test/host/%.o $(PMU_TEST_LIBS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# The register-level checks make test-kvm runs in the guest
# (test/pmu_regs_check.c), on every model preset.
HOST_TESTS += $(BUILD)/host/test_pmu_regs

$(BUILD)/host/test_pmu_regs: $(BUILD)/hpmu/test/host/test_pmu_regs.o $(BUILD)/hpmu/test/pmu_regs_check.o \
		$(PMU_TEST_LIBS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# pmu_probe and the TSC derivation against real CPUs' CPUID
# (test/host/cpuid_real.tab, from InstLatx64's dumps).
HOST_TESTS += $(BUILD)/host/test_cpuid_real

$(BUILD)/host/test_cpuid_real: $(BUILD)/hpmu/test/host/test_cpuid_real.o $(BUILD)/hpmu/kernel/platform/tsc_cpuid.o \
		$(PMU_TEST_LIBS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# The table by absolute path: the test runs from any directory.
$(BUILD)/hpmu/test/host/test_cpuid_real.o: PMU_HOSTCFLAGS += -DTABLE='"$(CURDIR)/test/host/cpuid_real.tab"'

$(BUILD)/hpmu/kernel/platform/tsc_cpuid.o: kernel/platform/tsc_cpuid.c Makefile test/host/pmu.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMU_HOSTCFLAGS) -c $< -o $@

# The generic event table against libpfm4 (Debian libpfm4-dev), an
# independent oracle; without the library the test reports a SKIP.
PFM_HEADER := $(wildcard /usr/include/perfmon/pfmlib.h)
$(BUILD)/host/test_pmu_libpfm: $(BUILD)/hpmu/test/host/test_pmu_libpfm.o $(PMU_TEST_LIBS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka $(if $(PFM_HEADER),-lpfm) -o $@
$(BUILD)/hpmu/test/host/test_pmu_libpfm.o: PMU_HOSTCFLAGS += $(if $(PFM_HEADER),-DHAVE_LIBPFM)

# Intel PT: pmu/trace/pt.c (in the library) against the PT register model.
HOST_TESTS += $(BUILD)/host/test_pt

$(BUILD)/host/test_pt: $(BUILD)/h/test/host/test_pt.o $(BUILD)/h/test/host/pt_model.o \
		$(PMU_HOST_LIB) $(BUILD)/h/ringbuf/ringbuf.o $(BUILD)/h/ringbuf/aux.o \
		$(BUILD)/h/kernel/lib/printf.o $(BUILD)/h/klib/string.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# make bench: pmi_insn_per_sample_model, the PMI path on the model under
# callgrind (test/bench/pmi_model.sh). Built like the kernel's -O2, without
# sanitizers, so that the count is the instructions the kernel would run.
PMI_BENCH_CFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer -fno-strict-aliasing -Iinclude -I. \
	$(WARN) -MMD -MP -DPMU_HOST_MODEL
PMI_BENCH_OBJS   := $(addprefix $(BUILD)/pbench/,$(PMU_C:.c=.o) ringbuf/ringbuf.o \
	test/host/pmu_model.o test/bench/pmi_model.o)

$(PMI_BENCH_OBJS): $(BUILD)/pbench/%.o: %.c
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMI_BENCH_CFLAGS) $(if $(filter pmu/%,$<),-DKLIB_HOST_TEST \
		-include kernel/lib/klib_rename.h) -c $< -o $@

$(BUILD)/bench/pmi_model: $(PMI_BENCH_OBJS) $(BPKLIB_LIB)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ -o $@

$(BUILD)/bench/pmi_bench: test/bench/pmi_model.sh $(BUILD)/bench/pmi_model
	$(call gen_script,sh test/bench/pmi_model.sh $(CURDIR)/$(BUILD)/bench/pmi_model)

BENCH_DEPS += $(BUILD)/bench/pmi_bench
BENCH_CMDS += $(BUILD)/bench/pmi_bench

# pmu/ build fragment (included by the top-level Makefile).
#
# The drivers build into the kernel, and for the host against the
# register-level PMU model (test/host/pmu_model.c) with -DPMU_HOST_MODEL,
# into their own object directory $(BUILD)/hpmu.
PMU_C := pmu/probe.c pmu/events.c pmu/core.c pmu/intel.c pmu/amd.c
KERNEL_C += $(PMU_C) pmu/cpus.c pmu/profile.c
APP_C += test/guest/test_pmu_probe.c test/guest/test_count.c

# pmu/ sources use the kernel's string functions, renamed beside libc's
# (kernel/lib/klib_rename.h); the model and the tests use libc.
PMU_HOSTCFLAGS := $(HOSTCFLAGS) $(HOSTSAN) -DPMU_HOST_MODEL

$(BUILD)/hpmu/pmu/%.o: pmu/%.c Makefile pmu/pmu.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMU_HOSTCFLAGS) -DKLIB_HOST_TEST -include kernel/lib/klib_rename.h -c $< -o $@

$(BUILD)/hpmu/test/%.o: test/%.c Makefile pmu/pmu.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMU_HOSTCFLAGS) -c $< -o $@

PMU_HOST_OBJS := $(PMU_C:%.c=$(BUILD)/hpmu/%.o) $(BUILD)/hpmu/test/host/pmu_model.o \
	$(BUILD)/h/kernel/lib/printf.o $(BUILD)/h/klib/string.o

HOST_TESTS += $(BUILD)/host/test_pmu_model $(BUILD)/host/test_pmu \
	$(BUILD)/host/test_pmu_events $(BUILD)/host/test_pmu_libpfm

$(BUILD)/host/test_pmu_model $(BUILD)/host/test_pmu $(BUILD)/host/test_pmu_events: \
		$(BUILD)/host/%: $(BUILD)/hpmu/test/host/%.o $(PMU_HOST_OBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# pmu_probe and the TSC derivation against real CPUs' CPUID
# (test/host/cpuid_real.tab, from InstLatx64's dumps).
HOST_TESTS += $(BUILD)/host/test_cpuid_real

$(BUILD)/host/test_cpuid_real: $(BUILD)/hpmu/test/host/test_cpuid_real.o $(BUILD)/hpmu/kernel/platform/tsc_cpuid.o \
		$(PMU_HOST_OBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# The table by absolute path: the test runs from any directory.
$(BUILD)/hpmu/test/host/test_cpuid_real.o: PMU_HOSTCFLAGS += -DTABLE='"$(CURDIR)/test/host/cpuid_real.tab"'

$(BUILD)/hpmu/kernel/platform/tsc_cpuid.o: kernel/platform/tsc_cpuid.c Makefile pmu/pmu.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMU_HOSTCFLAGS) -c $< -o $@

# The generic event table against libpfm4 (Debian libpfm4-dev), an
# independent oracle; without the library the test reports a SKIP.
PFM_HEADER := $(wildcard /usr/include/perfmon/pfmlib.h)
$(BUILD)/host/test_pmu_libpfm: $(BUILD)/hpmu/test/host/test_pmu_libpfm.o $(PMU_HOST_OBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka $(if $(PFM_HEADER),-lpfm) -o $@
$(BUILD)/hpmu/test/host/test_pmu_libpfm.o: PMU_HOSTCFLAGS += $(if $(PFM_HEADER),-DHAVE_LIBPFM)

# ---- Instruction tracing (pmu/trace/trace.h) ----------------------
KERNEL_C += pmu/trace/itrace.c pmu/trace/trace.c pmu/trace/pt.c
APP_C += test/guest/test_trace.c
# Their host decoder is tools/util/trace/ (tests: test/host/trace.mk, test/fuzz/trace.mk).

# Intel PT: pmu/trace/pt.c built for the host against the PT register model.
HOST_TESTS += $(BUILD)/host/test_pt

$(BUILD)/host/test_pt: $(BUILD)/h/test/host/test_pt.o $(BUILD)/h/test/host/pt_model.o \
		$(BUILD)/hpmu/pmu/trace/pt.o $(BUILD)/h/ringbuf/ringbuf.o $(BUILD)/h/ringbuf/aux.o \
		$(BUILD)/h/kernel/lib/printf.o $(BUILD)/h/klib/string.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

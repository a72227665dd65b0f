# pmu/ build fragment (included by the top-level Makefile).
#
# The drivers build into the kernel, and for the host against the
# register-level PMU model (test/host/pmu_model.c) with -DPMU_HOST_MODEL,
# into their own object directory $(BUILD)/hpmu.
PMU_C := pmu/probe.c pmu/events.c pmu/core.c pmu/intel.c pmu/amd.c
KERNEL_C += $(PMU_C) pmu/kernel.c pmu/profile.c
APP_C += test/guest/test_pmu_probe.c test/guest/test_count.c

# pmu/ sources use the kernel's string functions, renamed beside libc's
# (test/host/klib_rename.h); the model and the tests use libc.
PMU_HOSTCFLAGS := $(HOSTCFLAGS) $(HOSTSAN) -DPMU_HOST_MODEL

$(BUILD)/hpmu/pmu/%.o: pmu/%.c Makefile pmu/pmu.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMU_HOSTCFLAGS) -DKLIB_HOST_TEST -include test/host/klib_rename.h -c $< -o $@

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

# The generic event table against libpfm4 (Debian libpfm4-dev), an
# independent oracle; without the library the test reports a SKIP.
PFM_HEADER := $(wildcard /usr/include/perfmon/pfmlib.h)
$(BUILD)/host/test_pmu_libpfm: $(BUILD)/hpmu/test/host/test_pmu_libpfm.o $(PMU_HOST_OBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka $(if $(PFM_HEADER),-lpfm) -o $@
$(BUILD)/hpmu/test/host/test_pmu_libpfm.o: PMU_HOSTCFLAGS += $(if $(PFM_HEADER),-DHAVE_LIBPFM)

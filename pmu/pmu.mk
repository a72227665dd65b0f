# pmu/ build fragment (included by the top-level Makefile).
#
# The drivers build into the kernel (the runs that use them are
# profile/'s: profile/profile.mk). They (and the PT driver,
# pmu/trace/pt.c) also build for the host against the
# register-level PMU model (test/host/pmu_model.c) with -DPMU_HOST_MODEL,
# into their own object directory $(BUILD)/hpmu and one static library,
# $(PMU_HOST_LIB), that the host tests link (test/host/pmu.mk).
PMU_C := pmu/probe.c pmu/events.c pmu/core.c pmu/intel.c pmu/amd.c
KERNEL_C += $(PMU_C) pmu/cpus.c

# pmu/ sources use the kernel's string functions, renamed beside libc's
# (kernel/lib/klib_rename.h); the model and the tests use libc.
PMU_HOSTCFLAGS := $(HOSTCFLAGS) $(HOSTSAN) -DPMU_HOST_MODEL

$(BUILD)/hpmu/pmu/%.o: pmu/%.c Makefile pmu/pmu.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMU_HOSTCFLAGS) -DKLIB_HOST_TEST -include kernel/lib/klib_rename.h -c $< -o $@

PMU_HOST_LIB := $(BUILD)/hpmu/libpmu.a

$(PMU_HOST_LIB): $(PMU_C:%.c=$(BUILD)/hpmu/%.o) $(BUILD)/hpmu/pmu/trace/pt.o
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# ---- Instruction tracing's producers (pmu/trace/itrace.h, pt.h) ----
KERNEL_C += pmu/trace/itrace.c pmu/trace/pt.c
# The traced run is profile/trace.c. Their host decoder is tools/util/trace/
# (tests: test/host/trace.mk, test/fuzz/trace.mk).


# The event table for the host tools (release flavour, the kernel's string
# functions renamed beside libc's): $(PMU_EVENTS_LIB).
PMU_EVENTS_LIB := $(BUILD)/lib/libpmuevents.a
$(BUILD)/tool/pmu/events.o: HOSTRELCFLAGS += -DPMU_HOST_MODEL -DKLIB_HOST_TEST \
	-include kernel/lib/klib_rename.h

$(PMU_EVENTS_LIB): $(BUILD)/tool/pmu/events.o
	@mkdir -p $(@D)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

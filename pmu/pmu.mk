# pmu/ build fragment (included by the top-level Makefile).
#
# The drivers build into the kernel, and for the host against the
# register-level PMU model (test/host/pmu_model.c) with -DPMU_HOST_MODEL,
# into their own object directory $(BUILD)/hpmu.
PMU_C := pmu/probe.c pmu/events.c pmu/core.c pmu/intel.c pmu/amd.c
KERNEL_C += $(PMU_C) pmu/kernel.c pmu/profile.c
APP_C += test/guest/test_pmu_probe.c test/guest/test_count.c

# pmu/ sources use the kernel's string functions, renamed beside libc's
# (kernel/lib/host_rename.h); the model and the tests use libc.
PMU_HOSTCFLAGS := $(HOSTCFLAGS) $(HOSTSAN) -DPMU_HOST_MODEL

$(BUILD)/hpmu/pmu/%.o: pmu/%.c Makefile pmu/pmu.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(PMU_HOSTCFLAGS) -DKLIB_HOST -include kernel/lib/host_rename.h -c $< -o $@

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

$(BUILD)/host/test_cpuid_real: $(BUILD)/hpmu/test/host/test_cpuid_real.o $(BUILD)/hpmu/kernel/tsc_cpuid.o \
		$(PMU_HOST_OBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# The table by absolute path: the test runs from any directory.
$(BUILD)/hpmu/test/host/test_cpuid_real.o: PMU_HOSTCFLAGS += -DTABLE='"$(CURDIR)/test/host/cpuid_real.tab"'

$(BUILD)/hpmu/kernel/tsc_cpuid.o: kernel/tsc_cpuid.c Makefile pmu/pmu.mk
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

# ---- Instruction tracing(pmu/trace.h) -------------------------
KERNEL_C += pmu/itrace.c pmu/trace.c pmu/pt.c
APP_C += test/guest/test_trace.c
# pmu/itrace.c is pure (classifier, packet encoder, AUX chunking): it builds
# into the kernel and into the host tests, which drive it with simulated
# executions (test/host/trace_sim.c) over a real ring, drain and capture
# and decode the result with tools/trace_dec.c (capstone, libipt, libelf).
# test_trace links -no-pie: its report tests read its own symbols.
TRACE_LIBS   := -lcapstone -lipt -lelf
TRACE_HOST_C := pmu/itrace.c ringbuf/ringbuf.c ringbuf/aux.c kernel/wire.c \
	tools/util/wire_dec.c tools/util/capture.c tools/trace_dec.c test/host/trace_sim.c
TRACE_HOBJS  := $(TRACE_HOST_C:%.c=$(BUILD)/h/%.o)

HOST_TESTS += $(BUILD)/host/test_trace

$(BUILD)/host/test_trace: $(BUILD)/h/test/host/test_trace.o $(TRACE_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) -no-pie $^ -lcmocka $(TRACE_LIBS) -o $@

# bptrace: the trace commands on their own (tools/trace_main.c), a release
# build like build/bareperf's objects ($(BUILD)/tool/, tools/bareperf.mk).
TRACE_TOOL_C := tools/trace_main.c tools/trace_dec.c kernel/wire.c tools/util/wire_dec.c \
	tools/util/capture.c
HOST_TOOLS += $(BUILD)/bptrace

$(BUILD)/bptrace: $(TRACE_TOOL_C:%.c=$(BUILD)/tool/%.o)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ $(TRACE_LIBS) -o $@

# End to end: QEMU (-icount) traces test_trace's workload, the UART stream
# goes into a capture (build/bareperf record), bptrace decodes it against
# kernel.elf. A generated script: a host test takes no arguments.
HOST_TESTS += $(BUILD)/host/trace_e2e

$(BUILD)/host/trace_e2e: test/e2e/trace.sh $(BUILD)/kernel.elf $(BUILD)/bptrace $(BUILD)/bareperf
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh test/e2e/trace.sh %s\n' $(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

# Intel PT: pmu/pt.c built for the host against the PT register model.
HOST_TESTS += $(BUILD)/host/test_pt

$(BUILD)/host/test_pt: $(BUILD)/h/test/host/test_pt.o $(BUILD)/h/test/host/pt_model.o \
		$(BUILD)/hpmu/pmu/pt.o $(BUILD)/h/ringbuf/ringbuf.o $(BUILD)/h/ringbuf/aux.o \
		$(BUILD)/h/kernel/lib/printf.o $(BUILD)/h/klib/string.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# Fuzzing the trace decoders (libFuzzer, ASan+UBSan, as fuzz_wire in
# tools/tools.mk): `make fuzz-trace` runs FUZZ_TIME seconds; make test
# runs FUZZ_SMOKE_TIME s (fuzz_trace_smoke, through test/fuzz/fuzz_smoke.sh).
TRACE_FUZZ_C := tools/trace_dec.c pmu/itrace.c ringbuf/ringbuf.c ringbuf/aux.c kernel/wire.c \
	tools/util/wire_dec.c tools/util/capture.c test/host/trace_sim.c test/fuzz/fuzz_trace.c \
	test/fuzz/fuzz_frames.c
TRACE_FUZZ_OBJS := $(TRACE_FUZZ_C:%.c=$(BUILD)/fuzz/trace/%.o)

$(TRACE_FUZZ_OBJS): $(BUILD)/fuzz/trace/%.o: %.c pmu/pmu.mk
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZCC) $(FUZZCFLAGS) -c $< -o $@

$(BUILD)/fuzz/fuzz_trace: $(TRACE_FUZZ_OBJS)
	$(call say,LINK,$@)
	$(Q)$(FUZZCC) $(FUZZ_SAN) -fsanitize=fuzzer $^ $(TRACE_LIBS) -o $@

$(BUILD)/fuzz/trace_seeds: $(BUILD)/h/test/fuzz/trace_seeds.o $(TRACE_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ $(TRACE_LIBS) -o $@

HOST_TESTS += $(BUILD)/host/fuzz_trace_smoke

$(BUILD)/host/fuzz_trace_smoke: test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_trace $(BUILD)/fuzz/trace_seeds \
		test/fuzz/trace.dict
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\nexec sh %s %s %s %s 200000 %s\n' $(CURDIR)/test/fuzz/fuzz_smoke.sh \
		$(CURDIR)/$(BUILD)/fuzz/fuzz_trace $(CURDIR)/$(BUILD)/fuzz/trace_seeds $(FUZZ_SMOKE_TIME) \
		$(CURDIR)/test/fuzz/trace.dict > $@
	$(Q)chmod +x $@

.PHONY: fuzz-trace
fuzz-trace: $(BUILD)/fuzz/fuzz_trace $(BUILD)/fuzz/trace_seeds
	@mkdir -p $(BUILD)/fuzz/trace-corpus $(BUILD)/fuzz/trace-artifacts
	$(Q)$(BUILD)/fuzz/trace_seeds $(BUILD)/fuzz/trace-corpus
	$(Q)$(BUILD)/fuzz/fuzz_trace -max_total_time=$(FUZZ_TIME) -max_len=200000 -dict=test/fuzz/trace.dict \
		-artifact_prefix=$(BUILD)/fuzz/trace-artifacts/ $(BUILD)/fuzz/trace-corpus

# make bench: the tracer's figures (test/e2e/trace_bench.sh).
$(BUILD)/bench/trace_bench: test/e2e/trace_bench.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh test/e2e/trace_bench.sh %s\n' $(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

BENCH_DEPS += $(BUILD)/kernel.elf $(BUILD)/bptrace $(BUILD)/bareperf $(BUILD)/bench/trace_bench
BENCH_CMDS += $(BUILD)/bench/trace_bench

# Fuzzing the trace decoder (included by the top-level Makefile; libFuzzer,
# ASan+UBSan, as fuzz_wire in tools/tools.mk): `make fuzz-trace` runs
# FUZZ_TIME seconds; make test runs FUZZ_SMOKE_TIME s (fuzz_trace_smoke,
# through test/fuzz/fuzz_smoke.sh). The decoder is $(TRACE_FLIB).
TRACE_FUZZ_C := pmu/trace/itrace.c ringbuf/ringbuf.c ringbuf/aux.c $(WIRE_C) \
	tools/util/session.c tools/util/session_info.c tools/util/symbol.c test/host/trace_sim.c \
	test/fuzz/fuzz_trace.c \
	test/fuzz/fuzz_frames.c
TRACE_FUZZ_OBJS := $(TRACE_FUZZ_C:%.c=$(BUILD)/fuzz/trace/%.o)

$(TRACE_FUZZ_OBJS): $(BUILD)/fuzz/trace/%.o: %.c test/fuzz/trace.mk
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZCC) $(FUZZCFLAGS) -c $< -o $@

$(BUILD)/fuzz/fuzz_trace: $(TRACE_FUZZ_OBJS) $(TRACE_FLIB)
	$(call say,LINK,$@)
	$(Q)$(FUZZCC) $(FUZZ_SAN) -fsanitize=fuzzer $^ $(TRACE_LIBS) -o $@

$(BUILD)/fuzz/trace_seeds: $(BUILD)/h/test/fuzz/trace_seeds.o $(BUILD)/h/test/fuzz/seed_file.o \
		$(TRACE_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ $(TRACE_LIBS) -o $@

HOST_TESTS += $(BUILD)/host/fuzz_trace_smoke

$(BUILD)/host/fuzz_trace_smoke: test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_trace $(BUILD)/fuzz/trace_seeds \
		test/fuzz/trace.dict
	$(call gen_script,sh test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_trace $(BUILD)/fuzz/trace_seeds \
		$(FUZZ_SMOKE_TIME) 200000 test/fuzz/trace.dict)

.PHONY: fuzz-trace
fuzz-trace: $(BUILD)/fuzz/fuzz_trace $(BUILD)/fuzz/trace_seeds
	@mkdir -p $(BUILD)/fuzz/trace-corpus $(BUILD)/fuzz/trace-artifacts
	$(Q)$(BUILD)/fuzz/trace_seeds $(BUILD)/fuzz/trace-corpus
	$(Q)$(BUILD)/fuzz/fuzz_trace -max_total_time=$(FUZZ_TIME) -max_len=200000 -dict=test/fuzz/trace.dict \
		-artifact_prefix=$(BUILD)/fuzz/trace-artifacts/ $(BUILD)/fuzz/trace-corpus

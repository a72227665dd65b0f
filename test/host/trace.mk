# The trace decoder's host tests (included by the top-level Makefile).
#
# test_trace: pmu/trace/itrace.c is pure (classifier, packet encoder, AUX
# chunking): the tests drive it with simulated executions
# (test/host/trace_sim.c) over a real ring, drain and capture, and decode
# the result with the trace decoder ($(TRACE_HLIB): capstone, libipt,
# libelf). It links -no-pie: its report tests read its own symbols.
TRACE_HOST_C := pmu/trace/itrace.c ringbuf/ringbuf.c ringbuf/aux.c $(WIRE_C) \
	tools/util/session.c tools/util/session_info.c tools/util/symbol.c test/host/trace_sim.c
TRACE_HOBJS  := $(TRACE_HOST_C:%.c=$(BUILD)/h/%.o) $(TRACE_HLIB)

HOST_TESTS += $(BUILD)/host/test_trace

$(BUILD)/host/test_trace: $(BUILD)/h/test/host/test_trace.o $(TRACE_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) -no-pie $^ -lcmocka $(TRACE_LIBS) -o $@

# End to end: QEMU (-icount) traces test_trace's workload, the UART stream
# goes into a capture (build/bareperf record), bptrace decodes it against
# kernel.elf. A generated script: a host test takes no arguments.
HOST_TESTS += $(BUILD)/host/trace_e2e

$(BUILD)/host/trace_e2e: test/e2e/trace.sh $(BUILD)/kernel.elf $(BUILD)/bptrace $(BUILD)/bareperf
	$(call gen_script,sh test/e2e/trace.sh $(BUILD))

# make bench: the tracer's figures (test/e2e/trace_bench.sh).
$(BUILD)/bench/trace_bench: test/e2e/trace_bench.sh
	$(call gen_script,sh test/e2e/trace_bench.sh $(BUILD))

BENCH_DEPS += $(BUILD)/kernel.elf $(BUILD)/bptrace $(BUILD)/bareperf $(BUILD)/bench/trace_bench
BENCH_CMDS += $(BUILD)/bench/trace_bench

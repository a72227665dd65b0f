# test/bench/tools.mk — the benchmark programs of the host tool's make bench
# lines, built like a release host tool (-O2, no sanitizers): wire_bench
# (the codec: wire_bytes_per_sample, decode_mb_per_s) and gen_capture (the
# synthetic capture tools/bench/report_bench.sh and vs_perf_bench.sh time
# the tool on).

WIRE_BENCH_CFLAGS := -std=gnu11 -O2 -g -Iinclude -I. $(WARN) -MMD -MP
WIRE_BENCH_OBJS   := $(addprefix $(BUILD)/wbench/,$(WIRE_C:.c=.o) ringbuf/ringbuf.o test/host/wire_gen.o \
	test/bench/wire_bench.o)

$(WIRE_BENCH_OBJS): $(BUILD)/wbench/%.o: %.c
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(WIRE_BENCH_CFLAGS) -c $< -o $@

$(BUILD)/bench/wire_bench: $(WIRE_BENCH_OBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ -o $@

BENCH_DEPS += $(BUILD)/bench/wire_bench
BENCH_CMDS += $(BUILD)/bench/wire_bench

$(BUILD)/bench/gen_capture: $(call bp_objs,test/bench/gen_capture.c test/host/capgen.c \
		tools/util/symbol.c tools/util/session.c tools/util/session_info.c ringbuf/ringbuf.c $(WIRE_C))
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ -lelf -ldw -o $@

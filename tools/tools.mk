# tools/ build fragment (included by the top-level Makefile).
#
# The host tool `bareperf` (HOST_TOOLS) will be built here. So far: the
# wire codec (include/uapi/wire.h) and capture files.
#   kernel/wire_frame.c the link layer (frames, CRC, varints, frame check) and
#   ringbuf/wire.c      the record codec (with ringbuf/ringbuf.c's SAMPLE
#                      parser): built into the kernel, and for the host
#   tools/wire_dec.c   the host's streaming decoder
#   tools/capture.c    capture files: write, read, decode
# Tests (HOST_TESTS): test_capture (cmocka, ASan+UBSan) and
# fuzz_wire_smoke (the libFuzzer target for FUZZ_SMOKE_TIME s, TAP). `make fuzz` runs
# the fuzzer for FUZZ_TIME seconds on a corpus kept in build/fuzz/corpus.
# Bench: wire_bytes_per_sample, decode_mb_per_s (tools/bench/wire_bench.c).

WIRE_C     := kernel/wire_frame.c ringbuf/wire.c tools/wire_dec.c tools/capture.c
# The codec for the host: ringbuf.mk's libbpwire.a, kernel.mk's libbpframe.a.
WIRE_HOBJS := $(BUILD)/h/tools/wire_dec.o $(BUILD)/h/tools/capture.o \
	$(BUILD)/h/test/host/wire_gen.o $(BUILD)/lib/libbpwire.a $(BUILD)/lib/libbpframe.a

# test_wire: test/host/kernel.mk.
HOST_TESTS += $(BUILD)/host/test_capture $(BUILD)/host/fuzz_wire_smoke

$(BUILD)/host/test_capture: $(BUILD)/h/test/host/test_capture.o $(WIRE_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# Fuzzing: clang's libFuzzer with ASan+UBSan (Debian clang + libclang-rt-14-dev).
FUZZCC     ?= clang
FUZZ_TIME  ?= 300
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZCFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -Iinclude -I. $(WARN) -MMD -MP \
	$(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_OBJS  := $(addprefix $(BUILD)/fuzz/,$(WIRE_C:.c=.o) test/host/wire_gen.o test/fuzz/fuzz_wire.o)

$(FUZZ_OBJS): $(BUILD)/fuzz/%.o: %.c tools/tools.mk
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZCC) $(FUZZCFLAGS) -c $< -o $@

# The codec's SAMPLE parser: $(BUILD)/fuzz/ringbuf/ringbuf.o, compiled by bareperf.mk.
$(BUILD)/fuzz/fuzz_wire: $(FUZZ_OBJS) $(BUILD)/fuzz/ringbuf/ringbuf.o
	$(call say,LINK,$@)
	$(Q)$(FUZZCC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -o $@

# Seeds are generated (valid streams, payloads and captures), not committed.
$(BUILD)/fuzz/wire_seeds: $(BUILD)/h/test/fuzz/wire_seeds.o $(WIRE_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -o $@

# A host test is a program run without arguments: a generated script.
$(BUILD)/host/fuzz_wire_smoke: test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_wire $(BUILD)/fuzz/wire_seeds \
		test/fuzz/stream.dict
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\nexec sh %s %s %s %s 200000 %s\n' $(CURDIR)/test/fuzz/fuzz_smoke.sh \
		$(CURDIR)/$(BUILD)/fuzz/fuzz_wire $(CURDIR)/$(BUILD)/fuzz/wire_seeds $(FUZZ_SMOKE_TIME) \
		$(CURDIR)/test/fuzz/stream.dict > $@
	$(Q)chmod +x $@

fuzz: $(BUILD)/fuzz/fuzz_wire $(BUILD)/fuzz/wire_seeds
	@mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/artifacts
	$(Q)$(BUILD)/fuzz/wire_seeds $(BUILD)/fuzz/corpus
	$(Q)$(BUILD)/fuzz/fuzz_wire -max_total_time=$(FUZZ_TIME) -max_len=200000 -dict=test/fuzz/stream.dict \
		-artifact_prefix=$(BUILD)/fuzz/artifacts/ $(BUILD)/fuzz/corpus

# Benchmark: built like a release host tool (-O2, no sanitizers).
WIRE_BENCH_CFLAGS := -std=gnu11 -O2 -g -Iinclude -I. $(WARN) -MMD -MP
WIRE_BENCH_OBJS   := $(addprefix $(BUILD)/wbench/,$(WIRE_C:.c=.o) ringbuf/ringbuf.o test/host/wire_gen.o \
	tools/bench/wire_bench.o)

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

# Just the codec: make wire-test, make wire-bench.
.PHONY: fuzz wire-test wire-bench
wire-test: $(BUILD)/host/test_wire $(BUILD)/host/test_capture $(BUILD)/host/fuzz_wire_smoke
	$(Q)$(PYTHON) test/runner.py --build $(BUILD) --host $^

wire-bench: $(BUILD)/bench/wire_bench
	$(Q)$(BUILD)/bench/wire_bench

# ringbuf/ build fragment (included by the top-level Makefile).
#
# The same two .c files build into the kernel (KERNEL_C, $(KCFLAGS)) and
# into the host tests:
#   test_ringbuf          cmocka unit tests, ASan+UBSan
#   test_ringbuf_step     the single-step test (a nested writer at every
#                         instruction boundary), no sanitizers, -O2
#   stress_ringbuf_asan   producer/consumer threads + signal "NMIs", ASan+UBSan
#   stress_ringbuf_tsan   the same under ThreadSanitizer; BP_ATOMIC_GENERIC
#                         replaces the x86 unlocked local ops by C11 ones so
#                         TSan sees every access
# Benchmarks (make bench): ring_insn_per_sample (callgrind) and
# ring_vs_ck_ratio (two threads, against Concurrency Kit's SPSC ck_ring).

RINGBUF_C := ringbuf/ringbuf.c ringbuf/aux.c
KERNEL_C  += ringbuf/wire.c
KERNEL_C  += $(RINGBUF_C)

RINGBUF_HOBJS := $(RINGBUF_C:%.c=$(BUILD)/h/%.o)

HOST_TESTS += $(BUILD)/host/test_ringbuf \
	      $(BUILD)/host/test_ringbuf_step \
	      $(BUILD)/host/stress_ringbuf_asan \
	      $(BUILD)/host/stress_ringbuf_tsan

$(BUILD)/host/test_ringbuf: $(BUILD)/h/test/host/test_ringbuf.o $(RINGBUF_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# The single-step test: same source, no sanitizers, -O2 like the kernel.
RINGBUF_STEP_OBJS := $(addprefix $(BUILD)/hstep/,$(RINGBUF_C:.c=.o) test/host/test_ringbuf.o)

$(RINGBUF_STEP_OBJS): $(BUILD)/hstep/%.o: %.c
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(HOSTCFLAGS) -O2 -DRINGBUF_SINGLE_STEP -c $< -o $@

$(BUILD)/host/test_ringbuf_step: $(RINGBUF_STEP_OBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ -lcmocka -o $@

$(BUILD)/host/stress_ringbuf_asan: $(BUILD)/h/test/host/stress_ringbuf.o $(RINGBUF_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -pthread -lrt -o $@

RINGBUF_TSAN      := -fsanitize=thread -DBP_ATOMIC_GENERIC
RINGBUF_TSAN_OBJS := $(addprefix $(BUILD)/tsan/,$(RINGBUF_C:.c=.o) test/host/stress_ringbuf.o)

$(RINGBUF_TSAN_OBJS): $(BUILD)/tsan/%.o: %.c
	@mkdir -p $(@D)
	$(call say,TSANCC,$<)
	$(Q)$(HOSTCC) $(HOSTCFLAGS) -O2 $(RINGBUF_TSAN) -c $< -o $@

$(BUILD)/host/stress_ringbuf_tsan: $(RINGBUF_TSAN_OBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(RINGBUF_TSAN) $^ -pthread -lrt -o $@

# Benchmarks. The ring and the measured call site are built like the
# kernel (-O2, no red zone, general registers only, frame pointers) but
# hosted; the drivers are ordinary host programs.
RINGBUF_BENCH_KFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-mno-red-zone -mgeneral-regs-only -fno-stack-protector -fno-strict-aliasing \
	-Iinclude -I. $(WARN) -MMD -MP
RINGBUF_BENCH_HFLAGS := -std=gnu11 -O2 -g -Iinclude -I. $(WARN) -MMD -MP
RINGBUF_BENCH_KOBJS  := $(addprefix $(BUILD)/bench/k/,$(RINGBUF_C:.c=.o) ringbuf/bench/sample40.o)
RINGBUF_BENCH_BINS   := $(BUILD)/bench/ring_insn $(BUILD)/bench/ring_tput

$(RINGBUF_BENCH_KOBJS): $(BUILD)/bench/k/%.o: %.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(HOSTCC) $(RINGBUF_BENCH_KFLAGS) -c $< -o $@

$(BUILD)/bench/h/%.o: ringbuf/bench/%.c
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(RINGBUF_BENCH_HFLAGS) -c $< -o $@

$(BUILD)/bench/ring_insn: $(BUILD)/bench/h/ring_insn.o $(RINGBUF_BENCH_KOBJS)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ -o $@

$(BUILD)/bench/ring_tput: $(BUILD)/bench/h/ring_tput.o $(RINGBUF_BENCH_KOBJS)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ -pthread -lck -o $@

# BENCH_CMDS takes one word per command: a generated script, absolute paths.
$(BUILD)/bench/ring_bench: ringbuf/bench/insn.sh $(RINGBUF_BENCH_BINS)
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\nset -e\nsh %s %s\n%s\n' $(CURDIR)/ringbuf/bench/insn.sh \
		$(CURDIR)/$(BUILD)/bench/ring_insn $(CURDIR)/$(BUILD)/bench/ring_tput > $@
	$(Q)chmod +x $@

BENCH_DEPS += $(BUILD)/bench/ring_bench
BENCH_CMDS += $(BUILD)/bench/ring_bench

# Just this folder: make ringbuf-test, make ringbuf-bench.
.PHONY: ringbuf-test ringbuf-bench
ringbuf-test: $(BUILD)/host/test_ringbuf $(BUILD)/host/test_ringbuf_step $(BUILD)/host/stress_ringbuf_asan $(BUILD)/host/stress_ringbuf_tsan
	$(Q)for t in $^; do CMOCKA_MESSAGE_OUTPUT=TAP ./$$t || exit 1; done

ringbuf-bench: $(BUILD)/bench/ring_bench
	$(Q)$(BUILD)/bench/ring_bench

# ringbuf/ build fragment (included by the top-level Makefile).
#
# The ring (ringbuf.c, aux.c) and the drain (drain.c, kernel only: rings
# -> the record codec, wire/ -> the stream) build into the kernel. For
# the host:
#   libbpring.a   the ring and its SAMPLE parser (ringbuf.c), which the
#                 record codec and the session loader use: $(BPRING_LIB)
#                 release, $(BPRING_HLIB) ASan+UBSan, as kernel.mk's
#                 libraries
# The host tests of the ring are linked by test/host/kernel.mk.
# Benchmarks (make bench): ring_insn_per_sample (callgrind) and
# ring_vs_ck_ratio (two threads, against Concurrency Kit's SPSC ck_ring).

RINGBUF_C := ringbuf/ringbuf.c ringbuf/aux.c
KERNEL_C  += $(RINGBUF_C) ringbuf/drain.c

BPRING_LIB  := $(BUILD)/lib/libbpring.a
BPRING_HLIB := $(BUILD)/h/lib/libbpring.a

$(BPRING_LIB): $(BUILD)/tool/ringbuf/ringbuf.o
$(BPRING_HLIB): $(BUILD)/h/ringbuf/ringbuf.o
$(BPRING_LIB) $(BPRING_HLIB):
	@mkdir -p $(@D)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

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

# Just this folder: make ringbuf-bench (make ringbuf-test: test/host/kernel.mk).
.PHONY: ringbuf-bench
ringbuf-bench: $(BUILD)/bench/ring_bench
	$(Q)$(BUILD)/bench/ring_bench

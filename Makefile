# bareperf — the one build entry point.
#
#   make            kernel.elf, the ESP tree and the host tools
#   make run        boot in QEMU, record the default app (the benchmark suite),
#                   report; writes build/out/ (UEFI=0 for PVH, KVM=1 on a real host)
#   make test       host unit tests + in-guest tests; last line "N passed, N failed,
#                   N skipped"; make test-kvm for real PMU counters under KVM
#   make bench      BENCH <name> <value> <unit> lines (QUICK=1: a short check that
#                   every benchmark still runs; the figures are not results)
#   make image      build/bareperf.img, a GPT disk image to dd onto a USB stick
#
# Each folder adds itself through its own fragment (*/*.mk). Outputs go to build/.

BUILD        := build
CROSS_COMPILE ?=

KCC      := $(CROSS_COMPILE)gcc
KLD      := $(CROSS_COMPILE)ld
KNM      := $(CROSS_COMPILE)nm
KOBJDUMP := $(CROSS_COMPILE)objdump
KOBJCOPY := $(CROSS_COMPILE)objcopy
NASM     := nasm
HOSTCC   ?= cc
PYTHON   ?= python3

WARN := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes

# Kernel C: freestanding, no SIMD (apps may use it; the kernel never
# saves vector state), frame pointers everywhere for backtraces.
KCFLAGS_BASE := -std=gnu11 -O2 -g -ffreestanding -fno-builtin-printf \
	-nostdinc -isystem $(shell $(KCC) -print-file-name=include) \
	-fno-pic -fno-pie -mcmodel=kernel -mno-red-zone \
	-fno-stack-protector -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-asynchronous-unwind-tables -fcf-protection=none -fno-strict-aliasing \
	-fno-delete-null-pointer-checks \
	-Iinclude -I. $(WARN) -MMD -MP
KCFLAGS  := $(KCFLAGS_BASE) -mgeneral-regs-only
# apps/ and guest tests may use SSE (the kernel enables it; see kernel/cpu.c).
APPCFLAGS := $(KCFLAGS_BASE) -msse2
NASMFLAGS := -f elf64 -Iinclude/ -MD

HOSTCFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -Iinclude -I. $(WARN) -MMD -MP
HOSTSAN    := -fsanitize=address,undefined -fno-sanitize-recover=all
HOSTRELCFLAGS := $(filter-out -O1,$(HOSTCFLAGS)) -O2	# release host builds
HOSTLIBS   :=

# make V=1 shows the full commands.
ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-8s %s\n' $(1) $(2)
endif

# Filled by the fragments.
KERNEL_C     :=
KERNEL_ASM   :=
APP_C        :=
HOST_TESTS   :=
HOST_TOOLS   :=
BENCH_CMDS   :=
CLEAN_EXTRA  :=

all: kernel esp tools

# make run: `bareperf record` boots the kernel in QEMU and shows its console
# live, then report, stat (benchmark tables, latency.svg), convert
# (perf.data) and flamegraph write build/out/ (OUT= another folder). UEFI=1 (default) boots
# through OVMF and the loader; UEFI=0 uses PVH direct boot; KVM=1 adds
# -enable-kvm -cpu host (on a Linux host with a PMU). APP= (default suite),
# EVENTS=, PERIOD=, SMP=, MEM= and ARGS= (words for the app) pick what runs.
# A run that fails (the kernel's exit code, QEMU's failure) stops it there
# with that status. The outputs of an earlier run are removed first, so
# none is mistaken for this run's.
# CALLCHAIN=1 (default) records frame-pointer call chains (record -g), so
# report -g, perf report and the flame graph show who called what. Measured
# on loopnest under -icount (7 frames deep): a chain adds ~9 bytes per
# sample on the wire (4.4 -> 13.1); an 8-frame chain adds ~290 instructions
# to the soft PMU's NMI path (make bench: soft_pmi_insn_per_sample and
# soft_pmi_insn_per_sample_g8). CALLCHAIN=0 records the IP alone.
UEFI ?= 1
CALLCHAIN ?= 1
KVM  ?= 0
SMP  ?= 1
MEM  ?= 256
APP  ?=
ARGS ?=
OUT  ?= $(BUILD)/out

run: check-deps kernel $(BUILD)/bareperf $(if $(filter 1,$(UEFI)),esp)
	@mkdir -p $(OUT)
	@rm -f $(OUT)/capture.bpc $(OUT)/perf.data $(OUT)/flamegraph.svg $(OUT)/capture.kernel.elf \
		$(OUT)/latency.svg $(OUT)/trace.json
	$(Q)$(BUILD)/bareperf record -v --build $(BUILD) --kernel $(BUILD)/kernel.elf \
		$(if $(filter 1,$(UEFI)),--uefi) $(if $(filter 1,$(KVM)),--kvm) \
		$(if $(filter 1,$(CALLCHAIN)),-g) \
		--smp $(SMP) --mem $(MEM) $(if $(EVENTS),-e $(EVENTS)) $(if $(PERIOD),-c $(PERIOD)) \
		-o $(OUT)/capture.bpc -- $(or $(APP),suite) $(ARGS); rc=$$?; \
	o=$(OUT); if [ $$rc != 0 ]; then echo "make run: the run failed (bareperf record" \
		"exit status $$rc, said above)$$([ ! -e $$o/capture.bpc ] || \
		echo "; $$o/capture.bpc holds what arrived")" >&2; exit $$rc; fi; echo; \
	$(BUILD)/bareperf report -i $$o/capture.bpc --stdio || exit 1; \
	{ $(BUILD)/bareperf stat -i $$o/capture.bpc --bench --plot $$o/latency.svg 2>&1 >&3 | \
		$(NOT_AGAIN); } 3>&1; \
	{ $(BUILD)/bareperf convert -i $$o/capture.bpc --to perf.data -o $$o/perf.data 2>&1 \
		>/dev/null | $(NOT_AGAIN); } ; \
	{ $(BUILD)/bareperf convert -i $$o/capture.bpc --to chrome -o $$o/trace.json 2>&1 \
		>/dev/null | $(NOT_AGAIN); } ; \
	{ $(BUILD)/bareperf flamegraph -i $$o/capture.bpc -o $$o/flamegraph.svg 2>&1 \
		>/dev/null | $(NOT_AGAIN); } ; \
	echo; echo "make run: wrote"; \
	echo "  $$o/capture.bpc     the capture: $(BUILD)/bareperf report -i $$o/capture.bpc [-g | --sort srcline]"; \
	[ ! -s $$o/perf.data ] || echo "  $$o/perf.data       kernel-mode samples for perf: perf report -i $$o/perf.data"; \
	[ ! -s $$o/trace.json ] || echo "  $$o/trace.json      app runs and the samples' stacks as slices per CPU, a timeline: open in ui.perfetto.dev"; \
	[ ! -s $$o/flamegraph.svg ] || echo "  $$o/flamegraph.svg  picture: where the samples' call chains spend the time, wider = more;" \
		"kernel orange, apps green, benchmark bodies blue; open in a browser, click to zoom"; \
	[ ! -s $$o/latency.svg ] || echo "  $$o/latency.svg     picture: memory latency per load by working set (log scale), the" \
		"cache levels as steps; open in a browser"; \
	exit $$rc

# make run's commands after report: report has said what the capture lost
# (its WARNING lines); the same warnings again on their stderr are dropped.
NOT_AGAIN = grep -v '^bareperf [a-z]*: warning: ' >&2 || true

# Missing Debian packages: installed when this can (root, or sudo -n),
# else the one command to run is printed (tools/deps.sh ensure).
check-deps:
	$(Q)sh tools/deps.sh ensure

deps:
	$(Q)sh tools/deps.sh install

include boot/boot.mk kernel/kernel.mk pmu/pmu.mk profile/profile.mk ringbuf/ringbuf.mk wire/wire.mk \
	apps/apps.mk tools/util/trace/trace.mk tools/tools.mk tools/bareperf.mk tools/convert.mk \
	test/test.mk test/host/trace.mk test/host/kernel.mk test/host/tools.mk test/fuzz/trace.mk \
	test/fuzz/tools.mk test/bench/tools.mk test/fuzz/fuzz.mk test/host/pmu.mk test/guest/guest.mk \
	test/host/apps.mk

# make bench runs every fragment's BENCH_CMDS through tools/bench/run_all.sh,
# which checks that each prints its BENCH lines. QUICK=1 (or BENCH_QUICK=1
# in the environment): fewer repetitions and smaller inputs, a check that
# every benchmark still builds and runs (CI: .ci/run), not figures. The
# rule comes after the includes so that its prerequisites are all of
# BENCH_DEPS.
QUICK ?= $(BENCH_QUICK)

bench: $(BENCH_DEPS)
	$(Q)BENCH_QUICK=$(if $(filter 1,$(QUICK)),1,0) sh tools/bench/run_all.sh $(BENCH_CMDS)

# $(sort) also drops a file two fragments both name.
KOBJS := $(sort $(KERNEL_C:%.c=$(BUILD)/k/%.o) $(KERNEL_ASM:%.asm=$(BUILD)/k/%.o) \
	 $(APP_C:%.c=$(BUILD)/k/%.o))

# Flags live here: any change to the Makefile rebuilds everything.
$(KOBJS): Makefile

$(BUILD)/k/%.o: %.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(KCC) $(KCFLAGS) -c $< -o $@

$(APP_C:%.c=$(BUILD)/k/%.o): $(BUILD)/k/%.o: %.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(KCC) $(APPCFLAGS) -c $< -o $@

$(BUILD)/k/%.o: %.asm
	@mkdir -p $(@D)
	$(call say,NASM,$<)
	$(Q)$(NASM) $(NASMFLAGS) -MF $(@:.o=.d) -MT $@ $< -o $@

$(BUILD)/h/%.o: %.c
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(HOSTCFLAGS) $(HOSTSAN) -c $< -o $@

# The release host flavour (-O2, no sanitizers): what build/bareperf and
# build/bptrace link. Each folder's fragment archives its own objects of
# this flavour into $(BUILD)/lib/ (a fragment adds per-object flags with
# `$(BUILD)/tool/<path>.o: HOSTRELCFLAGS += ...`).
$(BUILD)/tool/%.o: %.c Makefile
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(HOSTRELCFLAGS) -c $< -o $@

# Two-pass link: the symbol table for backtraces (kallsyms) is generated
# from pass 1 and lives in .ksyms, the last section, so adding it moves no
# other symbol. The final link is checked against pass 1.
KSYMS_GEN := tools/gen-ksyms.sh

$(BUILD)/k/ksyms0.o: $(KSYMS_GEN)
	@mkdir -p $(@D)
	$(Q)sh $(KSYMS_GEN) < /dev/null > $(BUILD)/k/ksyms0.S
	$(Q)$(KCC) -c $(BUILD)/k/ksyms0.S -o $@

$(BUILD)/kernel.elf: $(KOBJS) $(BUILD)/k/ksyms0.o linker.ld $(KSYMS_GEN)
	$(call say,LD,$@)
	$(Q)$(KLD) -T linker.ld -nostdlib -z max-page-size=0x1000 --build-id=sha1 \
		-o $(BUILD)/kernel.pass1.elf $(KOBJS) $(BUILD)/k/ksyms0.o
	$(Q)$(KNM) -n --defined-only $(BUILD)/kernel.pass1.elf | sh $(KSYMS_GEN) > $(BUILD)/k/ksyms.S
	$(Q)$(KCC) -c $(BUILD)/k/ksyms.S -o $(BUILD)/k/ksyms.o
	$(Q)$(KLD) -T linker.ld -nostdlib -z max-page-size=0x1000 --build-id=sha1 \
		-Map=$(BUILD)/kernel.ldmap -o $@ $(KOBJS) $(BUILD)/k/ksyms.o
	$(Q)$(KNM) -n --defined-only $(BUILD)/kernel.pass1.elf | grep -v -e ' ksyms_' -e ' __kernel_end$$' > $(BUILD)/k/pass1.syms
	$(Q)$(KNM) -n --defined-only $@ | grep -v -e ' ksyms_' -e ' __kernel_end$$' > $(BUILD)/kernel.map
	$(Q)cmp -s $(BUILD)/k/pass1.syms $(BUILD)/kernel.map || \
		{ echo "kernel.elf: symbols moved between link passes" >&2; rm -f $@; exit 1; }
	$(Q)$(KOBJDUMP) -d -S --no-show-raw-insn $@ > $(BUILD)/kernel.lst

kernel: $(BUILD)/kernel.elf

tools: $(HOST_TOOLS)

.PHONY: all kernel esp tools run test test-host test-guest test-kvm bench image clean check-deps deps

clean:
	rm -rf $(BUILD) $(CLEAN_EXTRA)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

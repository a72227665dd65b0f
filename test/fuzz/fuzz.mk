# test/fuzz/ build fragment: fuzz_cmd (every command that reads a capture,
# through tools/commands.h), the seeds from real captures, the smoke runs
# make test does, and make fuzz-cmd. The other targets (fuzz_wire,
# fuzz_session, fuzz_trace) are built by their folders' fragments; their
# seeds and smokes use the same pieces.
#
#   make fuzz-cmd       fuzz_cmd for FUZZ_TIME seconds on build/fuzz/cmd-corpus
#   make test           each target for FUZZ_SMOKE_TIME seconds (fuzz_*_smoke), a
#                       few s: the long runs are make fuzz and fuzz-* (FUZZ_TIME)
#
# Included last: BAREPERF_SRCS is complete here.

FUZZ_SMOKE_TIME ?= 3
FUZZ_STREAM_MAX := 262144
FUZZ_CAPTURES   := $(BUILD)/fuzz/captures

# The whole tool but its main(), with the fuzzer's coverage and sanitizers.
FUZZ_CMD_SRCS := $(filter-out tools/bareperf.c,$(BAREPERF_SRCS)) $(BAREPERF_UTIL_C) $(WIRE_SRC) \
	ringbuf/ringbuf.c pmu/events.c apps/bench_stats.c kernel/lib/printf.c kernel/lib/string.c \
	test/fuzz/fuzz_cmd.c test/fuzz/fuzz_frames.c
FUZZ_CMD_OBJS := $(FUZZ_CMD_SRCS:%.c=$(BUILD)/fuzz/cmd/%.o)

$(FUZZ_CMD_OBJS): $(BUILD)/fuzz/cmd/%.o: %.c test/fuzz/fuzz.mk
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZCC) $(FUZZCFLAGS) $(FUZZ_CMD_FLAGS) -c $< -o $@

$(BUILD)/fuzz/cmd/tools/builtin-list.o: FUZZ_CMD_FLAGS := $(if $(BAREPERF_PFM),-DHAVE_LIBPFM)
$(BUILD)/fuzz/cmd/pmu/events.o: FUZZ_CMD_FLAGS := -DPMU_HOST_MODEL -DKLIB_HOST_TEST \
	-include kernel/lib/klib_rename.h
$(BUILD)/fuzz/cmd/kernel/lib/string.o: FUZZ_CMD_FLAGS := -DKLIB_HOST_TEST
$(BUILD)/fuzz/cmd/test/fuzz/fuzz_cmd.o: FUZZ_CMD_FLAGS := \
	-DFUZZ_KERNEL='"$(CURDIR)/$(BUILD)/kernel.elf"'

$(BUILD)/fuzz/fuzz_cmd: $(FUZZ_CMD_OBJS) $(TRACE_FLIB)
	$(call say,LINK,$@)
	$(Q)$(FUZZCC) $(FUZZ_SAN) -fsanitize=fuzzer $^ $(BAREPERF_LIBS) -o $@

# Real captures of the build's kernel under QEMU, a few KB each. A failed
# run does not stop make (make test must still print its verdict): the
# smokes then fail on the missing captures, with this log; the next make
# tries again.
$(FUZZ_CAPTURES)/stamp: test/fuzz/qemu_captures.sh $(BUILD)/kernel.elf $(BUILD)/bareperf
	$(call say,GEN,$(FUZZ_CAPTURES))
	$(Q)if sh test/fuzz/qemu_captures.sh $(BUILD) $(FUZZ_CAPTURES) 2> $(FUZZ_CAPTURES).log; then \
		touch $@; else rm -rf $(FUZZ_CAPTURES); cat $(FUZZ_CAPTURES).log >&2; fi

# Seed generators take one argument, the corpus directory: generated scripts.
$(BUILD)/fuzz/cmd_seeds: test/fuzz/stream_seeds.sh $(FUZZ_CAPTURES)/stamp \
		$(BUILD)/fuzz/session_seeds $(BUILD)/fuzz/fuzz_cmd
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\nexec sh %s cmd %s %s "$$1" %s\n' $(CURDIR)/test/fuzz/stream_seeds.sh \
		$(CURDIR)/$(FUZZ_CAPTURES) $(CURDIR)/$(BUILD)/fuzz/session_seeds \
		$(CURDIR)/$(BUILD)/fuzz/fuzz_cmd > $@
	$(Q)chmod +x $@

$(BUILD)/fuzz/session_corpus_seeds: test/fuzz/stream_seeds.sh $(FUZZ_CAPTURES)/stamp \
		$(BUILD)/fuzz/session_seeds
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\nexec sh %s session %s %s "$$1"\n' $(CURDIR)/test/fuzz/stream_seeds.sh \
		$(CURDIR)/$(FUZZ_CAPTURES) $(CURDIR)/$(BUILD)/fuzz/session_seeds > $@
	$(Q)chmod +x $@

# make test: a short run of each target (test/fuzz/fuzz_smoke.sh, one TAP
# line; a crash is a failure and its input is kept next to the fuzzer).
HOST_TESTS += $(BUILD)/host/fuzz_cmd_smoke $(BUILD)/host/fuzz_session_smoke

$(BUILD)/host/fuzz_cmd_smoke: test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_cmd $(BUILD)/fuzz/cmd_seeds \
		test/fuzz/stream.dict
	$(call gen_script,sh test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_cmd $(BUILD)/fuzz/cmd_seeds \
		$(FUZZ_SMOKE_TIME) $(FUZZ_STREAM_MAX) test/fuzz/stream.dict -close_fd_mask=2)

$(BUILD)/host/fuzz_session_smoke: test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_session \
		$(BUILD)/fuzz/session_corpus_seeds test/fuzz/stream.dict
	$(call gen_script,sh test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_session \
		$(BUILD)/fuzz/session_corpus_seeds $(FUZZ_SMOKE_TIME) $(FUZZ_STREAM_MAX) test/fuzz/stream.dict)

# Every smoke script holds FUZZ_SMOKE_TIME, set above: a new value writes
# them again.
$(BUILD)/host/fuzz_cmd_smoke $(BUILD)/host/fuzz_session_smoke $(BUILD)/host/fuzz_wire_smoke \
		$(BUILD)/host/fuzz_trace_smoke: test/fuzz/fuzz.mk

.PHONY: fuzz-cmd
fuzz-cmd: $(BUILD)/fuzz/fuzz_cmd $(BUILD)/fuzz/cmd_seeds
	@mkdir -p $(BUILD)/fuzz/cmd-corpus $(BUILD)/fuzz/cmd-artifacts
	$(Q)$(BUILD)/fuzz/cmd_seeds $(BUILD)/fuzz/cmd-corpus
	$(Q)$(BUILD)/fuzz/fuzz_cmd -max_total_time=$(FUZZ_TIME) -max_len=$(FUZZ_STREAM_MAX) \
		-dict=test/fuzz/stream.dict -close_fd_mask=2 \
		-artifact_prefix=$(BUILD)/fuzz/cmd-artifacts/ $(BUILD)/fuzz/cmd-corpus

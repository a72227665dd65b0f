# tools/ build fragment for the host tool build/bareperf (CLI, record, report, stat, script, list).
#
# build/bareperf is a release build (-O2, no sanitizers) of BAREPERF_SRCS
# plus the codec (WIRE_C, tools/tools.mk) and the kernel's event table
# (pmu/events.c, built for the host as pmu/pmu.mk does). Its tests build
# the same sources with ASan+UBSan into $(BUILD)/h/.
#
# tools/convert.mk is included after this file and APPENDS its sources:
#     BAREPERF_SRCS += tools/convert.c tools/perfdata.c tools/flamegraph.c
#     BAREPERF_LIBS += ...            (if it needs more libraries)
# The link rule reads both through secondary expansion, so whatever
# convert.mk appends is compiled (by the pattern rule below) and linked.

BAREPERF_SRCS := tools/bareperf.c tools/session.c tools/util/symbol.c tools/record.c \
	tools/report.c tools/stat.c tools/stat_bench.c tools/script.c tools/list.c tools/cli.c \
	tools/bench_code.c
BAREPERF_LIBS := -lelf -ldw -lm

# libpfm4 (Debian libpfm4-dev) lists a named CPU model's native events.
BAREPERF_PFM := $(wildcard /usr/include/perfmon/pfmlib.h)
BAREPERF_LIBS += $(if $(BAREPERF_PFM),-lpfm)

BAREPERF_CFLAGS := $(filter-out -O1,$(HOSTCFLAGS)) -O2
# What the tool links besides its own sources: the codec, the event table
# and the kernel printf/string functions that table uses (renamed k_*).
BAREPERF_LIB_SRCS = $(WIRE_C) ringbuf/ringbuf.c pmu/events.c apps/bench_stats.c kernel/lib/printf.c \
	kernel/lib/string.c
bp_objs = $(patsubst %.c,$(BUILD)/tool/%.o,$(1))

HOST_TOOLS += $(BUILD)/bareperf

$(BUILD)/tool/%.o: %.c Makefile tools/bareperf.mk
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(BAREPERF_CFLAGS) -c $< -o $@

$(BUILD)/tool/tools/list.o: BAREPERF_CFLAGS += $(if $(BAREPERF_PFM),-DHAVE_LIBPFM)
$(BUILD)/tool/pmu/events.o: BAREPERF_CFLAGS += -DPMU_HOST_MODEL -DKLIB_HOST_TEST \
	-include kernel/lib/klib_rename.h
$(BUILD)/tool/kernel/lib/string.o: BAREPERF_CFLAGS += -DKLIB_HOST_TEST

.SECONDEXPANSION:
$(BUILD)/bareperf: $$(call bp_objs,$$(BAREPERF_SRCS) $$(BAREPERF_LIB_SRCS))
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ $(BAREPERF_LIBS) -o $@

# ---- man pages --------------------------------------------------------------
#
# One man page per command, rendered from the command's own --help text
# (tools/gen-man.py), so the two never drift: build/man/bareperf-CMD.1,
# readable in place with `man -l build/man/bareperf-report.1`.
# `make install [PREFIX=/usr/local] [DESTDIR=]` puts bareperf in PREFIX/bin
# and the pages in PREFIX/share/man/man1 (then `man bareperf-record`).
PREFIX ?= /usr/local
MAN_STAMP := $(BUILD)/man/.generated

$(MAN_STAMP): $(BUILD)/bareperf tools/gen-man.py
	@mkdir -p $(@D)
	$(call say,GEN,$(BUILD)/man)
	$(Q)rm -f $(BUILD)/man/*.1
	$(Q)$(PYTHON) tools/gen-man.py $(BUILD)/bareperf $(BUILD)/man
	$(Q)touch $@

HOST_TOOLS += $(MAN_STAMP)

.PHONY: man install
man: $(MAN_STAMP)

install: $(BUILD)/bareperf $(MAN_STAMP)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/bareperf $(DESTDIR)$(PREFIX)/bin/bareperf
	install -m 644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

# ---- tests ------------------------------------------------------------------
#
# Unit tests (cmocka, ASan+UBSan): the session loader on synthetic captures
# (test/host/capgen.c frames them with the kernel's encoder), symbols and
# lines against the test binary itself (-no-pie: its addresses are its
# link addresses), report aggregation, and record's serial-line path with
# a pty pair standing in for the device.
TOOL_HOBJS := $(addprefix $(BUILD)/h/,tools/session.o tools/util/symbol.o test/host/capgen.o \
	ringbuf/ringbuf.o) \
	$(WIRE_C:%.c=$(BUILD)/h/%.o)

HOST_TESTS += $(BUILD)/host/test_session $(BUILD)/host/test_report $(BUILD)/host/test_record \
	$(BUILD)/host/test_coverage

$(BUILD)/host/test_session: $(BUILD)/h/test/host/test_session.o $(TOOL_HOBJS)
# report.c also holds `report --aux`, which calls the trace decoder.
$(BUILD)/host/test_report: $(BUILD)/h/test/host/test_report.o $(BUILD)/h/tools/report.o \
	$(BUILD)/h/tools/cli.o $(TRACE_HLIB) $(TOOL_HOBJS)
$(BUILD)/host/test_record: $(BUILD)/h/test/host/test_record.o $(BUILD)/h/tools/record.o $(TOOL_HOBJS)
$(BUILD)/host/test_coverage: $(BUILD)/h/test/host/test_coverage.o $(BUILD)/h/tools/report.o $(BUILD)/h/tools/cli.o \
	$(TRACE_HLIB) $(TOOL_HOBJS)
$(BUILD)/host/test_session $(BUILD)/host/test_report $(BUILD)/host/test_record \
		$(BUILD)/host/test_coverage:
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) -no-pie $^ -lcmocka -lelf -ldw -lcapstone -lipt -o $@

# stat --bench (tools/stat_bench.c) and the harness's statistics
# (apps/bench_stats.c) on sessions built in memory (convert_fakes for
# session and symtab; flamegraph.c has the plot's XML escaping).
HOST_TESTS += $(BUILD)/host/test_stat_bench

$(BUILD)/host/test_stat_bench: $(BUILD)/h/test/host/test_stat_bench.o $(BUILD)/h/tools/stat_bench.o \
		$(BUILD)/h/apps/bench_stats.o $$(CONVERT_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -lm -o $@

# End to end (test/e2e/e2e_bareperf.py): record a soft-PMU profile of
# test_hotspot under -icount, report, -g, script, stat, list, and the bad
# inputs. A host test is a program run without arguments: a generated script.
APP_C += test/guest/test_hotspot.c
HOST_TESTS += $(BUILD)/host/e2e_bareperf $(BUILD)/host/cli

$(BUILD)/host/e2e_bareperf: test/e2e/e2e_bareperf.py $(BUILD)/bareperf $(BUILD)/kernel.elf
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec %s test/e2e/e2e_bareperf.py %s\n' \
		$(CURDIR) $(PYTHON) $(BUILD) > $@
	$(Q)chmod +x $@

# bareperf bench (test/e2e/bench_code.sh): snippets measured exactly under
# -icount, faults and the watchdog in one boot, errors before sending.
HOST_TESTS += $(BUILD)/host/bench_code

$(BUILD)/host/bench_code: test/e2e/bench_code.sh test/e2e/bench_code_batch.txt $(BUILD)/bareperf \
		$(BUILD)/kernel.elf
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh test/e2e/bench_code.sh %s\n' $(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

# perf's command-line habits (test/e2e/cli.sh): report's sort keys and
# columns, stat -x, list WORD, -C, -i -, make run's call chains, the help
# text and the man pages rendered from it, make install.
$(BUILD)/host/cli: test/e2e/cli.sh $(BUILD)/bareperf $(BUILD)/kernel.elf $(MAN_STAMP)
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh test/e2e/cli.sh %s\n' $(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

# ---- benchmark ------------------------------------------------------------------
#
# report_msamples_per_s: samples per second through `bareperf report`
# (load, decode, aggregate, symbolize, print) on a synthetic capture of
# 10 million samples from build/bench/gen_capture.
$(BUILD)/bench/gen_capture: $(call bp_objs,tools/bench/gen_capture.c test/host/capgen.c \
		tools/util/symbol.c tools/session.c ringbuf/ringbuf.c $(WIRE_C))
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ -lelf -ldw -o $@

$(BUILD)/bench/report_bench: tools/bench/report_bench.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh tools/bench/report_bench.sh %s\n' \
		$(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

BENCH_DEPS += $(BUILD)/bench/report_bench $(BUILD)/bench/gen_capture $(BUILD)/bareperf \
	$(BUILD)/kernel.elf
BENCH_CMDS += $(BUILD)/bench/report_bench

# ---- fuzzing ----------------------------------------------------------------
#
# fuzz_session: libFuzzer target for the capture loader and the report
# aggregator (test/fuzz/fuzz_session.c; clang, as tools/tools.mk's
# fuzz_wire). `make fuzz-session` runs it FUZZ_TIME seconds on a corpus in
# build/fuzz/session-corpus, seeded by test/fuzz/session_seeds.c.
FUZZ_SESSION_OBJS := $(addprefix $(BUILD)/fuzz/,tools/session.o tools/report.o tools/cli.o tools/util/symbol.o \
	ringbuf/ringbuf.o test/fuzz/fuzz_session.o test/fuzz/fuzz_frames.o)

$(FUZZ_SESSION_OBJS): $(BUILD)/fuzz/%.o: %.c tools/bareperf.mk
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZCC) $(FUZZCFLAGS) -c $< -o $@

$(BUILD)/fuzz/fuzz_session: $(FUZZ_SESSION_OBJS) $(addprefix $(BUILD)/fuzz/,$(WIRE_C:.c=.o)) $(TRACE_FLIB)
	$(call say,LINK,$@)
	$(Q)$(FUZZCC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -lelf -ldw -lcapstone -lipt -o $@

$(BUILD)/fuzz/session_seeds: $(BUILD)/h/test/fuzz/session_seeds.o $(BUILD)/h/test/host/capgen.o \
		$(WIRE_C:%.c=$(BUILD)/h/%.o) $(BUILD)/h/ringbuf/ringbuf.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -o $@

.PHONY: fuzz-session
# Seeds: synthetic captures and real ones (test/fuzz/fuzz.mk).
fuzz-session: $(BUILD)/fuzz/fuzz_session $(BUILD)/fuzz/session_corpus_seeds
	@mkdir -p $(BUILD)/fuzz/session-corpus $(BUILD)/fuzz/session-artifacts
	$(Q)$(BUILD)/fuzz/session_corpus_seeds $(BUILD)/fuzz/session-corpus
	$(Q)$(BUILD)/fuzz/fuzz_session -max_total_time=$(FUZZ_TIME) -max_len=262144 \
		-dict=test/fuzz/stream.dict \
		-artifact_prefix=$(BUILD)/fuzz/session-artifacts/ $(BUILD)/fuzz/session-corpus

# Instruction traces (the trace decoder, libbptrace.a: tools/util/trace/trace.mk):
# the --aux modes of report and script and the Chrome call slices call
# trace_report, trace_script and trace_call_slices.
$(BUILD)/bareperf: $(TRACE_LIB)
BAREPERF_LIBS += $(TRACE_LIBS)

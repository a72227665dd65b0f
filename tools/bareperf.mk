# tools/ build fragment for the host tool build/bareperf, laid out as
# Linux tools/perf: one tools/builtin-<cmd>.c per subcommand (the table is
# tools/commands.c) over tools/util/ (see the README's "What is where").
#
# build/bareperf is a release build (-O2, no sanitizers) of
#   BAREPERF_SRCS      the entry point, the command table, the builtins
#   BAREPERF_UTIL_C    tools/util/: linked as the static library
#                      $(BUILD)/tool/libbareperf-util.a
#   BAREPERF_SHARED    the pure modules shared with the kernel, each built
#                      by its own folder's fragment: the wire codec
#                      ($(BPWIRE_LIB)), the ring code ($(BPRING_LIB)),
#                      the event table ($(PMU_EVENTS_LIB)), the
#                      harness's statistics ($(BENCH_STATS_LIB)), string
#                      and printf ($(BPKLIB_LIB))
# Its unit tests build the same sources with ASan+UBSan into $(BUILD)/h/
# (link rules: test/host/tools.mk).
#
# tools/convert.mk is included after this file and APPENDS its builtins to
# BAREPERF_SRCS and its util pieces to BAREPERF_UTIL_C; the link rule reads
# both through secondary expansion.

BAREPERF_SRCS := tools/bareperf.c tools/commands.c tools/builtin-record.c tools/builtin-report.c \
	tools/builtin-stat.c tools/builtin-script.c tools/builtin-list.c tools/builtin-bench.c \
	tools/builtin-cflags.c
BAREPERF_UTIL_C := tools/util/session.c tools/util/session_info.c tools/util/session_symbols.c \
	tools/util/symbol.c tools/util/cli.c tools/util/util.c \
	tools/util/link.c tools/util/qemu.c tools/util/control.c tools/util/hist.c \
	tools/util/header.c tools/util/stat_bench.c tools/util/stat_plot.c tools/util/record_live.c \
	tools/util/bench_config.c tools/util/bench_events.c tools/util/bench_asm.c tools/util/bench_gas.c \
	tools/util/bench_src.c tools/util/bench_check.c tools/util/bench_args.c \
	tools/util/bench_out.c tools/util/capture.c tools/util/paths.c tools/util/sdk.c \
	tools/util/program.c tools/util/sigclean.c tools/util/bench_cr.c
BAREPERF_LIBS := -lelf -ldw -lm

# libpfm4 (Debian libpfm4-dev) lists a named CPU model's native events.
BAREPERF_PFM := $(wildcard /usr/include/perfmon/pfmlib.h)
BAREPERF_LIBS += $(if $(BAREPERF_PFM),-lpfm)

BAREPERF_SHARED = $(BPWIRE_LIB) $(BPRING_LIB) $(PMU_EVENTS_LIB) $(BENCH_STATS_LIB) $(BPKLIB_LIB)
bp_objs = $(patsubst %.c,$(BUILD)/tool/%.o,$(1))

HOST_TOOLS += $(BUILD)/bareperf

# Objects: the top-level Makefile's release host rule ($(BUILD)/tool/%.o).
$(BUILD)/tool/tools/builtin-list.o: HOSTRELCFLAGS += $(if $(BAREPERF_PFM),-DHAVE_LIBPFM)
# What report does once a sample (the decoder, the session's loader, the
# aggregation) at -O3: fewer instructions a sample than at -O2.
$(call bp_objs,tools/builtin-report.c tools/util/session.c tools/util/hist.c): HOSTRELCFLAGS += -O3

.SECONDEXPANSION:
$(BUILD)/tool/libbareperf-util.a: $$(call bp_objs,$$(BAREPERF_UTIL_C))
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# The archives call each other (util <-> the trace decoder, added below):
# one group, searched until nothing more resolves.
$(BUILD)/bareperf: $$(call bp_objs,$$(BAREPERF_SRCS)) $(BUILD)/tool/libbareperf-util.a \
		$$(BAREPERF_SHARED)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) -Wl,--start-group $^ -Wl,--end-group $(BAREPERF_LIBS) -o $@

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

# ---- install ------------------------------------------------------------------
#
# What an installed PREFIX/bin/bareperf finds beside itself
# (tools/util/paths.h), laid out as the build directory holds it:
#   PREFIX/lib/bareperf/kernel.elf      what record, bench and list-apps boot
#   PREFIX/lib/bareperf/esp/            the ESP tree of record --uefi and a USB
#                                       stick: EFI/BOOT/BOOTX64.EFI, kernel.elf
#                                       (a link to ../kernel.elf), and
#                                       bareperf.cfg.example
#   PREFIX/include/bareperf.h           the SDK header (bareperf cflags)
BP_LIBDIR   = $(DESTDIR)$(PREFIX)/lib/bareperf
SDK_HEADERS := $(wildcard include/bareperf.h)

install: $(BUILD)/bareperf $(MAN_STAMP) $(BUILD)/kernel.elf $(ESP)/EFI/BOOT/BOOTX64.EFI
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(BP_LIBDIR)/esp/EFI/BOOT
	install -m 755 $(BUILD)/bareperf $(DESTDIR)$(PREFIX)/bin/bareperf
	install -m 644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(BUILD)/kernel.elf $(BP_LIBDIR)/kernel.elf
	install -m 644 $(ESP)/EFI/BOOT/BOOTX64.EFI $(BP_LIBDIR)/esp/EFI/BOOT/BOOTX64.EFI
	ln -sf ../kernel.elf $(BP_LIBDIR)/esp/kernel.elf
	install -m 644 boot/bareperf.cfg.example $(BP_LIBDIR)/esp/bareperf.cfg.example
	$(if $(SDK_HEADERS),install -d $(DESTDIR)$(PREFIX)/include)
	$(if $(SDK_HEADERS),install -m 644 $(SDK_HEADERS) $(DESTDIR)$(PREFIX)/include/)

# ---- tests ------------------------------------------------------------------
#
# The unit tests' link rules are test/host/tools.mk; the end-to-end tests'
# (e2e_bareperf, cli, bench_code) are test/test.mk.

# ---- benchmark ------------------------------------------------------------------
#
# report_msamples_per_s: samples per second through `bareperf report`
# (load, decode, aggregate, symbolize, print) on a synthetic capture of
# 10 million samples from build/bench/gen_capture (test/bench/tools.mk).
$(BUILD)/bench/report_bench: tools/bench/report_bench.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh tools/bench/report_bench.sh %s\n' \
		$(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

BENCH_DEPS += $(BUILD)/bench/report_bench $(BUILD)/bench/gen_capture $(BUILD)/bareperf \
	$(BUILD)/kernel.elf
BENCH_CMDS += $(BUILD)/bench/report_bench

# How report's time and peak RSS grow with the samples, against perf's:
# 1M, 3M and 10M (tools/bench/report_scale.sh).
$(BUILD)/bench/report_scale: tools/bench/report_scale.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh tools/bench/report_scale.sh %s\n' \
		$(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

BENCH_DEPS += $(BUILD)/bench/report_scale $(BUILD)/bench/gen_capture $(BUILD)/bareperf \
	$(BUILD)/kernel.elf
BENCH_CMDS += $(BUILD)/bench/report_scale

# Instruction traces (the trace decoder, libbptrace.a: tools/util/trace/trace.mk):
# the --aux modes of report and script and the Chrome call slices call
# trace_report, trace_script and trace_call_slices.
$(BUILD)/bareperf: $(TRACE_LIB)
BAREPERF_LIBS += $(TRACE_LIBS)

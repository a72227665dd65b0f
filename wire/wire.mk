# wire/ build fragment (included by the top-level Makefile).
#
# The wire codec (include/uapi/wire.h): the link layer (frame.c: frames,
# CRC32C, varints, COBS, the received-frame check), the record codec on
# top of it (record.c: ring records -> RECORDS items, over the ring's
# SAMPLE parser, ringbuf/ringbuf.c) and the host's streaming decoder
# (decode.c). The first two build into the kernel; all three build for
# the host as
#   libbpwire.a   $(BPWIRE_LIB) release, $(BPWIRE_HLIB) ASan+UBSan (as
#                 kernel.mk's libraries); link ringbuf.mk's libbpring.a
#                 after it
# WIRE_SRC is the three, for the fuzz and benchmark builds that compile
# their own flavour. The codec's tests: test/host/kernel.mk (test_wire),
# test/host/tools.mk (test_capture), test/fuzz/tools.mk (fuzz_wire) and
# test/bench/tools.mk (wire_bench); make wire-test, make wire-bench
# (tools/tools.mk).

WIRE_SRC := wire/frame.c wire/record.c wire/decode.c
KERNEL_C += wire/frame.c wire/record.c

BPWIRE_LIB  := $(BUILD)/lib/libbpwire.a
BPWIRE_HLIB := $(BUILD)/h/lib/libbpwire.a

$(BPWIRE_LIB): $(WIRE_SRC:%.c=$(BUILD)/tool/%.o)
# The host's decoder and link layer run once a frame and a sample of a
# capture: -O3 (fewer instructions a sample than -O2).
$(BUILD)/tool/wire/decode.o $(BUILD)/tool/wire/frame.o: HOSTRELCFLAGS += -O3
$(BPWIRE_HLIB): $(WIRE_SRC:%.c=$(BUILD)/h/%.o)
$(BPWIRE_LIB) $(BPWIRE_HLIB):
	@mkdir -p $(@D)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

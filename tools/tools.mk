# tools/ build fragment (included by the top-level Makefile).
#
# Capture files (tools/util/capture.c: write, read, decode) over the wire
# codec (wire/wire.mk). WIRE_C is the codec's sources and capture.c, for
# the test, fuzz and benchmark builds; build/bareperf links capture.c
# with the rest of tools/util/ over wire.mk's release library
# (tools/bareperf.mk).

WIRE_C     := $(WIRE_SRC) tools/util/capture.c

# Just the codec: make wire-test, make wire-bench.
.PHONY: fuzz wire-test wire-bench
wire-test: $(BUILD)/host/test_wire $(BUILD)/host/test_capture $(BUILD)/host/fuzz_wire_smoke
	$(Q)$(PYTHON) test/runner.py --build $(BUILD) --host $^

wire-bench: $(BUILD)/bench/wire_bench
	$(Q)$(BUILD)/bench/wire_bench

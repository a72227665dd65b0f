# tools/ build fragment (included by the top-level Makefile).
#
# The wire codec (include/uapi/wire.h) on the host, and capture files:
#   kernel/wire_frame.c     the link layer (frames, CRC, varints, frame check)
#   ringbuf/wire.c          the record codec (with ringbuf/ringbuf.c's SAMPLE
#                           parser): both built into the kernel by their
#                           folders' fragments, and for the host
#   tools/util/wire_dec.c   the host's streaming decoder
#   tools/util/capture.c    capture files: write, read, decode
# WIRE_C is the four; build/bareperf links it as libbareperf-codec.a
# (tools/bareperf.mk). Its tests are built by test/host/kernel.mk
# (test_wire), test/host/tools.mk (test_capture), test/fuzz/tools.mk
# (fuzz_wire, make fuzz) and test/bench/tools.mk (wire_bench:
# wire_bytes_per_sample, decode_mb_per_s).

WIRE_C     := kernel/wire_frame.c ringbuf/wire.c tools/util/wire_dec.c tools/util/capture.c

# Just the codec: make wire-test, make wire-bench.
.PHONY: fuzz wire-test wire-bench
wire-test: $(BUILD)/host/test_wire $(BUILD)/host/test_capture $(BUILD)/host/fuzz_wire_smoke
	$(Q)$(PYTHON) test/runner.py --build $(BUILD) --host $^

wire-bench: $(BUILD)/bench/wire_bench
	$(Q)$(BUILD)/bench/wire_bench

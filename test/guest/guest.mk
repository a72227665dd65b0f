# Tests of pmu/ and apps/ in the guest: apps in the kernel (APP_TEST), run
# by test/runner.py from test/guest_tests.py.
APP_C += test/guest/test_pmu_probe.c test/guest/test_count.c test/guest/test_bench.c \
	test/guest/test_trace.c

# BENCH records crowded out of a tiny ring: counted like samples, named by
# stat --bench; and none lost when the harness drains first (needs
# build/bareperf and build/kernel.elf).
HOST_TESTS += test/e2e/bench_loss.py

# Guest tests of pmu/ and apps/: apps in the kernel (APP_TEST), run by
# test/runner.py from test/guest_tests.py.
APP_C += test/guest/test_pmu_probe.c test/guest/test_count.c test/guest/test_bench.c \
	test/guest/test_trace.c

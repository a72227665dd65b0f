# apps/ build fragment: one C file per app, each registers itself with APP().
# The registry and the control channel are kernel code (no SSE: they run
# beside interrupt handlers that save no vector state).
KERNEL_C += apps/app.c apps/control.c
APP_C += apps/loopnest.c
# The microbenchmark harness (nanoBench's method) and the suite built on it.
APP_C += apps/bench.c apps/bench_stats.c apps/bench_memlat.c apps/bench_membw.c apps/bench_branch.c \
	apps/bench_insn.c apps/bench_priv.c apps/bench_suite.c apps/bench_code.c test/guest/test_bench.c
# BENCH records crowded out of a tiny ring: counted like samples, named by
# stat --bench; and none lost when the harness drains first (needs
# build/bareperf and build/kernel.elf).
HOST_TESTS += test/e2e/bench_loss.py

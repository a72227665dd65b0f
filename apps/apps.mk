# apps/ build fragment: one C file per app, each registers itself with APP().
# The registry, the run and the control channel are kernel code (no SSE:
# the run tick is an interrupt handler, and the kernel saves no vector
# state).
KERNEL_C += apps/app.c apps/run.c apps/control.c
APP_C += apps/loopnest.c
# The microbenchmark harness (nanoBench's method) and the suite built on it.
APP_C += apps/bench.c apps/bench_stats.c apps/bench_memlat.c apps/bench_membw.c apps/bench_branch.c \
	apps/bench_insn.c apps/bench_priv.c apps/bench_suite.c apps/bench_code.c

# apps/ build fragment: one C file per app, each registers itself with APP().
# The registry, the run and the control channel are kernel code (no SSE:
# the run tick is an interrupt handler, and the kernel saves no vector
# state).
KERNEL_C += apps/app.c apps/run.c apps/run_drain.c apps/run_request.c apps/control.c
# Programs the host sends: received, checked, linked, mapped and guarded
# (apps/program.h); kernel code too (the guard runs in trap context).
KERNEL_C += apps/program.c apps/program_elf.c apps/program_load.c
# RUN_CODE's fault fix-up, watchdog and what runs right after code stopped:
# kernel code too (code may leave SSE faulting, apps/bench_code_trap.h).
KERNEL_C += apps/bench_code_trap.c
# What a snippet may change, saved and put back around it: the same.
KERNEL_C += apps/bench_state.c
APP_C += apps/loopnest.c
# Programs the host sends (include/bareperf.h): the SDK they link against.
APP_C += apps/sdk.c
# The microbenchmark harness (nanoBench's method) and the suite built on it.
APP_C += apps/bench.c apps/bench_refuse.c apps/bench_opts.c apps/bench_events.c apps/bench_msr.c apps/bench_lvt.c \
	apps/bench_records.c apps/bench_table.c apps/bench_mem.c apps/bench_caches.c
APP_C += apps/bench_stats.c apps/bench_memlat.c apps/bench_membw.c apps/bench_branch.c \
	apps/bench_insn.c apps/bench_priv.c apps/bench_suite.c apps/bench_code.c

# The harness's statistics for the host tools (stat --bench), release
# flavour: $(BENCH_STATS_LIB).
BENCH_STATS_LIB := $(BUILD)/lib/libbenchstats.a

$(BENCH_STATS_LIB): $(BUILD)/tool/apps/bench_stats.o
	@mkdir -p $(@D)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

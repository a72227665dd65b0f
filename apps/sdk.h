/*
 * sdk.h — what programs the kernel loads may call (include/bareperf.h, the
 * SDK; apps/sdk.c implements it): each function the header declares is
 * exported with SDK_EXPORT, which places a struct sdk_export {name,
 * address} in a .sdk_exports.* section; linker.ld gathers them between
 * __start_sdk_exports and __stop_sdk_exports, and the loader
 * (apps/program.c) resolves a program's undefined symbols against them
 * and nothing else. test/sdk_exports.py holds the header and the table
 * to the same names.
 */
#ifndef BAREPERF_APPS_SDK_H
#define BAREPERF_APPS_SDK_H

#include "kernel/kernel.h"

/* include/bareperf.h's BAREPERF_SDK_VERSION, BP_MALLOC_LIMIT, BP_WAIT_MS
 * (test/sdk_exports.py holds them equal). */
#define SDK_VERSION		1
#define SDK_MALLOC_LIMIT	(64ul << 20)
#define SDK_WAIT_MS		10000u

struct sdk_export {
	const char *name;
	const void *addr;
};

#define SDK_EXPORT(n, fn)						\
	static const struct sdk_export __sdk_export_##n			\
	__attribute__((used, section(".sdk_exports." #n), aligned(8))) =	\
	{ .name = #n, .addr = (const void *)(fn) }

/* The exported function of that name, or NULL. */
const struct sdk_export *sdk_export_find(const char *name);
/* Is pc inside one of the exported functions themselves (a program's
 * bad pointer faulting in memcpy, say)? NMI-safe. */
bool sdk_export_holds(u64 pc);

/* Around each run of a program, on the CPU that drives the run: a fresh
 * arena for malloc; at the end, the arena freed and a line if it ran out.
 * sdk_main_end, on the program's CPU once its main is over: the BENCH_END
 * record if it measured with bp_bench (apps/bench.h, bench_end). */
void sdk_run_begin(const char *program);
void sdk_run_end(void);
void sdk_main_end(void);

#endif

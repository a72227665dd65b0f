/*
 * program.h — programs the host sends as relocatable objects (LOAD,
 * include/uapi/wire.h; the SDK they are built against, include/bareperf.h
 * and apps/sdk.h). apps/program_load.c receives the object in pieces;
 * apps/program.c checks, places and links it (apps/program_elf.c), maps
 * it W^X at the top of the address space (-mcmodel=kernel reaches it),
 * keeps its symbols for backtraces and the summary (ksym_set_more), and
 * registers it as an app (APP_PROGRAM) that START_RUN runs like any other.
 *
 * A run of a program is guarded on the CPU it runs on: a CPU exception in
 * its code, or in an exported function it called, prints the register
 * dump and a backtrace naming its functions and ends the run, not the
 * machine (a fault fix-up, kernel/trap.h, returning through an unwind
 * point, kernel/unwind.h, as RUN_CODE's does); so does running past the
 * run's timeout, checked at the run tick. The reply is then an ERROR
 * saying what stopped it. A fault elsewhere stays fatal.
 */
#ifndef BAREPERF_APPS_PROGRAM_H
#define BAREPERF_APPS_PROGRAM_H

#include "kernel/kernel.h"
#include "kernel/trap.h"

struct app;
struct profile_app;

#define PROGRAM_MAX		8	/* loaded at once */
#define PROGRAM_TIMEOUT_MS	60000	/* a run's limit unless START_RUN says */

/* The loaded program of that name / after prev (NULL: the first). */
const struct app *program_find(const char *name);
const struct app *program_next(const struct app *prev);
/* Is addr in a loaded program's text? NMI-safe. */
bool program_text_holds(u64 addr);

/* Check, place, link and register the object buf[len] as name (replacing
 * a program of that name); each placed section is passed to item (shndx,
 * name, addr, size, BP_PROGRAM_SEC_* flags). 0, or -1 with err. */
typedef void (*program_item_fn)(u32 shndx, const char *name, u64 addr, u64 size, u32 flags);
int program_load(const char *name, const void *buf, size_t len, program_item_fn item,
		 char *err, size_t n);

/* The next run's timeout (START_RUN's TIMEOUT_MS; 0: the default). */
void program_set_timeout(u64 ms);
/* A run of a program (apps/run.c): before it, on the CPU driving the run,
 * its text and PROGRAM record for APP_START, and the timeout; main on the
 * CPU it runs on, guarded; after it, the SDK's end of run, and true with
 * why set if the program faulted or ran out of time. */
void program_run_begin(const struct app *app, struct profile_app *who);
int program_main(const struct app *app, int argc, char **argv);
bool program_run_end(char *why, size_t n);
/* The run tick's (interrupt context): stop a program past its timeout. */
void program_watchdog(struct trap_frame *f);

#endif

/*
 * kernel.h — what apps/, pmu/, ringbuf/ and tests may call in kernel/.
 *
 * Unless a function says "NMI-safe", do not call it from an NMI handler.
 */
#ifndef BAREPERF_KERNEL_KERNEL_H
#define BAREPERF_KERNEL_KERNEL_H

#include <stdarg.h>
#include <stddef.h>
#include "kernel/x86.h"
#include "kernel/lib/string.h"
#include "kernel/lib/printf.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))
#define PAGE_SIZE	4096ul
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#define MAX(a, b)	((a) > (b) ? (a) : (b))
#define __noreturn	__attribute__((noreturn))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

/* Errors: 0 or one of these, negated. */
enum {
	E_OK = 0,
	E_INVAL = 1,	/* bad argument */
	E_NOMEM = 2,
	E_NOENT = 3,	/* no such app, option, table, device */
	E_RANGE = 4,
	E_NODEV = 5,
	E_BUSY = 6,
	E_FAULT = 7,	/* a probed instruction faulted */
	E_TIMEDOUT = 8,	/* a bounded wait ran out */
};

/* What the kernel reports to QEMU's isa-debug-exit (status = v * 2 + 1). */
enum exit_code {
	EXIT_OK = 0,
	EXIT_FAIL = 1,		/* the app or a test reported failure */
	EXIT_USAGE = 2,		/* bad command line, unknown app */
	EXIT_PANIC = 3,		/* CPU exception or broken invariant */
};

/* console.c — text to the serial console. kprintf is not NMI-safe. */
int kprintf(const char *fmt, ...) __printf(1, 2);
int kvprintf(const char *fmt, va_list ap);
void console_write(const char *s, size_t len);
/* The output lock (console text and stream frames); recursive on one CPU.
 * Bounded: false when another CPU held it for CONSOLE_LOCK_MS (said later
 * by the next holder); then the caller does not write and does not unlock. */
bool console_lock_output(void);
bool console_trylock(void);
void console_unlock_output(void);

/* panic.c */
void panic(const char *fmt, ...) __printf(1, 2) __noreturn;
#define BUG_ON(c) do { if (c) panic("%s: BUG_ON(%s) at %s:%d", __func__, #c, __FILE__, __LINE__); } while (0)
/* Leave the machine: isa-debug-exit under QEMU, halt on hardware. Runs
 * the registered exit steps first (EXIT_STEP below). */
void machine_exit(enum exit_code code) __noreturn;
/* Before a fatal report ends the machine: NMI every other CPU, have each
 * print where it was, and stop it (the EXIT_STOP_OTHERS step,
 * kernel/smp.c). NMI-safe: it is the fault path's. */
void panic_stop_others(void);

/* backtrace.c */
/* Print a frame-pointer backtrace starting at (rip, rbp); leaf_ret, if not
 * 0, is the return address of a frameless leaf holding rip. */
void backtrace_print(u64 rip, u64 rbp, u64 leaf_ret);
/* The return address at rsp if rip is in a leaf called directly from it,
 * else 0. NMI-safe. */
u64 leaf_return_address(u64 rip, u64 rsp);
/* The same for ret, the word at the top of a stack known to be mapped. */
u64 leaf_return_of(u64 rip, u64 ret);
/* The return address of the function holding rip while RBP is not its
 * frame (in its prologue before mov %rsp, %rbp, at its ret, or a leaf's
 * as leaf_return_of), from the interrupted stack sp (two words mapped)
 * and RBP; else 0. NMI-safe. */
u64 frameless_return_of(u64 rip, const u64 *sp, u64 rbp);

/* ksym.c — the built-in symbol table. NMI-safe. */
/* Name, offset and size of the text symbol holding addr, or NULL. */
const char *ksym_lookup(u64 addr, u64 *offset, u64 *size);
/* Address of a named text symbol, 0 if none. */
u64 ksym_address(const char *name);
/* The lookup for addresses outside the kernel's text (code loaded at run
 * time), with ksym_lookup's contract; NMI-safe. */
typedef const char *(*ksym_more_fn)(u64 addr, u64 *offset, u64 *size);
void ksym_set_more(ksym_more_fn fn);

/* bootinfo.c: the kernel's GNU build-id (len bytes), NULL if it has none. */
const u8 *kernel_build_id(u32 *len);

/* The kernel's code, [__text_start, __text_end) (linker.ld). */
extern char __text_start[], __text_end[];

/* cpu.c: features found at boot. */
struct cpu_features {
	char vendor[13];
	char brand[49];
	u32 family, model, stepping;
	u32 max_leaf, max_ext_leaf;
	bool hypervisor;
	char hypervisor_id[13];
	bool nx, pdpe1gb, xsave, avx, avx2, x2apic, tsc_deadline, invariant_tsc;
	bool tsc;
};
extern struct cpu_features cpu_features;

/* platform/tsc.c */
extern u64 tsc_hz;		/* 0 if it could not be determined */
extern const char *tsc_hz_source;
u64 tsc_to_ns(u64 ticks);
/* True once `ns` have passed since TSC value t0: the one way the kernel
 * bounds a wait. Before the TSC's rate is known it assumes the fastest
 * plausible TSC (10 GHz), so a bound is never shorter than asked (on a
 * 2.5 GHz TSC, four times longer). NMI-safe. */
bool tsc_since_ns(u64 t0, u64 ns);
/* The TSC's rate against a reference counter of ref_hz (masked to `mask`
 * bits); 0, with a line saying so, if it does not advance 10 ms within
 * 100 ms. Not NMI-safe. */
u64 tsc_calibrate(u64 (*read)(void), u64 mask, u64 ref_hz, const char *name);

/* pmm.c — physical pages, identity-mapped (phys == virt below the RAM top). */
u64 pmm_alloc(size_t npages);		/* 0 when out of memory; zeroed */
void pmm_free(u64 pa, size_t npages);
size_t pmm_free_pages(void);
size_t pmm_total_pages(void);

/* paging.c */
/* Map npages of fresh memory at a new kernel address, with an unmapped
 * guard page below; returns the top (for stacks) or 0. */
u64 vmalloc_stack(size_t npages);
/* The same for a stack the CPU itself pushes on while code run on
 * purpose runs (an IST stack): writable in paging_code_cr3's tables. */
u64 vmalloc_cpu_stack(size_t npages);
/* Unmap what vmalloc_stack(npages) returned top for and free its memory
 * (the addresses are not used again). Other CPUs may still hold the old
 * translations until their next CR3 write. */
void vfree_stack(u64 top, size_t npages);
/* npages mapped read-write, no-execute, above a guard page; 0 when out of
 * memory. paging_code_exec flips them to read-only executable and back
 * (W^X: never both writable and executable). */
u64 vmalloc_code(size_t npages);
void paging_code_exec(u64 va, size_t npages, bool exec);
/* The same pages read-only, no-execute (vfree_stack frees them all). */
void paging_code_rodata(u64 va, size_t npages);
/* The tables code run on purpose (apps/bench_code.c) runs on, built the
 * first time (kernel/paging.c): the kernel's mappings, with what the
 * kernel may write read-only but for the code's own pages (vmalloc_code's),
 * the IST stacks (vmalloc_cpu_stack's) and MMIO. Their CR3, or 0 when out
 * of memory. Later mappings reach both sets. */
u64 paging_code_cr3(void);
/* va is writable in the kernel's tables and read-only in the code's. */
bool paging_code_readonly(u64 va);
/* A hash of every entry of the kernel's page tables, the Accessed and
 * Dirty bits left out (the CPU sets them): a write to any entry changes it. */
u64 paging_hash(void);
u64 virt_to_phys(const void *p);

/* pgtable.c: is [va, va+len) mapped (present) in the kernel's page tables? */
bool va_mapped(u64 va, size_t len);

/* cmdline.c: the parsed kernel command line. */
enum serial_kind {
	SERIAL_AUTO = 0,		/* SPCR, else a PCI UART, else COM1 (kernel/dev/serial.c) */
	SERIAL_IO = 1,			/* an I/O port: com1..com4, 0xPORT */
	SERIAL_MMIO = 2,		/* mmio:ADDR (8-bit registers), mmio32:ADDR (32-bit) */
	SERIAL_PCI = 3,			/* pci:BB:DD.F, a PCI UART's first usable BAR */
};
struct serial_opt {
	enum serial_kind kind;
	u64 addr;			/* SERIAL_IO: port; SERIAL_MMIO: physical address */
	u8 width;			/* SERIAL_MMIO: bytes per register, 1 or 4 */
	u8 bus, dev, fn;		/* SERIAL_PCI */
};
enum console_want {
	CONSOLE_AUTO = 0,		/* the UART, and the screen when there is one */
	CONSOLE_SERIAL = 1,
	CONSOLE_FB = 2,
	CONSOLE_BOTH = 3,
};
struct kernel_options {
	const char *app;		/* app=NAME */
	struct serial_opt serial;	/* serial=auto|com1..com4|0xPORT|mmio:ADDR|pci:BB:DD.F */
	u32 baud;			/* baud=N (0: SPCR's, else 115200) */
	enum console_want console;	/* console=serial|fb|both */
	bool turbo_off;			/* turbo=off (kernel/platform/quiet.c) */
	bool prefetch_off;		/* prefetch=off */
	const char *events;		/* events=LIST ("" = default, "none") */
	u64 period;			/* period=N (0 = default) */
	u64 freq;			/* freq=N samples/s (0 = default) */
	bool callchain;			/* callchain=0|1 */
	u32 ring_pages;			/* ring_pages=N data pages per CPU (2^n) */
	const char *stream;		/* stream=off|uart|virtio */
	u32 pace;			/* pace=BAUD: hold the stream to a line rate */
	bool control;			/* control=1: serve runs the host asks for */
	bool code;			/* code=1: ... and run code it sends (RUN_CODE) */
	const char *count;		/* count=LIST: events to count ("" = none) */
	u32 max_rate;			/* max_rate=N samples/s per CPU (0 = no limit) */
	const char *trace;		/* trace=SPEC: instruction trace ("" = off), profile/trace.c */
	u32 aux_pages;			/* aux_pages=N: AUX area pages per CPU (2^n) */
	u32 ap_wait_ms;			/* ap_wait_ms=N: wait for each AP (0 = admit none) */
	int app_argc;			/* words after "--" */
	char *app_argv[32];
};
extern struct kernel_options kopt;	/* bootinfo.c */

/* bootinfo.c: boot facts for apps and tests. */
struct boot_info;
extern const struct boot_info *boot_info;
extern u64 boot_tsc_entry;		/* TSC at kernel entry */

/*
 * Boot hooks: how code above the kernel (pmu/, apps/) joins the boot
 * without the kernel naming it. Each macro puts a descriptor in a section
 * of its own (linker.ld); the kernel runs them in link order, by name
 * within a kind (kernel/hooks.c).
 *   BOOT_HOOK(stage, fn)  void fn(void), on the boot CPU at a stage of kmain:
 *     BOOT_PLATFORM   timers and interrupt controllers up, no other CPU started;
 *     BOOT_SMP        every CPU up and the quiet machine set, the stream not
 *                     yet started.
 *   CPU_UP_HOOK(fn)       void fn(u32 cpu), on each other CPU as it comes up
 *                         (kernel/smp.c: interrupts off, before it checks in).
 *   KERNEL_MAIN(fn)       int fn(void): what the machine is for, once it is up;
 *                         returns an enum exit_code. Exactly one per kernel.
 */
enum boot_stage {
	BOOT_PLATFORM = 1,
	BOOT_SMP = 2,
};
struct boot_hook {
	const char *name;
	enum boot_stage stage;
	void (*fn)(void);
};
struct cpu_up_hook {
	const char *name;
	void (*fn)(u32 cpu);
};
struct kernel_main_hook {
	const char *name;
	int (*fn)(void);
};
#define BOOT_HOOK(st, f)						\
	static const struct boot_hook __boot_hook_##f			\
	__attribute__((used, section(".hooks.boot." #f), aligned(8))) =	\
	{ .name = #f, .stage = (st), .fn = (f) }
#define CPU_UP_HOOK(f)							\
	static const struct cpu_up_hook __cpu_up_hook_##f		\
	__attribute__((used, section(".hooks.cpu_up." #f), aligned(8))) = \
	{ .name = #f, .fn = (f) }
#define KERNEL_MAIN(f)							\
	static const struct kernel_main_hook __kernel_main_##f		\
	__attribute__((used, section(".hooks.main." #f), aligned(8))) =	\
	{ .name = #f, .fn = (f) }

/*
 * Exit steps: how the kernel's output and CPU drivers join leaving the
 * machine without panic.c naming them. EXIT_STEP(step, fn) registers
 * void fn(enum exit_code code) in a section of its own (linker.ld);
 * kernel/panic.c runs every step of one kind, by name within it, in this
 * order. Each runs with interrupts off, on the fault path too, so it must
 * not take a lock a faulting CPU may hold (the console's is taken over).
 *   EXIT_STOP_OTHERS  panic_stop_others: stop every other CPU.
 *   EXIT_OUTPUT       machine_exit, first: have an output for the report
 *                     if none was chosen yet (kernel/dev/serial.c).
 *   EXIT_STREAM_END   then: the stream's last frame, with the exit code.
 *   EXIT_FLUSH        then, and again after the last line: wait until the
 *                     bytes have left the machine (kernel/platform/uart.c).
 *   EXIT_LEAVE        then: leave the VM with the code, if there is a way
 *                     (kernel/platform/debug_exit.c); returning means none.
 */
enum exit_step {
	EXIT_STOP_OTHERS = 1,
	EXIT_OUTPUT = 2,
	EXIT_STREAM_END = 3,
	EXIT_FLUSH = 4,
	EXIT_LEAVE = 5,
};
struct exit_step_hook {
	const char *name;
	enum exit_step step;
	void (*fn)(enum exit_code code);
};
#define EXIT_STEP(st, f)						\
	static const struct exit_step_hook __exit_step_##f		\
	__attribute__((used, section(".hooks.exit." #f), aligned(8))) =	\
	{ .name = #f, .step = (st), .fn = (f) }

/* smp.c: CPUs are numbered 0 (boot CPU) .. smp_cpus() - 1. */
u32 smp_cpus(void);
/* Run fn(arg) on a CPU (directly if it is this one). wait: until it returns.
 * Returns -E_NOENT for no such CPU, -E_BUSY if it still runs an earlier call,
 * -E_TIMEDOUT (wait only) if it did not take the call within SMP_CALL_TAKE_MS
 * (said on the console: which CPU, how long); the call is then withdrawn and
 * fn never runs. Once taken, fn runs as long as it takes. */
#define SMP_CALL_TAKE_MS	2000	/* an idle CPU takes a call in microseconds */
int smp_call(u32 cpu, void (*fn)(void *), void *arg, bool wait);
/* What an smp_call error means, for a message: "no such CPU", ... */
const char *smp_call_why(int err);
bool smp_call_done(u32 cpu);
/* Run fn(arg) on every CPU at once, this one included, and wait for all. */
void smp_call_all(void (*fn)(void *), void *arg);
u32 this_cpu_id(void);

#endif

/*
 * smp.c — starting the other CPUs, running functions on them, and stopping
 * them all when one CPU panics.
 *
 * Bring-up (SDM Vol. 3A 9.4.4): INIT, 10 ms, SIPI, 200 us, SIPI again if the
 * AP has not answered. APs are started one at a time because they share
 * the trampoline, and each must be admitted (trampoline.asm): the boot CPU
 * opens a slot for the AP's APIC id, the AP claims it atomically before it
 * runs any kernel code. A busy host can keep a vCPU from running for well
 * over 100 ms, so the wait is Linux's: seconds, by the TSC. When it runs
 * out, the boot CPU revokes the slot with the same atomic compare: either
 * the AP claimed it first (it is running: wait for it to finish its set-up)
 * or it never will, and if it wakes later it parks in the trampoline for
 * good — a CPU declared dead never runs kernel code.
 *
 * Idle APs sleep in hlt with interrupts on; smp_call() posts a function in
 * the target's per-CPU mailbox and wakes it with a fixed IPI, so idle vCPUs
 * cost nothing under QEMU.
 */
#include "kernel/kernel.h"
#include "kernel/boot.h"
#include "kernel/platform/apic.h"
#include "kernel/mm.h"
#include "kernel/percpu.h"
#include "kernel/smp.h"
#include "kernel/trap.h"
#include <uapi/bootinfo.h>

#define AP_STACK_PAGES	16
#define SETUP_TIMEOUT_MS	10000	/* claim to check-in: the AP's own set-up */
#define CALL_ALL_SLOW_MS	10000	/* smp_call(_all): report a call this long */
#define MS_TEXT_(n)		#n
#define MS_TEXT(n)		MS_TEXT_(n)
#define SLOT_CLOSED		0
#define SLOT_CLAIMED		0xffffffffu


static struct percpu cpus[MAX_CPUS];
static u32 ncpus = 1;
static volatile u32 ap_checked_in;
static u32 ap_slot = SLOT_CLOSED;	/* APIC id + 1 of the AP admitted next */
static u64 ap_wait_max_us;		/* slowest AP answer this boot */
static volatile u32 *parked;		/* the trampoline's count of parked CPUs */
static volatile u32 stop_from = ~0u;	/* cpu that asked everyone to stop */
static volatile u32 stopped;
static u32 stop_report_lock;		/* one stopped CPU reports at a time */


struct percpu *smp_boot_cpu(void) { return &cpus[0]; }
u32 this_cpu_id(void) { return this_cpu()->cpu; }
u32 smp_cpus(void) { return ncpus; }
u32 smp_parked(void) { return parked ? __atomic_load_n(parked, __ATOMIC_ACQUIRE) : 0; }
struct percpu *smp_cpu(u32 i) { return i < ncpus ? &cpus[i] : NULL; }

static void delay_us(u64 us)
{
	u64 t0 = rdtsc_ordered(), ticks = tsc_hz ? tsc_hz / 1000000 * us : us * 3000;

	while (rdtsc_ordered() - t0 < ticks)
		cpu_relax();
}

/*
 * The wait between INIT and the first SIPI. The SDM's MP start-up
 * example (Vol. 3A 9.4.4.1) waits 10 ms; CPUs from Intel's family 6, AMD's
 * family 0xf and Hygon's on take the SIPI at once (Linux waits only on
 * older ones), and so do a hypervisor's virtual CPUs.
 */
static u64 init_wait_us(void)
{
	const struct cpu_features *f = &cpu_features;
	bool modern = (!strcmp(f->vendor, "GenuineIntel") && f->family >= 6) ||
		      (!strcmp(f->vendor, "AuthenticAMD") && f->family >= 0xf) ||
		      !strcmp(f->vendor, "HygonGenuine");

	return modern || f->hypervisor ? 0 : 10000;
}

static void call_ipi(struct trap_frame *f)
{
	(void)f;
	apic_eoi();		/* the wake-up is the point; the idle loop does the work */
}

static void __attribute__((noreturn, noinline)) ap_idle(struct percpu *pc)
{
	for (;;) {
		irq_disable();
		/* Taken with an exchange: a caller that gave up waiting
		 * withdraws the call with a compare-exchange, and exactly
		 * one of the two gets it. */
		void (*fn)(void *) = __atomic_exchange_n(&pc->call_fn, NULL, __ATOMIC_ACQUIRE);
		if (fn) {
			irq_enable();
			fn(pc->call_arg);
			__atomic_store_n(&pc->call_done, pc->call_seq, __ATOMIC_RELEASE);
			continue;
		}
		asm volatile("sti; hlt" : : : "memory");	/* sti's shadow covers hlt */
	}
}

/* The first C code an AP runs, on its own stack, with the kernel's tables. */
static void __attribute__((noreturn)) ap_entry(struct percpu *pc)
{
	percpu_init(pc, pc->cpu, 0);
	idt_load();
	cpu_setup();
	apic_init();
	boot_hooks_cpu_up(pc->cpu);	/* e.g. this core's own PMU (hybrids differ) */
	__atomic_store_n(&ap_checked_in, 1, __ATOMIC_RELEASE);
	ap_idle(pc);
}

static void patch16(u8 *page, const char *field, u64 val)
{
	*(u16 *)(page + (field - trampoline_start)) = val;
}

static void patch32(u8 *page, const char *field, u64 val)
{
	*(u32 *)(page + (field - trampoline_start)) = val;
}

static void patch64(u8 *page, const char *field, u64 val)
{
	*(u64 *)(page + (field - trampoline_start)) = val;
}

/* A page below 1 MiB that the memory map says is RAM, for the trampoline. */
static u64 trampoline_page(void)
{
	for (u32 i = 0; i < boot_info->mmap_count; i++) {
		const struct boot_mem_range *r = &boot_info->mmap[i];
		u64 pa = ALIGN_UP(MAX(r->base, 0x1000ul), PAGE_SIZE);
		if (r->type == BOOT_MEM_USABLE && pa + PAGE_SIZE <= r->base + r->length &&
		    pa + PAGE_SIZE <= 0x100000)
			return pa;
	}
	return 0;
}

static int start_ap(u8 *page, struct percpu *pc)
{
	u64 stack = vmalloc_stack(AP_STACK_PAGES);

	if (!stack)
		return -E_NOMEM;
	percpu_alloc_stacks(pc);
	/* W^X: the page is writable while we patch it, executable while an AP
	 * runs from it, never both. */
	paging_set_exec((u64)page, false);
	patch64(page, tp_stack, stack);
	pc->stack_lo = stack - AP_STACK_PAGES * PAGE_SIZE;
	pc->stack_hi = stack;
	patch64(page, tp_arg, (u64)pc);
	paging_set_exec((u64)page, true);
	ap_checked_in = 0;
	/* ap_wait_ms=0 admits no one: the APs start and park (a test of the
	 * path a late AP takes). */
	if (kopt.ap_wait_ms)
		__atomic_store_n(&ap_slot, pc->apic_id + 1, __ATOMIC_RELEASE);

	u32 sipi = APIC_DM_STARTUP | ((u64)page >> 12);
	u64 t0 = rdtsc_ordered();
	apic_send_ipi(pc->apic_id, APIC_DM_INIT | APIC_LEVEL_ASSERT);
	delay_us(init_wait_us());
	for (int i = 0; i < 2 && __atomic_load_n(&ap_slot, __ATOMIC_ACQUIRE) != SLOT_CLAIMED; i++) {
		apic_send_ipi(pc->apic_id, sipi);
		delay_us(200);
	}
	while (__atomic_load_n(&ap_slot, __ATOMIC_ACQUIRE) != SLOT_CLAIMED &&
	       !tsc_since_ns(t0, kopt.ap_wait_ms * 1000000ul))
		cpu_relax();
	u32 open = pc->apic_id + 1;
	if (!kopt.ap_wait_ms ||
	    __atomic_compare_exchange_n(&ap_slot, &open, SLOT_CLOSED, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -E_BUSY;		/* revoked: if it wakes, it parks */
	u64 us = tsc_to_ns(rdtsc_ordered() - t0) / 1000;
	ap_wait_max_us = MAX(ap_wait_max_us, us);
	/* Admitted: it runs kernel code now, so it must finish. Its set-up
	 * waits for nothing; only a host that stops the vCPU delays it. */
	u64 t1 = rdtsc_ordered();
	while (!__atomic_load_n(&ap_checked_in, __ATOMIC_ACQUIRE)) {
		if (tsc_since_ns(t1, SETUP_TIMEOUT_MS * 1000000ul))
			panic("smp: the CPU with APIC id %u was admitted but did not finish its "
			      "set-up within %u ms", pc->apic_id, SETUP_TIMEOUT_MS);
		cpu_relax();
	}
	__atomic_store_n(&ap_slot, SLOT_CLOSED, __ATOMIC_RELEASE);
	return 0;
}

static bool stop_nmi(struct trap_frame *f);

void smp_init(const u32 *apic_ids, u32 n)
{
	u32 self = apic_id();
	u64 pa = trampoline_page();
	size_t size = trampoline_end - trampoline_start;

	trap_set_handler(VEC_IPI_CALL, call_ipi);
	trap_set_percpu(cpus, MAX_CPUS);
	if (n <= 1)
		return;
	/* Only another CPU sends the stop NMI (smp_stop_others): alone, the
	 * boot CPU needs no handler for it, and every NMI asks one fewer. */
	nmi_register(stop_nmi);
	u64 slot_pa = virt_to_phys(&ap_slot);
	if (!pa || read_cr3() >= (1ul << 32) || slot_pa >= (1ul << 32)) {
		kprintf("smp: no usable trampoline page below 1 MiB (or CR3 or the kernel above "
			"4 GiB); running on the boot CPU only\n");
		return;
	}
	u8 *page = (u8 *)pa;
	memcpy(page, trampoline_start, size);
	parked = (volatile u32 *)(page + (tp_parked - trampoline_start));
	patch32(page, tp_gdt_base, pa + (tp_gdt - trampoline_start));
	patch32(page, tp_far32, pa + (tramp32 - trampoline_start));
	patch32(page, tp_far64, pa + (tramp64 - trampoline_start));
	patch32(page, tp_base_imm, pa);
	patch64(page, tp_cr3, read_cr3());
	patch64(page, tp_efer, EFER_LME | (cpu_features.nx ? EFER_NXE : 0));
	patch64(page, tp_entry, (u64)ap_entry);
	patch32(page, tp_claim_pa, slot_pa);
	patch32(page, tp_park_esp, pa + (tp_park_stack32 - trampoline_start));
	patch32(page, tp_idt_base, pa + (tp_idt - trampoline_start));
	patch16(page, tp_ivt_nmi + 2, pa >> 4);
	u64 iret32 = pa + (tp_park_iret32 - trampoline_start);
	patch16(page, tp_idt_nmi_lo, iret32 & 0xffff);
	patch16(page, tp_idt_nmi_hi, iret32 >> 16);

	for (u32 i = 0; i < n && ncpus < MAX_CPUS; i++) {
		if (apic_ids[i] == self)
			continue;
		struct percpu *pc = &cpus[ncpus];
		pc->cpu = ncpus;
		pc->apic_id = apic_ids[i];
		u64 t0 = rdtsc_ordered();
		int err = start_ap(page, pc);
		u64 took = rdtsc_ordered() - t0;
		if (err) {
			if (err == -E_BUSY)
				kprintf("smp: CPU with APIC id %u did not answer in %u ms; skipping "
					"it (if it wakes later it parks without running the kernel)\n",
					apic_ids[i], kopt.ap_wait_ms);
			else
				kprintf("smp: CPU with APIC id %u: no memory for its stacks; "
					"skipping it\n", apic_ids[i]);
			memset(pc, 0, sizeof(*pc));
			continue;
		}
		kprintf("smp: cpu %u (APIC id %u) online in %lu us\n", ncpus, pc->apic_id,
			tsc_to_ns(took) / 1000);
		ncpus++;
	}
	if (ncpus > 1)
		kprintf("smp: slowest AP answered %lu us after its INIT (the limit is %u ms)\n",
			ap_wait_max_us, kopt.ap_wait_ms);
	/* The page stays reserved (pmm keeps the first MiB): parked CPUs live
	 * in it, with paging off, so its mapping here no longer matters. */
	paging_set_exec(pa, false);
}

/*
 * Wait for pc to run call seq (fn). Until it takes the call the wait is
 * bounded (SMP_CALL_TAKE_MS): a CPU that never takes it (stuck with
 * interrupts off, or gone) gets the call withdrawn, so fn never runs
 * with an argument its caller has given up on. Once taken, fn runs on
 * the caller's data (often its stack): the wait lasts as long as fn and
 * is reported, once, when it is long.
 */
static int wait_call(struct percpu *pc, void (*fn)(void *), u64 seq)
{
	u64 t0 = rdtsc_ordered();

	while (__atomic_load_n(&pc->call_fn, __ATOMIC_ACQUIRE) == fn) {
		if (tsc_since_ns(t0, SMP_CALL_TAKE_MS * 1000000ul)) {
			void (*mine)(void *) = fn;
			if (__atomic_compare_exchange_n(&pc->call_fn, &mine, NULL, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				pc->call_seq = seq - 1;		/* never ran: not pending */
				kprintf("smp: cpu %u did not take a call in %u ms (interrupts off "
					"or stuck); the call is withdrawn\n", pc->cpu,
					SMP_CALL_TAKE_MS);
				return -E_TIMEDOUT;
			}
			break;				/* taken just now */
		}
		cpu_relax();
	}
	bool said = false;
	while (__atomic_load_n(&pc->call_done, __ATOMIC_ACQUIRE) != seq) {
		if (!said && tsc_since_ns(t0, CALL_ALL_SLOW_MS * 1000000ul)) {
			kprintf("smp: cpu %u still runs a call after %u ms; waiting for it to "
				"return\n", pc->cpu, CALL_ALL_SLOW_MS);
			said = true;
		}
		cpu_relax();
	}
	return 0;
}

int smp_call(u32 cpu, void (*fn)(void *), void *arg, bool wait)
{
	struct percpu *pc = smp_cpu(cpu);

	if (!pc)
		return -E_NOENT;
	if (pc == this_cpu()) {
		fn(arg);
		return 0;
	}
	if (__atomic_load_n(&pc->call_fn, __ATOMIC_ACQUIRE))
		return -E_BUSY;
	u64 seq = ++pc->call_seq;
	pc->call_arg = arg;
	__atomic_store_n(&pc->call_fn, fn, __ATOMIC_RELEASE);
	apic_send_ipi(pc->apic_id, APIC_DM_FIXED | VEC_IPI_CALL);
	return wait ? wait_call(pc, fn, seq) : 0;
}

const char *smp_call_why(int err)
{
	switch (err) {
	case 0:
		return "no error";
	case -E_NOENT:
		return "no such CPU";
	case -E_BUSY:
		return "it still runs an earlier call";
	case -E_TIMEDOUT:
		return "it did not take the call in " MS_TEXT(SMP_CALL_TAKE_MS) " ms (interrupts off "
		       "or stuck)";
	default:
		return "unknown error";
	}
}

bool smp_call_done(u32 cpu)
{
	struct percpu *pc = smp_cpu(cpu);

	return !pc || __atomic_load_n(&pc->call_done, __ATOMIC_ACQUIRE) == pc->call_seq;
}

void smp_call_all(void (*fn)(void *), void *arg)
{
	for (u32 i = 0; i < ncpus; i++)
		if (&cpus[i] != this_cpu())
			smp_call(i, fn, arg, false);
	fn(arg);
	/* The callers' functions are short (a run's start and stop): a CPU
	 * still busy after CALL_ALL_SLOW_MS is stuck or starved, said once;
	 * the wait goes on, since the caller relies on every CPU's part. */
	u64 t0 = rdtsc_ordered();
	for (u32 i = 0; i < ncpus; i++) {
		bool said = false;
		while (!smp_call_done(i)) {
			if (!said && tsc_since_ns(t0, CALL_ALL_SLOW_MS * 1000000ul)) {
				kprintf("smp: cpu %u has not finished a call to every CPU after "
					"%u ms; still waiting\n", i, CALL_ALL_SLOW_MS);
				said = true;
			}
			cpu_relax();
		}
	}
}

/* stop_nmi's, once another CPU asked: report where this CPU was, then
 * stop. Out of line: every NMI asks stop_nmi, and the answer is mostly no. */
static __attribute__((noinline, noreturn)) void stop_here(struct trap_frame *f, u32 from)
{
	struct percpu *pc = this_cpu();

	/* Take turns, so each CPU's report is one block. Not in_fatal: that
	 * would let the console lock be taken over mid-line. */
	while (__atomic_exchange_n(&stop_report_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
	kprintf("cpu %u: stopped by cpu %u; it was at:\n", pc->cpu, from);
	kprintf("  RIP %016lx  RSP %016lx  RBP %016lx  RFLAGS %016lx\n",
		f->rip, f->rsp, f->rbp, f->rflags);
	backtrace_print(f->rip, f->rbp, leaf_return_address(f->rip, f->rsp));
	__atomic_store_n(&stop_report_lock, 0, __ATOMIC_RELEASE);
	pc->in_fatal = 1;
	__atomic_add_fetch(&stopped, 1, __ATOMIC_RELEASE);
	for (;;)
		halt();
}

/* NMI from a panicking CPU: report where this CPU was, then stop. */
static bool stop_nmi(struct trap_frame *f)
{
	u32 from = stop_from;

	if (from == ~0u || from == this_cpu()->cpu)
		return false;
	stop_here(f, from);
}

/* NMI every other CPU, have each print where it was, and stop it. */
static void smp_stop_others(enum exit_code code)
{
	(void)code;
	u32 me = this_cpu()->cpu;

	if (ncpus <= 1)
		return;
	u32 expected = ~0u;
	if (!__atomic_compare_exchange_n(&stop_from, &expected, me, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		for (;;)		/* another CPU is already stopping everyone */
			halt();
	apic_send_ipi(0, APIC_DM_NMI | APIC_DEST_OTHERS);
	u64 t0 = rdtsc_ordered();
	while (__atomic_load_n(&stopped, __ATOMIC_ACQUIRE) < ncpus - 1 &&
	       !tsc_since_ns(t0, 2000000000ul))
		cpu_relax();
	if (stopped < ncpus - 1)
		kprintf("smp: %u of %u other CPUs did not answer the stop NMI\n",
			ncpus - 1 - stopped, ncpus - 1);
}
EXIT_STEP(EXIT_STOP_OTHERS, smp_stop_others);

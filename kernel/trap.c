/*
 * trap.c — the IDT, the one C dispatch for every vector, fault fix-ups for
 * probing instructions, and the fatal-exception report. NMIs go to the
 * registry in kernel/nmi.c.
 */
#include "kernel/kernel.h"
#include "kernel/percpu.h"
#include "kernel/trap.h"

#define ISR_STUB_SIZE	16		/* kernel/isr.asm */
#define PERCPU_GDT	96		/* kernel/isr.asm: finds struct percpu from GDTR */
_Static_assert(offsetof(struct percpu, gdt) == PERCPU_GDT, "isr.asm PERCPU_GDT");
#define GATE_INTR	0x8e		/* present, DPL 0, 64-bit interrupt gate */

struct idt_gate {
	u16 off_lo;
	u16 sel;
	u8  ist;
	u8  type;
	u16 off_mid;
	u32 off_hi;
	u32 zero;
} __attribute__((packed));
_Static_assert(sizeof(struct idt_gate) == 16, "IDT gate layout");

extern const char isr_stubs[];
static struct idt_gate idt[256] __attribute__((aligned(16)));
static trap_handler_t handlers[256];
static trap_handler_t stray_handler;

#define FIXUPS_MAX	4
static trap_fixup_t fault_fixups[FIXUPS_MAX];

/* Exception table: probing instructions that may fault (x86.h *_safe). */
struct extable_entry {
	u64 insn;
	u64 fixup;
};
extern const struct extable_entry __start_extable[], __stop_extable[];

static const char *const exc_names[32] = {
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint",
	"#OF overflow", "#BR bound range", "#UD invalid opcode", "#NM device not available",
	"#DF double fault", "coprocessor segment overrun", "#TS invalid TSS", "#NP segment not present",
	"#SS stack fault", "#GP general protection", "#PF page fault", "reserved 15",
	"#MF x87 error", "#AC alignment check", "#MC machine check", "#XM SIMD exception",
	"#VE virtualization", "#CP control protection", "reserved 22", "reserved 23",
	"reserved 24", "reserved 25", "reserved 26", "reserved 27",
	"#HV hypervisor injection", "#VC VMM communication", "#SX security", "reserved 31",
};

const char *trap_name(unsigned vector)
{
	return vector < 32 ? exc_names[vector] : "interrupt";
}

static void set_gate(unsigned v, u64 addr, unsigned ist)
{
	idt[v] = (struct idt_gate){
		.off_lo = addr & 0xffff,
		.sel = SEL_KCODE,
		.ist = ist,
		.type = GATE_INTR,
		.off_mid = (addr >> 16) & 0xffff,
		.off_hi = addr >> 32,
	};
}

void idt_init(void)
{
	for (unsigned v = 0; v < 256; v++)
		set_gate(v, (u64)isr_stubs + v * ISR_STUB_SIZE, 0);
	/* Exceptions that can arrive on a bad stack, or inside other handlers,
	 * get known-good stacks (SDM Vol. 3A 6.14.5). */
	idt[VEC_NMI].ist = IST_NMI;
	idt[VEC_DF].ist = IST_DF;
	idt[VEC_MC].ist = IST_MC;
	idt[VEC_DB].ist = IST_DB;
	idt_load();
}

void idt_load(void)
{
	struct desc_ptr d = { sizeof(idt) - 1, (u64)idt };
	lidt(&d);
}

void trap_set_handler(unsigned vector, trap_handler_t h)
{
	BUG_ON(vector > 255);
	handlers[vector] = h;
}

void trap_set_stray_handler(trap_handler_t h)
{
	stray_handler = h;
}

/* Read by kernel/isr.asm on every entry: 0 when no GS base but the
 * kernel's own can be found there. */
u32 trap_gs_check = 1;

void trap_set_fault_fixup(trap_fixup_t fn)
{
	__atomic_store_n(&trap_gs_check, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < FIXUPS_MAX; i++) {
		trap_fixup_t was = NULL;
		if (__atomic_load_n(&fault_fixups[i], __ATOMIC_ACQUIRE) == fn ||
		    __atomic_compare_exchange_n(&fault_fixups[i], &was, fn, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
	panic("trap_set_fault_fixup: more than %d fix-ups", FIXUPS_MAX);
}

/* Fix-ups take the slots in order and never leave them (as the NMI
 * handlers do, kernel/nmi.c): the first empty slot ends the list. Every
 * NMI comes through here first. Out of line: mostly there are none
 * (has_fixups), and the NMI's path then needs no frame of its own. */
static __attribute__((noinline)) bool run_fixups(struct trap_frame *f)
{
	for (int i = 0; i < FIXUPS_MAX; i++) {
		trap_fixup_t fix = __atomic_load_n(&fault_fixups[i], __ATOMIC_ACQUIRE);
		if (!fix)
			return false;
		if (fix(f))
			return true;
	}
	return false;
}

static inline bool has_fixups(void)
{
	return __atomic_load_n(&fault_fixups[0], __ATOMIC_ACQUIRE);
}

void trap_gs_settled(void)
{
	if (!has_fixups())
		__atomic_store_n(&trap_gs_check, 0, __ATOMIC_RELEASE);
}

static bool extable_fixup(struct trap_frame *f)
{
	for (const struct extable_entry *e = __start_extable; e < __stop_extable; e++) {
		if (e->insn == f->rip) {
			f->rip = e->fixup;
			return true;
		}
	}
	return false;
}

/* isr.asm's, when GS base is not the struct percpu that GDTR points
 * into: pc if that is one of the CPUs', else 0. Reads no memory through
 * pc, nor GS. */
/* The per-CPU structures (smp.c's array), for trap_entry_percpu. */
static const struct percpu *percpu_base;
static u32 percpu_max;

void trap_set_percpu(const struct percpu *base, u32 n)
{
	percpu_base = base;
	percpu_max = n;
}

/* pc, if it is an online CPU's struct percpu (a slot of the array that
 * names itself), else 0. */
u64 trap_entry_percpu(u64 pc);
u64 trap_entry_percpu(u64 pc)
{
	u64 base = (u64)percpu_base, size = sizeof(struct percpu);

	if (!percpu_base || pc < base || pc >= base + percpu_max * size || (pc - base) % size)
		return 0;
	return (u64)((const struct percpu *)pc)->self == pc ? pc : 0;
}

/*
 * R12-R15 as a trap frame holds them: isr.asm's exit does not reload
 * them (kernel/trap.h), so a handler or fix-up that wrote them there
 * would resume the code with registers other than it meant. Checked
 * around every handler but the NMI's (whose path is the sampling one,
 * run on every sample): a frame that changed is fatal.
 */
struct callee_saved {
	u64 r12, r13, r14, r15;
};

static inline struct callee_saved callee_saved_of(const struct trap_frame *f)
{
	return (struct callee_saved){ f->r12, f->r13, f->r14, f->r15 };
}

static void check_callee_saved(const struct trap_frame *f, struct callee_saved was)
{
	if (f->r12 != was.r12 || f->r13 != was.r13 || f->r14 != was.r14 || f->r15 != was.r15)
		panic("trap: the handler of vector %lu wrote R12-R15 into its trap frame (R12 "
		      "%lx -> %lx, R13 %lx -> %lx, R14 %lx -> %lx, R15 %lx -> %lx); the return "
		      "does not reload them", f->vector, was.r12, f->r12, was.r13, f->r13,
		      was.r14, f->r14, was.r15, f->r15);
}

static bool run_fixups_checked(struct trap_frame *f)
{
	struct callee_saved was = callee_saved_of(f);
	bool took = run_fixups(f);

	check_callee_saved(f, was);
	return took;
}

/* Every vector but the NMI's. */
static void dispatch_to(struct trap_frame *f, unsigned v);
static __attribute__((noinline)) void dispatch_other(struct trap_frame *f, unsigned v)
{
	struct callee_saved was = callee_saved_of(f);

	dispatch_to(f, v);
	check_callee_saved(f, was);
}

static void dispatch_to(struct trap_frame *f, unsigned v)
{
	/* A probing instruction's fault reaches its fix-up first; then code
	 * run on purpose gets its chance, at any vector (an INT n it ran). */
	if ((v == VEC_GP || v == VEC_UD) && extable_fixup(f))
		return;
	if (run_fixups(f))
		return;
	if (this_cpu()->nmi_depth && v < 32)
		fatal_trap(f, v == VEC_PF ? "#PF page fault in NMI context" :
			   "CPU exception in NMI context");
	if (handlers[v]) {
		handlers[v](f);
		return;
	}
	if (v < 32)
		fatal_trap(f, exc_names[v]);
	if (stray_handler)
		stray_handler(f);	/* left by firmware, or an unclaimed device: not fatal */
}

/* trap_dispatch's NMI where code run on purpose may claim it, or the NMI
 * came inside an NMI handler. Out of line: with neither, the NMI's path
 * goes straight on to its handlers, with no frame of its own here. */
static __attribute__((noinline)) void dispatch_nmi_checked(struct trap_frame *f)
{
	if (has_fixups() && run_fixups_checked(f))
		return;
	/* Fatal, as an exception in NMI context is (dispatch_other): the
	 * handler's iretq would have let it in (kernel/nmi.c). */
	if (this_cpu()->nmi_depth)
		fatal_trap(f, "NMI nested inside an NMI handler");
	nmi_dispatch(f);
}

/* The NMI first: it is the sampling path, run on every sample, and the
 * other vectors' checks are dispatch_other's. No probing instruction is
 * an NMI, so the exception table has nothing for it; code run on purpose
 * still sees it first. */
void trap_dispatch(struct trap_frame *f);
void trap_dispatch(struct trap_frame *f)
{
	if (f->vector != VEC_NMI)
		dispatch_other(f, f->vector);
	else if (__builtin_expect(has_fixups() || this_cpu()->nmi_depth, 0))
		dispatch_nmi_checked(f);
	else
		nmi_dispatch(f);
}

static void print_pf_error(u64 err)
{
	/* SDM Vol. 3A 4.7: page-fault error code. */
	kprintf("  error code %#lx [%s, %s%s%s%s]\n", err,
		err & 2 ? "write" : "read",
		err & 1 ? "protection violation" : "not present",
		err & 8 ? ", reserved bit set" : "",
		err & 16 ? ", instruction fetch" : "",
		err & 4 ? ", user" : "");
	kprintf("  CR2 %016lx (the address accessed)\n", read_cr2());
}

static void print_rip(const char *label, u64 rip)
{
	u64 off, size;
	const char *name = ksym_lookup(rip, &off, &size);

	if (name)
		kprintf("  %s %016lx %s+0x%lx/0x%lx\n", label, rip, name, off, size);
	else
		kprintf("  %s %016lx ?\n", label, rip);
}

void trap_report(const struct trap_frame *f)
{
	if (f->vector == VEC_PF)
		print_pf_error(f->error);
	else
		kprintf("  error code %#lx\n", f->error);
	print_rip("RIP", f->rip);
	kprintf("  RSP %016lx  RBP %016lx  RFLAGS %016lx\n", f->rsp, f->rbp, f->rflags);
	kprintf("  RAX %016lx  RBX %016lx  RCX %016lx\n", f->rax, f->rbx, f->rcx);
	kprintf("  RDX %016lx  RSI %016lx  RDI %016lx\n", f->rdx, f->rsi, f->rdi);
	kprintf("  R8  %016lx  R9  %016lx  R10 %016lx\n", f->r8, f->r9, f->r10);
	kprintf("  R11 %016lx  R12 %016lx  R13 %016lx\n", f->r11, f->r12, f->r13);
	kprintf("  R14 %016lx  R15 %016lx\n", f->r14, f->r15);
	kprintf("  CS %04lx SS %04lx  CR0 %016lx  CR3 %016lx  CR4 %016lx\n",
		f->cs, f->ss, read_cr0(), read_cr3(), read_cr4());
	kprintf("Call trace:\n");
	backtrace_print(f->rip, f->rbp, leaf_return_address(f->rip, f->rsp));
}

void fatal_trap(struct trap_frame *f, const char *why)
{
	struct percpu *pc = this_cpu();

	irq_disable();
	if (__atomic_exchange_n(&pc->in_fatal, 1, __ATOMIC_ACQ_REL)) {
		/* A fault while reporting a fault: say so and leave at once. */
		kprintf("\nbareperf: FATAL: nested fault (vector %lu, rip %016lx) while reporting\n",
			f->vector, f->rip);
		machine_exit(EXIT_PANIC);
	}
	kprintf("\nbareperf: FATAL: CPU exception %s (vector %lu) on cpu %u\n",
		why, f->vector, pc->cpu);
	trap_report(f);
	panic_stop_others();
	machine_exit(EXIT_PANIC);
}

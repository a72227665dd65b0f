/*
 * apic.c — the local APIC (SDM Vol. 3A ch. 11).
 *
 * x2APIC mode when CPUID.1:ECX[21] says the CPU has it (registers are MSRs
 * 0x800 + offset/16, the ICR one 64-bit MSR), xAPIC MMIO otherwise. The
 * choice is made once and lives in an ops table. The legacy 8259 PICs are
 * remapped and masked so they can never deliver a stray vector.
 */
#include "kernel/kernel.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/trap.h"

#define X2APIC_MSR(reg)	(0x800 + ((reg) >> 4))
#define APIC_DEFAULT_BASE 0xfee00000ul
#define IPI_WAIT_MS	100		/* delivery normally takes microseconds */
#define TIMER_CAL_MS	2		/* the timer's calibration window: ends read
					 * to ~1 us, so within ~500 ppm */

#define PIC1_CMD	0x20
#define PIC1_DATA	0x21
#define PIC2_CMD	0xa0
#define PIC2_DATA	0xa1

struct apic_ops {
	const char *name;
	u32 (*read)(u32 reg);
	void (*write)(u32 reg, u32 val);
	int (*send_icr)(u32 dest, u32 low);
	u32 (*id)(void);
};

static volatile u32 *xapic_mmio;
static const struct apic_ops *ops;
static u64 timer_counts, timer_tsc;	/* the calibration: counts per TSC ticks */
static struct { u64 tsc; u32 count; bool open; } timer_cal;	/* its window's start */
static u32 error_count;
static u32 ipi_timeouts;		/* IPIs still pending after IPI_WAIT_MS */
static u64 stray_count;
static u64 stray_seen[4];		/* vectors already reported */
static bool icr_fence;			/* x2APIC ICR writes need MFENCE;LFENCE (not AMD) */
static u64 icr_fences;			/* ... done since boot, all CPUs */

static u32 xapic_read(u32 reg) { return xapic_mmio[reg / 4]; }
static void xapic_write(u32 reg, u32 val) { xapic_mmio[reg / 4] = val; }
static u32 xapic_id(void) { return xapic_read(APIC_ID) >> 24; }

static int xapic_send_icr(u32 dest, u32 low)
{
	xapic_write(APIC_ICR_HI, dest << 24);
	xapic_write(APIC_ICR, low);
	u64 t0 = rdtsc_ordered();
	while (xapic_read(APIC_ICR) & APIC_DS_PENDING) {
		if (tsc_since_ns(t0, IPI_WAIT_MS * 1000000ul)) {
			ipi_timeouts++;
			if (!this_cpu()->nmi_depth)	/* the console is not NMI-safe */
				kprintf("apic: an IPI to APIC id %u was still pending after "
					"%u ms\n", dest, IPI_WAIT_MS);
			return -E_BUSY;
		}
		cpu_relax();
	}
	return 0;
}

static u32 x2apic_read(u32 reg) { return rdmsr(X2APIC_MSR(reg)); }
static void x2apic_write(u32 reg, u32 val) { wrmsr(X2APIC_MSR(reg), val); }
static u32 x2apic_id(void) { return x2apic_read(APIC_ID); }

/*
 * One MSR write, no delivery-status bit to poll (SDM 11.12.9). WRMSR to
 * the x2APIC registers is not serializing (SDM Vol. 2B WRMSR): on Intel
 * the IPI may reach its target before the stores that came before it
 * (smp_call's mailbox: the function, its argument) are visible there.
 * MFENCE makes them visible, LFENCE keeps the WRMSR from starting before
 * (Linux's weak_wrmsr_fence). AMD orders the write after older stores.
 */
static int x2apic_send_icr(u32 dest, u32 low)
{
	if (icr_fence) {
		mfence_lfence();
		__atomic_add_fetch(&icr_fences, 1, __ATOMIC_RELAXED);
	}
	wrmsr(X2APIC_MSR(APIC_ICR), ((u64)dest << 32) | low);
	return 0;
}

static const struct apic_ops xapic_ops = {
	"xAPIC", xapic_read, xapic_write, xapic_send_icr, xapic_id,
};
static const struct apic_ops x2apic_ops = {
	"x2APIC", x2apic_read, x2apic_write, x2apic_send_icr, x2apic_id,
};

bool apic_is_x2apic(void) { return ops == &x2apic_ops; }
u64 apic_icr_fences(void) { return __atomic_load_n(&icr_fences, __ATOMIC_RELAXED); }
u32 apic_id(void) { return ops->id(); }
u32 apic_read(u32 reg) { return ops->read(reg); }
void apic_write(u32 reg, u32 val) { ops->write(reg, val); }
void apic_eoi(void) { ops->write(APIC_EOI, 0); }
u32 apic_errors(void) { return error_count; }
u64 apic_stray_count(void) { return __atomic_load_n(&stray_count, __ATOMIC_RELAXED); }

bool apic_in_service(u8 v)
{
	return ops->read(APIC_ISR + (v / 32) * 0x10) & (1u << (v % 32));
}

/*
 * A vector >= 32 nobody handles: firmware left it pending, or a device
 * nobody set up fired. Counted, reported the first time per vector, EOI'd
 * if it is in service; never fatal. Interrupt context.
 */
static void stray_handler(struct trap_frame *f)
{
	u8 v = (u8)f->vector;
	bool isr = apic_in_service(v);

	__atomic_add_fetch(&stray_count, 1, __ATOMIC_RELAXED);
	if (!(__atomic_fetch_or(&stray_seen[v / 64], 1ul << (v % 64), __ATOMIC_RELAXED) &
	      (1ul << (v % 64))))
		kprintf("apic: unexpected vector %#x on cpu %u (%s); ignored, counted as spurious\n",
			v, this_cpu()->cpu, isr ? "in service: EOI sent" : "not in service");
	if (isr)
		apic_eoi();
}

/*
 * Firmware may hand over with vectors in service (an interrupt taken and
 * never EOI'd) or still requested: an ISR bit blocks every vector of its
 * priority class and below. As Linux does at set-up, EOI once per bit in
 * service — each EOI retires the highest one (SDM 11.8.5) — bounded by the
 * 256 vectors. Requested ones (IRR) arrive when interrupts open and are
 * taken as strays (stray_handler). Returns the EOIs sent; *irr the vectors
 * still requested.
 */
static u32 clear_in_service(u32 *irr)
{
	u32 eois = 0;

	for (; eois < 256; eois++) {
		u32 any = 0;
		for (u32 i = 0; i < 8; i++)
			any |= ops->read(APIC_ISR + i * 0x10);
		if (!any)
			break;
		apic_eoi();
	}
	*irr = 0;
	for (u32 i = 0; i < 8; i++)
		for (u32 bits = ops->read(APIC_IRR + i * 0x10); bits; bits &= bits - 1)
			(*irr)++;
	return eois;
}

int apic_send_ipi(u32 dest, u32 icr_low)
{
	return ops->send_icr(dest, icr_low);
}

u32 apic_lvtpc_read(void) { return ops->read(APIC_LVT_PC); }
void apic_lvtpc_write(u32 v) { ops->write(APIC_LVT_PC, v); }

void apic_lvtpc_set_nmi(void)
{
	ops->write(APIC_LVT_PC, APIC_DM_NMI);
}

void apic_lvtpc_unmask(void)
{
	ops->write(APIC_LVT_PC, ops->read(APIC_LVT_PC) & ~APIC_LVT_MASKED);
}

/* Remap the 8259s away from the exception vectors, then mask every line:
 * the IOAPIC delivers everything (SDM 11.1; 8259A data sheet ICW1-4). */
static void pic_disable(void)
{
	outb(PIC1_CMD, 0x11);
	outb(PIC2_CMD, 0x11);
	outb(PIC1_DATA, 0x20);
	outb(PIC2_DATA, 0x28);
	outb(PIC1_DATA, 4);
	outb(PIC2_DATA, 2);
	outb(PIC1_DATA, 1);
	outb(PIC2_DATA, 1);
	outb(PIC1_DATA, 0xff);
	outb(PIC2_DATA, 0xff);
}

static void spurious_handler(struct trap_frame *f)
{
	(void)f;		/* no EOI for a spurious vector (SDM 11.9) */
}

static void error_handler(struct trap_frame *f)
{
	(void)f;
	ops->write(APIC_ESR, 0);		/* latch, then read (SDM 11.5.3) */
	u32 esr = ops->read(APIC_ESR);
	error_count++;
	kprintf("apic: error interrupt on cpu %u, ESR %#x\n", this_cpu()->cpu, esr);
	apic_eoi();
}

/*
 * One (TSC, current count) pair: the count read is bracketed by two TSC
 * reads and the tightest of several tries kept, so the pair's error is
 * at most half the bracket (about a microsecond of MMIO under TCG).
 */
static void timer_pair(u64 *tsc, u32 *count)
{
	u64 best = ~0ul;

	for (int i = 0; i < 8; i++) {
		u64 a = rdtsc_ordered();
		u32 c = ops->read(APIC_TMR_CUR);
		u64 b = rdtsc_ordered();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*count = c;
		}
	}
}

/* Start counting the APIC timer's input clock against the TSC, masked,
 * from its largest count down: the window apic_timer_calibrate closes. */
static void open_timer_window(void)
{
	ops->write(APIC_TMR_DIV, 0xb);			/* divide by 1 */
	ops->write(APIC_LVT_TIMER, APIC_LVT_MASKED | VEC_APIC_TIMER);
	ops->write(APIC_TMR_INIT, 0xffffffffu);
	timer_pair(&timer_cal.tsc, &timer_cal.count);
	timer_cal.open = true;
}

/* The window apic_init opened, closed after TIMER_CAL_MS (what is left
 * of it waited out), both ends read as pairs. The ratio is kept, not a
 * rate, so the rate follows tsc_hz if that is refined later (tsc_refine).
 * A count that ran down to 0 (seconds at 1 GHz: a host that held the
 * machine) measured nothing: a fresh window is taken then. */
void apic_timer_calibrate(void)
{
	u64 t1;
	u32 c1;

	if (!timer_cal.open)
		return;
	for (int tries = 0; tsc_hz && tries < 2; tries++) {
		while (rdtsc_ordered() - timer_cal.tsc < tsc_hz / 1000 * TIMER_CAL_MS)
			cpu_relax();
		timer_pair(&t1, &c1);
		if (c1) {
			timer_counts = timer_cal.count - c1;
			timer_tsc = t1 - timer_cal.tsc;
			break;
		}
		open_timer_window();
	}
	timer_cal.open = false;
	ops->write(APIC_TMR_INIT, 0);
	kprintf("apic: %s, id %u, version %#x, timer %lu kHz%s\n", ops->name, ops->id(),
		ops->read(APIC_VERSION) & 0xff, apic_timer_hz() / 1000,
		cpu_features.tsc_deadline ? ", TSC-deadline mode" : "");
}

void apic_init(void)
{
	u64 base = rdmsr(MSR_IA32_APIC_BASE);
	bool bsp = base & APIC_BASE_BSP;

	if (cpu_features.x2apic) {
		/* Disabled -> x2APIC in one write is an illegal transition
		 * (SDM Vol. 3A 11.12.5, figure 11-27; KVM and QEMU #GP it):
		 * enable xAPIC mode first, then EXTD. */
		if (!(base & APIC_BASE_ENABLE)) {
			base = (base | APIC_BASE_ENABLE) & ~APIC_BASE_X2APIC;
			wrmsr(MSR_IA32_APIC_BASE, base);
		}
		wrmsr(MSR_IA32_APIC_BASE, base | APIC_BASE_X2APIC);
		icr_fence = strcmp(cpu_features.vendor, "AuthenticAMD") &&
			    strcmp(cpu_features.vendor, "HygonGenuine");
		ops = &x2apic_ops;
	} else {
		wrmsr(MSR_IA32_APIC_BASE, (base | APIC_BASE_ENABLE) & ~APIC_BASE_X2APIC);
		xapic_mmio = (volatile u32 *)(base & 0xfffff000ul ? base & 0xfffff000ul
								 : APIC_DEFAULT_BASE);
		ops = &xapic_ops;
	}
	if (bsp) {
		pic_disable();
		trap_set_handler(VEC_SPURIOUS, spurious_handler);
		trap_set_handler(VEC_APIC_ERROR, error_handler);
		trap_set_stray_handler(stray_handler);
	}
	ops->write(APIC_TPR, 0);
	ops->write(APIC_LVT_TIMER, APIC_LVT_MASKED);
	ops->write(APIC_LVT_PC, APIC_LVT_MASKED | APIC_DM_NMI);
	/* LINT0 is ExtINT from the 8259 (now masked), LINT1 the NMI pin on a
	 * PC (MADT local APIC NMI entries; this is what QEMU and most boards
	 * wire). Only the boot CPU takes LINT1 NMIs. */
	ops->write(APIC_LVT_LINT0, APIC_LVT_MASKED | APIC_DM_EXTINT);
	ops->write(APIC_LVT_LINT1, bsp ? APIC_DM_NMI : APIC_LVT_MASKED | APIC_DM_NMI);
	ops->write(APIC_LVT_ERROR, VEC_APIC_ERROR);
	ops->write(APIC_ESR, 0);
	ops->write(APIC_ESR, 0);
	ops->write(APIC_SVR, SVR_ENABLE | VEC_SPURIOUS);
	u32 irr, eois = clear_in_service(&irr);
	if (eois || irr)
		kprintf("apic: cpu %u: %u vector%s left in service (EOI sent), %u requested "
			"(taken as spurious)\n", this_cpu()->cpu, eois, eois == 1 ? "" : "s", irr);
	this_cpu()->apic_id = ops->id();
	/* The timer's calibration: once, the boot's (apic_timer_calibrate
	 * closes the window once the TSC's rate is known). */
	if (bsp && !timer_tsc && !timer_cal.open)
		open_timer_window();
}

u64 apic_timer_hz(void)
{
	if (!timer_tsc)
		return 0;
	/* Split so nothing overflows: the remainder is below the window's
	 * TSC ticks, a few million. */
	return timer_counts / timer_tsc * tsc_hz + timer_counts % timer_tsc * tsc_hz / timer_tsc;
}

void apic_timer_periodic(u32 count)
{
	ops->write(APIC_TMR_DIV, 0xb);
	ops->write(APIC_LVT_TIMER, APIC_TIMER_PERIODIC | VEC_APIC_TIMER);
	ops->write(APIC_TMR_INIT, count);
}

void apic_timer_oneshot(u32 count)
{
	ops->write(APIC_TMR_DIV, 0xb);
	ops->write(APIC_LVT_TIMER, APIC_TIMER_ONESHOT | VEC_APIC_TIMER);
	ops->write(APIC_TMR_INIT, count);
}

bool apic_timer_deadline(u64 tsc)
{
	if (!cpu_features.tsc_deadline)
		return false;
	ops->write(APIC_LVT_TIMER, APIC_TIMER_DEADLINE | VEC_APIC_TIMER);
	/* SDM 11.5.4.1: order the LVT write before the MSR write. */
	asm volatile("mfence" : : : "memory");
	wrmsr(MSR_IA32_TSC_DEADLINE, tsc);
	return true;
}

void apic_timer_stop(void)
{
	ops->write(APIC_LVT_TIMER, APIC_LVT_MASKED);
	ops->write(APIC_TMR_INIT, 0);
	if (cpu_features.tsc_deadline)
		wrmsr(MSR_IA32_TSC_DEADLINE, 0);
}

/*
 * hpet.c — the High Precision Event Timer (IA-PC HPET Specification 1.0a).
 *
 * Used as a clock (TSC calibration, timestamps) and as the NMI source the
 * soft PMU samples with on machines without a PMU: one comparator, routed
 * through an IOAPIC pin whose redirection entry delivers an NMI.
 *
 * The comparator runs one-shot and the NMI handler re-arms it for the next
 * expiry, first + k * period, so the phase never drifts. Periodic mode
 * would save that write but its VAL_SET semantics vary between chipsets,
 * and QEMU under -icount fires a periodic comparator twice per period (once
 * at counter == comparator, once after advancing it). Edge-triggered: level
 * mode needs its status bit cleared, and QEMU turns that clear into a
 * second edge on the active-low GSIs 16-23.
 *
 * "Was it mine?" is answered from time: an NMI is ours when the main
 * counter has passed an expiry not yet accounted for, and how many have
 * passed says how many one NMI stands for (NMIs arriving while one is being
 * handled merge; hpet_nmi_merged counts the extra ones). One NMI can
 * arrive with nothing due: when the re-arm writes a comparator for a slot
 * the counter reaches during the write-and-check, the comparator matches
 * (an NMI, latched while we are still in the handler) and rearm_passed()
 * moves on to a later slot. The same holds for the slot that passes while
 * hpet_nmi_stop() turns the comparator off. That echo is ours and is
 * claimed, once per such write, and counted apart (hpet_nmi_echoes), so an
 * unclaimed NMI still means one nobody sent.
 */
#include "kernel/kernel.h"
#include "kernel/platform/acpi.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/trap.h"

#define HPET_GCAP_ID	0x000
#define   GCAP_NUM_TIM(c)	((((c) >> 8) & 0x1f) + 1)
#define   GCAP_COUNT_64		(1ul << 13)
#define   GCAP_PERIOD_FS(c)	((c) >> 32)
#define HPET_GEN_CONF	0x010
#define   CONF_ENABLE		(1ul << 0)
#define   CONF_LEG_RT		(1ul << 1)	/* LegacyReplacement: timers 0/1 on IRQ0/8 */
#define HPET_MAIN_CNT	0x0f0
#define HPET_TN_CONF(n)	(0x100 + 0x20 * (n))
#define   TN_INT_ENB		(1ul << 2)
#define   TN_32MODE_CNF		(1ul << 8)
#define   TN_ROUTE(gsi)		((u64)(gsi) << 9)
#define   TN_ROUTE_CAP(c)	((c) >> 32)
#define HPET_TN_CMP(n)	(0x108 + 0x20 * (n))

#define FS_PER_S	1000000000000000ul
#define ARM_MARGIN_US	50	/* the first expiry is at least this far: a few writes */
#define ARM_TRIES	5	/* the last waits 5 s */

static volatile u8 *mmio;
static u64 hz;
static u32 ntimers;
/* A 32-bit main counter (AMD FCH's, or forced by hpet_test_counter) wraps
 * every 2^32 ticks: about 5 min at 14.318 MHz, 43 s at QEMU's 100 MHz.
 * hpet_read extends it to 64 bits from the last value read, which is right
 * as long as some CPU reads it at least once per wrap: the soft PMU reads
 * it on every tick, calibration within milliseconds. */
static bool counter32;
static u64 ext_last;		/* the last extended value read */

static int nmi_timer = -1;
static volatile u32 *nmi_cmp;	/* its comparator's low half: the NMI's one write */
static u32 nmi_gsi;
static hpet_nmi_fn nmi_fn;	/* set once the start has succeeded */
static void *nmi_arg;
static u64 nmi_count;		/* NMIs claimed */
static u64 nmi_merged;		/* expiries that arrived folded into another */
static u64 nmi_first;		/* main counter value of the first expiry */
static u64 nmi_due;		/* expiries accounted for */
static u64 nmi_next;		/* the next one's counter value: first + due * period */
static u64 nmi_period;
static u64 nmi_armed;		/* comparator value last written */
static u64 nmi_armed_end;	/* the first value whose high half nmi_armed's is not */
static u32 nmi_conf;		/* Tn_CONF with interrupts enabled */
static u32 nmi_dest;		/* APIC id the NMIs go to */
static u64 nmi_epoch;		/* 32-bit counter: the wraps seen by the handler */
static bool nmi_echo_due;	/* rearm_passed() skipped a slot it had written */
static u64 arm_margin;		/* hpet_test_arm_margin: first try's margin, 0 = default */
static u32 nmi_retries;		/* tries the last start undid */
static u64 nmi_echoes;		/* NMIs claimed as such echoes */



static u64 rd(u32 reg) { return *(volatile u64 *)(mmio + reg); }
static u32 rd32(u32 reg) { return *(volatile u32 *)(mmio + reg); }
static void wr(u32 reg, u64 v) { *(volatile u64 *)(mmio + reg) = v; }
static void wr32(u32 reg, u32 v) { *(volatile u32 *)(mmio + reg) = v; }

static u64 start_cap, start_conf;	/* GCAP_ID, and GEN_CONF as found */

bool hpet_start(void)
{
	if (acpi->hpet.src == ACPI_SRC_NONE || !va_mapped(acpi->hpet.addr, 0x400))
		return false;
	mmio = (volatile u8 *)acpi->hpet.addr;
	u64 cap = rd(HPET_GCAP_ID);
	u64 period = GCAP_PERIOD_FS(cap);
	/* The spec caps the period at 100 ns (10^8 fs). */
	if (!period || period > 100000000ul) {
		mmio = NULL;
		return false;
	}
	hz = FS_PER_S / period;
	ntimers = GCAP_NUM_TIM(cap);
	counter32 = !(cap & GCAP_COUNT_64);
	ext_last = rd32(HPET_MAIN_CNT);
	for (u32 n = 0; n < ntimers; n++)
		wr(HPET_TN_CONF(n), rd(HPET_TN_CONF(n)) & ~TN_INT_ENB);
	/* LegacyReplacement (spec 2.3.5.1) sends timers 0 and 1 to IRQ0 and
	 * IRQ8 whatever their routing says, so the comparator the soft PMU
	 * picks would never reach its NMI pin: firmware may leave it on. */
	u64 conf = rd(HPET_GEN_CONF);
	wr(HPET_GEN_CONF, (conf & ~CONF_LEG_RT) | CONF_ENABLE);
	start_cap = cap;
	start_conf = conf;
	return true;
}

void hpet_report(void)
{
	if (!mmio)
		return;
	kprintf("hpet: %lu.%03lu MHz, %u comparators, %s counter%s\n", hz / 1000000,
		hz / 1000 % 1000, ntimers, start_cap & GCAP_COUNT_64 ? "64-bit" : "32-bit",
		start_conf & CONF_LEG_RT ? "; LegacyReplacement was on: turned off" : "");
}

bool hpet_init(void)
{
	if (!hpet_start())
		return false;
	hpet_report();
	return true;
}

u64 hpet_hz(void) { return mmio ? hz : 0; }
/* The main counter, read as two halves (QEMU splits 64-bit accesses) with
 * the high half read twice so a carry between the reads is never torn.
 * Inline: the NMI handler reads it twice per expiry. */
static inline u64 counter(void)
{
	u32 hi, lo;

	if (counter32) {
		/* Extend by the ticks since the last value any CPU read. The
		 * compare-exchange keeps the result monotonic across CPUs and
		 * across an NMI that reads it in between (it then retries). */
		u64 last = __atomic_load_n(&ext_last, __ATOMIC_ACQUIRE), now;
		do {
			lo = rd32(HPET_MAIN_CNT);
			now = last + (u32)(lo - (u32)last);
		} while (!__atomic_compare_exchange_n(&ext_last, &last, now, false,
						      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
		return now;
	}
	do {
		hi = rd32(HPET_MAIN_CNT + 4);
		lo = rd32(HPET_MAIN_CNT);
	} while (hi != rd32(HPET_MAIN_CNT + 4));
	return (u64)hi << 32 | lo;
}

/* The main counter a little after an earlier read `near` (well within
 * 2^32 ticks of it: 43 s at 100 MHz): its low half alone, one register
 * read where counter() makes three. */
static inline u64 counter_after(u64 near)
{
	return near + (u32)(rd32(HPET_MAIN_CNT) - (u32)near);
}

u64 hpet_read(void)
{
	return mmio ? counter() : 0;
}

void hpet_test_counter(u32 bits, u64 value)
{
	if (!mmio)
		return;
	/* The main counter may be written only while halted (spec 2.3.5). */
	wr(HPET_GEN_CONF, rd(HPET_GEN_CONF) & ~CONF_ENABLE);
	wr32(HPET_MAIN_CNT, (u32)value);
	wr32(HPET_MAIN_CNT + 4, value >> 32);
	counter32 = bits == 32 || !(rd(HPET_GCAP_ID) & GCAP_COUNT_64);
	ext_last = counter32 ? (u32)value : value;
	wr(HPET_GEN_CONF, rd(HPET_GEN_CONF) | CONF_ENABLE);
}

void hpet_test_arm_margin(u64 ticks) { arm_margin = ticks; }
u32 hpet_nmi_retries(void) { return nmi_retries; }
u64 hpet_nmi_count(void) { return nmi_count; }
u64 hpet_nmi_merged(void) { return nmi_merged; }
u64 hpet_nmi_echoes(void) { return nmi_echoes; }
u64 hpet_nmi_due(void) { return __atomic_load_n(&nmi_due, __ATOMIC_RELAXED); }
u64 hpet_nmi_origin(void) { return nmi_first - nmi_period; }

u64 hpet_nmi_expiries(u64 counter)
{
	if (!nmi_period || counter < nmi_first)
		return 0;
	return (counter - nmi_first) / nmi_period + 1;
}

/*
 * Write the comparator. Registers are 32 bits wide to QEMU; the high half
 * changes only every 2^32 ticks (43 s at 100 MHz), and then the comparator
 * is written with its interrupt off so no half-written value can fire.
 * From a start on, the values written only grow: below nmi_armed_end, the
 * high half is the one written last (a start sets nmi_armed_end to 0).
 */
static inline void set_comparator(u64 when)
{
	if (__builtin_expect(when < nmi_armed_end, 1)) {
		*nmi_cmp = (u32)when;
	} else {
		int n = nmi_timer;
		wr32(HPET_TN_CONF(n), nmi_conf & ~TN_INT_ENB);
		wr32(HPET_TN_CMP(n) + 4, when >> 32);
		wr32(HPET_TN_CMP(n), (u32)when);
		wr32(HPET_TN_CONF(n), nmi_conf);
		nmi_armed_end = (when | 0xfffffffful) + 1;
	}
	nmi_armed = when;
}

/* Whether the main counter has reached when, which is less than 2^31
 * ticks from it either way (an expiry at most a period on, 21 s at
 * 100 MHz): its low half alone, one register read. */
static inline bool counter_reached(u64 when)
{
	return (s32)(rd32(HPET_MAIN_CNT) - (u32)when) >= 0;
}

/* hpet_nmi's, once an expiry is accounted for and the next armed: fn's
 * call. Out of line, so that hpet_nmi's own path needs no frame: it ends
 * in a jump here. */
static __attribute__((noinline)) bool expired(struct trap_frame *f)
{
	hpet_nmi_fn fn = __atomic_load_n(&nmi_fn, __ATOMIC_ACQUIRE);

	if (fn)
		fn(f, nmi_arg);
	return true;
}

/*
 * Arm the next expiry not yet accounted for. A one-shot comparator set in
 * the past would not match again for 2^64 ticks, so check the counter
 * after writing (spec 2.3.9.2.1). If the slot has passed already, jump to
 * the first slot still in the future and count every slot jumped over as
 * merged (an expiry that produced no NMI of its own). The k-th retry aims
 * 2^k - 1 slots further still, so even a period shorter than one
 * write-and-check (the profiler refuses those) ends the loop in a few tries
 * instead of chasing the counter forever. then: the counter as the NMI
 * read it, a moment ago (the checks read only its low half). The NMI then
 * goes on as after any expiry (expired).
 */
static __attribute__((noinline)) bool rearm_passed(struct trap_frame *f, u64 then)
{
	for (u32 k = 0;; k++) {
		u64 now = counter_after(then);
		u64 passed = (now - nmi_first) / nmi_period + 1 - nmi_due;
		u64 skip = passed + (1ul << MIN(k, 40u)) - 1;
		nmi_echo_due = true;
		nmi_due += skip;
		nmi_merged += skip;
		nmi_next = nmi_first + nmi_due * nmi_period;
		set_comparator(nmi_next);
		if (!counter_reached(nmi_next))
			return expired(f);
	}
}

/* Arm the expiry next (the NMI read the counter at then), then fn's call:
 * the slot checked after the write, and moved on if it has passed. */
static inline __attribute__((always_inline)) bool rearm(struct trap_frame *f, u64 then, u64 next)
{
	set_comparator(next);
	if (__builtin_expect(counter_reached(next), 0))
		return rearm_passed(f, then);	/* out of line: rare */
	return expired(f);
}

/* rearm, where the comparator's high half changes (every 2^32 ticks): out
 * of line, so that the NMI's usual path, a low half's write, needs no
 * frame. */
static __attribute__((noinline)) bool rearm_high(struct trap_frame *f, u64 then, u64 next)
{
	return rearm(f, then, next);
}

/* hpet_nmi's, for an NMI with no expiry due: an echo, a 32-bit counter's
 * wrap, or not ours. Out of line: the expiry's path is the sampling one. */
static __attribute__((noinline)) bool nothing_due(u64 now)
{
	/* A 32-bit comparator in one-shot mode also interrupts when the
	 * main counter wraps (spec 2.3.9.2.3): ours, with nothing due, at
	 * most once per wrap. */
	if (counter32 && now >> 32 != nmi_epoch) {
		nmi_epoch = now >> 32;
		return true;
	}
	if (nmi_echo_due) {
		nmi_echo_due = false;
		nmi_echoes++;
		return true;
	}
	return false;
}

static bool hpet_nmi(struct trap_frame *f)
{
	/* Every CPU runs every NMI handler; only the destination owns the
	 * HPET state (an NMI IPI elsewhere must not claim an expiry). */
	if (this_cpu()->apic_id != nmi_dest)
		return false;
	if (nmi_timer < 0) {
		if (!nmi_echo_due)
			return false;
		nmi_echo_due = false;
		nmi_echoes++;
		return true;
	}
	u64 now = counter(), next = nmi_next;
	if (now < next)
		return nothing_due(now);
	nmi_epoch = now >> 32;
	nmi_echo_due = false;
	/* Mostly one expiry has passed, the one armed last, and the next is
	 * a period on. An NMI that came later stands for all that passed
	 * since (a divide, off the common path). */
	u64 due = nmi_due + 1;
	next += nmi_period;
	if (now >= next) {
		due = (now - nmi_first) / nmi_period + 1;
		next = nmi_first + due * nmi_period;
		nmi_merged += due - nmi_due - 1;
	}
	nmi_next = next;
	__atomic_store_n(&nmi_due, due, __ATOMIC_RELAXED);
	nmi_count++;
	if (__builtin_expect(next >= nmi_armed_end, 0))
		return rearm_high(f, now, next);
	return rearm(f, now, next);
}

/* A comparator with a GSI it can drive that an IOAPIC serves and no ISA
 * device owns. Highest GSI first: the PCI range. */
static int pick_timer(u32 *gsi)
{
	for (u32 n = 0; n < ntimers; n++) {
		u64 conf = rd(HPET_TN_CONF(n));
		u32 cap = TN_ROUTE_CAP(conf);
		for (int g = 31; g >= 0; g--) {
			if ((cap & (1u << g)) && ioapic_has_gsi(g) && !ioapic_gsi_is_isa(g)) {
				*gsi = g;
				return n;
			}
		}
	}
	return -1;
}

int hpet_nmi_start(u64 ticks, u32 dest_apic_id, hpet_nmi_fn fn, void *arg)
{
	static bool registered;
	u32 gsi;

	if (!mmio)
		return -E_NODEV;
	if (!ticks || ticks > HPET_NMI_MAX_TICKS)
		return -E_RANGE;
	if (nmi_timer >= 0)
		return -E_BUSY;
	int n = pick_timer(&gsi);
	if (n < 0)
		return -E_NODEV;
	if (!registered) {
		if (nmi_register(hpet_nmi))
			return -E_BUSY;
		registered = true;
	}
	/* Route first: a destination the IOAPIC cannot address (an x2APIC id
	 * above 255) is an error, not a timer that silently never fires. */
	int err = ioapic_route(gsi, 0, IOAPIC_DM_NMI | IOAPIC_MASKED, dest_apic_id);
	if (err)
		return err;
	__atomic_store_n(&nmi_fn, NULL, __ATOMIC_RELEASE);
	nmi_arg = arg;
	nmi_count = nmi_merged = nmi_due = nmi_echoes = 0;
	nmi_echo_due = false;
	nmi_period = ticks;
	nmi_dest = dest_apic_id;
	nmi_gsi = gsi;
	nmi_timer = n;
	nmi_cmp = (volatile u32 *)(mmio + HPET_TN_CMP(n));

	/* A 32-bit counter: the comparator is 32 bits too (32MODE makes a
	 * 64-bit-capable timer compare that way; ignored where fixed). */
	nmi_conf = TN_INT_ENB | TN_ROUTE(gsi) | (counter32 ? TN_32MODE_CNF : 0);
	ioapic_mask(gsi, false);
	/* The main counter keeps running (it is the clock): the first expiry
	 * is at least ARM_MARGIN_US away, comparator written with its
	 * interrupt off, then enabled. Should the counter pass it before the
	 * interrupt was on (a vCPU held off that long), the start is undone
	 * as hpet_nmi_stop does (an NMI already sent is claimed as an echo)
	 * and tried again, ten times further away each time. fn is called
	 * only once a try has held: an expiry of an undone try, whose NMI
	 * may well have come, is nobody's tick. One that expires between the
	 * check and fn being set is counted (due, count) without a call: a
	 * caller that counts its calls against hpet_nmi_due sees it as lost. */
	u64 margin = arm_margin ? arm_margin : hz / 1000000 * ARM_MARGIN_US;
	for (u32 tries = 0;; tries++, margin *= 10) {
		nmi_retries = tries;
		wr32(HPET_TN_CONF(n), nmi_conf & ~TN_INT_ENB);
		nmi_first = hpet_read() + (arm_margin ? margin : MAX(ticks, margin));
		nmi_next = nmi_first;
		nmi_epoch = nmi_first >> 32;
		nmi_armed_end = 0;		/* forces a two-half write */
		set_comparator(nmi_first);
		wr32(HPET_TN_CONF(n), nmi_conf);
		if (hpet_read() < nmi_first) {
			__atomic_store_n(&nmi_fn, fn, __ATOMIC_RELEASE);
			return 0;
		}
		hpet_nmi_stop();
		if (tries == ARM_TRIES)
			return -E_BUSY;
		nmi_timer = n;
		nmi_count = nmi_merged = nmi_due = 0;
		ioapic_mask(gsi, false);
	}
}

void hpet_nmi_stop(void)
{
	if (nmi_timer < 0)
		return;
	wr(HPET_TN_CONF(nmi_timer), 0);
	ioapic_mask(nmi_gsi, true);
	/* The armed slot passed before the comparator was off: its NMI may
	 * still be on its way, and is ours. */
	if (hpet_read() >= nmi_armed)
		nmi_echo_due = true;
	nmi_timer = -1;
}

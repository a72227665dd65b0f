/*
 * apic.h — local APIC, IOAPIC and HPET (kernel/platform/apic.c, ioapic.c, hpet.c).
 *
 * The local APIC runs in x2APIC mode (MSRs) when the CPU has it, else in
 * xAPIC mode (MMIO); callers never see which (SDM Vol. 3A ch. 11).
 */
#ifndef BAREPERF_KERNEL_APIC_H
#define BAREPERF_KERNEL_APIC_H

#include "kernel/x86.h"

/* Vectors the kernel owns. */
#define VEC_APIC_TIMER	0xec
#define VEC_IPI_CALL	0xed
#define VEC_APIC_ERROR	0xfe
#define VEC_SPURIOUS	0xff

/* Local APIC registers, as xAPIC MMIO offsets; x2APIC MSR = 0x800 + off/16. */
#define APIC_ID		0x020
#define APIC_VERSION	0x030
#define APIC_TPR	0x080
#define APIC_EOI	0x0b0
#define APIC_LDR	0x0d0
#define APIC_SVR	0x0f0
#define   SVR_ENABLE	(1u << 8)
#define APIC_ISR	0x100		/* 8 registers, 0x10 apart: vectors 32i..32i+31 */
#define APIC_IRR	0x200		/* likewise */
#define APIC_ESR	0x280
#define APIC_ICR	0x300		/* x2APIC: one 64-bit MSR 0x830 */
#define APIC_ICR_HI	0x310
#define APIC_LVT_TIMER	0x320
#define APIC_LVT_THERM	0x330
#define APIC_LVT_PC	0x340
#define APIC_LVT_LINT0	0x350
#define APIC_LVT_LINT1	0x360
#define APIC_LVT_ERROR	0x370
#define APIC_TMR_INIT	0x380
#define APIC_TMR_CUR	0x390
#define APIC_TMR_DIV	0x3e0

/* LVT and ICR fields (SDM Vol. 3A 11.5.1, 11.6.1). */
#define APIC_DM_FIXED	(0u << 8)
#define APIC_DM_NMI	(4u << 8)
#define APIC_DM_INIT	(5u << 8)
#define APIC_DM_STARTUP	(6u << 8)
#define APIC_DM_EXTINT	(7u << 8)
#define APIC_DS_PENDING	(1u << 12)	/* xAPIC delivery status */
#define APIC_LEVEL_ASSERT (1u << 14)
#define APIC_TRIG_LEVEL	(1u << 15)
#define APIC_LVT_MASKED	(1u << 16)
#define APIC_TIMER_ONESHOT  (0u << 17)
#define APIC_TIMER_PERIODIC (1u << 17)
#define APIC_TIMER_DEADLINE (2u << 17)
#define APIC_DEST_SELF	(1u << 18)
#define APIC_DEST_ALL	(2u << 18)
#define APIC_DEST_OTHERS (3u << 18)

#define MSR_IA32_TSC_DEADLINE	0x6e0
#define   APIC_BASE_BSP		(1ul << 8)
#define   APIC_BASE_X2APIC	(1ul << 10)
#define   APIC_BASE_ENABLE	(1ul << 11)

/* Local APIC: bring up this CPU's APIC (boot CPU first, then each AP).
 * The boot CPU's first call opens the timer's calibration window, which
 * apic_timer_calibrate closes once tsc_init has the TSC's rate (the two
 * windows overlap). */
void apic_init(void);
void apic_timer_calibrate(void);
bool apic_is_x2apic(void);
u32 apic_id(void);
u32 apic_read(u32 reg);
void apic_write(u32 reg, u32 val);
void apic_eoi(void);				/* NMI-safe */
bool apic_in_service(u8 vector);		/* the vector's ISR bit */
/* Vectors >= 32 nobody handles (trap_set_stray_handler), since boot, all
 * CPUs. */
u64 apic_stray_count(void);
/* Send an IPI: delivery | vector | shorthand; dest is an APIC id (ignored
 * with a shorthand). Waits for xAPIC delivery, bounded. Returns 0 or -E_BUSY. */
int apic_send_ipi(u32 dest, u32 icr_low);
/* x2APIC ICR writes fenced with MFENCE;LFENCE since boot, all CPUs: every
 * IPI on Intel, none on AMD (its x2APIC writes are ordered) or in xAPIC
 * mode (an uncached MMIO store). */
u64 apic_icr_fences(void);
/* The LVT performance-counter entry (SDM Vol. 3A 11.5.1), for the PMU
 * driver (pmu_lvtpc_read/write, pmu/pmu.h). NMI-safe. */
u32 apic_lvtpc_read(void);
void apic_lvtpc_write(u32 v);
/* LVT PC: route PMU overflow to NMI, unmasked. Intel masks it on each PMI
 * (SDM Vol. 3B 20.6.3.5.8), so the PMI handler calls apic_lvtpc_unmask. */
void apic_lvtpc_set_nmi(void);
void apic_lvtpc_unmask(void);			/* NMI-safe */
u32 apic_errors(void);				/* APIC errors seen (ESR reads) */

/* The APIC timer: periodic with a count, one-shot, or TSC deadline. */
u64 apic_timer_hz(void);			/* calibrated input clock, after apic_init */
void apic_timer_periodic(u32 count);
void apic_timer_oneshot(u32 count);
bool apic_timer_deadline(u64 tsc);		/* false: no TSC-deadline mode */
void apic_timer_stop(void);

/* IOAPIC (kernel/platform/ioapic.c). */
#define IOAPIC_DM_FIXED	(0u << 8)
#define IOAPIC_DM_NMI	(4u << 8)
#define IOAPIC_POL_LOW	(1u << 13)
#define IOAPIC_TRIG_LEVEL (1u << 15)
#define IOAPIC_MASKED	(1u << 16)
void ioapic_init(void);
/* Route a GSI: flags = DM | polarity | trigger (| IOAPIC_MASKED); returns 0,
 * -E_NOENT (no IOAPIC serves the GSI) or -E_INVAL (an APIC id above 255:
 * physical destinations are 8 bits without interrupt remapping). */
int ioapic_route(u32 gsi, u8 vector, u32 flags, u32 dest_apic_id);
int ioapic_mask(u32 gsi, bool masked);
/* ISA IRQ to GSI with polarity/trigger flags, from the MADT overrides. */
u32 ioapic_isa_gsi(u8 irq, u32 *flags);
bool ioapic_has_gsi(u32 gsi);
bool ioapic_gsi_is_isa(u32 gsi);		/* some ISA IRQ arrives there */

/* HPET (kernel/platform/hpet.c). hpet_start: the counter on, once the
 * ACPI tables are parsed; false without a usable HPET. hpet_report prints
 * what it found. hpet_init: both. */
bool hpet_start(void);
void hpet_report(void);
bool hpet_init(void);
u64 hpet_read(void);				/* main counter, 64 bits; NMI-safe */
/* For tests: treat the main counter as `bits` (32 or 64) wide — 32 reads
 * only the low half and extends it, as on an AMD FCH HPET — and restart it
 * from `value`. Not while NMIs run. */
void hpet_test_counter(u32 bits, u64 value);
/* Tests: the first try of hpet_nmi_start arms this many ticks ahead (0:
 * the default margin), so that its undo-and-retry path runs; and how many
 * tries the last start undid. */
void hpet_test_arm_margin(u64 ticks);
u32 hpet_nmi_retries(void);
u64 hpet_hz(void);
/* Periodic NMIs to one CPU every `ticks` HPET ticks, through an IOAPIC pin
 * with NMI delivery; fn runs in NMI context with the interrupted frame.
 * Returns 0, -E_NODEV (no HPET, no routable comparator), -E_RANGE (ticks
 * is 0 or not below 2^31), -E_INVAL (the IOAPIC cannot address that APIC
 * id) or -E_BUSY (already running). */
struct trap_frame;
typedef void (*hpet_nmi_fn)(struct trap_frame *f, void *arg);
#define HPET_NMI_MAX_TICKS	((1ul << 31) - 1)	/* longest period hpet_nmi_start takes */
int hpet_nmi_start(u64 ticks, u32 dest_apic_id, hpet_nmi_fn fn, void *arg);
void hpet_nmi_stop(void);
u64 hpet_nmi_count(void);			/* NMIs claimed since start */
u64 hpet_nmi_merged(void);			/* expiries folded into another NMI */
u64 hpet_nmi_echoes(void);			/* NMIs a skipped comparator write echoed */
/* Expiries accounted for since start: every one the main counter has
 * passed by the current NMI, each NMI's own and those merged into it.
 * Read from fn it counts the NMI being handled. NMI-safe. */
u64 hpet_nmi_due(void);
/* The main counter when the NMIs started (the first expiry is `ticks`
 * later), and how many expiries fall at or before main counter value
 * `counter`: the ticks due by then, whatever NMIs arrived. Both stay
 * valid after hpet_nmi_stop. NMI-safe. */
u64 hpet_nmi_origin(void);
u64 hpet_nmi_expiries(u64 counter);

#endif

/*
 * regs.h — PMU register names and fields, private to pmu/.
 *
 * Intel: SDM Vol. 3B ch. 21 "Performance Monitoring" (21.2 architectural
 * performance monitoring, versions 1-5) and Vol. 4 (MSR list).
 * AMD: APM Vol. 2 §13.2 "Hardware Performance Monitoring" (PerfEvtSel /
 * PerfCtr, core performance counter extensions, PerfMonV2).
 */
#ifndef BAREPERF_PMU_REGS_H
#define BAREPERF_PMU_REGS_H

/* CPUID leaves and bits (SDM Vol. 2A CPUID; APM Vol. 3 appendix E). */
#define CPUID_VENDOR			0x0
#define CPUID_FEATURES			0x1
#define   CPUID1_ECX_PDCM		(1u << 15)	/* IA32_PERF_CAPABILITIES exists */
#define   CPUID1_ECX_HYPERVISOR		(1u << 31)
#define CPUID_ARCH_PERFMON		0xa		/* SDM 21.2.1 */
#define   PERFMON_EAX_VERSION(a)	((a) & 0xff)
#define   PERFMON_EAX_NR_GP(a)		(((a) >> 8) & 0xff)
#define   PERFMON_EAX_GP_WIDTH(a)	(((a) >> 16) & 0xff)
#define   PERFMON_EAX_EBX_LEN(a)	(((a) >> 24) & 0xff)
#define   PERFMON_EDX_NR_FIXED(d)	((d) & 0x1f)
#define   PERFMON_EDX_FIXED_WIDTH(d)	(((d) >> 5) & 0xff)
#define   PERFMON_EDX_ANYTHREAD_DEPRECATED (1u << 15)
#define CPUID_HYBRID			0x1a		/* SDM Vol. 2A: native model ID */
#define   HYBRID_EAX_CORE_TYPE(a)	((a) >> 24)
#define   HYBRID_CORE_ATOM		0x20
#define   HYBRID_CORE_CORE		0x40
#define CPUID_PERFMON_EXT		0x23		/* SDM 21.2.x: per-core-type counters */
#define   PERFMON_EXT_SUB_COUNTERS	1		/* sub-leaf 1: EAX GP, EBX fixed bitmaps */
#define   CPUID7_1_EAX_PERFMON_EXT	(1u << 8)	/* CPUID.(7,1):EAX[8]: leaf 23H */
#define CPUID_HYPERVISOR		0x40000000
#define CPUID_EXT_MAX			0x80000000
#define CPUID_EXT_FEATURES		0x80000001
#define   CPUID81_ECX_PERFCTR_CORE	(1u << 23)	/* APM §13.2.2: 6 counters at 0xC0010200 */
#define CPUID_AMD_PERFMON		0x80000022	/* APM §13.2.3 PerfMonV2 */
#define   AMD_PERFMON_EAX_V2		(1u << 0)
#define   AMD_PERFMON_EBX_NR_CORE(b)	((b) & 0xf)

/* Intel architectural perfmon MSRs (SDM Vol. 4, table 2-2). */
#define MSR_IA32_PMC0			0x0c1		/* legacy writes: 32 bits, sign-extended */
#define MSR_IA32_PERFEVTSEL0		0x186
#define MSR_IA32_FIXED_CTR0		0x309
#define MSR_IA32_PERF_CAPABILITIES	0x345
#define   PERF_CAP_SMM_FREEZE		(1ull << 12)	/* DEBUGCTL.FREEZE_WHILE_SMM */
#define   PERF_CAP_FW_WRITE		(1ull << 13)	/* IA32_A_PMCx full-width writes */
#define MSR_IA32_FIXED_CTR_CTRL		0x38d
#define   FIXED_CTRL_OS			0x1ull		/* per counter, 4 bits each */
#define   FIXED_CTRL_USR		0x2ull
#define   FIXED_CTRL_ANY		0x4ull		/* v3+ AnyThread */
#define   FIXED_CTRL_PMI		0x8ull
#define   FIXED_CTRL_SHIFT(i)		(4 * (i))
#define MSR_IA32_PERF_GLOBAL_STATUS	0x38e		/* read-only */
#define MSR_IA32_PERF_GLOBAL_CTRL	0x38f
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL	0x390		/* v4: IA32_PERF_GLOBAL_STATUS_RESET */
#define MSR_IA32_PERF_GLOBAL_STATUS_SET	0x391		/* v4 */
#define   GLOBAL_STATUS_LBR_FRZ		(1ull << 58)	/* v4 */
#define   GLOBAL_STATUS_CTR_FRZ		(1ull << 59)	/* v4 streamlined freeze */
#define   GLOBAL_STATUS_UNC_OVF		(1ull << 61)	/* uncore overflow */
#define   GLOBAL_STATUS_OVF_BUF		(1ull << 62)	/* DS/PEBS buffer */
#define   GLOBAL_STATUS_COND_CHGD	(1ull << 63)
#define MSR_IA32_A_PMC0			0x4c1		/* full-width counter alias */
#define MSR_IA32_DEBUGCTL		0x1d9
#define   DEBUGCTL_FREEZE_PERFMON_ON_PMI (1ull << 12)
#define   DEBUGCTL_FREEZE_WHILE_SMM	(1ull << 14)	/* SDM 17.4.1, 21.8 */
#define MSR_SMI_COUNT			0x34		/* SDM Vol. 4: SMIs since reset, read-only */
/* MSRs some events' selection reads beside PERFEVTSEL (SDM Vol. 4, per model). */
#define MSR_OFFCORE_RSP_0		0x1a6		/* OFFCORE_RESPONSE_0's request/response */
#define MSR_OFFCORE_RSP_1		0x1a7
#define MSR_PEBS_LD_LAT			0x3f6		/* load-latency threshold */
#define MSR_PEBS_FRONTEND		0x3f7		/* FRONTEND_RETIRED's selection */

/* PERFEVTSELx (SDM 21.2.1.1, figure 21-1; AMD PerfEvtSeln, APM §13.2.1). */
#define EVTSEL_EVENT			0x00000000ffull
#define EVTSEL_UMASK			0x000000ff00ull
#define   EVTSEL_UMASK_SHIFT		8
#define EVTSEL_USR			(1ull << 16)
#define EVTSEL_OS			(1ull << 17)
#define EVTSEL_EDGE			(1ull << 18)
#define EVTSEL_INT			(1ull << 20)
#define EVTSEL_ANY			(1ull << 21)	/* Intel v3+ */
#define EVTSEL_EN			(1ull << 22)
#define EVTSEL_INV			(1ull << 23)
#define EVTSEL_CMASK			0x00ff000000ull
#define   EVTSEL_CMASK_SHIFT		24
#define EVTSEL_AMD_EVENT_HI		0xf00000000ull	/* AMD EventSelect[11:8] */
#define   EVTSEL_AMD_EVENT_HI_SHIFT	32

/* What an event spec may set: the rest (EN, INT, OS, USR) is ours. */
#define EVTSEL_RAW_INTEL	(EVTSEL_EVENT | EVTSEL_UMASK | EVTSEL_EDGE | EVTSEL_INV | EVTSEL_CMASK)
#define EVTSEL_RAW_AMD		(EVTSEL_RAW_INTEL | EVTSEL_AMD_EVENT_HI)

/* RDPMC ECX (SDM Vol. 2B RDPMC; 21.2.2). */
#define RDPMC_FIXED			(1u << 30)
#define RDPMC_FAST			(1u << 31)

/* AMD (APM Vol. 2 §13.2). */
#define MSR_K7_EVNTSEL0			0xc0010000	/* legacy: 4 counters, stride 1 */
#define MSR_K7_PERFCTR0			0xc0010004
#define MSR_F15H_PERF_CTL0		0xc0010200	/* core ext: CTL/CTR pairs, stride 2 */
#define MSR_F15H_PERF_CTR0		0xc0010201
#define MSR_AMD_PERF_CNTR_GLOBAL_STATUS	0xc0000300	/* PerfMonV2, read-only */
#define MSR_AMD_PERF_CNTR_GLOBAL_CTL	0xc0000301
#define MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR 0xc0000302
#define MSR_AMD_PERF_CNTR_GLOBAL_STATUS_SET 0xc0000303
#define AMD_NR_LEGACY			4
#define AMD_NR_CORE_EXT			6
#define AMD_CTR_WIDTH			48		/* APM §13.2.1: 48-bit counters */
/* PMCx02B LsSmiRx: SMIs received (AMD PPRs for families 17h, 19h, 1Ah:
 * Zen 1-5; Hygon family 18h is Zen). */
#define AMD_EVENT_LS_SMI_RX		0x2b
#define AMD_SMI_FAMILY_FIRST		0x17
#define AMD_SMI_FAMILY_LAST		0x1a
#define MSR_AMD64_DE_CFG		0xc0011029
#define   DE_CFG_LFENCE_SERIALIZE	(1ull << 1)	/* LFENCE dispatch-serializing */

/* Local APIC LVT performance-counter entry (SDM Vol. 3A 11.5.1). */
#define LVT_DELIVERY_NMI		(4u << 8)
#define LVT_MASKED			(1u << 16)

/* Our unified counter index space: GP i is bit i, fixed i is bit 32 + i,
 * as in IA32_PERF_GLOBAL_CTRL/STATUS (SDM 21.2.2). */
#define PMU_FIXED_BIT(i)		(32 + (i))


/* Intel Processor Trace (SDM Vol. 3C ch. 33; Vol. 4 table 2-2),
 * pmu/trace/pt.c. */
#define CPUID_EXT_FEATURES_7		0x7		/* sub-leaf 0 */
#define   CPUID7_EBX_INTEL_PT		(1u << 25)
#define CPUID_PT			0x14		/* 33.3.1: capability enumeration */
#define   PT0_EBX_CR3_FILTER		(1u << 0)
#define   PT0_EBX_PSB_CYC		(1u << 1)	/* configurable PSB, cycle-accurate mode */
#define   PT0_EBX_IP_FILTER		(1u << 2)	/* IP filtering, TraceStop */
#define   PT0_EBX_MTC			(1u << 3)
#define   PT0_EBX_PTWRITE		(1u << 4)
#define   PT0_ECX_TOPA			(1u << 0)	/* ToPA output */
#define   PT0_ECX_TOPA_MULTI		(1u << 1)	/* ToPA tables with many output entries */
#define   PT0_ECX_SINGLE_RANGE		(1u << 2)	/* single-range output */
#define   PT0_ECX_TRANSPORT		(1u << 3)	/* output to the trace transport subsystem */
#define   PT0_ECX_LIP			(1u << 31)	/* IP payloads are LIPs (CS base added) */
#define   PT1_EAX_NR_RANGES(a)		((a) & 7)
#define   PT1_EBX_PSB_FREQ(b)		((b) >> 16)

#define MSR_IA32_RTIT_OUTPUT_BASE	0x560		/* 33.2.8.7 */
#define MSR_IA32_RTIT_OUTPUT_MASK_PTRS	0x561		/* 33.2.8.8 */
#define   RTIT_MASK_LOWER		0x7full		/* bits 6:0, always 1s */
#define   RTIT_MASK_TABLE_OFFSET_SHIFT	7		/* ToPA: entry index (offset >> 3) */
#define   RTIT_MASK_OUTPUT_OFFSET_SHIFT	32		/* offset in the current region */
#define MSR_IA32_RTIT_CTL		0x570		/* 33.2.8.2 */
#define   RTIT_CTL_TRACEEN		(1ull << 0)
#define   RTIT_CTL_CYCEN		(1ull << 1)
#define   RTIT_CTL_OS			(1ull << 2)
#define   RTIT_CTL_USER			(1ull << 3)
#define   RTIT_CTL_PWREVTEN		(1ull << 4)
#define   RTIT_CTL_FUPONPTW		(1ull << 5)
#define   RTIT_CTL_FABRICEN		(1ull << 6)
#define   RTIT_CTL_CR3FILTER		(1ull << 7)
#define   RTIT_CTL_TOPA			(1ull << 8)
#define   RTIT_CTL_MTCEN		(1ull << 9)
#define   RTIT_CTL_TSCEN		(1ull << 10)
#define   RTIT_CTL_DISRETC		(1ull << 11)
#define   RTIT_CTL_PTWEN		(1ull << 12)
#define   RTIT_CTL_BRANCHEN		(1ull << 13)
#define   RTIT_CTL_PSBFREQ_SHIFT	24		/* bits 27:24 */
#define   RTIT_CTL_ADDR0_CFG_SHIFT	32		/* bits 35:32; 1 = FilterEn */
#define   RTIT_CTL_ADDR_CFG_FILTER	1ull
#define MSR_IA32_RTIT_STATUS		0x571		/* 33.2.8.4 */
#define   RTIT_STATUS_FILTEREN		(1ull << 0)
#define   RTIT_STATUS_CONTEXTEN		(1ull << 1)
#define   RTIT_STATUS_TRIGGEREN		(1ull << 2)
#define   RTIT_STATUS_ERROR		(1ull << 4)
#define   RTIT_STATUS_STOPPED		(1ull << 5)
#define MSR_IA32_RTIT_CR3_MATCH		0x572
#define MSR_IA32_RTIT_ADDR0_A		0x580		/* 33.2.8.5; ADDRn at 0x580 + 2n */
#define MSR_IA32_RTIT_ADDR0_B		0x581

/* ToPA table entries (33.2.7.2, table 33-3). */
#define TOPA_END			(1ull << 0)
#define TOPA_INT			(1ull << 2)
#define TOPA_STOP			(1ull << 4)
#define TOPA_SIZE_SHIFT			6		/* bits 9:6: region = 4 KiB << size */
#define TOPA_BASE_MASK			(~0xfffull)

/* IA32_PERF_GLOBAL_STATUS / _OVF_CTRL: the ToPA PMI (SDM Vol. 3B 21.2.4). */
#define GLOBAL_STATUS_TRACE_TOPA_PMI	(1ull << 55)

#endif

/*
 * pt.h — Intel Processor Trace (pt.c; SDM Vol. 3C ch. 33), the hardware
 * producer of instruction traces into a ring's AUX area: CPUID 14H, ToPA
 * over the AUX pages, the IA32_RTIT_* MSRs, the ToPA PMI. Builds for the
 * host against a PT register model (test/host/pt_model.c).
 */
#ifndef BAREPERF_PMU_TRACE_PT_H
#define BAREPERF_PMU_TRACE_PT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringbuf/ringbuf.h"

struct ipt_caps {
	bool present;			/* usable: CPUID.(7,0):EBX[25] and an output scheme */
	bool topa, topa_multi, single_range, ip_filter, cr3_filter, psb_cyc, mtc, lip;
	uint32_t nr_ranges;		/* IP filter ranges, CPUID.(14H,1):EAX[2:0] */
	uint32_t psb_freq_mask;		/* CPUID.(14H,1):EBX[31:16] */
	char why[120];			/* when !present: why, for messages and SKIPs */
};

/* Probe CPUID leaves 7 and 14H. 0, or -E_NODEV with caps->why set. */
int ipt_probe(struct ipt_caps *caps);

#define IPT_TOPA_ENTRIES		512	/* entries in one table page: outputs + END */

struct ipt_stats {
	uint64_t starts, pmis, commits, bytes, truncated, errors, restarts;
};

struct ipt_cpu {
	const struct ipt_caps *caps;
	struct bp_ring *rb;
	uint64_t aux_size, aux_phys;
	uint64_t *tables;		/* ToPA tables, one page each */
	uint64_t tables_phys;
	uint32_t ntables, per_table;	/* output entries per table */
	uint64_t ctl;			/* IA32_RTIT_CTL without TraceEn */
	uint64_t lo, hi;		/* IP filter [lo, hi), if ctl has ADDR0_CFG */
	bool single;			/* single-range output (no ToPA) */
	struct bp_aux_handle h;
	bool open, running, paused;
	uint64_t start;			/* AUX counter where this handle's output began */
	int64_t marks[2];		/* entries holding INT/STOP, -1: none */
	struct ipt_stats st;
};

/* ToPA table pages ipt_cpu_init needs for aux_pages AUX pages. */
uint32_t ipt_topa_pages(const struct ipt_caps *caps, uint32_t aux_pages);
/*
 * Lay the ToPA tables (memory: ipt_topa_pages() 4 KiB-aligned pages at
 * tables, physical tables_phys) over rb's AUX area (physically contiguous
 * at aux_phys), and choose IA32_RTIT_CTL: branches, CPL 0, TSC packets,
 * ToPA (single-range output where ToPA is absent), the IP filter for
 * [lo, hi) unless that is everything. Touches no MSR. Not NMI-safe.
 */
int ipt_cpu_init(struct ipt_cpu *pc, const struct ipt_caps *caps, struct bp_ring *rb,
		uint64_t aux_phys, void *tables, uint64_t tables_phys, uint64_t lo,
		uint64_t hi, char *err, size_t n);
/* Open an AUX handle, place the STOP/INT marks, program the MSRs, set
 * TraceEn. 0, or -E_BUSY when the area is full (paused). */
int ipt_cpu_start(struct ipt_cpu *pc);
/* TraceEn off, commit what was written. */
void ipt_cpu_stop(struct ipt_cpu *pc);
/* The NMI path: true if this was a ToPA PMI (IA32_PERF_GLOBAL_STATUS bit
 * 55): commit, acknowledge, restart or pause. NMI-safe: yes. */
bool ipt_cpu_pmi(struct ipt_cpu *pc);
/* Restart a tracer paused by a full area once space is free. */
bool ipt_cpu_poll(struct ipt_cpu *pc);

#endif

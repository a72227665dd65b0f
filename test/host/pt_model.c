/*
 * pt_model.c — see pt_model.h. Implements pmu/hw.h for the host build.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "test/host/pt_model.h"

typedef uint64_t u64;
typedef uint32_t u32;

struct pt_model *pt_model;

/* SDM Vol. 4 table 2-2 and Vol. 3C 33.2.8. */
enum {
	M_OUTPUT_BASE = 0x560, M_MASK_PTRS = 0x561, M_CTL = 0x570, M_STATUS = 0x571,
	M_CR3_MATCH = 0x572, M_ADDR0_A = 0x580, M_GLOBAL_STATUS = 0x38e,
	M_GLOBAL_OVF_CTRL = 0x390,
};
#define TRACEEN		(1ull << 0)
#define TOPA		(1ull << 8)
#define STOPPED		(1ull << 5)
#define ERROR		(1ull << 4)
#define TOPA_PMI	(1ull << 55)
#define LVT_MASK	(1u << 16)
/* CTL bits that exist: 0-13, 14-17 MTCFreq, 19-22 CycThresh, 24-27 PSBFreq,
 * 31 EventEn, 55 DisTNT, 56 InjectPsbPmiOnEnable; ADDRn_CFG added per range. */
#define CTL_VALID	(0x3fffull | (0xfull << 14) | (0xfull << 19) | (0xfull << 24) | \
			 (1ull << 31) | (1ull << 55) | (1ull << 56))

void ptm_init(struct pt_model *m, const struct pt_model_cfg *cfg)
{
	memset(m, 0, sizeof(*m));
	m->cfg = *cfg;
	m->mask_ptrs = 0x7f;
	m->lvtpc = LVT_MASK | (4u << 8);
	pt_model = m;
}

static void fault(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fault(const char *fmt, ...)
{
	va_list ap;

	pt_model->faults++;
	va_start(ap, fmt);
	vsnprintf(pt_model->last_fault, sizeof(pt_model->last_fault), fmt, ap);
	va_end(ap);
}

uint64_t ptm_last(const struct pt_model *m, uint32_t msr)
{
	for (size_t i = m->nlog; i-- > 0;)
		if (m->log[i].msr == msr)
			return m->log[i].val;
	return 0;
}

/* ---- pmu/hw.h ---------------------------------------------------------- */

u64 pmu_hw_rdmsr(u32 msr);
void pmu_hw_wrmsr(u32 msr, u64 val);
int pmu_hw_rdmsr_safe(u32 msr, u64 *val);
int pmu_hw_wrmsr_safe(u32 msr, u64 val);
u64 pmu_hw_rdpmc(u32 ecx);
int pmu_hw_rdpmc_safe(u32 ecx, u64 *val);
void pmu_hw_cpuid(u32 leaf, u32 sub, u32 r[4]);
u64 pmu_hw_rdtsc(void);
u32 pmu_lvtpc_read(void);
void pmu_lvtpc_write(u32 v);

static int rd(u32 msr, u64 *v)
{
	struct pt_model *m = pt_model;

	switch (msr) {
	case M_CTL: *v = m->ctl; return 0;
	case M_STATUS: *v = m->status; return 0;
	case M_OUTPUT_BASE: *v = m->base; return 0;
	case M_MASK_PTRS: *v = m->mask_ptrs | 0x7f; return 0;
	case M_GLOBAL_STATUS: *v = m->global_status; return 0;
	case M_CR3_MATCH: *v = 0; return 0;
	default:
		if (msr >= M_ADDR0_A && msr < M_ADDR0_A + 2 * m->cfg.nr_ranges) {
			*v = m->addr[msr - M_ADDR0_A];
			return 0;
		}
		return -1;
	}
}

static int wr(u32 msr, u64 v)
{
	struct pt_model *m = pt_model;
	bool on = m->ctl & TRACEEN;

	if (m->nlog < sizeof(m->log) / sizeof(m->log[0]))
		m->log[m->nlog++] = (struct pt_wrmsr){ msr, v };
	switch (msr) {
	case M_CTL: {
		u64 valid = CTL_VALID;
		if (m->cfg.ip_filter)
			for (u32 i = 0; i < m->cfg.nr_ranges; i++)
				valid |= 0xfull << (32 + 4 * i);
		if (v & ~valid)
			return fault("RTIT_CTL reserved bits %#llx", (unsigned long long)(v & ~valid)), -1;
		if ((v & TOPA) && !m->cfg.topa)
			return fault("RTIT_CTL.ToPA without ToPA support"), -1;
		if (on && (v & ~TRACEEN) != (m->ctl & ~TRACEEN))
			return fault("RTIT_CTL bits other than TraceEn changed while tracing"), -1;
		if ((v & TRACEEN) && !on) {
			if (!(v & TOPA) && !m->cfg.single_range)
				return fault("TraceEn with single-range output, unsupported"), -1;
			if ((v & TOPA) && (m->base & 0xfff))
				m->status |= ERROR;	/* ToPA table not 4K aligned */
		}
		m->ctl = v;
		return 0;
	}
	case M_STATUS:
	case M_OUTPUT_BASE:
	case M_MASK_PTRS:
	case M_CR3_MATCH:
		if (on)
			return fault("WRMSR %#x while TraceEn is 1", msr), -1;
		if (msr == M_STATUS)
			m->status = v;
		else if (msr == M_OUTPUT_BASE) {
			if (v & 0x7f)
				return fault("OUTPUT_BASE[6:0] not 0"), -1;
			m->base = v;
		} else if (msr == M_MASK_PTRS)
			m->mask_ptrs = v | 0x7f;
		return 0;
	case M_GLOBAL_OVF_CTRL:
		m->global_status &= ~v;
		return 0;
	case M_GLOBAL_STATUS:
		return fault("WRMSR to the read-only GLOBAL_STATUS"), -1;
	default:
		if (msr >= M_ADDR0_A && msr < M_ADDR0_A + 2 * m->cfg.nr_ranges) {
			if (on)
				return fault("WRMSR ADDRn while TraceEn is 1"), -1;
			m->addr[msr - M_ADDR0_A] = v;
			return 0;
		}
		return fault("WRMSR to %#x, not modelled", msr), -1;
	}
}

u64 pmu_hw_rdmsr(u32 msr)
{
	u64 v = 0;

	if (rd(msr, &v))
		fault("RDMSR %#x, not modelled", msr);
	return v;
}

void pmu_hw_wrmsr(u32 msr, u64 val)
{
	wr(msr, val);
}

int pmu_hw_rdmsr_safe(u32 msr, u64 *val)
{
	return rd(msr, val) ? -7 : 0;
}

int pmu_hw_wrmsr_safe(u32 msr, u64 val)
{
	return wr(msr, val) ? -7 : 0;
}

u64 pmu_hw_rdpmc(u32 ecx)
{
	fault("RDPMC %#x", ecx);
	return 0;
}

int pmu_hw_rdpmc_safe(u32 ecx, u64 *val)
{
	(void)ecx;
	*val = 0;
	return -7;
}

void pmu_hw_cpuid(u32 leaf, u32 sub, u32 r[4])
{
	const struct pt_model_cfg *c = &pt_model->cfg;

	memset(r, 0, 4 * sizeof(u32));
	if (leaf > c->max_leaf)
		return;
	if (leaf == 0) {
		r[0] = c->max_leaf;
		memcpy(&r[1], "Genu", 4);
		memcpy(&r[3], "ineI", 4);
		memcpy(&r[2], "ntel", 4);
	} else if (leaf == 7 && sub == 0) {
		r[1] = c->pt ? 1u << 25 : 0;
	} else if (leaf == 0x14 && c->pt) {
		if (sub == 0) {
			r[0] = 1;
			r[1] = (c->ip_filter ? 1u << 2 : 0) | 1u << 0 | 1u << 1;
			r[2] = (c->topa ? 1u : 0) | (c->topa_multi ? 2u : 0) | (c->single_range ? 4u : 0);
		} else if (sub == 1) {
			r[0] = c->nr_ranges;
			r[1] = 0x003fu << 16;
		}
	}
}

u64 pmu_hw_rdtsc(void)
{
	return 0;
}

u32 pmu_lvtpc_read(void)
{
	return pt_model->lvtpc;
}

void pmu_lvtpc_write(u32 v)
{
	pt_model->lvtpc = v;
}

/* ---- the output engine ------------------------------------------------- */

static void pmi(struct pt_model *m)
{
	m->global_status |= TOPA_PMI;
	if (m->lvtpc & LVT_MASK) {
		m->pmis_masked++;
		return;
	}
	m->pmis++;
	m->lvtpc |= LVT_MASK;		/* Intel: delivery masks LVT PC */
	if (m->nmi)
		m->nmi(m->nmi_arg);
}

void ptm_emit(struct pt_model *m, const uint8_t *bytes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!(m->ctl & TRACEEN) || (m->status & (STOPPED | ERROR))) {
			m->dropped++;
			continue;
		}
		u64 off = m->mask_ptrs >> 32;
		if (!(m->ctl & TOPA)) {
			u64 mask = (m->mask_ptrs & 0xffffffffull) | 0x7f;
			((uint8_t *)(uintptr_t)m->base)[off] = bytes[i];
			m->mask_ptrs = (m->mask_ptrs & 0xffffffffull) | ((off + 1) & mask) << 32;
			m->written++;
			continue;
		}
		u64 idx = (m->mask_ptrs & 0xffffffffull) >> 7;
		u64 e = ((u64 *)(uintptr_t)m->base)[idx];
		for (int hops = 0; e & 1; hops++) {	/* END: the next table */
			if (hops > 4) {
				m->status |= ERROR;
				break;
			}
			m->base = e & ~0xfffull;
			idx = 0;
			off = 0;
			e = ((u64 *)(uintptr_t)m->base)[0];
		}
		if (m->status & ERROR)
			continue;
		u64 size = 4096ull << ((e >> 6) & 15);
		((uint8_t *)(uintptr_t)(e & ~0xfffull))[off++] = bytes[i];
		m->written++;
		if (off == size) {
			idx++;
			off = 0;
		}
		m->mask_ptrs = 0x7f | idx << 7 | off << 32;
		if (!off) {
			if (e & (1ull << 4))		/* STOP */
				m->status |= STOPPED;
			if (e & (1ull << 2))		/* INT */
				pmi(m);
		}
	}
}

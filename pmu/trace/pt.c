/*
 * pt.c — Intel Processor Trace into the AUX area (SDM Vol. 3C ch. 33).
 *
 * Output goes through a Table of Physical Addresses (ToPA, 33.2.7.2): one
 * 4 KiB output region per AUX page, tables of at most IPT_TOPA_ENTRIES - 1
 * regions closed by an END entry that points to the next table, the last
 * one back to the first, so the hardware writes the AUX area as the ring
 * it is. Where ToPA tables hold one region only (CPUID.(14H,0):ECX[1] =
 * 0) every table is one region and an END. Where ToPA is absent the area
 * is one single-range output region (33.2.7.1), which must be naturally
 * aligned to its size.
 *
 * The AUX protocol (seeds 002/003): ipt_cpu_start opens a handle; its size
 * says how far the hardware may write without reaching data the consumer
 * has not released. The region holding the last byte below that limit
 * gets STOP|INT (tracing stops when it is full and a PMI says so, so
 * nothing unseen is overwritten), the region half way there gets INT
 * (a PMI to commit and let the drain catch up). The ToPA PMI arrives as
 * IA32_PERF_GLOBAL_STATUS bit 55 through the PMU's NMI (33.2.7.2, "ToPA
 * PMI"): the handler clears TraceEn, reads where the output stands
 * (IA32_RTIT_OUTPUT_BASE and _MASK_PTRS, valid once TraceEn is 0,
 * 33.2.8.8), commits with bp_aux_output_end (TRUNCATED if
 * IA32_RTIT_STATUS.Stopped says the STOP region filled), acknowledges bit
 * 55 in IA32_PERF_GLOBAL_OVF_CTRL, unmasks LVT PC and restarts with a new
 * handle. A truncated tracer stays off until ipt_cpu_poll finds space.
 *
 * All MSR access goes through pmu/hw.h, so the host tests run this file
 * unchanged against a PT register model (test/host/pt_model.c). Physical
 * addresses are the caller's: identity-mapped in the kernel, host
 * pointers in the model.
 */
#include "pmu/internal.h"
#include "pmu/trace/pt.h"

#define PT_PAGE		4096ull

int ipt_probe(struct ipt_caps *c)
{
	u32 r[4];

	memset(c, 0, sizeof(*c));
	pmu_hw_cpuid(CPUID_VENDOR, 0, r);
	if (r[0] < CPUID_PT) {
		ksnprintf(c->why, sizeof(c->why), "CPUID has no leaf 14H (highest leaf %#x)", r[0]);
		return -E_NODEV;
	}
	pmu_hw_cpuid(CPUID_EXT_FEATURES_7, 0, r);
	if (!(r[1] & CPUID7_EBX_INTEL_PT)) {
		ksnprintf(c->why, sizeof(c->why), "CPUID.(EAX=07H,ECX=0):EBX[25] is 0: "
			  "this CPU (or its hypervisor) has no Intel PT");
		return -E_NODEV;
	}
	pmu_hw_cpuid(CPUID_PT, 0, r);
	u32 max_sub = r[0], ebx = r[1], ecx = r[2];
	c->cr3_filter = ebx & PT0_EBX_CR3_FILTER;
	c->psb_cyc = ebx & PT0_EBX_PSB_CYC;
	c->ip_filter = ebx & PT0_EBX_IP_FILTER;
	c->mtc = ebx & PT0_EBX_MTC;
	c->topa = ecx & PT0_ECX_TOPA;
	c->topa_multi = ecx & PT0_ECX_TOPA_MULTI;
	c->single_range = ecx & PT0_ECX_SINGLE_RANGE;
	c->lip = ecx & PT0_ECX_LIP;
	if (max_sub >= 1) {
		pmu_hw_cpuid(CPUID_PT, 1, r);
		c->nr_ranges = PT1_EAX_NR_RANGES(r[0]);
		c->psb_freq_mask = PT1_EBX_PSB_FREQ(r[1]);
	}
	if (!c->topa && !c->single_range) {
		ksnprintf(c->why, sizeof(c->why), "Intel PT here has neither ToPA nor single-range "
			  "output (CPUID.(14H,0):ECX[2:0] = %u)", ecx & 7);
		return -E_NODEV;
	}
	c->present = true;
	return 0;
}

uint32_t ipt_topa_pages(const struct ipt_caps *caps, uint32_t aux_pages)
{
	uint32_t per = caps->topa_multi ? IPT_TOPA_ENTRIES - 1 : 1;

	return caps->topa ? (aux_pages + per - 1) / per : 0;
}

static uint64_t *entry(struct ipt_cpu *pc, uint64_t gi)
{
	return &pc->tables[(gi / pc->per_table) * IPT_TOPA_ENTRIES + gi % pc->per_table];
}

int ipt_cpu_init(struct ipt_cpu *pc, const struct ipt_caps *caps, struct bp_ring *rb,
		uint64_t aux_phys, void *tables, uint64_t tables_phys, uint64_t lo,
		uint64_t hi, char *err, size_t n)
{
	uint64_t pages;

	memset(pc, 0, sizeof(*pc));
	pc->caps = caps;
	pc->rb = rb;
	pc->aux_size = rb->ctl->aux_size;
	pc->aux_phys = aux_phys;
	pc->marks[0] = pc->marks[1] = -1;
	pages = pc->aux_size / PT_PAGE;
	if (!caps->present || !pages) {
		ksnprintf(err, n, "Intel PT: %s", caps->present ? "the ring has no AUX area" : caps->why);
		return -E_NODEV;
	}
	pc->ctl = RTIT_CTL_BRANCHEN | RTIT_CTL_OS | RTIT_CTL_TSCEN;
	if (caps->topa) {
		pc->ctl |= RTIT_CTL_TOPA;
		pc->tables = tables;
		pc->tables_phys = tables_phys;
		pc->per_table = caps->topa_multi ? IPT_TOPA_ENTRIES - 1 : 1;
		pc->ntables = ipt_topa_pages(caps, (uint32_t)pages);
		memset(tables, 0, pc->ntables * PT_PAGE);
		for (uint64_t gi = 0; gi < pages; gi++)
			*entry(pc, gi) = (aux_phys + gi * PT_PAGE) & TOPA_BASE_MASK;	/* size 0: 4 KiB */
		for (uint32_t t = 0; t < pc->ntables; t++) {
			uint64_t used = t + 1 < pc->ntables ? pc->per_table
							    : pages - (uint64_t)t * pc->per_table;
			pc->tables[t * IPT_TOPA_ENTRIES + used] =
				(tables_phys + ((t + 1) % pc->ntables) * PT_PAGE) | TOPA_END;
		}
	} else {
		/* 33.2.7.1: the region is naturally aligned to its size. */
		if (aux_phys & (pc->aux_size - 1)) {
			ksnprintf(err, n, "Intel PT: no ToPA here, and single-range output needs the "
				"AUX area aligned to its size (%#lx at %#lx)",
				(unsigned long)pc->aux_size, (unsigned long)aux_phys);
			return -E_INVAL;
		}
		pc->single = true;
	}
	if (!(lo == 0 && hi == ~0ull)) {
		if (!caps->ip_filter || !caps->nr_ranges) {
			ksnprintf(err, n, "Intel PT here has no IP filtering (CPUID.(14H,0):EBX[2] = %u, "
				"%u ranges): trace=pt:all, or the single-step tracer for a range",
				caps->ip_filter, caps->nr_ranges);
			return -E_NODEV;
		}
		pc->ctl |= RTIT_CTL_ADDR_CFG_FILTER << RTIT_CTL_ADDR0_CFG_SHIFT;
		pc->lo = lo;
		pc->hi = hi;
	}
	return 0;
}

static void clear_marks(struct ipt_cpu *pc)
{
	for (int i = 0; i < 2; i++) {
		if (pc->marks[i] >= 0)
			*entry(pc, (uint64_t)pc->marks[i]) &= ~(TOPA_INT | TOPA_STOP);
		pc->marks[i] = -1;
	}
}

/* The output position (offset in the AUX area) the MSRs hold. TraceEn is 0. */
static uint64_t read_pos(struct ipt_cpu *pc)
{
	uint64_t mp = pmu_hw_rdmsr(MSR_IA32_RTIT_OUTPUT_MASK_PTRS);
	uint64_t off = mp >> RTIT_MASK_OUTPUT_OFFSET_SHIFT;

	if (pc->single)
		return off & (pc->aux_size - 1);
	uint64_t base = pmu_hw_rdmsr(MSR_IA32_RTIT_OUTPUT_BASE);
	uint64_t t = (base - pc->tables_phys) / PT_PAGE;
	uint64_t e = (mp & 0xffffffffull) >> RTIT_MASK_TABLE_OFFSET_SHIFT;
	if (e >= pc->per_table) {
		/* Pointing at the END entry: the next table's first region. */
		t = (t + 1) % pc->ntables;
		e = 0;
	}
	return ((t * pc->per_table + e) * PT_PAGE + off) & (pc->aux_size - 1);
}

static void program(struct ipt_cpu *pc, uint64_t pos)
{
	pmu_hw_wrmsr(MSR_IA32_RTIT_STATUS, 0);
	if (pc->single) {
		pmu_hw_wrmsr(MSR_IA32_RTIT_OUTPUT_BASE, pc->aux_phys);
		pmu_hw_wrmsr(MSR_IA32_RTIT_OUTPUT_MASK_PTRS, ((pc->aux_size - 1) | RTIT_MASK_LOWER) |
			     pos << RTIT_MASK_OUTPUT_OFFSET_SHIFT);
	} else {
		uint64_t gi = pos / PT_PAGE;
		pmu_hw_wrmsr(MSR_IA32_RTIT_OUTPUT_BASE,
			     pc->tables_phys + (gi / pc->per_table) * PT_PAGE);
		pmu_hw_wrmsr(MSR_IA32_RTIT_OUTPUT_MASK_PTRS,
			     RTIT_MASK_LOWER | (gi % pc->per_table) << RTIT_MASK_TABLE_OFFSET_SHIFT |
			     (pos % PT_PAGE) << RTIT_MASK_OUTPUT_OFFSET_SHIFT);
	}
	if (pc->ctl & (0xfull << RTIT_CTL_ADDR0_CFG_SHIFT)) {
		pmu_hw_wrmsr(MSR_IA32_RTIT_ADDR0_A, pc->lo);
		pmu_hw_wrmsr(MSR_IA32_RTIT_ADDR0_B, pc->hi - 1);	/* inclusive (33.2.8.5) */
	}
	pmu_hw_wrmsr(MSR_IA32_RTIT_CTL, pc->ctl | RTIT_CTL_TRACEEN);
}

/* Open a handle and arm the hardware at its head. false: the area is full. */
static bool arm(struct ipt_cpu *pc)
{
	uint64_t limit, stop;

	if (bp_aux_output_begin(pc->rb, &pc->h)) {
		pc->paused = true;
		return false;
	}
	pc->open = true;
	/* Below the consumer's data, and short of a full lap (which would
	 * leave the output pointer where it began: indistinguishable from
	 * nothing written). */
	limit = pc->h.head + pc->h.size;
	if (limit > pc->h.head + pc->aux_size - 1)
		limit = pc->h.head + pc->aux_size - 1;
	if (!pc->single) {
		limit &= ~(PT_PAGE - 1);	/* STOP fills its whole region */
		if (limit <= pc->h.head) {
			bp_aux_output_end(&pc->h, 0, BP_AUX_FLAG_TRUNCATED);
			pc->open = false;
			pc->paused = true;
			pc->st.truncated++;
			return false;
		}
		stop = ((limit - 1) & (pc->aux_size - 1)) / PT_PAGE;
		uint64_t mid = (((pc->h.head + limit) / 2) & (pc->aux_size - 1)) / PT_PAGE;
		*entry(pc, stop) |= TOPA_STOP | TOPA_INT;
		pc->marks[0] = (int64_t)stop;
		if (mid != stop) {
			*entry(pc, mid) |= TOPA_INT;
			pc->marks[1] = (int64_t)mid;
		}
	}
	pc->start = pc->h.head;
	pc->paused = false;
	program(pc, pc->h.head & (pc->aux_size - 1));
	pc->running = true;
	pc->st.starts++;
	return true;
}

/* TraceEn off; commit what the hardware wrote. Returns IA32_RTIT_STATUS. */
static uint64_t disarm(struct ipt_cpu *pc)
{
	uint64_t status, written, flags = 0;

	pmu_hw_wrmsr(MSR_IA32_RTIT_CTL, pc->ctl);
	status = pmu_hw_rdmsr(MSR_IA32_RTIT_STATUS);
	written = (read_pos(pc) - pc->start) & (pc->aux_size - 1);
	if (written > pc->h.size)
		written = 0;		/* impossible by the STOP mark; never commit past it */
	clear_marks(pc);
	if (status & RTIT_STATUS_STOPPED) {
		flags |= BP_AUX_FLAG_TRUNCATED;
		pc->st.truncated++;
	}
	if (status & RTIT_STATUS_ERROR) {
		flags |= BP_AUX_FLAG_PARTIAL;
		pc->st.errors++;
	}
	bp_aux_output_end(&pc->h, written, flags);
	pc->open = false;
	pc->running = false;
	pc->st.commits += written > 0;
	pc->st.bytes += written;
	return status;
}

int ipt_cpu_start(struct ipt_cpu *pc)
{
	if (pc->running)
		return 0;
	return arm(pc) ? 0 : -E_BUSY;
}

void ipt_cpu_stop(struct ipt_cpu *pc)
{
	if (pc->running)
		disarm(pc);
	pc->paused = false;
}

bool ipt_cpu_pmi(struct ipt_cpu *pc)
{
	uint64_t status;

	if (!pc->running)
		return false;
	if (!(pmu_hw_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & GLOBAL_STATUS_TRACE_TOPA_PMI))
		return false;
	pc->st.pmis++;
	status = disarm(pc);
	pmu_hw_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, GLOBAL_STATUS_TRACE_TOPA_PMI);
	/* The APIC masked LVT PC when it delivered the PMI (SDM Vol. 3A 11.5.1). */
	pmu_lvtpc_write(LVT_DELIVERY_NMI);
	if (status & RTIT_STATUS_STOPPED) {
		pc->paused = true;	/* the ring stopped too: ipt_cpu_poll restarts */
		return true;
	}
	if (arm(pc))
		pc->st.restarts++;
	return true;
}

bool ipt_cpu_poll(struct ipt_cpu *pc)
{
	if (!pc->paused || pc->running)
		return pc->running;
	if (arm(pc)) {
		pc->st.restarts++;
		return true;
	}
	return false;
}

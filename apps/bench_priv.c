/*
 * bench_priv — what privileged and serializing operations cost: cpuid,
 * rdtsc, rdtscp, rdpmc, rdmsr/wrmsr (IA32_FS_BASE, which this kernel does
 * not use: reading and writing back its value changes nothing), the
 * fences, the harness's own serialized TSC read; and two round trips
 * between this CPU and each other one: an NMI IPI answered by an NMI IPI
 * (nmi_register handlers that claim only what they expect), and a fixed
 * IPI answered by a fixed IPI (vectors BENCH_VEC_PING / _PONG).
 *
 * The round trips need a second CPU (-smp 2 or more) and are skipped with
 * a message otherwise. The partner is idle in the kernel's hlt loop with
 * interrupts on; this CPU takes the answer with interrupts enabled for the
 * duration of the round trip (the LVT entries stay masked).
 */
#include "apps/bench.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/smp.h"
#include "kernel/trap.h"
#include "pmu/pmu.h"

#define PRIV_N		16
#define PRIV_LOOPS	8
#define BENCH_VEC_PING	0xe0
#define BENCH_VEC_PONG	0xe1
#define RT_TIMEOUT_MS	1000

#define MSR_FS_BASE_STR	"0xc0000100"	/* MSR_IA32_FS_BASE (kernel/x86.h) */

BENCH_ASM(cpuid_blk, PRIV_N, "push %rbx", "xor %eax, %eax\n xor %ecx, %ecx\n cpuid", "pop %rbx");
BENCH_ASM(rdtsc_blk, PRIV_N, "", "rdtsc", "");
BENCH_ASM(rdtscp_blk, PRIV_N, "", "rdtscp", "");
BENCH_ASM(rdtsc_ord_blk, PRIV_N, "", "lfence\n rdtsc\n lfence", "");
BENCH_ASM(rdpmc_blk, PRIV_N, "mov (%rdi), %ecx", "rdpmc", "");
BENCH_ASM(rdmsr_blk, PRIV_N, "mov $" MSR_FS_BASE_STR ", %ecx", "rdmsr", "");
BENCH_ASM(wrmsr_blk, PRIV_N, "mov $" MSR_FS_BASE_STR ", %ecx\n rdmsr", "wrmsr", "");
BENCH_ASM(lfence_blk, PRIV_N, "", "lfence", "");
BENCH_ASM(mfence_blk, PRIV_N, "", "mfence", "");
BENCH_ASM(sfence_blk, PRIV_N, "", "sfence", "");
BENCH_ASM(pause_blk, PRIV_N, "", "pause", "");

enum need { NEED_NONE, NEED_RDTSCP, NEED_RDPMC };

static const struct op {
	const char *name;
	const struct bench_asm *code;
	enum need need;
} ops[] = {
	{ "cpuid (leaf 0)", &cpuid_blk, NEED_NONE },
	{ "rdtsc", &rdtsc_blk, NEED_NONE },
	{ "rdtscp", &rdtscp_blk, NEED_RDTSCP },
	{ "lfence; rdtsc; lfence", &rdtsc_ord_blk, NEED_NONE },
	{ "rdpmc", &rdpmc_blk, NEED_RDPMC },
	{ "rdmsr IA32_FS_BASE", &rdmsr_blk, NEED_NONE },
	{ "wrmsr IA32_FS_BASE", &wrmsr_blk, NEED_NONE },
	{ "lfence", &lfence_blk, NEED_NONE },
	{ "mfence", &mfence_blk, NEED_NONE },
	{ "sfence", &sfence_blk, NEED_NONE },
	{ "pause", &pause_blk, NEED_NONE },
};

/* ---- round trips ---- */

struct rt {
	u32 me, peer;			/* CPUs (indices) */
	u32 me_apic, peer_apic;
	bool nmi;
	bool failed;
	u64 timeout;			/* TSC ticks */
};

static struct rt *volatile rt_cur;
static volatile u32 ping_pending;	/* peer: NMI ping owed an answer */
static volatile u32 pong_seen;		/* me: answers received */
static volatile u32 pong_expected;	/* me: an answer is owed to me */

/* NMI: "was it mine?" — only when a ping or pong is outstanding for this CPU. */
static bool rt_nmi(struct trap_frame *f)
{
	struct rt *r = rt_cur;
	u32 cpu = this_cpu()->cpu;

	(void)f;
	if (!r || !r->nmi)
		return false;
	if (cpu == r->peer && __atomic_exchange_n(&ping_pending, 0, __ATOMIC_ACQ_REL)) {
		__atomic_store_n(&pong_expected, 1, __ATOMIC_RELEASE);
		apic_send_ipi(r->me_apic, APIC_DM_NMI);
		return true;
	}
	if (cpu == r->me && __atomic_exchange_n(&pong_expected, 0, __ATOMIC_ACQ_REL)) {
		__atomic_add_fetch(&pong_seen, 1, __ATOMIC_RELEASE);
		return true;
	}
	return false;
}

static void rt_ping(struct trap_frame *f)
{
	struct rt *r = rt_cur;

	(void)f;
	apic_eoi();
	if (r)
		apic_send_ipi(r->me_apic, APIC_DM_FIXED | BENCH_VEC_PONG);
}

static void rt_pong(struct trap_frame *f)
{
	(void)f;
	apic_eoi();
	__atomic_add_fetch(&pong_seen, 1, __ATOMIC_RELEASE);
}

/* `copies` round trips, one after the other. */
BENCH_BODY static void rt_body(void *arg, u64 copies)
{
	struct rt *r = arg;
	u64 flags = read_rflags();

	if (!r->nmi)
		irq_enable();		/* the fixed-IPI answer comes as an interrupt */
	for (u64 i = 0; i < copies && !r->failed; i++) {
		u32 want = pong_seen + 1;
		if (r->nmi) {
			__atomic_store_n(&ping_pending, 1, __ATOMIC_RELEASE);
			apic_send_ipi(r->peer_apic, APIC_DM_NMI);
		} else {
			apic_send_ipi(r->peer_apic, APIC_DM_FIXED | BENCH_VEC_PING);
		}
		u64 t0 = rdtsc();
		while (__atomic_load_n(&pong_seen, __ATOMIC_ACQUIRE) != want) {
			if (rdtsc() - t0 > r->timeout) {
				r->failed = true;
				break;
			}
			cpu_relax();
		}
	}
	if (!(flags & RFLAGS_IF))
		irq_disable();
}

static int round_trips(const struct bench_opts *o, bool nmi)
{
	static struct bench_result res[BENCH_MAX_RESULTS];
	static bool registered;
	static struct rt r;
	u32 me = this_cpu_id();
	int rc = EXIT_OK;

	if (smp_cpus() < 2) {
		if (!o->quiet)
			kprintf("priv: %s round trip: skipped, it needs a second CPU (-smp 2)\n",
				nmi ? "NMI" : "IPI");
		return EXIT_OK;
	}
	if (!registered) {
		nmi_register(rt_nmi);
		trap_set_handler(BENCH_VEC_PING, rt_ping);
		trap_set_handler(BENCH_VEC_PONG, rt_pong);
		registered = true;
	}
	for (u32 peer = 0; peer < smp_cpus(); peer++) {
		/* cpu=all: this CPU against each other one; else the next one. */
		if (peer == me || (o->cpu >= 0 && peer != (me + 1) % smp_cpus()))
			continue;
		r = (struct rt){
			.me = me, .peer = peer, .nmi = nmi,
			.me_apic = this_cpu()->apic_id, .peer_apic = smp_cpu(peer)->apic_id,
			.timeout = (tsc_hz ? tsc_hz : 1000000000ul) / 1000 * RT_TIMEOUT_MS,
		};
		ping_pending = pong_expected = 0;
		__atomic_store_n(&rt_cur, &r, __ATOMIC_RELEASE);
		struct bench_opts here = *o;
		here.cpu = me;			/* measured from this CPU */
		struct bench b = {
			.table = "priv", .name = nmi ? "NMI round trip with" : "IPI round trip with",
			.param = peer, .param_unit = BP_BENCH_PARAM_CPU,
			.work_unit = BP_BENCH_WORK_ROUND_TRIP,
			.unroll = 4, .body = rt_body, .arg = &r,
			.flags = BENCH_NMI_OK,
		};
		int n = bench_run(&b, &here, o->quick ? 7 : 21, 2, res, BENCH_MAX_RESULTS);
		__atomic_store_n(&rt_cur, NULL, __ATOMIC_RELEASE);
		if (n < 0 || r.failed) {
			kprintf("priv: %s round trip to cpu %u: %s\n", nmi ? "NMI" : "IPI", peer,
				r.failed ? "no answer within a second" : "could not run");
			rc = EXIT_FAIL;
		}
	}
	return rc;
}

static bool have(enum need n, const char **why)
{
	u32 a, b, c, d;

	switch (n) {
	case NEED_RDTSCP:
		cpuid(0x80000001, &a, &b, &c, &d);
		*why = "no RDTSCP (CPUID.80000001H:EDX[27])";
		return cpu_features.max_ext_leaf >= 0x80000001 && (d & (1u << 27));
	case NEED_RDPMC:
		*why = "no PMU: rdpmc raises #UD";
		return pmu_boot_caps.kind != PMU_KIND_NONE && pmu_boot_caps.rdpmc_ok;
	default:
		return true;
	}
}

int bench_priv(const struct bench_opts *o)
{
	static struct bench_result res[BENCH_MAX_RESULTS];
	u32 reps = o->quick ? 5 : 11, warmup = 2;
	u32 rdpmc_ecx = 0;		/* GP counter 0: readable whenever a PMU is */
	char title[160];
	int rc = EXIT_OK;

	ksnprintf(title, sizeof(title), "privileged and serializing operations, round trips "
		  "between CPUs; %s per operation", bench_events_meaning(o));
	bench_table("priv", title, "operation", o);
	for (u32 i = 0; i < ARRAY_SIZE(ops); i++) {
		const char *why;
		if (!have(ops[i].need, &why)) {
			if (!o->quiet)
				kprintf("  %s%-28s skipped: %s\n", o->cpu_column ? "    " : "",
					ops[i].name, why);
			continue;
		}
		struct bench b = {
			.table = "priv", .name = ops[i].name,
			.work_unit = BP_BENCH_WORK_OP, .loops = PRIV_LOOPS,
			.code = ops[i].code, .arg = &rdpmc_ecx,
		};
		if (bench_run(&b, o, reps, warmup, res, BENCH_MAX_RESULTS) < 0)
			return EXIT_FAIL;
	}
	if (round_trips(o, true))
		rc = EXIT_FAIL;
	if (round_trips(o, false))
		rc = EXIT_FAIL;
	return rc;
}

static int priv_main(int argc, char **argv)
{
	struct bench_opts o;

	if (bench_parse_args(argc, argv, &o))
		return EXIT_USAGE;
	int rc = bench_priv(&o);
	bench_end(&o);
	return rc;
}

APP(bench_priv, "privileged and serializing ops: cpuid, rdtsc(p), rdpmc, rdmsr/wrmsr, "
    "fences, NMI and IPI round trips", priv_main, 0);

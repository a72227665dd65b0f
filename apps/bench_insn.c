/*
 * bench_insn — latency and throughput of common instructions, measured
 * the way uops.info and nanoBench do: latency from a chain of copies that
 * each depend on the one before, throughput from four independent copies
 * per body (reported per instruction, so 0.25 means four per unit).
 * Under QEMU -icount every row reads 1.000 (the TSC counts instructions):
 * a check of the harness more than of the CPU.
 */
#include "apps/bench.h"

#define INSN_N		64
#define INSN_LOOPS	16

enum need { NEED_NONE, NEED_POPCNT, NEED_AVX, NEED_AVX2 };

BENCH_ASM(nop_tp, INSN_N, "", "nop", "");
BENCH_ASM(add_lat, INSN_N, "xor %eax, %eax\n mov $1, %ecx", "add %rcx, %rax", "");
BENCH_ASM(add_tp, INSN_N, "mov $1, %r8d",
	  "add %r8, %rax\n add %r8, %rcx\n add %r8, %rdx\n add %r8, %r9", "");
BENCH_ASM(imul_lat, INSN_N, "mov $1, %eax\n mov $3, %ecx", "imul %rcx, %rax", "");
BENCH_ASM(imul_tp, INSN_N, "mov $3, %r8d",
	  "imul %r8, %rax\n imul %r8, %rcx\n imul %r8, %rdx\n imul %r8, %r9", "");
/* rax / 1: the quotient stays, the remainder is 0, the chain runs through rax */
BENCH_ASM(div64_lat, INSN_N, "mov $1, %ecx\n mov $0x123456789, %rax\n xor %edx, %edx",
	  "div %rcx", "");
BENCH_ASM(div32_lat, INSN_N, "mov $1, %ecx\n mov $0x12345678, %eax\n xor %edx, %edx",
	  "div %ecx", "");
BENCH_ASM(popcnt_lat, INSN_N, "mov $-1, %rax", "popcnt %rax, %rax", "");
BENCH_ASM(popcnt_tp, INSN_N, "mov $-1, %r8",
	  "popcnt %r8, %rax\n popcnt %r8, %rcx\n popcnt %r8, %rdx\n popcnt %r8, %r9", "");
BENCH_ASM(lea_bd_lat, INSN_N, "xor %eax, %eax", "lea 1(%rax), %rax", "");
BENCH_ASM(lea_bi_lat, INSN_N, "xor %eax, %eax\n mov $1, %ecx", "lea (%rax,%rcx), %rax", "");
BENCH_ASM(lea_bis_lat, INSN_N, "xor %eax, %eax\n mov $1, %ecx", "lea 8(%rax,%rcx,4), %rax", "");
BENCH_ASM(lea_bis_tp, INSN_N, "mov $1, %r8d",
	  "lea 8(%r8,%r8,4), %rax\n lea 8(%r8,%r8,4), %rcx\n"
	  "lea 8(%r8,%r8,4), %rdx\n lea 8(%r8,%r8,4), %r9", "");
BENCH_ASM(mov_lat, INSN_N, "xor %eax, %eax", "mov %rax, %rcx\n mov %rcx, %rax", "");
BENCH_ASM(xor_zero_tp, INSN_N, "",
	  "xor %eax, %eax\n xor %ecx, %ecx\n xor %edx, %edx\n xor %r8d, %r8d", "");
BENCH_ASM(paddd_lat, INSN_N, "pxor %xmm0, %xmm0\n pxor %xmm1, %xmm1", "paddd %xmm1, %xmm0", "");
BENCH_ASM(paddd_tp, INSN_N, "pxor %xmm4, %xmm4",
	  "paddd %xmm4, %xmm0\n paddd %xmm4, %xmm1\n paddd %xmm4, %xmm2\n paddd %xmm4, %xmm3", "");
BENCH_ASM(pmuludq_lat, INSN_N, "pxor %xmm0, %xmm0\n pxor %xmm1, %xmm1",
	  "pmuludq %xmm1, %xmm0", "");
BENCH_ASM(mulpd_lat, INSN_N, "pxor %xmm0, %xmm0\n pxor %xmm1, %xmm1", "mulpd %xmm1, %xmm0", "");
BENCH_ASM(mulpd_tp, INSN_N, "pxor %xmm4, %xmm4",
	  "mulpd %xmm4, %xmm0\n mulpd %xmm4, %xmm1\n mulpd %xmm4, %xmm2\n mulpd %xmm4, %xmm3", "");
BENCH_ASM(addps_lat, INSN_N, "pxor %xmm0, %xmm0\n pxor %xmm1, %xmm1", "addps %xmm1, %xmm0", "");
BENCH_ASM(vmulpd_lat, INSN_N, "vpxor %xmm0, %xmm0, %xmm0\n vpxor %xmm1, %xmm1, %xmm1",
	  "vmulpd %ymm1, %ymm0, %ymm0", "vzeroupper");
BENCH_ASM(vpaddd_lat, INSN_N, "vpxor %xmm0, %xmm0, %xmm0\n vpxor %xmm1, %xmm1, %xmm1",
	  "vpaddd %ymm1, %ymm0, %ymm0", "vzeroupper");
BENCH_ASM(vpaddd_tp, INSN_N, "vpxor %xmm4, %xmm4, %xmm4",
	  "vpaddd %ymm4, %ymm0, %ymm0\n vpaddd %ymm4, %ymm1, %ymm1\n"
	  "vpaddd %ymm4, %ymm2, %ymm2\n vpaddd %ymm4, %ymm3, %ymm3", "vzeroupper");
BENCH_ASM(vpmulld_lat, INSN_N, "vpxor %xmm0, %xmm0, %xmm0\n vpxor %xmm1, %xmm1, %xmm1",
	  "vpmulld %ymm1, %ymm0, %ymm0", "vzeroupper");

static const struct insn {
	const char *name;		/* < 32 characters: the record's name */
	const struct bench_asm *code;
	u32 per_copy;			/* instructions in one copy */
	enum need need;
} insns[] = {
	{ "nop tput", &nop_tp, 1, NEED_NONE },
	{ "add r64 lat", &add_lat, 1, NEED_NONE },
	{ "add r64 tput", &add_tp, 4, NEED_NONE },
	{ "imul r64 lat", &imul_lat, 1, NEED_NONE },
	{ "imul r64 tput", &imul_tp, 4, NEED_NONE },
	{ "div r64 lat", &div64_lat, 1, NEED_NONE },
	{ "div r32 lat", &div32_lat, 1, NEED_NONE },
	{ "popcnt r64 lat", &popcnt_lat, 1, NEED_POPCNT },
	{ "popcnt r64 tput", &popcnt_tp, 4, NEED_POPCNT },
	{ "lea d(b) lat", &lea_bd_lat, 1, NEED_NONE },
	{ "lea (b,i) lat", &lea_bi_lat, 1, NEED_NONE },
	{ "lea d(b,i,4) lat", &lea_bis_lat, 1, NEED_NONE },
	{ "lea d(b,i,4) tput", &lea_bis_tp, 4, NEED_NONE },
	{ "mov r64 lat (x2)", &mov_lat, 2, NEED_NONE },
	{ "xor zero idiom tput", &xor_zero_tp, 4, NEED_NONE },
	{ "paddd xmm lat", &paddd_lat, 1, NEED_NONE },
	{ "paddd xmm tput", &paddd_tp, 4, NEED_NONE },
	{ "pmuludq xmm lat", &pmuludq_lat, 1, NEED_NONE },
	{ "mulpd xmm lat", &mulpd_lat, 1, NEED_NONE },
	{ "mulpd xmm tput", &mulpd_tp, 4, NEED_NONE },
	{ "addps xmm lat", &addps_lat, 1, NEED_NONE },
	{ "vmulpd ymm lat", &vmulpd_lat, 1, NEED_AVX },
	{ "vpaddd ymm lat", &vpaddd_lat, 1, NEED_AVX2 },
	{ "vpaddd ymm tput", &vpaddd_tp, 4, NEED_AVX2 },
	{ "vpmulld ymm lat", &vpmulld_lat, 1, NEED_AVX2 },
};

static bool have(enum need n)
{
	u32 a, b, c, d;

	switch (n) {
	case NEED_POPCNT:
		cpuid(1, &a, &b, &c, &d);
		return c & (1u << 23);		/* CPUID.01H:ECX.POPCNT */
	case NEED_AVX:
		return cpu_features.avx;
	case NEED_AVX2:
		return cpu_features.avx2;
	default:
		return true;
	}
}

int bench_insn(const struct bench_opts *o)
{
	static struct bench_result res[BENCH_MAX_RESULTS];
	u32 reps = o->quick ? 5 : 11, warmup = 2, skipped = 0, lacks = 0;
	char title[160];

	ksnprintf(title, sizeof(title), "latency (a dependent chain) and throughput (4 "
		  "independent); %s per instruction", bench_events_meaning(o));
	bench_table("insn", title, "instruction", o);
	for (u32 i = 0; i < ARRAY_SIZE(insns); i++) {
		const struct insn *in = &insns[i];
		if (!have(in->need)) {
			skipped++;
			lacks |= 1u << in->need;
			continue;
		}
		struct bench b = {
			.table = "insn", .name = in->name,
			.work_unit = BP_BENCH_WORK_INSN, .work = in->per_copy,
			.loops = INSN_LOOPS, .code = in->code,
		};
		if (bench_run(&b, o, reps, warmup, res, BENCH_MAX_RESULTS) < 0)
			return EXIT_FAIL;
	}
	if (skipped && !o->quiet)
		kprintf("insn: %u rows skipped: this CPU lacks%s%s%s\n", skipped,
			lacks & (1u << NEED_POPCNT) ? " POPCNT" : "",
			lacks & (1u << NEED_AVX) ? " AVX" : "",
			lacks & (1u << NEED_AVX2) ? " AVX2" : "");
	return EXIT_OK;
}

static int insn_main(int argc, char **argv)
{
	struct bench_opts o;

	if (bench_parse_args(argc, argv, &o))
		return EXIT_USAGE;
	int rc = bench_insn(&o);
	bench_end(&o);
	return rc;
}

APP(bench_insn, "instruction latency and throughput: add, imul, div, popcnt, lea forms, "
    "vector ops", insn_main, 0);

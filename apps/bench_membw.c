/*
 * bench_membw — memory bandwidth: read, write and copy passes over a
 * working set with scalar (8-byte), SSE (16-byte) and, when the CPU has it,
 * AVX2 (32-byte) loads and stores, on 2 MiB pages. The body is one pass
 * over the buffer (its loop included), so n = 1 pass and 2n = 2 passes:
 * the difference is one pass, reported per 64-byte line (copy: per line
 * copied, the working set being source + destination).
 *
 * Args (after --): min=SIZE max=SIZE and the harness's options.
 */
#include "apps/bench.h"

#define LINE		64ul
#define MAX_SIZES	32

struct bw {
	u8 *buf;
	u64 bytes;			/* the pass: bytes read or written (copy: each half) */
};

/* One pass, 64 bytes per iteration. q starts equal to end, so both are
 * early-clobbered: GCC could otherwise give end and q one register. */
#define PASS(name, loop_body, clobbers...)					\
BENCH_BODY static void name(void *arg, u64 copies)				\
{										\
	struct bw *w = arg;							\
	for (u64 c = 0; c < copies; c++) {					\
		u8 *p = w->buf, *end = w->buf + w->bytes, *q = end;		\
		asm volatile("1:\n" loop_body					\
			     "add $64, %0\n\t"					\
			     "add $64, %1\n\t"					\
			     "cmp %2, %0\n\t"					\
			     "jb 1b"						\
			     : "+&r"(p), "+&r"(q) : "r"(end) : "memory", clobbers); \
	}									\
}

PASS(read_scalar,
     "mov (%0), %%rax\n\t mov 8(%0), %%rcx\n\t mov 16(%0), %%rdx\n\t mov 24(%0), %%r8\n\t"
     "mov 32(%0), %%r9\n\t mov 40(%0), %%r10\n\t mov 48(%0), %%r11\n\t mov 56(%0), %%rax\n\t",
     "rax", "rcx", "rdx", "r8", "r9", "r10", "r11")
PASS(write_scalar,
     "mov %%rax, (%0)\n\t mov %%rax, 8(%0)\n\t mov %%rax, 16(%0)\n\t mov %%rax, 24(%0)\n\t"
     "mov %%rax, 32(%0)\n\t mov %%rax, 40(%0)\n\t mov %%rax, 48(%0)\n\t mov %%rax, 56(%0)\n\t",
     "rax")
PASS(copy_scalar,
     "mov (%0), %%rax\n\t mov 8(%0), %%rcx\n\t mov 16(%0), %%rdx\n\t mov 24(%0), %%r8\n\t"
     "mov %%rax, (%1)\n\t mov %%rcx, 8(%1)\n\t mov %%rdx, 16(%1)\n\t mov %%r8, 24(%1)\n\t"
     "mov 32(%0), %%rax\n\t mov 40(%0), %%rcx\n\t mov 48(%0), %%rdx\n\t mov 56(%0), %%r8\n\t"
     "mov %%rax, 32(%1)\n\t mov %%rcx, 40(%1)\n\t mov %%rdx, 48(%1)\n\t mov %%r8, 56(%1)\n\t",
     "rax", "rcx", "rdx", "r8")
PASS(read_sse,
     "movdqa (%0), %%xmm0\n\t movdqa 16(%0), %%xmm1\n\t"
     "movdqa 32(%0), %%xmm2\n\t movdqa 48(%0), %%xmm3\n\t",
     "xmm0", "xmm1", "xmm2", "xmm3")
PASS(write_sse,
     "movdqa %%xmm0, (%0)\n\t movdqa %%xmm0, 16(%0)\n\t"
     "movdqa %%xmm0, 32(%0)\n\t movdqa %%xmm0, 48(%0)\n\t",
     "xmm0")
PASS(copy_sse,
     "movdqa (%0), %%xmm0\n\t movdqa 16(%0), %%xmm1\n\t"
     "movdqa 32(%0), %%xmm2\n\t movdqa 48(%0), %%xmm3\n\t"
     "movdqa %%xmm0, (%1)\n\t movdqa %%xmm1, 16(%1)\n\t"
     "movdqa %%xmm2, 32(%1)\n\t movdqa %%xmm3, 48(%1)\n\t",
     "xmm0", "xmm1", "xmm2", "xmm3")

/* AVX2 (run only when cpu_features.avx2: the kernel enabled the YMM state). */
#define PASS_AVX2(name, loop_body)						\
__attribute__((target("avx2"))) BENCH_BODY					\
static void name(void *arg, u64 copies)						\
{										\
	struct bw *w = arg;							\
	for (u64 c = 0; c < copies; c++) {					\
		u8 *p = w->buf, *end = w->buf + w->bytes, *q = end;		\
		asm volatile("1:\n" loop_body					\
			     "add $64, %0\n\t"					\
			     "add $64, %1\n\t"					\
			     "cmp %2, %0\n\t"					\
			     "jb 1b\n\t"					\
			     "vzeroupper"					\
			     : "+&r"(p), "+&r"(q) : "r"(end)			\
			     : "memory", "xmm0", "xmm1");			\
	}									\
}

PASS_AVX2(read_avx2, "vmovdqa (%0), %%ymm0\n\t vmovdqa 32(%0), %%ymm1\n\t")
PASS_AVX2(write_avx2, "vmovdqa %%ymm0, (%0)\n\t vmovdqa %%ymm0, 32(%0)\n\t")
PASS_AVX2(copy_avx2, "vmovdqa (%0), %%ymm0\n\t vmovdqa 32(%0), %%ymm1\n\t"
	  "vmovdqa %%ymm0, (%1)\n\t vmovdqa %%ymm1, 32(%1)\n\t")

static const struct bw_kernel {
	const char *name;
	bench_fn fn;
	bool copy, avx2;
} kernels[] = {
	{ "read scalar", read_scalar, false, false },
	{ "read sse", read_sse, false, false },
	{ "read avx2", read_avx2, false, true },
	{ "write scalar", write_scalar, false, false },
	{ "write sse", write_sse, false, false },
	{ "write avx2", write_avx2, false, true },
	{ "copy scalar", copy_scalar, true, false },
	{ "copy sse", copy_sse, true, false },
	{ "copy avx2", copy_avx2, true, true },
};

int bench_membw(const struct bench_opts *o)
{
	static struct bench_result res[BENCH_MAX_RESULTS];
	u64 cap = bench_mem_cap(), lo, hi;
	u32 reps = 5, warmup = 1;
	u64 def_hi = o->quick ? 1ul << 20 : bench_is_tcg() ? 16ul << 20 : 1ul << 30;
	char title[160], a[16];
	s64 best = 0;
	const char *best_name = NULL;
	char best_event[BENCH_NAME_MAX] = "";
	u64 best_size = 0;

	lo = o->min_bytes ? o->min_bytes : o->quick ? 16ul << 10 : 4096;
	hi = o->max_bytes ? o->max_bytes : def_hi;
	if (lo < 4096 || (lo & (lo - 1)) || (hi & (hi - 1)) || hi < lo) {
		kprintf("membw: min and max must be powers of two, 4 KiB <= min <= max\n");
		return EXIT_USAGE;
	}
	if (hi > cap) {
		kprintf("membw: capping the sweep at %s (free RAM)\n",
			bench_fmt_bytes(cap, a, sizeof(a)));
		hi = cap;
	}
	u8 *buf = bench_mem_2m(hi);
	if (!buf) {
		kprintf("membw: no memory for a %s buffer\n", bench_fmt_bytes(hi, a, sizeof(a)));
		return EXIT_FAIL;
	}
	if (!cpu_features.avx2 && !o->quiet)
		kprintf("membw: no AVX2 on this CPU: scalar and SSE only\n");
	ksnprintf(title, sizeof(title), "read, write, copy passes on 2 MiB pages; %s per "
		  "64-byte line", bench_events_meaning(o));
	bench_table("membw", title, "kernel, working set", o);
	for (u32 k = 0; k < ARRAY_SIZE(kernels); k++) {
		const struct bw_kernel *kn = &kernels[k];
		if (kn->avx2 && !cpu_features.avx2)
			continue;
		/* quick: every other size */
		for (u64 size = lo; size <= hi; size *= o->quick ? 4 : 2) {
			struct bw w = { buf, kn->copy ? size / 2 : size };
			struct bench b = {
				.table = "membw", .name = kn->name,
				.param = size, .param_unit = BP_BENCH_PARAM_BYTES,
				.work_unit = BP_BENCH_WORK_LINE, .work = w.bytes / LINE,
				.unroll = 1, .body = kn->fn, .arg = &w,
			};
			int n = bench_run(&b, o, reps, warmup, res, BENCH_MAX_RESULTS);
			if (n < 0) {
				bench_mem_2m_free(buf, hi);
				return EXIT_FAIL;
			}
			/* a value below its noise floor, or from repetitions
			 * NMIs disturbed, is no rate to rank */
			if (n > 0 && bench_result_trusted(&res[0]) &&
			    (!best || res[0].value < best)) {
				best = res[0].value;
				best_name = kn->name;
				strlcpy(best_event, res[0].event, sizeof(best_event));
				best_size = size;
			}
		}
	}
	bench_mem_2m_free(buf, hi);
	if (best_name && !o->quiet) {
		char v[24];
		/* bytes per unit = 64 / (units per line) */
		kprintf("membw: fastest: %s at %s, %s %s per 64-byte line: %s bytes per %s\n",
			best_name, bench_fmt_bytes(best_size, a, sizeof(a)),
			bench_fmt_x1000(best, v, sizeof(v)), best_event,
			bench_fmt_x1000((s64)(LINE * 1000 * 1000 / (u64)best), title, sizeof(title)),
			strcmp(best_event, "tsc") ? best_event : "TSC tick");
	}
	return EXIT_OK;
}

static int membw_main(int argc, char **argv)
{
	struct bench_opts o;

	if (bench_parse_args(argc, argv, &o))
		return EXIT_USAGE;
	int rc = bench_membw(&o);
	bench_end(&o);
	return rc;
}

APP(bench_membw, "memory bandwidth: read, write, copy with scalar, SSE and AVX2 over "
    "4 KiB..1 GiB", membw_main, 0);

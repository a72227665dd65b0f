/*
 * tools/builtin-bench.c — `bareperf bench`: nanoBench's interface on the bareperf
 * kernel. Snippets are assembled here (util/bench_asm.c: GNU as's Intel
 * syntax as nanoBench's, or NASM's with --nasm), sent over the control channel as RUN_CODE requests (uapi/wire.h;
 * the kernel side is apps/bench_code.c) to a kernel booted with
 * control=1 code=1 (in QEMU, started here, or a machine on --tty), and the
 * results printed nanoBench's way: one line per event, per copy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "wire/record.h"
#include "tools/commands.h"
#include "tools/util/bench_args.h"
#include "tools/util/bench_asm.h"
#include "tools/util/bench_check.h"
#include "tools/util/bench_config.h"
#include "tools/util/bench_cr.h"
#include "tools/util/bench_events.h"
#include "tools/util/bench_out.h"
#include "tools/util/control.h"
#include "tools/util/link.h"
#include "tools/util/paths.h"
#include "tools/util/program.h"
#include "tools/util/qemu.h"
#include "tools/util/util.h"
#include "wire/decode.h"
#include "uapi/perf_ring.h"
#include "uapi/wire.h"

#define MAX_EVENTS	CTL_ITEMS_MAX	/* per request: the kernel's BENCH_MAX_EVENTS */
#define MAX_SNIPPETS	100000
#define MAX_REPS	1001		/* -n_measurements: the kernel's BENCH_MAX_REPS */
/* The waits for the boot and for replies count the machine's progress,
 * not wall time (tools/util/control.h: the CPU time QEMU got since the
 * machine's last byte, within 4 times as much wall time): OVMF prints
 * nothing on the serial line for most of its boot, and a loaded host
 * stretches it (11 s quiet, past 120 s of wall time at load 10). */
#define BOOT_WAIT_S	120.0
/* OVMF under -icount counts its instructions through the firmware: the
 * boot to READY takes 100 to 140 s of QEMU's CPU time. */
#define BOOT_WAIT_UEFI_ICOUNT_S	600.0
#define REPLY_WAIT_S	20.0
#define AGG_MAX		(-1)	/* -max: the host's choice of the ITEM's fields */
#define CALL_LEN	12	/* movabs rax, imm64; call rax */

/* The kernel's answer to a RUN_CODE without code (apps/bench_code.c):
 * bench never sends a snippet without code, so only the probe (over
 * --tty, before any snippet) gets it. */
#define PROBE_REPLY	"RUN_CODE: no code (BODY) given"

struct bopts {
	const char *asm_body, *asm_init, *asm_late, *code, *code_init, *batch, *tty, *kernel;
	const char *asm_once, *code_once, *code_late;
	const char *code_c, *code_o, *function;	/* a function of the user's program */
	uint64_t r14_mib;		/* -R14_size; 0: the kernel's 1 MiB */
	bool range, remove_empty, fixed, no_mem;
	const char *build;		/* --uefi: where esp/ is */
	uint64_t unroll, loops, reps, warmup, initial, align, timeout_ms;
	uint64_t flags, cpu;
	bool have_cpu;
	int agg;			/* BP_BENCH_AGG_* */
	struct bench_events ev;		/* -e's, -config's, -msr_config's, in runs */
	const char *config, *msr_config;
	bool check, json, icount, kvm, verbose, uefi;
	bool nasm;			/* --nasm: NASM's syntax, not GNU as's */
	unsigned smp, baud;
	uint64_t pace;
};

struct snippet {
	char *src;			/* as given (batch line or -asm) */
	int line;			/* --batch: its line in the file */
	struct bopts *o;		/* its options: the command line's, or its line's */
	uint8_t *body, *init, *late, *once;
	size_t body_len, init_len, late_len, once_len;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bareperf bench -asm CODE [options]\n"
		"       bareperf bench --batch FILE [options]\n"
		"Measure a snippet of x86-64 code on the bareperf kernel, nanoBench's way:\n"
		"the body unrolled n and 2n times, the difference per copy. nanoBench's\n"
		"options may be abbreviated to any unique prefix (-l for -loop_count).\n"
		"  -asm CODE               Intel syntax as nanoBench's (GNU as), ';' between statements;\n"
		"                          |n an n-byte NOP, n*|x| x written n times\n"
		"  -asm_init CODE          run before the copies (not measured)\n"
		"  -asm_late_init CODE     run after the init code, immediately before the copies\n"
		"  -asm_one_time_init CODE run once, before the first measurement (of each request:\n"
		"                          each snippet, each group of events)\n"
		"  -code FILE, -code_init FILE, -code_late_init FILE, -code_one_time_init FILE\n"
		"                          raw machine code instead\n"
		"  -code_c FILE.c -function NAME   measure a C function: FILE.c compiled with the\n"
		"                          flags of bareperf cflags, loaded into the kernel (LOAD),\n"
		"                          the body a call of NAME (movabs rax, NAME; call rax),\n"
		"                          with no arguments (RDI and RSI hold the areas below)\n"
		"  -code_o FILE.o -function NAME   the same from an object file (cc -c)\n"
		"  --nasm                  -asm and --batch in NASM's syntax (mov rax, qword [r14])\n"
		"  -unroll_count N         copies of the body, n (default 1000)\n"
		"  -loop_count N           iterations of a loop around them (default 0: no loop;\n"
		"                          R15 is the counter)\n"
		"  -n_measurements N       measurements (default 10, at most 1001)\n"
		"  -warm_up_count N        warm-up runs before them (default 5)\n"
		"  -initial_warm_up_count N  runs of both versions before anything (default 0)\n"
		"  -alignment_offset N     the body starts N bytes past a 64-byte boundary\n"
		"  -cpu N                  run it on CPU N (with --smp; default the control CPU, 0)\n"
		"  -min | -max | -median | -avg   the aggregate over measurements (default -avg,\n"
		"                          as nanoBench's: the mean without the top and bottom 20%%)\n"
		"  -range                  also the minimum and maximum: VALUE [MIN;MAX]\n"
		"  -remove_empty_events    leave out events that did not occur (value 0)\n"
		"  -df                     drain the front end after the init code, the late-init\n"
		"                          code and the last copy: LFENCE, 4096 1-byte NOPs, 512\n"
		"                          15-byte NOPs (the same in both versions: not measured)\n"
		"  -fixed_counters         also read the fixed-function counters (instructions,\n"
		"                          cycles, ref-cycles); refused without a PMU that has them\n"
		"  -no_mem                 refused: the harness reads the counters into memory\n"
		"                          between the versions; it has no register-only reading\n"
		"  -R14_size MIB           R14's area, MiB (default 1; set-R14-size.sh's): at most\n"
		"                          the memory the machine has free, else refused\n"
		"  -basic_mode             n copies against 0 copies (the fixed overhead shows)\n"
		"  -no_normalization       the total per measurement, not per copy and iteration\n"
		"Registers: R14, RDI, RSI, RSP and RBP each point into the middle of a memory area\n"
		"of their own (1 MiB; R14's -R14_size), with unmapped guard pages on both sides: an\n"
		"access past one faults and the error names the area. R15 is the loop counter;\n"
		"every other general register starts at 0.\n"
		"  -e EVENTS               comma-separated: tsc, cycles, instructions, raw PMU events,\n"
		"                          msr:0xZ (MSR Z read around each run, as a counter)\n"
		"                          (default: cycles,instructions with a PMU, else tsc)\n"
		"  -config FILE            nanoBench's event lines: EvtSel.UMASK[.FIELD]* NAME (README)\n"
		"                          (any number: 4 to a run of the snippet, never multiplexed)\n"
		"  -msr_config FILE        nanoBench's MSR lines: msr_X=V(.msr_Y=W)* msr_Z NAME, MSR Z\n"
		"                          read around each run like a counter\n"
		"  --check                 assemble and parse all of it, print the events and their runs\n"
		"  -verbose                also every measurement's counts of the two versions (stderr)\n"
		"  --timeout MS            the watchdog stops a snippet after MS (default 2000)\n"
		"  --batch FILE            one snippet per line ('#' comments), one row each (CSV); a line\n"
		"                          starting with '-' is one experiment's nanoBench options\n"
		"                          (-asm \"...\" -unroll_count N ...), quoted as in a shell\n"
		"  --json                  JSON instead of text or CSV\n"
		"  --qemu                  boot the kernel in QEMU (default)\n"
		"  --uefi                  QEMU: boot through OVMF and the loader (LIBDIR/esp)\n"
		"  --build DIR             where the ESP is, for --uefi (default LIBDIR)\n"
		"  --icount                QEMU -icount shift=0: the TSC counts instructions\n"
		"  --kvm                   QEMU with KVM (a real PMU)\n"
		"  --smp N                 CPUs of the QEMU machine\n"
		"  --pace BAUD             QEMU: the kernel holds its stream to a serial line's rate\n"
		"  --tty DEV [--baud N]    a machine booted with control=1 code=1 stream=uart\n"
		"  -k, --kernel PATH       the kernel (default LIBDIR/kernel.elf)\n"
		"The kernel runs the code in ring 0: code=1 is for machines you own.\n"
		"\n"
		"LIBDIR, where the kernel and the ESP come from: BUILD for a build tree's\n"
		"BUILD/bareperf, PREFIX/lib/bareperf for an installed PREFIX/bin/bareperf\n"
		"(make install), or $BAREPERF_LIBDIR when set.\n");
}

static int parse_num(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;

	errno = 0;
	unsigned long long x = strtoull(s ? s : "", &end, 0);
	if (!s || !*s || *end || errno || x < min || x > max || *s == '-') {
		fprintf(stderr, "bareperf bench: %s needs a number from %llu to %llu, not '%s'\n",
			opt, (unsigned long long)min, (unsigned long long)max, s ? s : "");
		return -1;
	}
	*v = x;
	return 0;
}

/*
 * Every single-dash option parse_opts takes, and nanoBench's that bench
 * refuses (refused[]): an abbreviation is resolved among all of them, as
 * nanoBench resolves its own (kernel-nanoBench.sh's set: -u is
 * -unroll_count). An option added to parse_opts is added here.
 */
static const char *const opt_names[] = {
	"-asm", "-asm_init", "-asm_late_init", "-asm_one_time_init", "-code", "-code_init",
	"-code_late_init", "-code_one_time_init", "-config", "-msr_config",
	"-unroll_count", "-loop_count", "-n_measurements", "-warm_up_count",
	"-initial_warm_up_count", "-alignment_offset", "-cpu", "-min", "-max", "-median", "-avg",
	"-range", "-basic_mode", "-no_normalization", "-verbose", "-df", "-remove_empty_events",
	"-fixed_counters", "-no_mem", "-R14_size", "-e", "-k", "-h", "-v",
	"-code_c", "-code_o", "-function",
};

/* nanoBench's options bench does not take, and why; all three are
 * nanoBench.sh's alone, never abbreviated (an abbreviation of none). */
static const struct {
	const char *name, *why;
} refused[] = {
	{ "-usr", "nanoBench.sh's (user space): bench runs the code in ring 0, as "
		  "kernel-nanoBench.sh" },
	{ "-os", "nanoBench.sh's (user space): events count in ring 0, where the code runs" },
	{ "-debug", "nanoBench.sh's (user space): a fault is reported with its offset instead" },
};

/* What a --batch line may not set: the machine, the output, the events
 * (one set for the whole table). */
static const char *const not_per_line[] = { "-e", "-k", "-h", "-config", "-msr_config",
					    "-fixed_counters", "-code_c", "-code_o", "-function" };

/* The option argv word a names (an abbreviation resolved), or NULL (said). */
static const char *opt_resolve(const char *a, bool line)
{
	char why[512];
	size_t nn = sizeof(opt_names) / sizeof(opt_names[0]);
	const char *name = bench_opt_resolve(a, opt_names, (int)nn, why, sizeof(why));

	if (!name) {
		fprintf(stderr, "bareperf bench: %s\n", why);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (!strcmp(name, refused[i].name)) {
			fprintf(stderr, "bareperf bench: %s is nanoBench's, not bench's: %s\n", name,
				refused[i].why);
			return NULL;
		}
	for (size_t i = 0; line && i < sizeof(not_per_line) / sizeof(not_per_line[0]); i++)
		if (!strcmp(name, not_per_line[i]) || !strncmp(name, "--", 2)) {
			fprintf(stderr, "bareperf bench: %s is the command line's, not a --batch "
				"line's\n", name);
			return NULL;
		}
	return name;
}

/* The code options of one experiment together (what: the start of the
 * message): 0, or -1 with the reason said. */
static int check_code_opts(const struct bopts *o, const char *what)
{
	const char *both = o->asm_init && o->code_init ? "init" :
			   o->asm_late && o->code_late ? "late_init" :
			   o->asm_once && o->code_once ? "one_time_init" : NULL;
	if (both) {
		fprintf(stderr, "%s: -asm_%s and -code_%s together\n", what, both, both);
		return -1;
	}
	if (o->no_mem) {
		fprintf(stderr, "%s: -no_mem: not supported: the harness reads the counters "
			"into memory between the versions (no register-only reading)\n", what);
		return -1;
	}
	return 0;
}

/* -fixed_counters: the fixed counters' events first (the kernel refuses
 * them without a PMU that has fixed counters). */
static int fixed_events(struct bopts *o)
{
	static const char *const ev[] = { "instructions", "cycles", "ref-cycles" };
	static const char *const label[] = { "Instructions retired", "Core cycles",
					     "Reference cycles" };

	for (int i = 0; i < (int)(sizeof(ev) / sizeof(ev[0])); i++)
		bench_events_insert(&o->ev, i, ev[i], label[i], "-fixed_counters");
	o->flags |= WIRE_CODEF_FIXED;
	return 0;
}

/* The options together: 0, or -1 with the reason said. */
static int check_args(struct bopts *o)
{
	int sources = !!o->asm_body + !!o->code + !!o->batch + !!o->code_c + !!o->code_o;
	if (sources != 1) {
		fprintf(stderr, "bareperf bench: give exactly one of -asm, -code, -code_c, -code_o "
			"and --batch\n");
		return -1;
	}
	if (!(o->code_c || o->code_o) != !o->function) {
		fprintf(stderr, "bareperf bench: -function NAME goes with -code_c FILE.c or -code_o "
			"FILE.o: the function of the program to measure\n");
		return -1;
	}
	if (o->tty && (o->uefi || o->icount || o->kvm || o->smp != 1)) {
		fprintf(stderr, "bareperf bench: --tty and QEMU options (--uefi, --icount, --kvm, "
			"--smp) together\n");
		return -1;
	}
	if (check_code_opts(o, "bareperf bench"))
		return -1;
	if (o->fixed)
		return fixed_events(o);
	return 0;
}

static void set_defaults(struct bopts *o)
{
	memset(o, 0, sizeof(*o));
	o->unroll = 1000;
	o->reps = 10;
	o->warmup = 5;
	o->timeout_ms = 2000;
	o->agg = BP_BENCH_AGG_AVG;	/* nanoBench's documented default */
	o->smp = 1;
	o->baud = 115200;
	o->kernel = paths_kernel();
	o->build = paths()->libdir;
}

/* argv[1..argc) into o, over what o holds; line: a --batch line's words. */
static int parse_opts(int argc, char **argv, struct bopts *o, bool line)
{
	for (int i = 1; i < argc; i++) {
		const char *a = opt_resolve(argv[i], line), *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;

		if (!a)
			return -1;
#define NUM(name, field, min, max)					\
		if (!strcmp(a, name)) {					\
			if (parse_num(a, v, min, max, &o->field))	\
				return -1;				\
			i++;						\
			continue;					\
		}
#define STR(name, field)						\
		if (!strcmp(a, name)) {					\
			if (!v) {					\
				fprintf(stderr, "bareperf bench: %s needs a value\n", a); \
				return -1;				\
			}						\
			o->field = v;					\
			i++;						\
			continue;					\
		}
		NUM("-unroll_count", unroll, 1, 100000)
		NUM("-loop_count", loops, 0, 1000000000000ull)
		NUM("-n_measurements", reps, 1, MAX_REPS)
		NUM("-warm_up_count", warmup, 0, 100000)
		NUM("-initial_warm_up_count", initial, 0, 100000)
		NUM("-alignment_offset", align, 0, 63)
		NUM("--timeout", timeout_ms, 0, 3600000)
		NUM("--pace", pace, 0, 10000000)
		if (!strcmp(a, "-cpu")) {
			if (parse_num(a, v, 0, 4095, &o->cpu))
				return -1;
			o->have_cpu = true;
			i++;
			continue;
		}
		STR("-asm", asm_body)
		STR("-asm_init", asm_init)
		STR("-asm_late_init", asm_late)
		STR("-code", code)
		STR("-code_init", code_init)
		STR("-asm_one_time_init", asm_once)
		STR("-code_one_time_init", code_once)
		STR("-code_late_init", code_late)
		STR("-code_c", code_c)
		STR("-code_o", code_o)
		STR("-function", function)
		NUM("-R14_size", r14_mib, 1, 1u << 20)
		STR("--batch", batch)
		STR("--tty", tty)
		STR("--kernel", kernel)
		STR("--build", build)
		STR("-config", config)
		STR("-msr_config", msr_config)
		STR("-k", kernel)
#undef NUM
#undef STR
		if (!strcmp(a, "-min") || !strcmp(a, "-median") || !strcmp(a, "-avg"))
			o->agg = a[1] == 'm' && a[2] == 'i' ? BP_BENCH_AGG_MIN :
				 a[1] == 'a' ? BP_BENCH_AGG_AVG : BP_BENCH_AGG_MEDIAN;
		else if (!strcmp(a, "-max"))
			o->agg = AGG_MAX;
		else if (!strcmp(a, "-range"))
			o->range = true;
		else if (!strcmp(a, "-remove_empty_events"))
			o->remove_empty = true;
		else if (!strcmp(a, "-df"))
			o->flags |= WIRE_CODEF_DRAIN;
		else if (!strcmp(a, "-fixed_counters"))
			o->fixed = true;
		else if (!strcmp(a, "-no_mem"))
			o->no_mem = true;
		else if (!strcmp(a, "-basic_mode"))
			o->flags |= WIRE_CODEF_BASIC;
		else if (!strcmp(a, "-no_normalization"))
			o->flags |= WIRE_CODEF_NO_NORM;
		else if (!strcmp(a, "-verbose") || !strcmp(a, "-v"))
			o->verbose = true;
		else if (!strcmp(a, "--check"))
			o->check = true;
		else if (!strcmp(a, "--nasm"))
			o->nasm = true;
		else if (!strcmp(a, "--json"))
			o->json = true;
		else if (!strcmp(a, "--qemu"))
			;
		else if (!strcmp(a, "--icount"))
			o->icount = true;
		else if (!strcmp(a, "--kvm"))
			o->kvm = true;
		else if (!strcmp(a, "--smp") || !strcmp(a, "--baud")) {
			if (parse_num(a, v, 1, 4096, &n))
				return -1;
			*(a[2] == 's' ? &o->smp : &o->baud) = (unsigned)n;
			i++;
		} else if (!strcmp(a, "-e") || !strcmp(a, "--events")) {
			if (!v || !*v) {
				fprintf(stderr, "bareperf bench: -e needs a list of events\n");
				return -1;
			}
			char buf[512];
			snprintf(buf, sizeof(buf), "%s", v);
			for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
				if (strlen(s) >= sizeof(o->ev.ev[0].spec)) {
					fprintf(stderr, "bareperf bench: events of at most %zu "
						"characters\n", sizeof(o->ev.ev[0].spec) - 1);
					return -1;
				}
				bench_events_insert(&o->ev, o->ev.n, s, "", "-e");
			}
			i++;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--uefi")) {
			o->uefi = true;
		} else {
			fprintf(stderr, "bareperf bench: unknown option '%s' (bareperf bench --help)\n",
				a);
			return -1;
		}
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct bopts *o)
{
	set_defaults(o);
	if (parse_opts(argc, argv, o, false))
		return -1;
	return check_args(o);
}

/* ---- the request ---------------------------------------------------------- */

static size_t put_u64(uint8_t *buf, size_t at, size_t cap, uint16_t type, uint64_t v)
{
	return ctl_put(buf, at, cap, type, &v, sizeof(v));
}

/*
 * A parameter the kernel takes as dflt when it is not sent (uapi/wire.h
 * RUN_CODE): sent only when v is another value. The line's bytes are the
 * request's time: a 16550 takes them 16 at a time, each chunk a turn of
 * QEMU's main loop, and nanoBench's defaults were 96 of a request's 130.
 */
static size_t put_unless(uint8_t *buf, size_t at, size_t cap, uint16_t type, uint64_t v,
			 uint64_t dflt)
{
	return v == dflt ? at : put_u64(buf, at, cap, type, v);
}

static size_t run_code_msg(const struct bopts *o, const struct snippet *s, int group,
			   uint8_t *buf, size_t cap)
{
	size_t at = sizeof(struct wire_ctl_msg);

	at = ctl_put(buf, at, cap, WIRE_CODE_BODY, s->body, s->body_len);
	if (s->init_len)
		at = ctl_put(buf, at, cap, WIRE_CODE_INIT, s->init, s->init_len);
	if (s->late_len)
		at = ctl_put(buf, at, cap, WIRE_CODE_LATE_INIT, s->late, s->late_len);
	if (s->once_len)
		at = ctl_put(buf, at, cap, WIRE_CODE_ONE_TIME_INIT, s->once, s->once_len);
	if (o->r14_mib)
		at = put_u64(buf, at, cap, WIRE_CODE_R14_SIZE, o->r14_mib << 20);
	at = put_unless(buf, at, cap, WIRE_CODE_UNROLL, o->unroll, 1000);
	at = put_unless(buf, at, cap, WIRE_CODE_LOOPS, o->loops, 0);
	at = put_unless(buf, at, cap, WIRE_CODE_REPS, o->reps, 10);
	at = put_unless(buf, at, cap, WIRE_CODE_WARMUP, o->warmup, 5);
	at = put_unless(buf, at, cap, WIRE_CODE_INITIAL_WARMUP, o->initial, 0);
	at = put_unless(buf, at, cap, WIRE_CODE_FLAGS,
			o->flags | (o->verbose ? WIRE_CODEF_READINGS : 0), 0);
	at = put_unless(buf, at, cap, WIRE_CODE_TIMEOUT_MS, o->timeout_ms, 2000);
	at = put_unless(buf, at, cap, WIRE_CODE_ALIGN, o->align, 0);
	if (o->have_cpu)
		at = put_u64(buf, at, cap, WIRE_CODE_CPU, o->cpu);
	at = bench_events_put(&o->ev, group, buf, at, cap);
	if (at > cap)
		return 0;
	struct wire_ctl_msg m = { WIRE_CTL_RUN_CODE, (uint16_t)(at - sizeof(m)) };
	memcpy(buf, &m, sizeof(m));
	return at;
}

/* QEMU booted with the control channel (started again after a snippet
 * took the machine down: the same machine, its ESP copy kept). */
static int start_qemu(const struct bopts *o, struct ctl_line *L)
{
	char err[300];

	if (!L->prepared) {
		char cmdline[128];
		snprintf(cmdline, sizeof(cmdline), "control=1 code=1 stream=uart events=none%s%.0llu",
			 o->pace ? " pace=" : "", (unsigned long long)o->pace);
		struct qemu_config c = {
			.kernel = o->kernel, .build = o->build, .cmdline = cmdline,
			.smp = o->smp, .mem = 256, .uefi = o->uefi, .icount = o->icount,
			.kvm = o->kvm, .serial_in = true, .no_stderr = true,
		};
		L->prepared = true;
		if (qemu_prepare(&L->q, &c, err, sizeof(err))) {
			fprintf(stderr, "bareperf bench: %s\n", err);
			return -1;
		}
	}
	if (qemu_start(&L->q, &L->in, err, sizeof(err))) {
		fprintf(stderr, "bareperf bench: %s\n", err);
		return -1;
	}
	L->out = L->q.in_fd;
	return 0;
}

/* ---- output --------------------------------------------------------------- */

struct result {
	char label[64];			/* CSV's and JSON's name */
	const char *name;		/* nanoBench's (text): label or bench_nb_name's */
	char event[32];			/* the kernel's */
	double value;
	unsigned flags;			/* BP_BENCH_F_* */
	double min, max;		/* -range */
	bool exact;
};

/* Parse one ITEM (uapi/wire.h RUN_CODE) of event k (-1: the kernel's
 * default) into a printable result. */
static int parse_item(const struct bopts *o, const char *item, int k, struct result *x)
{
	char ev[64], label[128];
	long long mn, med, avg, mx;
	unsigned long long iqr, mn_n, med_2n;
	unsigned flags, dist;

	if (sscanf(item, "%63[^\t]\t%127[^\t]\t%lld\t%lld\t%lld\t%llu\t%u\t%u\t%llu\t%llu\t%lld",
		   ev, label, &mn, &med, &avg, &iqr, &flags, &dist, &mn_n, &med_2n, &mx) != 11)
		return -1;
	long long v = o->agg == BP_BENCH_AGG_MIN ? mn : o->agg == BP_BENCH_AGG_AVG ? avg :
		      o->agg == AGG_MAX ? mx : med;
	x->value = v / 1000.0;
	x->flags = flags;
	snprintf(x->event, sizeof(x->event), "%.31s", ev);
	x->name = bench_nb_name(x->event, flags);
	x->min = mn / 1000.0;
	x->max = mx / 1000.0;
	x->exact = flags & BP_BENCH_F_EXACT;
	const char *name = flags & BP_BENCH_F_ICOUNT ? "Instructions retired (TSC under -icount)" :
			   flags & BP_BENCH_F_TSC ? "TSC ticks" :
			   !strcmp(ev, "cycles") ? "Core cycles" :
			   !strcmp(ev, "instructions") ? "Instructions retired" : ev;
	snprintf(x->label, sizeof(x->label), "%s", name);
	if (k >= 0 && k < o->ev.n && o->ev.ev[k].label[0]) {
		snprintf(x->label, sizeof(x->label), "%s", o->ev.ev[k].label);
		x->name = x->label;
	}
	if (o->verbose)
		fprintf(stderr, "bareperf bench: %s: median of %llu (first version) and %llu "
			"(second) per measurement%s\n", x->name, mn_n, med_2n,
			o->flags & WIRE_CODEF_BASIC ? "; the first is the fixed overhead (0 copies)" : "");
	return 0;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void csv_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

/*
 * How long a request may go unanswered (counted as the boot's wait, above:
 * on a tty, wall time). The watchdog stops code
 * after --timeout of HPET time (2x when the NMI lands outside the code), so
 * the kernel always answers unless the code took the machine down; the
 * margin is for a loaded host. Under -icount virtual time counts
 * instructions, so it runs as fast as QEMU gets the CPU: a `jmp $` under
 * -icount stopped at --timeout 300 took 5.0 s of wall time in all, boot
 * included, on a quiet two-core host, and was not stopped within 29 s
 * with three other QEMUs and two test suites beside it. The boot is
 * waited for before (wait_ready).
 */
static double reply_wait_s(const struct bopts *o)
{
	double t = o->timeout_ms / 1000.0;

	return REPLY_WAIT_S + t * (o->icount ? 100 : 10);
}

/* A "refused" ITEM (uapi/wire.h RUN_CODE): event k, not measured, said
 * on stderr with where it came from. True if item is one. */
static bool refused_item(const struct bopts *o, const char *item, int k)
{
	const struct bench_run_event *e = k < o->ev.n ? &o->ev.ev[k] : NULL;

	if (strncmp(item, "refused\t", 8))
		return false;
	const char *why = strchr(item + 8, '\t');
	fprintf(stderr, "bareperf bench: %s%s%s: not measured: %s\n", e ? e->origin : "",
		e ? ": " : "", e && e->label[0] ? e->label : e ? e->spec : item + 8,
		why ? why + 1 : "refused");
	return true;
}

/* ---- the command ---------------------------------------------------------- */

static int load_batch(const char *path, struct snippet **out, int *n)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int k = 0, max = 0;

	if (!f) {
		fprintf(stderr, "bareperf bench: --batch %s: %s\n", path, strerror(errno));
		return -1;
	}
	*out = NULL;
	int lineno = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
			line[--len] = 0;
		char *s = line + strspn(line, " \t");
		if (!*s || *s == '#')
			continue;
		if (k == MAX_SNIPPETS) {
			fprintf(stderr, "bareperf bench: --batch %s: more than %d snippets\n", path,
				MAX_SNIPPETS);
			break;
		}
		if (k == max) {
			max = max ? 2 * max : 64;
			*out = realloc(*out, max * sizeof(**out));
		}
		memset(&(*out)[k], 0, sizeof(**out));
		(*out)[k].line = lineno;
		(*out)[k++].src = strdup(s);
	}
	free(line);
	fclose(f);
	*n = k;
	if (!k)
		fprintf(stderr, "bareperf bench: --batch %s holds no snippet\n", path);
	return k ? 0 : -1;
}

/* A bench invocation: its options, its snippets, the machine's line, the tally. */
struct bench {
	struct bopts o;
	struct snippet one, *sn;
	int nsn;
	int ngroups;			/* requests per snippet: bench_events_runs' */
	struct ctl_line L;
	struct program prog;		/* -code_c, -code_o: the program of -function */
	struct termios saved;		/* --tty: the line's settings before */
	/* The machine has answered (over --tty, the probe; under QEMU, it
	 * said it is ready) since it booted: from then on, silence or a
	 * closed line is the snippet's doing. */
	bool answered;
	char why[sizeof(((struct ctl_line *)0)->console) + 128];
	struct ctl_replies r;
	/* Why the snippets left are not run (the machine must be reset, or
	 * QEMU did not boot again), or "". */
	char gone[200];
	int not_run, failed;
	/* Time per snippet on a machine already up: boots, and snippets that
	 * took the machine down, excluded. */
	double t_sum;
	uint64_t tx_sum, rx_sum;
	int n_timed;
	/* -verbose: the request's readings, event by event (take_reading) */
	struct reading {
		char event[32];
		unsigned n;
		uint64_t v[MAX_REPS][2];	/* each measurement's n-run and 2n-run */
	} rd[MAX_EVENTS];
	int nrd;
};

/* ctl_replies' on_item: a "reading" ITEM (uapi/wire.h RUN_CODE) into
 * B->rd, by order (one event's readings start from measurement 0; two
 * events of a run may have the same spec). */
static bool take_reading(void *arg, const char *text)
{
	struct bench *B = arg;
	char ev[32];
	unsigned first;
	uint64_t pairs[160][2];
	int n = bench_parse_readings(text, ev, sizeof(ev), &first, pairs, 160);
	int k = first ? B->nrd - 1 : B->nrd;

	if (n < 0)
		return false;
	if (k < 0 || k == MAX_EVENTS)
		return true;
	if (k == B->nrd) {
		memset(&B->rd[k], 0, sizeof(B->rd[k]));
		snprintf(B->rd[B->nrd++].event, sizeof(B->rd[k].event), "%s", ev);
	}
	struct reading *r = &B->rd[k];
	for (int i = 0; i < n && first + i < MAX_REPS; i++) {
		r->v[first + i][0] = pairs[i][0];
		r->v[first + i][1] = pairs[i][1];
		if (first + i + 1 > r->n)
			r->n = first + i + 1;
	}
	return true;
}

/* -verbose: every measurement of x, the request's k-th measured event, a
 * line each on stderr. */
static void print_readings(const struct bench *B, int k, const struct result *x)
{
	const struct reading *r = &B->rd[k];

	for (unsigned i = 0; k < B->nrd && i < r->n; i++)
		fprintf(stderr, "bareperf bench: %s: measurement %u of %u: %llu (first "
			"version), %llu (second)\n", x->name, i + 1, r->n,
			(unsigned long long)r->v[i][0], (unsigned long long)r->v[i][1]);
}

static uint8_t msg[4 * WIRE_CODE_MAX + 1024];

/*
 * A --batch line that starts with '-': nanoBench's options for one
 * experiment (-asm "..." -unroll_count N ...), quoted as a shell would,
 * over the command line's. Its code assembled into sn. 0, or -1 (said).
 */
static int line_experiment(const struct bench *B, struct snippet *sn, const char *what)
{
	char why[64], **argv;
	int argc;

	if (bench_split_words("bench", sn->src, &argc, &argv, why, sizeof(why))) {
		fprintf(stderr, "bareperf bench: %s: %s\n", what, why);
		return -1;
	}
	struct bopts *o = malloc(sizeof(*o));
	*o = B->o;
	o->asm_body = o->code = o->batch = NULL;
	/* the words stay o's strings: never freed, as argv's are not */
	int rc = parse_opts(argc, argv, o, true);
	if (!rc && !!o->asm_body + !!o->code != 1) {
		fprintf(stderr, "bareperf bench: %s: give one of -asm and -code\n", what);
		rc = -1;
	}
	if (!rc) {
		char said[96];
		snprintf(said, sizeof(said), "bareperf bench: %s", what);
		rc = check_code_opts(o, said);
	}
	if (rc) {
		fprintf(stderr, "bareperf bench: %s: the line refused\n", what);
		free(o);
		return -1;
	}
	sn->o = o;
	if (o->code ? bench_read_code(o->code, &sn->body, &sn->body_len, what) :
	    bench_assemble(what, o->asm_body, o->nasm, &sn->body, &sn->body_len))
		return -1;
	if (o->code_init ? bench_read_code(o->code_init, &sn->init, &sn->init_len, what) :
	    bench_assemble(what, o->asm_init, o->nasm, &sn->init, &sn->init_len))
		return -1;
	if (o->code_late ? bench_read_code(o->code_late, &sn->late, &sn->late_len, what) :
	    bench_assemble(what, o->asm_late, o->nasm, &sn->late, &sn->late_len))
		return -1;
	return o->code_once ? bench_read_code(o->code_once, &sn->once, &sn->once_len, what) :
	       bench_assemble(what, o->asm_once, o->nasm, &sn->once, &sn->once_len);
}

/* The batch's plain lines through one assembler run (a line of options
 * has its own); what it could not take is assembled alone after. 0 or 2. */
static int batch_assemble(struct bench *B)
{
	const char **srcs = calloc(B->nsn, sizeof(*srcs));
	uint8_t **outs = calloc(B->nsn, sizeof(*outs));
	size_t *lens = calloc(B->nsn, sizeof(*lens));
	int rc = srcs && outs && lens ? 0 : 2;

	for (int i = 0; !rc && i < B->nsn; i++)
		srcs[i] = B->sn[i].src[0] == '-' ? NULL : B->sn[i].src;
	if (!rc)
		bench_assemble_batch(B->nsn, srcs, B->o.nasm, outs, lens);
	for (int i = 0; !rc && i < B->nsn; i++) {
		B->sn[i].body = outs[i];
		B->sn[i].body_len = lens[i];
	}
	if (rc)
		fprintf(stderr, "bareperf bench: out of memory\n");
	free(srcs);
	free(outs);
	free(lens);
	return rc;
}

/* Everything assembled and checked before the machine is asked: 0 or 2. */
static int prepare_snippets(struct bench *B)
{
	const struct bopts *o = &B->o;
	struct snippet *one = &B->one;
	uint8_t *init = NULL, *late = NULL, *once = NULL;
	size_t init_len = 0, late_len = 0, once_len = 0;

	B->sn = one;
	B->nsn = 1;
	if (o->code_init ? bench_read_code(o->code_init, &init, &init_len, "-code_init") :
	    bench_assemble("-asm_init", o->asm_init, o->nasm, &init, &init_len))
		return 2;
	if (o->code_late ? bench_read_code(o->code_late, &late, &late_len, "-code_late_init") :
	    bench_assemble("-asm_late_init", o->asm_late, o->nasm, &late, &late_len))
		return 2;
	if (o->code_once ? bench_read_code(o->code_once, &once, &once_len, "-code_one_time_init") :
	    bench_assemble("-asm_one_time_init", o->asm_once, o->nasm, &once, &once_len))
		return 2;
	if (o->batch) {
		if (load_batch(o->batch, &B->sn, &B->nsn) || batch_assemble(B))
			return 2;
		for (int i = 0; i < B->nsn; i++) {
			char what[64];
			snprintf(what, sizeof(what), "--batch %s:%d", o->batch, B->sn[i].line);
			if (B->sn[i].body)
				continue;
			if (B->sn[i].src[0] == '-' ? line_experiment(B, &B->sn[i], what) :
			    bench_assemble(what, B->sn[i].src, o->nasm, &B->sn[i].body,
					   &B->sn[i].body_len))
				return 2;
		}
	} else if (o->code_c || o->code_o) {
		char err[512];
		one->src = (char *)o->function;
		one->body = calloc(1, CALL_LEN);
		one->body_len = CALL_LEN;
		if (program_prepare(&B->prog, o->code_c ? o->code_c : o->code_o, err, sizeof(err))) {
			fprintf(stderr, "bareperf bench: %s\n", err);
			return 2;
		}
	} else if (o->code) {
		one->src = (char *)o->code;
		if (bench_read_code(o->code, &one->body, &one->body_len, "-code"))
			return 2;
		if (!one->body_len) {
			fprintf(stderr, "bareperf bench: -code %s is empty\n", o->code);
			return 2;
		}
	} else {
		one->src = (char *)o->asm_body;
		if (bench_assemble("-asm", o->asm_body, o->nasm, &one->body, &one->body_len))
			return 2;
		if (!one->body_len) {
			fprintf(stderr, "bareperf bench: -asm is empty\n");
			return 2;
		}
	}
	for (int i = 0; i < B->nsn; i++) {
		struct snippet *sn = &B->sn[i];
		if (!sn->o) {
			sn->o = &B->o;
			sn->init = init, sn->init_len = init_len;
			sn->late = late, sn->late_len = late_len;
			sn->once = once, sn->once_len = once_len;
		}
		if (!run_code_msg(sn->o, sn, 0, msg, sizeof(msg))) {
			fprintf(stderr, "bareperf bench: the request does not fit in one frame\n");
			return 2;
		}
	}
	return 0;
}

/*
 * -code_c, -code_o: the program loaded into the machine, and the body a
 * call of its function, position independent: movabs rax, ADDR; call rax.
 * 0, or the exit status (1: the line failed; 2: the kernel or the object
 * refused).
 */
static int load_program(struct bench *B)
{
	struct program *p = &B->prog;
	uint8_t *b = B->one.body;
	uint64_t addr;
	char err[sizeof(B->why)];

	if (!B->o.tty && !B->L.ready &&
	    ctl_line_wait_ready(&B->L, B->o.uefi ? BOOT_WAIT_UEFI_ICOUNT_S : BOOT_WAIT_S, err,
				sizeof(err)) != CTL_LINE_OK) {
		fprintf(stderr, "bareperf bench: %s\n", err);
		return 1;
	}
	if (program_load(p, &B->L, B->o.verbose, err, sizeof(err))) {
		fprintf(stderr, "bareperf bench: %s\n", err);
		return strstr(err, "refused") ? 2 : 1;
	}
	fprintf(stderr, "bareperf bench: %s loaded as %s (%zu bytes) in %.2f s\n", p->file,
		p->name, p->sent_len, p->load_s);
	if (!program_symbol(p, B->o.function, &addr, err, sizeof(err))) {
		fprintf(stderr, "bareperf bench: %s\n", err);
		return 2;
	}
	b[0] = 0x48;			/* movabs rax, imm64 */
	b[1] = 0xb8;
	for (int i = 0; i < 8; i++)
		b[2 + i] = (uint8_t)(addr >> (8 * i));
	b[10] = 0xff;			/* call rax */
	b[11] = 0xd0;
	B->answered = true;
	return 0;
}

/* The line to the machine: --tty's, or QEMU booted. 0, or the exit status 1. */
static int open_link(struct bench *B)
{
	struct ctl_line *L = &B->L;
	char err[256];

	if (B->o.tty) {
		int fd = link_tty_open(B->o.tty, B->o.baud, &B->saved, err, sizeof(err));
		if (fd < 0) {
			fprintf(stderr, "bareperf bench: %s\n", err);
			return 1;
		}
		L->in = L->out = fd;
		/* No banner to wait for: the machine booted before, its plain
		 * text is gone and what comes now is frames (the console's
		 * among them, on_data), or bytes that are no text at all. */
		L->ready = true;
	} else if (start_qemu(&B->o, L)) {
		if (L->prepared)
			qemu_cleanup(&L->q);
		return 1;
	}
	ctl_line_codec(L);
	return 0;
}

/*
 * Snippet i, one request per group of events, its results into res
 * (*nres of them) and its end into B->r; *lost: the code took the
 * machine down. 0, or the exit status 1 (the line failed).
 */
static int run_snippet(struct bench *B, int i, struct result *res, int *nres, bool *lost)
{
	const struct bopts *o = B->sn[i].o;
	struct ctl_replies *r = &B->r;
	char *why = B->why;

	for (int g = 0; g < B->ngroups; g++) {
		size_t len = run_code_msg(o, &B->sn[i], g, msg, sizeof(msg));
		int k = o->tty || B->L.ready ? CTL_LINE_OK :
			ctl_line_wait_ready(&B->L, o->uefi && o->icount ? BOOT_WAIT_UEFI_ICOUNT_S :
				   BOOT_WAIT_S, why, sizeof(B->why));
		if (k == CTL_LINE_SILENT && o->uefi && o->icount)
			snprintf(why + strlen(why), sizeof(B->why) - strlen(why),
				 "\n(OVMF boots slowly under -icount; --uefi without "
				 "--icount boots faster)");
		double t_req = now_s();
		B->nrd = 0;
		r->on_item = take_reading;
		r->arg = B;
		if (k == CTL_LINE_OK)
			k = ctl_line_request(&B->L, msg, len, r, reply_wait_s(o), why, sizeof(B->why));
		t_req = now_s() - t_req;
		if (k == CTL_LINE_OK) {
			B->answered = true;
		} else if ((B->answered || B->L.ready) && k != CTL_LINE_IO) {
			/* The code took the machine down: its row says so. */
			r->ok = false;
			if (k == CTL_LINE_SILENT)
				snprintf(r->text, sizeof(r->text), "the machine stopped answering "
					 "while it ran: no reply in %.1f s of wall time (the code "
					 "stopped the watchdog's NMI, e.g. through the IDT, the "
					 "HPET or its interrupt route, or hung the CPU)", t_req);
			else
				snprintf(r->text, sizeof(r->text), "the machine reset or stopped "
					 "while it ran (a triple fault?)");
			*lost = true;
			return 0;
		} else {
			fprintf(stderr, "bareperf bench: %s\n", why);
			return 1;
		}
		int first = bench_events_first(&o->ev, g), m = 0;
		for (int k = 0; k < r->nitems; k++) {
			struct result *x = &res[*nres];
			if (refused_item(o, r->item[k], first + k) ||
			    parse_item(o, r->item[k], o->ev.n ? first + k : -1, x))
				continue;
			int measured = m++;
			if (o->remove_empty && x->value == 0)
				continue;
			if (o->verbose)
				print_readings(B, measured, x);
			(*nres)++;
		}
		if (!r->ok)
			return 0;
	}
	return 0;
}

/*
 * After snippet i: the machine is gone, or says it runs no more code.
 * QEMU boots again and the batch goes on; a machine on --tty is the
 * user's to reset, and the snippets after this one are not run.
 */
static void recover(struct bench *B, int i, bool lost)
{
	const struct bopts *o = &B->o;
	struct ctl_replies *r = &B->r;
	struct ctl_line *L = &B->L;

	if (!lost && (r->ok || strncmp(r->text, "stopped: ", 9)))
		return;
	if (o->tty) {
		snprintf(r->text + strlen(r->text), sizeof(r->text) - strlen(r->text),
			 "; reset the machine (%s) to run more", o->tty);
		if (o->batch)
			snprintf(B->gone, sizeof(B->gone), "not run: the machine (%s) stopped at "
				 "line %d of %s, reset it first", o->tty, B->sn[i].line, o->batch);
		else
			snprintf(B->gone, sizeof(B->gone), "not run");
		return;
	}
	snprintf(r->text + strlen(r->text), sizeof(r->text) - strlen(r->text), "%s",
		 i + 1 < B->nsn ? "; QEMU booted again for the next snippet" :
		 "; QEMU stopped (no snippet after it)");
	ctl_line_stop_qemu(L);
	wire_dec_free(L->dec);
	L->clen = 0;
	L->ready = false;
	if (i + 1 < B->nsn && start_qemu(o, L))
		snprintf(B->gone, sizeof(B->gone), "not run: QEMU did not boot again");
	ctl_line_codec(L);
	B->answered = false;
}

/*
 * nanoBench's lines on stdout, "NAME: value" each; what bareperf knows
 * beside (a value disturbed or below its noise floor, what the TSC counts
 * under -icount, counters read serialized by CPUID) on stderr, so a script
 * that parses nanoBench's output reads the same lines.
 */
static void print_lines(const struct result *res, int nres, bool range)
{
	static bool said_icount, said_cpuid;

	for (int k = 0; k < nres; k++) {
		const char *note = bench_nb_note(res[k].flags);
		if ((res[k].flags & BP_BENCH_F_ICOUNT) && !said_icount) {
			fprintf(stderr, "bareperf bench: %s: QEMU's -icount makes the TSC count "
				"instructions: it is instructions retired\n", res[k].name);
			said_icount = true;
		}
		if ((res[k].flags & BP_BENCH_F_CPUID_SERIALIZED) && !said_cpuid) {
			fprintf(stderr, "bareperf bench: %s: note: %s\n", res[k].name,
				bench_cpuid_note);
			said_cpuid = true;
		}
		fflush(stderr);
		if (range)
			bench_nb_range_line(stdout, res[k].name, res[k].value, res[k].min,
					    res[k].max);
		else
			bench_nb_line(stdout, res[k].name, res[k].value);
		fflush(stdout);
		if (note)
			fprintf(stderr, "bareperf bench: %s: note: %s\n", res[k].name, note);
	}
}

/* Snippet i's row: JSON, --batch's CSV, or nanoBench's lines. */
static void print_row(const struct bench *B, int i, const struct result *res, int nres)
{
	const struct bopts *o = &B->o;
	const struct ctl_replies *r = &B->r;
	const char *src = B->sn[i].src;

	/* OK "N events; the code changed CR4 (put back)" */
	const char *note = r->ok ? strstr(r->text, "; ") : NULL;
	if (note)
		fprintf(stderr, "bareperf bench: %s: note: %s\n", src, note + 2);
	if (o->json) {
		printf("%s{\"asm\": ", o->batch ? "  " : "");
		json_str(src);
		printf(", \"results\": {");
		for (int k = 0; k < nres; k++) {
			printf("%s", k ? ", " : "");
			json_str(res[k].label);
			printf(": %.3f", res[k].value);
		}
		printf("}, \"error\": ");
		if (r->ok)
			printf("null");
		else
			json_str(r->text);
		printf("}%s\n", o->batch && i + 1 < B->nsn ? "," : "");
	} else if (o->batch) {
		if (!r->ok) {
			csv_str(src);
			printf(",,,");
			csv_str(r->text);
			putchar('\n');
		}
		for (int k = 0; k < nres; k++) {
			csv_str(src);
			putchar(',');
			csv_str(res[k].label);
			printf(",%.3f,\n", res[k].value);
		}
	} else if (!r->ok) {
		fprintf(stderr, "bareperf bench: %s\n", r->text);
	} else {
		print_lines(res, nres, o->range);
	}
	fflush(stdout);
}

/*
 * Snippet i writes CR0 or CR4 a value QEMU's TCG hangs on (util/bench_cr.h):
 * refused here, with the reason in its row, when bench boots QEMU without
 * KVM. A machine on --tty or under KVM is a CPU that refuses it with #GP.
 */
static bool hangs_tcg(struct bench *B, int i)
{
	const struct snippet *sn = &B->sn[i];
	const uint8_t *parts[] = { sn->body, sn->init, sn->late, sn->once };
	const size_t lens[] = { sn->body_len, sn->init_len, sn->late_len, sn->once_len };
	char why[300];

	if (B->o.tty || B->o.kvm)
		return false;
	for (int k = 0; k < 4; k++) {
		if (!bench_cr_hangs_tcg(parts[k], lens[k], why, sizeof(why)))
			continue;
		memset(&B->r, 0, sizeof(B->r));
		snprintf(B->r.text, sizeof(B->r.text), "refused before it was sent: the code %s, "
			 "so bench does not run it under TCG (--kvm runs it)", why);
		return true;
	}
	return false;
}

/* Every snippet in turn: 0, or the exit status 1 (the line failed). */
static int run_all(struct bench *B)
{
	struct ctl_replies *r = &B->r;

	for (int i = 0; i < B->nsn; i++) {
		struct result *res = calloc(B->o.ev.n + MAX_EVENTS, sizeof(*res));
		int nres = 0;
		bool lost = false, timed = B->answered && !B->gone[0];
		double t_sn = now_s();
		uint64_t tx0 = B->L.tx, rx0 = B->L.rx;
		bool skipped = B->gone[0];
		if (skipped) {
			memset(r, 0, sizeof(*r));
			snprintf(r->text, sizeof(r->text), "%s", B->gone);
			B->not_run++;
		} else if (hangs_tcg(B, i)) {
			timed = false;
		} else if (run_snippet(B, i, res, &nres, &lost)) {
			free(res);
			return 1;
		}
		if (timed && !lost) {
			B->t_sum += now_s() - t_sn;
			B->tx_sum += B->L.tx - tx0;
			B->rx_sum += B->L.rx - rx0;
			B->n_timed++;
		}
		if (!r->ok && !skipped)
			B->failed++;
		if (!skipped)
			recover(B, i, lost);
		print_row(B, i, res, nres);
		free(res);
	}
	return 0;
}

/* A request and its replies take turns on the line: at 115200 baud
 * (8N1: 11,520 bytes/s) a snippet needs (sent + received) / 11,520 s. */
static void print_summary(const struct bench *B)
{
	int n = B->n_timed;

	fprintf(stderr, "bareperf bench: %d snippets, %d refused or failed", B->nsn, B->failed);
	if (B->not_run)
		fprintf(stderr, ", %d not run", B->not_run);
	if (n)
		fprintf(stderr, "; %.1f ms per snippet over %d on a booted machine (boots "
			"excluded); %.0f bytes sent and %.0f received per snippet: at most "
			"%.1f snippets/s over a 115200-baud line", B->t_sum * 1000.0 / n,
			n, (double)B->tx_sum / n, (double)B->rx_sum / n,
			11520.0 * n / (double)(B->tx_sum + B->rx_sum));
	fputc('\n', stderr);
}

int cmd_bench(int argc, char **argv)
{
	static struct bench B;
	struct bopts *o = &B.o;
	int rc = 0;

	memset(&B, 0, sizeof(B));
	B.L = (struct ctl_line){ .in = -1, .out = -1 };
	if (parse_args(argc, argv, o))
		return 2;
	if (o->check)
		return bench_check(&(struct bench_check_in){ o->asm_body, o->asm_init, o->asm_late,
			o->code, o->code_init, o->batch, o->config, o->msr_config, &o->ev,
			o->nasm });
	int nrefused = 0;
	if ((o->config && bench_events_load(&o->ev, o->config, false, &nrefused)) ||
	    (o->msr_config && bench_events_load(&o->ev, o->msr_config, true, &nrefused)))
		return 2;
	/* Events in runs the kernel takes in one request each, each a
	 * measurement of its own (never multiplexed). */
	B.ngroups = bench_events_runs(&o->ev, MAX_EVENTS);
	if (prepare_snippets(&B)) {
		program_free(&B.prog);
		return 2;
	}
	/* A machine that resets closes the line: a write then fails with
	 * EPIPE, which ctl_line_request reports, instead of killing us. */
	signal(SIGPIPE, SIG_IGN);
	if (open_link(&B))
		return 1;
	if (o->tty) {
		const struct wire_ctl_msg m = { WIRE_CTL_RUN_CODE, 0 };
		if (ctl_line_probe(&B.L, (const uint8_t *)&m, sizeof(m), PROBE_REPLY, REPLY_WAIT_S,
				   B.why, sizeof(B.why)) != CTL_LINE_OK) {
			fprintf(stderr, "bareperf bench: %s (booted with control=1 code=1 "
				"stream=uart? the line at %u baud?): %s\n", o->tty, o->baud, B.why);
			rc = 1;
		}
		B.answered = true;
	}
	if (!rc && (o->code_c || o->code_o))
		rc = load_program(&B);
	if (o->batch && !o->json && !rc)
		printf("asm,event,value,error\n");
	if (o->json && o->batch && !rc)
		printf("[\n");
	if (!rc)
		rc = run_all(&B);
	if (o->json && o->batch && !rc)
		printf("]\n");
	if (o->batch && !rc)
		print_summary(&B);
	if (o->tty)
		tcsetattr(B.L.in, TCSANOW, &B.saved);
	else
		ctl_line_stop_qemu(&B.L);
	if (B.L.prepared)
		qemu_cleanup(&B.L.q);
	wire_dec_free(B.L.dec);
	program_free(&B.prog);
	bench_events_free(&o->ev);
	if (!rc && B.gone[0])
		rc = 1;
	if (!rc && B.failed)
		rc = 3;
	return rc;
}

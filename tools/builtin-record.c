/*
 * tools/builtin-record.c — `bareperf record`: receive the kernel's stream and
 * write it, byte for byte as received, into a capture file
 * (tools/util/capture.h).
 *
 * Two links:
 *   --qemu (default)  start the kernel in QEMU ourselves (tools/util/qemu.h):
 *                     PVH direct boot through qboot, or --uefi through OVMF
 *                     and a private copy of the ESP. The stream comes on
 *                     QEMU's 16550 (-serial stdio: our pipe), or with --virtio
 *                     on a virtio-console port (a unix socket chardev) while
 *                     the UART keeps the plain console. Recording stops when
 *                     QEMU exits; the status is the kernel's exit code.
 *   --tty DEV         a serial line to a real machine, set raw 8N1 at --baud
 *                     (tools/util/link.h); recording stops once every CPU of
 *                     the run sent APP_STOP and the line has been quiet for a
 *                     second. With an app, the run is asked for over the
 *                     control channel (tools/util/control.h).
 *
 * Everything received is also fed to the wire decoder as it arrives, for
 * the live view: the console text (boot text before the stream's first
 * 0x00, then CONSOLE frames) on stderr, a one-line progress display, and
 * the closing summary with every loss, exactly counted. Ctrl-C (SIGINT),
 * SIGTERM and SIGHUP only set a flag: the main loop closes the capture
 * with WIRE_CAPF_INTERRUPTED, so what arrived stays a valid capture.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tools/commands.h"
#include "tools/util/capture.h"
#include "tools/util/control.h"
#include "tools/util/link.h"
#include "tools/util/paths.h"
#include "tools/util/program.h"
#include "tools/util/qemu.h"
#include "tools/util/record_live.h"
#include "tools/util/session.h"
#include "tools/util/util.h"

/* Exit statuses besides the kernel's own codes (as tools/bpqemu.py). */
#define EXIT_TIMEOUT	124
#define EXIT_NO_CODE	125
#define EXIT_INTERRUPT	130

#define READ_SIZE	(1 << 16)	/* one read's buffer */

/*
 * QEMU's links are read in batches: after a read that left the buffer
 * short, the recorder sleeps READ_BATCH_US before it polls again, and
 * what QEMU writes meanwhile waits in the pipe (tools/util/qemu.c makes
 * it hold a whole run) or the socket. It then wakes about 100 times a
 * second instead of once every few bytes, 20000 times a second: on a
 * 2-CPU host each wake took a CPU from QEMU's vCPU or main-loop thread,
 * and a vCPU kept waiting past a period loses the soft PMU's ticks.
 * A serial line to a real machine is read as it comes.
 */
#define READ_BATCH_US	10000

struct opts {
	const char *out, *events, *kernel, *build, *tty, *append, *cpu, *count, *trace;
	bool control;			/* ask for the run over the control channel */
	bool program;			/* the app is the user's FILE.c or FILE.o */
	const char *run_app;		/* the app the run asks for: APP, or the program's name */
	uint64_t period, freq;
	bool max_rate_set;		/* --max-rate given (0: no limit) */
	uint64_t max_rate;
	unsigned ring_pages, baud, smp, mem, pace;
	bool callchain, uefi, icount, virtio, kvm, quiet;
	bool listen_only;		/* --listen-only: write nothing to the line */
	int verbose;
	double timeout, quiet_s, wait_s;
	uint64_t run_timeout_ms;	/* --run-timeout: the program's limit, 0: the kernel's */
	char **app;			/* APP and its args, NULL if none */
	int napp;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/*
 * The kernel command line this run boots with, or (request) the START_RUN
 * request in the same words, for the capture's run_args. A program boots
 * the kernel with the control channel and asks for its run.
 */
static void build_cmdline(const struct opts *o, bool request, char *buf, size_t n)
{
	bool run = request || !o->control, boot = !request;
	size_t len = 0;

#define ADD(...) (len += (size_t)snprintf(buf + len, len < n ? n - len : 0, __VA_ARGS__))
	if (request)
		ADD("START_RUN");
	else
		ADD("stream=%s%s", o->virtio ? "virtio" : "uart",
		    o->control ? " control=1 code=1" : "");
	if (!run)
		goto boot_options;
	if (o->app)
		ADD(" app=%s", o->run_app);
	if (o->events)
		ADD(" events=%s", o->events);
	if (o->count)
		ADD(" count=%s", o->count);
	if (o->period)
		ADD(" period=%" PRIu64, o->period);
	if (o->freq)
		ADD(" freq=%" PRIu64, o->freq);
	if (o->max_rate_set)
		ADD(" max_rate=%" PRIu64, o->max_rate);
	if (o->trace)
		ADD(" trace=%s", o->trace);
	if (request && o->cpu)
		ADD(" cpus=%s", o->cpu);
boot_options:
	if (boot && o->callchain)
		ADD(" callchain=1");
	if (boot && o->ring_pages)
		ADD(" ring_pages=%u", o->ring_pages);
	if (boot && o->pace)
		ADD(" pace=%u", o->pace);
	if (boot && o->append)
		ADD(" %s", o->append);
	if (run && o->app && o->napp > 1) {
		ADD(" --");
		for (int i = 1; i < o->napp; i++)
			ADD(" %s", o->app[i]);
	}
#undef ADD
	if (len >= n && n)
		buf[n - 1] = 0;
}

/* ---- the command ------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bareperf record [-o FILE] [-e EVENTS] [-c PERIOD | -F FREQ] [-g]\n"
		"                       [--qemu [QEMU options] | --tty DEV [--baud N]] [-- APP [ARGS]]\n"
		"       bareperf record [options] [--qemu | --tty DEV] -- FILE.c|FILE.o [ARGS]\n"
		"  run APP, or a program of your own, on the bareperf kernel and write what it\n"
		"  streams into a capture\n"
		"  -o, --output FILE     capture file (default capture.bpc); with --qemu, a copy\n"
		"                        of the kernel goes beside it (FILE.bpc -> FILE.kernel.elf)\n"
		"  -e, --events LIST     events to sample (events=; default cycles, or cpu-clock\n"
		"                        without a PMU); bareperf list names them\n"
		"  -c, --period N        sampling period (events, or ns for cpu-clock)\n"
		"  -F, --freq N          samples per second instead of a period\n"
		"  -g                    record frame-pointer call chains\n"
		"      --call-graph fp   the same, in perf's spelling (perf's fp,N is taken, N\n"
		"                        unused: the kernel walks to its own depth); dwarf and\n"
		"                        lbr are refused: the kernel unwinds by frame pointers\n"
		"  -a, --all-cpus        perf's system-wide mode, bareperf's only one: every CPU\n"
		"                        of the run is sampled, with or without it\n"
		"      --count LIST      also count these events (count=; COUNTS records for\n"
		"                        bareperf stat); no sampling then unless -e is given\n"
		"      --max-rate N      samples/s per CPU before sampling is throttled\n"
		"                        (max_rate=; default 100000, 0 for no limit)\n"
		"      --trace SPEC      trace every instruction the app runs, [sstep:|pt:]all,\n"
		"                        or those of a function FUNC or a range START-END\n"
		"                        (trace=; into the AUX area: bareperf report --aux)\n"
		"      --ring-pages N    ring buffer pages per CPU (a power of two)\n"
		"      --append WORDS    more kernel options (see the kernel's cmdline help)\n"
		"      --cpu N           --tty only: the CPU the app runs on (every CPU of the\n"
		"                        run is sampled; filter with bareperf report --cpu)\n"
		"      --run-timeout SEC  the kernel stops your program (-- FILE.c) after SEC\n"
		"                        seconds (default 60) and says where it was\n"
		"  QEMU (the default link):\n"
		"      --qemu            boot the kernel in QEMU (PVH direct boot)\n"
		"      --uefi            boot through OVMF and the loader instead\n"
		"  -k, --kernel PATH     the kernel (default LIBDIR/kernel.elf, below)\n"
		"      --build DIR       where the ESP is, for --uefi (default LIBDIR)\n"
		"      --smp N, --mem MIB  CPUs (default 1) and memory (default 256)\n"
		"      --icount          TSC = instructions: deterministic runs (TCG)\n"
		"      --kvm             -enable-kvm -cpu host (a Linux host with a PMU)\n"
		"      --virtio          stream on virtio-console; the UART keeps the console\n"
		"      --pace BAUD       hold the UART stream to a real line's rate\n"
		"      --listen-only     write nothing to the UART: the kernel repeats the\n"
		"                        run's descriptors periodically, as for a receive-only\n"
		"                        capture (else record asks for them when it sees damage)\n"
		"      --timeout SEC     stop QEMU after SEC seconds (status 124)\n"
		"  serial line to a real machine (see below for what goes with the run):\n"
		"      --tty DEV         e.g. /dev/ttyUSB0; raw 8N1, no flow control\n"
		"      --baud N          line speed (default 115200)\n"
		"      --quiet-time SEC  stop this long after every CPU's APP_STOP (default 1)\n"
		"      --wait SEC        give up when no frame came in SEC s (default 60, 0: never)\n"
		"  -v, --verbose         show the console even when stderr is not a terminal,\n"
		"                        the QEMU command and where a program's sections went;\n"
		"                        -v -v also the firmware's own output (otherwise shown\n"
		"                        only if the loader never starts)\n"
		"  -q, --quiet           no console, no progress, no summary\n"
		"\n"
		"With --tty and -- APP, the machine must have booted with control=1\n"
		"stream=uart: record asks it for the run over the line, and -e, -c, -F,\n"
		"--count, --max-rate, --trace, --cpu and the app's arguments go with that\n"
		"request, for this run only. -g, --ring-pages, --pace and --append are kernel\n"
		"options of the machine's boot (callchain=, ring_pages=, pace= in its\n"
		"bareperf.cfg), refused with --tty. Without an app, record takes what the\n"
		"machine's bareperf.cfg runs.\n"
		"\n"
		"-- FILE.c runs your own program: a C file with main() that includes\n"
		"bareperf.h, compiled with the flags of bareperf cflags (${CC:-cc}), or an\n"
		"object file FILE.o built with them. It is given a GNU build-id, sent without\n"
		"its debug sections to a kernel booted with control=1 code=1 (--qemu boots\n"
		"one, then stops it), linked there against bareperf.h's functions, and run as\n"
		"the app NAME, the file's name without .c or .o; its exit status is record's.\n"
		"A run still going after 60 s (--run-timeout SEC) is stopped by the kernel,\n"
		"which names the function it was in; record then exits 1.\n"
		"The full object is kept beside the capture (-o STEM.bpc: STEM.NAME.o) and in\n"
		"perf's build-id cache, where reports find its symbols. A program the kernel\n"
		"refuses (an undefined symbol, a relocation it does not do) leaves the file\n"
		"at -o as it was.\n"
		"\n"
		"LIBDIR, where the kernel and the ESP come from: BUILD for a build tree's\n"
		"BUILD/bareperf, PREFIX/lib/bareperf for an installed PREFIX/bin/bareperf\n"
		"(make install), or $BAREPERF_LIBDIR when set.\n"
		"\n"
		"Exit status: the kernel's exit code (0 ok, 1 failure, 2 usage, 3 panic), from\n"
		"its stream's END (or, if it stopped before its stream started, QEMU's status),\n"
		"124 on --timeout, 125 if QEMU failed or ended without one, 130 after Ctrl-C.\n");
}

static int parse_u(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end || end == s || x < min || x > max || s[0] == '-') {
		fprintf(stderr, "bareperf record: %s: '%s' is not a number from %" PRIu64 " to %"
			PRIu64 "\n", opt, s, min, max);
		return -1;
	}
	*v = x;
	return 0;
}

/* The options record knows (getopt_long's values). */
enum { OPT_RING = 256, OPT_QEMU, OPT_UEFI, OPT_KERNEL, OPT_BUILD, OPT_SMP, OPT_MEM, OPT_ICOUNT,
       OPT_KVM, OPT_VIRTIO, OPT_PACE, OPT_TIMEOUT, OPT_TTY, OPT_BAUD, OPT_QUIET_TIME, OPT_CPU,
       OPT_APPEND, OPT_COUNT, OPT_MAX_RATE, OPT_TRACE, OPT_WAIT, OPT_CALL_GRAPH,
       OPT_RUN_TIMEOUT, OPT_LISTEN_ONLY };

/*
 * --call-graph MODE, perf's: fp, or fp,N (perf's stack depth, unused: the
 * kernel walks to its own depth). dwarf and lbr are named and refused.
 * 0, or -1 after a line on stderr.
 */
static int call_graph_mode(const char *mode)
{
	size_t n = strcspn(mode, ",");
	char *end;

	if (n == 2 && !strncmp(mode, "fp", 2)) {
		if (!mode[n])
			return 0;
		strtoul(mode + n + 1, &end, 10);
		if (end != mode + n + 1 && !*end)
			return 0;
		fprintf(stderr, "bareperf record: --call-graph %s: the depth after fp, is not a "
			"number\n", mode);
		return -1;
	}
	if ((n == 5 && !strncmp(mode, "dwarf", 5)) || (n == 3 && !strncmp(mode, "lbr", 3))) {
		fprintf(stderr, "bareperf record: --call-graph %.*s: not supported: the kernel "
			"unwinds by frame pointers only (--call-graph fp, or -g)\n", (int)n, mode);
		return -1;
	}
	fprintf(stderr, "bareperf record: --call-graph: '%s' is not a mode (fp; perf's dwarf "
		"and lbr are not supported here)\n", mode);
	return -1;
}

/* Option c (its value optarg) into o; *qemu: a QEMU option came, *baud_set:
 * --baud did. -1 to go on, else the command's exit status. */
static int take_option(int c, char **argv, struct opts *o, bool *qemu, bool *baud_set)
{
	uint64_t v;
	char *end;

	switch (c) {
	case 'o': o->out = optarg; break;
	case 'e': o->events = optarg; break;
	case 'c':
		if (parse_u("-c", optarg, 1, INT64_MAX, &o->period))
			return 2;
		break;
	case 'F':
		if (parse_u("-F", optarg, 1, 1000000, &o->freq))
			return 2;
		break;
	case 'g': o->callchain = true; break;
	case 'a': break;	/* every CPU of the run is sampled anyway */
	case OPT_CALL_GRAPH:
		if (call_graph_mode(optarg))
			return 2;
		o->callchain = true;
		break;
	case OPT_RING:
		if (parse_u("--ring-pages", optarg, 2, 65536, &v) || (v & (v - 1))) {
			if (v & (v - 1))
				fprintf(stderr, "bareperf record: --ring-pages: %s is not a power of "
					"two\n", optarg);
			return 2;
		}
		o->ring_pages = (unsigned)v;
		break;
	case OPT_APPEND: o->append = optarg; break;
	case OPT_COUNT: o->count = optarg; break;
	case OPT_MAX_RATE:
		/* The kernel's own range for max_rate= (kernel/cmdline.c). */
		if (parse_u("--max-rate", optarg, 0, 10000000, &o->max_rate))
			return 2;
		o->max_rate_set = true;
		break;
	case OPT_TRACE: o->trace = optarg; break;
	case OPT_CPU: o->cpu = optarg; break;
	case OPT_QEMU: *qemu = true; break;
	case OPT_UEFI: o->uefi = true; *qemu = true; break;
	case 'k': o->kernel = optarg; break;
	case OPT_BUILD: o->build = optarg; break;
	case OPT_SMP:
		if (parse_u("--smp", optarg, 1, 64, &v))
			return 2;
		o->smp = (unsigned)v;
		*qemu = true;
		break;
	case OPT_MEM:
		if (parse_u("--mem", optarg, 64, 65536, &v))
			return 2;
		o->mem = (unsigned)v;
		*qemu = true;
		break;
	case OPT_ICOUNT: o->icount = true; *qemu = true; break;
	case OPT_KVM: o->kvm = true; *qemu = true; break;
	case OPT_VIRTIO: o->virtio = true; *qemu = true; break;
	case OPT_LISTEN_ONLY: o->listen_only = true; *qemu = true; break;
	case OPT_PACE:
		if (parse_u("--pace", optarg, 300, 10000000, &v))
			return 2;
		o->pace = (unsigned)v;
		break;
	case OPT_TIMEOUT:
		o->timeout = strtod(optarg, &end);
		if (*end || end == optarg || o->timeout < 0) {
			fprintf(stderr, "bareperf record: --timeout: '%s' is not seconds\n", optarg);
			return 2;
		}
		break;
	case OPT_RUN_TIMEOUT: {
		/* a day at most: the kernel counts it in nanoseconds */
		double sec = strtod(optarg, &end);
		if (*end || end == optarg || !(sec >= 0.001 && sec <= 86400)) {
			fprintf(stderr, "bareperf record: --run-timeout: '%s' is not seconds from "
				"0.001 to 86400\n", optarg);
			return 2;
		}
		o->run_timeout_ms = (uint64_t)(sec * 1000 + 0.5);
		break;
	}
	case OPT_TTY: o->tty = optarg; break;
	case OPT_BAUD:
		if (parse_u("--baud", optarg, 50, 4000000, &v))
			return 2;
		o->baud = (unsigned)v;
		*baud_set = true;
		break;
	case OPT_QUIET_TIME:
		o->quiet_s = strtod(optarg, &end);
		if (*end || end == optarg || o->quiet_s < 0) {
			fprintf(stderr, "bareperf record: --quiet-time: '%s' is not seconds\n",
				optarg);
			return 2;
		}
		break;
	case OPT_WAIT:
		o->wait_s = strtod(optarg, &end);
		if (*end || end == optarg || o->wait_s < 0) {
			fprintf(stderr, "bareperf record: --wait: '%s' is not seconds\n", optarg);
			return 2;
		}
		break;
	case 'v': o->verbose++; break;
	case 'q': o->quiet = true; break;
	case 'h': usage(stdout); return 0;
	case ':':
		fprintf(stderr, "bareperf record: %s needs a value\n", argv[optind - 1]);
		return 2;
	default:
		fprintf(stderr, "bareperf record: unknown option '%s' (bareperf record --help)\n",
			argv[optind - 1]);
		return 2;
	}
	return -1;
}

/* What the options say together: -1 when they agree, else the exit status 2. */
static int check_args(struct opts *o, bool qemu, bool baud_set)
{
	if (o->period && o->freq) {
		fprintf(stderr, "bareperf record: -c PERIOD and -F FREQ exclude each other\n");
		return 2;
	}
	if (o->tty && qemu) {
		fprintf(stderr, "bareperf record: --tty and QEMU options (--qemu, --uefi, --smp, "
			"--icount, ...) exclude each other\n");
		return 2;
	}
	if (o->cpu && !o->tty) {
		fprintf(stderr, "bareperf record: --cpu: with --qemu the app runs on the boot CPU and "
			"every CPU is sampled (filter afterwards: bareperf report --cpu %s); --cpu N "
			"picks the app's CPU over --tty with control=1\n", o->cpu);
		return 2;
	}
	if (o->trace && (!*o->trace || strpbrk(o->trace, " \t\n"))) {
		fprintf(stderr, "bareperf record: --trace: '%s' is not [sstep:|pt:]all, a function or "
			"START-END\n", o->trace);
		return 2;
	}
	/* --tty with an app: the machine booted with control=1 serves the run we
	 * ask for, with what START_RUN carries (apps/control.c). */
	o->control = o->program || (o->tty && (o->app || o->events || o->period || o->freq ||
				o->cpu || o->count || o->max_rate_set || o->trace));
	if (o->run_timeout_ms && !o->program) {
		fprintf(stderr, "bareperf record: --run-timeout limits your own program's run "
			"(-- FILE.c or FILE.o); %s\n", o->app ? "a built-in app has none" :
			"no program was given");
		return 2;
	}
	if (o->program && o->virtio) {
		fprintf(stderr, "bareperf record: %s: a program is sent over the UART, which "
			"--virtio leaves to the console; record it without --virtio\n", o->app[0]);
		return 2;
	}
	if (o->tty && !o->app && o->control) {
		fprintf(stderr, "bareperf record: -e, -c, -F, --count, --max-rate, --trace and --cpu "
			"over --tty need an app (-- APP): the run is asked for over the control "
			"channel\n");
		return 2;
	}
	if (o->tty && (o->callchain || o->ring_pages || o->pace || o->append)) {
		static const char *const names[] = { "-g", "--ring-pages", "--pace", "--append" };
		const bool on[] = { o->callchain, o->ring_pages, o->pace, o->append };
		char given[64] = "";

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (on[i]) {
				if (*given)
					strcat(given, ", ");
				strcat(given, names[i]);
			}
		fprintf(stderr, "bareperf record: %s: kernel options of the machine's boot, which a "
			"run asked for over --tty cannot change: set callchain=, ring_pages=, pace= "
			"(or any other) in its bareperf.cfg\n", given);
		return 2;
	}
	if (!o->tty && baud_set) {
		fprintf(stderr, "bareperf record: --baud goes with --tty (QEMU's UART has no speed; "
			"--pace holds it to one)\n");
		return 2;
	}
	for (int i = 0; o->app && i < o->napp; i++)
		if (strpbrk(o->app[i], " \t\n")) {
			fprintf(stderr, "bareperf record: app argument '%s': the kernel command line "
				"splits words at spaces\n", o->app[i]);
			return 2;
		}
	return -1;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "events", required_argument, NULL, 'e' },
		{ "period", required_argument, NULL, 'c' },
		{ "freq", required_argument, NULL, 'F' },
		{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "ring-pages", required_argument, NULL, OPT_RING },
		{ "append", required_argument, NULL, OPT_APPEND },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "max-rate", required_argument, NULL, OPT_MAX_RATE },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "qemu", no_argument, NULL, OPT_QEMU },
		{ "uefi", no_argument, NULL, OPT_UEFI },
		{ "kernel", required_argument, NULL, 'k' },
		{ "build", required_argument, NULL, OPT_BUILD },
		{ "smp", required_argument, NULL, OPT_SMP },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "icount", no_argument, NULL, OPT_ICOUNT },
		{ "kvm", no_argument, NULL, OPT_KVM },
		{ "virtio", no_argument, NULL, OPT_VIRTIO },
		{ "listen-only", no_argument, NULL, OPT_LISTEN_ONLY },
		{ "pace", required_argument, NULL, OPT_PACE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "run-timeout", required_argument, NULL, OPT_RUN_TIMEOUT },
		{ "tty", required_argument, NULL, OPT_TTY },
		{ "baud", required_argument, NULL, OPT_BAUD },
		{ "quiet-time", required_argument, NULL, OPT_QUIET_TIME },
		{ "wait", required_argument, NULL, OPT_WAIT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool qemu = false, baud_set = false;
	int c, rc;

	memset(o, 0, sizeof(*o));
	o->out = "capture.bpc";
	o->kernel = paths_kernel();
	o->build = paths()->libdir;
	o->baud = 115200;
	o->smp = 1;
	o->mem = 256;
	o->quiet_s = 1.0;
	o->wait_s = 60.0;
	optind = 0;
	opterr = 0;
	/* '+': stop at the first word that is not an option (the app). */
	while ((c = getopt_long(argc, argv, "+:o:e:c:F:gak:vqh", lo, NULL)) != -1) {
		if ((rc = take_option(c, argv, o, &qemu, &baud_set)) >= 0)
			return rc;
	}
	if (optind < argc) {
		o->app = argv + optind;
		o->napp = argc - optind;
		o->run_app = o->app[0];
		o->program = program_is_file(o->app[0]);
	}
	return check_args(o, qemu, baud_set);
}

/* One recording: the options, the link's descriptors, the capture and its decoder. */
struct rec {
	struct opts o;
	struct live L;
	struct qemu q;
	struct capture_writer w;
	struct wire_dec *d;
	struct ctl_client ctl;
	int ctl_fd;			/* where the request goes: the tty, or QEMU's UART */
	struct program prog;		/* -- FILE.c | FILE.o */
	struct ctl_line line;		/* the program's LOAD requests go over it */
	struct termios saved;		/* --tty: the line's settings before ours */
	struct sigaction old_int, old_term, old_hup, old_pipe;
	bool signals_set;
	int uart, vsock, ttyfd;		/* QEMU's stdout (UART), its virtio socket, the tty */
	bool eof_uart, eof_stream, timed_out, io_error;
	bool no_frame;			/* --tty: --wait went by without a frame */
	/* Repeats on request (uapi/wire.h §3): where they are asked for (-1:
	 * the kernel repeats periodically), the damage asked about, when. */
	int ask_fd;
	bool said_will_ask;
	struct wire_enc ask_enc;
	uint64_t damage_asked;
	double asked_at;
	uint8_t *buf;
	char err[1024];
};

static void qemu_says(void *ctx, const char *line)
{
	struct live *L = ctx;

	live_clear_status(L);
	fprintf(stderr, "qemu: %s\n", line);
}

static int rec_load(struct rec *R);

/*
 * -- FILE.c | FILE.o: compiled (or taken) and checked before anything
 * else, so a program that does not compile touches no line, machine or
 * file. 0, or the exit status.
 */
static int rec_program(struct rec *R)
{
	struct opts *o = &R->o;

	if (program_prepare(&R->prog, o->app[0], R->err, sizeof(R->err))) {
		fprintf(stderr, "bareperf record: %s\n", R->err);
		return 1;
	}
	o->run_app = R->prog.name;
	return 0;
}

/*
 * Open the link (first: a bad device or kernel leaves no file behind),
 * then the capture, and keep the kernel that runs beside it. 0, or the
 * exit status.
 */
static int rec_open(struct rec *R)
{
	const struct opts *o = &R->o;
	struct capture_meta meta = { 0 };
	char request[1024];
	uint8_t bid[64];
	int rc;

	if (o->tty) {
		R->ttyfd = link_tty_open(o->tty, o->baud, &R->saved, R->err, sizeof(R->err));
		if (R->ttyfd < 0) {
			fprintf(stderr, "bareperf record: %s\n", R->err);
			return 1;
		}
		meta.link_kind = WIRE_LINK_TTY;
		meta.baud = o->baud;
		meta.link = o->tty;
		if (o->control) {		/* what we ask the machine for */
			build_cmdline(o, true, request, sizeof(request));
			meta.run_args = request;
		}
	} else {
		char cmdline[1024];
		struct qemu_config qc = {
			.kernel = o->kernel, .build = o->build, .cmdline = cmdline,
			.smp = o->smp, .mem = o->mem,
			.uefi = o->uefi, .virtio = o->virtio, .icount = o->icount, .kvm = o->kvm,
			/* the control channel's requests, or the word about repeats */
			.serial_in = o->control || (!o->virtio && !o->listen_only),
		};
		int n = symtab_read_build_id(o->kernel, bid, sizeof(bid), R->err, sizeof(R->err));
		build_cmdline(o, false, cmdline, sizeof(cmdline));
		if (n < 0 || qemu_prepare(&R->q, &qc, R->err, sizeof(R->err))) {
			fprintf(stderr, "bareperf record: %s\n", R->err);
			return 1;
		}
		if (n > 0) {
			meta.build_id = bid;
			meta.build_id_size = (size_t)n > 20 ? 20 : (size_t)n;
		}
		meta.link_kind = o->virtio ? WIRE_LINK_QEMU_VIRTIO : WIRE_LINK_QEMU_SERIAL;
		meta.link = R->q.link;
		meta.run_args = R->q.cmdline;
	}
	/* The program goes first: a refused one leaves the file at -o as it was. */
	if (o->program && (rc = rec_load(R)))
		return rc;
	R->ctl_fd = o->tty ? R->ttyfd : R->q.in_fd;
	R->buf = malloc(READ_SIZE);
	R->d = wire_dec_new(&live_dec_ops, &R->L);
	if (!R->buf || !R->d || capture_create(&R->w, o->out, &meta, R->err, sizeof(R->err))) {
		fprintf(stderr, "bareperf record: %s\n", R->buf && R->d ? R->err : "out of memory");
		return 1;
	}
	/* The kernel that runs, kept beside the capture: reports symbolize it
	 * after the default kernel was rebuilt (session_symtab looks there first). */
	if (!o->tty) {
		char copy[4200];
		session_kernel_copy_path(o->out, copy, sizeof(copy));
		if (strcmp(copy, o->kernel) && copy_file(o->kernel, copy, R->err, sizeof(R->err)))
			fprintf(stderr, "bareperf record: warning: %s\n", R->err);
	}
	/* The program's full object, where reports find its symbols. */
	if (o->program && program_keep(&R->prog, o->out, R->err, sizeof(R->err)))
		fprintf(stderr, "bareperf record: warning: %s\n", R->err);
	return 0;
}

/*
 * --tty with an app: the START_RUN request, built before the line is
 * opened, so that one too long for a request leaves the line untouched
 * and no file behind. 0, or the exit status.
 */
static int rec_request(struct rec *R)
{
	const struct opts *o = &R->o;
	struct ctl_run run = {
		.app = o->run_app, .args = o->app + 1, .nargs = o->napp - 1,
		.events = o->events, .period = o->period, .freq = o->freq, .cpus = o->cpu,
		.count = o->count, .has_max_rate = o->max_rate_set, .max_rate = o->max_rate,
		.trace = o->trace, .timeout_ms = o->run_timeout_ms,
	};

	if (ctl_client_init(&R->ctl, &run)) {
		fprintf(stderr, "bareperf record: the run's app, arguments, events and --trace are "
			"longer than one START_RUN request holds (%d bytes); nothing was sent\n",
			CTL_MSG_MAX);
		return 2;
	}
	return 0;
}

/* Catch the stop signals: they only set stop_signal. */
static void rec_signals(struct rec *R)
{
	struct sigaction sa;

	if (R->signals_set)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	stop_signal = 0;
	sigaction(SIGINT, &sa, &R->old_int);
	sigaction(SIGTERM, &sa, &R->old_term);
	sigaction(SIGHUP, &sa, &R->old_hup);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &R->old_pipe);
	R->signals_set = true;
}

/* Start QEMU (once). 0, or the exit status. */
static int rec_qemu(struct rec *R)
{
	const struct opts *o = &R->o;

	if (R->q.pid > 0)
		return 0;
	if (o->verbose) {
		fprintf(stderr, "bareperf record:");
		for (int i = 0; i < R->q.argc; i++)
			fprintf(stderr, strpbrk(R->q.argv[i], " ,") ? " '%s'" : " %s",
				R->q.argv[i]);
		fputc('\n', stderr);
	}
	if (qemu_start(&R->q, &R->uart, R->err, sizeof(R->err)) ||
	    (o->virtio && (R->vsock = qemu_connect(&R->q, R->err, sizeof(R->err))) < 0)) {
		fprintf(stderr, "bareperf record: %s\n", R->err);
		return 1;
	}
	return 0;
}

/*
 * The stream's damage so far: frames that did not pass, and RECORDS
 * frames missing from the numbering.
 */
static uint64_t damage(const struct wire_dec_stats *s)
{
	return s->cobs_errors + s->short_frames + s->crc_errors + s->bad_payload +
	       s->lost_by_channel[WIRE_CH_RECORDS];
}

/* One word to the kernel about repeats (uapi/wire.h §3); false if the
 * line refused it (the kernel then repeats as it would). */
static bool rec_say(struct rec *R, uint16_t type)
{
	struct wire_ctl_msg m = { type, 0 };
	char err[256];

	if (!ctl_send(&R->ask_enc, R->ask_fd, (const uint8_t *)&m, sizeof(m), NULL, err,
		      sizeof(err)))
		return true;
	if (R->o.verbose)
		fprintf(stderr, "bareperf record: %s\n", err);
	R->ask_fd = -1;
	return false;
}

/*
 * A recorder that can speak on the line (QEMU's UART, without --listen-only
 * or the control channel) says that it will ask for the run's descriptors
 * again once the kernel's stream has begun (before, the firmware and the
 * loader read the UART as keys), and asks when the stream shows damage,
 * or brings RECORDS frames before any RUN_META: at most once in 0.1 s.
 */
static void rec_ask(struct rec *R)
{
	const struct wire_dec_stats *s = wire_dec_stats(R->d);
	bool late = !R->L.meta_heard && wire_dec_stream(R->d, WIRE_CH_RECORDS, 0);
	double t = now_s();

	if (R->ask_fd < 0 || !R->L.frames_seen)
		return;
	if (!R->said_will_ask) {
		R->said_will_ask = rec_say(R, WIRE_CTL_WILL_ASK);
		return;
	}
	if ((damage(s) == R->damage_asked && !late) || t - R->asked_at < 0.1)
		return;
	if (rec_say(R, WIRE_CTL_REPEAT) && R->o.verbose)
		fprintf(stderr, "bareperf record: asked for the descriptors again (%s)\n",
			late ? "records before the run's RUN_META" : "damage on the line");
	R->damage_asked = damage(s);
	R->asked_at = t;
}

/* Catch the stop signals and start QEMU. 0, or the exit status. */
static int rec_start(struct rec *R)
{
	const struct opts *o = &R->o;

	rec_signals(R);
	if (!o->tty && rec_qemu(R))
		return 1;
	if (!o->tty && !o->control && !o->virtio && !o->listen_only) {
		struct wire_enc_config ec = { .cpu = WIRE_CPU_HOST };
		wire_encoder_init(&R->ask_enc, &ec);
		R->ask_fd = R->q.in_fd;
	}
	if (o->control && o->tty && !o->quiet)
		fprintf(stderr, "bareperf record: asking the machine on %s for the run "
			"(it must have booted with control=1%s stream=uart)\n", o->tty,
			o->program ? " code=1" : "");
	return 0;
}

/* A stop signal before the run was asked for: nothing was recorded. */
static int load_interrupted(const struct rec *R)
{
	fprintf(stderr, "bareperf record: interrupted (signal %d) before %s ran; nothing was "
		"recorded\n", (int)stop_signal, R->o.app[0]);
	return EXIT_INTERRUPT;
}

/*
 * The program's LOAD requests, over the line to the machine: QEMU booted
 * here (once the kernel says it reads requests), or the tty. What the
 * machine says meanwhile is the load's, not the capture's: the capture
 * starts with the run. 0, or the exit status.
 */
static int rec_load(struct rec *R)
{
	const struct opts *o = &R->o;
	struct program *p = &R->prog;
	struct ctl_line *L = &R->line;

	rec_signals(R);
	*L = (struct ctl_line){ .in = R->ttyfd, .out = R->ttyfd, .ready = true,
				.stop = &stop_signal };
	if (!o->tty) {
		if (rec_qemu(R))
			return 1;
		*L = (struct ctl_line){ .in = R->uart, .out = R->q.in_fd, .stop = &stop_signal };
	}
	ctl_line_codec(L);
	if (!o->tty && ctl_line_wait_ready(L, o->uefi ? 600.0 : 120.0, R->err,
					   sizeof(R->err)) != CTL_LINE_OK) {
		if (stop_signal)
			return load_interrupted(R);
		fprintf(stderr, "bareperf record: %s\n", R->err);
		return 1;
	}
	if (!o->quiet)
		fprintf(stderr, "bareperf record: sending %s as program %s: %zu bytes (%zu with "
			"debug info)\n", p->file, p->name, p->sent_len, p->full_len);
	if (program_load(p, L, o->verbose, R->err, sizeof(R->err))) {
		if (stop_signal)
			return load_interrupted(R);
		fprintf(stderr, "bareperf record: %s\n", R->err);
		if (strstr(R->err, "built-in"))
			fprintf(stderr, "bareperf record: the program is named after its file: "
				"rename %s\n", p->file);
		return 1;
	}
	if (!o->quiet)
		fprintf(stderr, "bareperf record: %s loaded in %.2f s (%.0f bytes/s)\n", p->name,
			p->load_s, p->load_s > 0 ? (double)p->sent_len / p->load_s : 0.0);
	return 0;
}

/* One read from pf, the link's descriptor is_stream or QEMU's UART beside
 * virtio. Returns the bytes read. */
static size_t rec_read(struct rec *R, int fd, bool is_stream, bool is_uart, double *last_byte)
{
	const struct opts *o = &R->o;
	ssize_t k = read(fd, R->buf, READ_SIZE);

	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (k <= 0) {
		/* EOF, or EIO: the pty master or the USB adapter went away. */
		if (o->tty) {
			if (k < 0)
				fprintf(stderr, "%sbareperf record: %s: %s\n",
					R->L.status_shown ? "\r\033[K" : "", o->tty, strerror(errno));
			R->L.status_shown = false;
			R->eof_stream = true;
		} else if (is_uart) {
			R->eof_uart = true;
			if (!o->virtio)
				R->eof_stream = true;
		} else {
			R->eof_stream = true;
		}
		return 0;
	}
	if (is_stream) {
		*last_byte = now_s();
		if (live_stream_bytes(&R->L, R->d, R->buf, (size_t)k, R->err, sizeof(R->err))) {
			fprintf(stderr, "bareperf record: %s\n", R->err);
			R->io_error = true;
		}
	} else {
		live_console_text(&R->L, R->buf, (size_t)k);	/* virtio: the UART's plain console */
	}
	return (size_t)k;
}

/* Receive until the run is over (see the comment at each exit), a stop
 * signal, --timeout or an I/O error. */
static void rec_loop(struct rec *R)
{
	const struct opts *o = &R->o;
	struct live *L = &R->L;
	double t0, last_byte;

	t0 = last_byte = now_s();
	for (;;) {
		struct pollfd pf[3];
		int np = 0, stream_i = -1, uart_i = -1, err_i = -1, n;
		size_t most = 0;

		if (stop_signal)
			break;
		if (o->timeout > 0 && now_s() - t0 > o->timeout) {
			R->timed_out = true;
			break;
		}
		/* A silent line, or one of noise: no machine of ours on it. */
		if (o->tty && o->wait_s > 0 && !L->frames_seen && now_s() - t0 > o->wait_s) {
			R->no_frame = true;
			break;
		}
		if (o->tty) {
			pf[np] = (struct pollfd){ R->ttyfd, POLLIN, 0 };
			stream_i = np++;
		} else {
			if (!R->eof_uart) {
				pf[np] = (struct pollfd){ R->uart, POLLIN, 0 };
				uart_i = np++;
				if (!o->virtio)
					stream_i = uart_i;
			}
			if (o->virtio && !R->eof_stream) {
				pf[np] = (struct pollfd){ R->vsock, POLLIN, 0 };
				stream_i = np++;
			}
			if (!np)
				break;		/* QEMU closed everything: it has exited */
			if (R->q.err_fd >= 0) {
				pf[np] = (struct pollfd){ R->q.err_fd, POLLIN, 0 };
				err_i = np++;
			}
		}
		n = poll(pf, (nfds_t)np, 100);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "bareperf record: poll: %s\n", strerror(errno));
			R->io_error = true;
			break;
		}
		for (int i = 0; n > 0 && i < np; i++) {
			size_t got;

			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (i == err_i) {
				qemu_err_read(&R->q, qemu_says, L);
				continue;
			}
			got = rec_read(R, pf[i].fd, i == stream_i, i == uart_i, &last_byte);
			if (got > most)
				most = got;
		}
		if (R->io_error || (o->tty && R->eof_stream))
			break;
		rec_ask(R);
		if (o->control && ctl_client_tick(&R->ctl, R->ctl_fd, &L->ctl, now_s(), last_byte,
						  L->frames_seen, R->err, sizeof(R->err))) {
			fprintf(stderr, "bareperf record: %s: %s\n", o->tty, R->err);
			R->io_error = true;
			break;
		}
		/* It answered (OK "exit N" after the run's records, or ERROR), and
		 * its END followed: done. A kernel that sends no END: a quiet spell. */
		if (o->control && L->ctl.replied && (L->ctl.ended || now_s() - last_byte >= 2.0))
			break;
		/* A serial line never closes: the machine's END, or every CPU's
		 * APP_STOP, then a quiet spell. */
		if (o->tty && !o->control && (L->ctl.ended || (L->have_meta && L->nr_cpus &&
		    L->nstopped >= L->nr_cpus && now_s() - last_byte >= o->quiet_s)))
			break;
		if (!o->tty && R->eof_stream && (o->virtio ? R->eof_uart : true))
			break;
		live_draw_status(L, R->d, false);
		if (!o->tty && most && most < READ_SIZE)
			usleep(READ_BATCH_US);
	}
}

/* Why a --tty recording got nothing of the machine, on stderr. */
static void tty_silent(const struct rec *R)
{
	const struct opts *o = &R->o;
	uint64_t bytes = wire_dec_stats(R->d)->bytes;

	if (!o->tty)
		fprintf(stderr, "bareperf record: QEMU ended before the machine answered\n");
	else if (R->eof_stream)
		fprintf(stderr, "bareperf record: %s closed before the machine answered "
			"(%" PRIu64 " bytes, %" PRIu64 " frames arrived); %s holds them\n", o->tty,
			bytes, R->L.frames_seen, o->out);
	else if (!bytes)
		fprintf(stderr, "bareperf record: nothing arrived on %s in %g s: is the machine "
			"on, streaming on this line (stream=uart%s)? (--wait SEC waits longer)\n",
			o->tty, o->wait_s, o->control ? " control=1" : "");
	else
		fprintf(stderr, "bareperf record: %" PRIu64 " bytes arrived on %s in %g s, not one "
			"frame of a bareperf stream: the wrong speed (--baud %u), or no bareperf "
			"kernel on the line (--wait SEC waits longer)\n", bytes, o->tty, o->wait_s,
			o->baud);
}

/*
 * After the loop: the decoder's last frames, the firmware's text if our
 * code never ran, QEMU reaped, the capture closed; then the exit status,
 * the summary and the reasons. Returns the exit status.
 */
static int rec_finish(struct rec *R)
{
	const struct opts *o = &R->o;
	struct live *L = &R->L;
	const struct wire_dec_stats *ds;
	char state[200];
	bool halted;
	int st = -1, qcode, rc;

	wire_dec_finish(R->d);
	live_flush_line(L);
	live_clear_status(L);
	if (!L->ours_started && L->fwlen) {
		/* Nothing of ours ran: what the firmware said is the clue. */
		fprintf(stderr, "bareperf record: the loader never started; the firmware said:\n");
		fwrite(L->firmware, 1, L->fwlen, stderr);
		if (L->fw_dropped)
			fprintf(stderr, "  (%zu more lines)\n", L->fw_dropped);
	}
	if (!o->tty) {
		/* A machine with the control channel waits for more requests. */
		st = qemu_reap(&R->q, stop_signal || R->timed_out || R->io_error || o->control);
		while (R->q.err_fd >= 0)
			qemu_err_read(&R->q, qemu_says, L);	/* its last words, up to EOF */
	}
	{
		uint32_t flags = stop_signal || R->timed_out ? WIRE_CAPF_INTERRUPTED : 0;
		if (R->timed_out && !stop_signal)
			flags |= WIRE_CAPF_TIMED_OUT;
		struct capture_info ci = { .hdr = R->w.hdr };
		if (capture_close(&R->w, flags, R->err, sizeof(R->err))) {
			fprintf(stderr, "bareperf record: %s\n", R->err);
			return 1;
		}
		ci.hdr.flags |= WIRE_CAPF_COMPLETE | flags;
		ci.complete = true;
		ci.interrupted = flags;
		ci.data_avail = R->w.written;
		ci.truncated = R->w.failed;
		capture_describe(&ci, state, sizeof(state));
	}
	ds = wire_dec_stats(R->d);
	halted = ds->ends && (ds->end_flags & WIRE_END_HALT);
	qcode = !o->tty && WIFEXITED(st) && (WEXITSTATUS(st) & 1) ? WEXITSTATUS(st) >> 1 : -1;
	if (stop_signal) {
		rc = EXIT_INTERRUPT;
		if (!o->quiet)
			live_summary(L, R->d, o->out, o->tty, state, 0, 0);
		fprintf(stderr, "bareperf record: interrupted (signal %d); %s holds what arrived\n",
			(int)stop_signal, o->out);
	} else if (R->timed_out) {
		rc = EXIT_TIMEOUT;
		if (!o->quiet)
			live_summary(L, R->d, o->out, o->tty, state, 0, 0);
		fprintf(stderr, "bareperf record: timed out after %g s; %s holds what arrived\n",
			o->timeout, o->out);
	} else if (R->io_error) {
		rc = 1;
	} else if (R->no_frame || (o->control && !L->ctl.replied && R->eof_stream)) {
		rc = 1;
		tty_silent(R);
	} else if (o->control) {
		int code = 0;
		if (!L->ctl.ok && o->program) {
			/* It ran and failed (a fault, the watchdog), or was refused:
			 * the kernel's words say which. */
			fprintf(stderr, "bareperf record: %s: %s; %s holds what arrived\n",
				o->app[0], L->ctl.text, o->out);
			rc = 1;
		} else if (!L->ctl.ok) {
			fprintf(stderr, "bareperf record: the machine refused the run: %s\n",
				L->ctl.text);
			rc = 2;
		} else {
			rc = sscanf(L->ctl.text, "exit %d", &code) == 1 ? code : 0;
			if (!o->quiet)
				live_summary(L, R->d, o->out, o->tty, state, 2, rc);
		}
	} else if (o->tty && halted) {
		rc = (int)ds->end_status;
		if (!o->quiet)
			live_summary(L, R->d, o->out, o->tty, state, 1, rc);
	} else if (o->tty) {
		bool ended = L->have_meta && L->nr_cpus && L->nstopped >= L->nr_cpus;
		rc = ended ? (int)(L->app_status & 0xff) : 1;
		if (!o->quiet)
			live_summary(L, R->d, o->out, o->tty, state, ended ? 2 : 0, rc);
		if (!ended)
			fprintf(stderr, "bareperf record: %s went away before every CPU's APP_STOP; "
				"%s holds what arrived\n", o->tty, o->out);
	} else if (halted || (qcode >= 0 && !R->q.err_lines)) {
		/*
		 * The kernel's exit code is its END's. Without END (it stopped
		 * before its stream could start: a bad command line), QEMU's
		 * isa-debug-exit status carries it, unless QEMU itself failed
		 * (it said so on stderr, and its status 1 would read as "0, ok").
		 */
		rc = halted ? (int)ds->end_status : qcode;
		if (!o->quiet)
			live_summary(L, R->d, o->out, o->tty, state, halted ? 1 : 3, rc);
		else if (rc)
			fprintf(stderr, "bareperf record: the kernel's exit code is %d\n", rc);
		if (halted && qcode != rc)
			fprintf(stderr, "bareperf record: QEMU's exit status %d does not match the "
				"kernel's exit code %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, rc);
	} else {
		if (!o->quiet)
			live_summary(L, R->d, o->out, o->tty, state, 0, -1);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
			fprintf(stderr, "bareperf record: QEMU could not be started (see above)\n");
		else if (WIFEXITED(st))
			fprintf(stderr, "bareperf record: QEMU ended with status %d without a kernel "
				"exit code\n", WEXITSTATUS(st));
		else
			fprintf(stderr, "bareperf record: QEMU was killed by signal %d\n",
				WIFSIGNALED(st) ? WTERMSIG(st) : -1);
		rc = EXIT_NO_CODE;
	}
	/* A failed run's reason, when the console did not go by on stderr
	 * (-q keeps a run quiet, not its failure). */
	if (rc && !L->show_console && !stop_signal && !R->timed_out && !R->io_error &&
	    !(o->control && !L->ctl.ok))
		live_last_words(L);
	return rc;
}

/* Whatever rec_open and rec_start left open, in any state. */
static void rec_close(struct rec *R)
{
	if (R->signals_set) {
		sigaction(SIGINT, &R->old_int, NULL);
		sigaction(SIGTERM, &R->old_term, NULL);
		sigaction(SIGHUP, &R->old_hup, NULL);
		sigaction(SIGPIPE, &R->old_pipe, NULL);
	}
	if (R->q.pid > 0)
		qemu_reap(&R->q, true);
	if (R->w.fd >= 0)
		capture_close(&R->w, WIRE_CAPF_INTERRUPTED, R->err, sizeof(R->err));
	if (R->uart >= 0)
		close(R->uart);
	if (R->q.err_fd >= 0)
		close(R->q.err_fd);
	if (R->vsock >= 0)
		close(R->vsock);
	if (R->ttyfd >= 0) {
		tcsetattr(R->ttyfd, TCSANOW, &R->saved);
		close(R->ttyfd);
	}
	qemu_cleanup(&R->q);
	wire_dec_free(R->d);
	wire_dec_free(R->line.dec);
	program_free(&R->prog);
	free(R->buf);
}

int cmd_record(int argc, char **argv)
{
	struct rec *R = calloc(1, sizeof(*R));
	struct live *L;
	int rc;

	if (!R) {
		fprintf(stderr, "bareperf record: out of memory\n");
		return 1;
	}
	rc = parse_args(argc, argv, &R->o);
	if (rc >= 0) {
		free(R);
		return rc;
	}
	R->q.pid = -1;
	R->q.err_fd = -1;
	R->w.fd = -1;
	R->uart = R->vsock = R->ttyfd = R->ask_fd = -1;
	L = &R->L;
	L->w = &R->w;
	L->show_console = !R->o.quiet && (R->o.verbose || isatty(2));
	L->show_firmware = R->o.verbose >= 2;
	L->progress = !R->o.quiet && isatty(2);
	L->console_from_stream = !R->o.virtio;
	L->control = R->o.control;
	L->quiet = R->o.quiet;
	L->live_boot_text = !R->o.tty;

	rc = R->o.program ? rec_program(R) : 0;
	if (!rc && R->o.control)
		rc = rec_request(R);
	if (!rc)
		rc = rec_open(R);
	if (!rc)
		rc = rec_start(R);
	if (!rc) {
		rec_loop(R);
		rc = rec_finish(R);
	}
	rec_close(R);
	free(R);
	return rc;
}

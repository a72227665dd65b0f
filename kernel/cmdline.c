/*
 * cmdline.c — the kernel command line: from LoadOptions + \bareperf.cfg
 * (UEFI) or -append (PVH). A word the kernel does not understand is an
 * error, never silently ignored: a typo must not run the wrong experiment.
 */
#include "kernel/kernel.h"
#include "kernel/cmdline.h"
#include "kernel/uart.h"

struct option {
	const char *name;
	const char *value_help;
	const char *help;
	int (*set)(struct kernel_options *o, char *val, char *err, size_t n);
};

static int set_app(struct kernel_options *o, char *val, char *err, size_t n)
{
	(void)err, (void)n;
	o->app = val;
	return 0;
}

static int set_serial(struct kernel_options *o, char *val, char *err, size_t n)
{
	static const u16 com[] = { 0x3f8, 0x2f8, 0x3e8, 0x2e8 };
	u64 port;

	if (!strncmp(val, "com", 3) && val[3] >= '1' && val[3] <= '4' && !val[4]) {
		o->serial_port = com[val[3] - '1'];
		return 0;
	}
	if (parse_u64(val, &port) || port == 0 || port > 0xfff8) {
		ksnprintf(err, n, "serial: '%s' is not com1..com4 or an I/O port like 0x3f8", val);
		return -1;
	}
	o->serial_port = port;
	return 0;
}

static int set_baud(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 baud;

	if (parse_u64(val, &baud) || baud == 0 || baud > UART_CLOCK_BAUD ||
	    UART_CLOCK_BAUD % baud) {
		ksnprintf(err, n, "baud: '%s' is not a rate the 16550 can make "
			  "(115200 divided by a whole number, e.g. 115200, 57600, 38400, 9600)", val);
		return -1;
	}
	o->baud = baud;
	return 0;
}

static int set_events(struct kernel_options *o, char *val, char *err, size_t n)
{
	(void)err, (void)n;
	o->events = val;	/* names are checked when the run starts (pmu/) */
	return 0;
}

static int set_u64(u64 *dst, const char *name, const char *val, u64 min, u64 max,
		   char *err, size_t n)
{
	u64 v;

	if (parse_u64(val, &v) || v < min || v > max) {
		ksnprintf(err, n, "%s: '%s' is not a number from %lu to %lu", name, val, min, max);
		return -1;
	}
	*dst = v;
	return 0;
}

static int set_period(struct kernel_options *o, char *val, char *err, size_t n)
{
	return set_u64(&o->period, "period", val, 1, ~0ul >> 1, err, n);
}

static int set_freq(struct kernel_options *o, char *val, char *err, size_t n)
{
	return set_u64(&o->freq, "freq", val, 1, 1000000, err, n);
}

static int set_callchain(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 v;

	if (set_u64(&v, "callchain", val, 0, 1, err, n))
		return -1;
	o->callchain = v;
	return 0;
}

static int set_ring_pages(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 v;

	if (parse_u64(val, &v) || v < 2 || v > 65536 || (v & (v - 1))) {
		ksnprintf(err, n, "ring_pages: '%s' is not a power of two from 2 to 65536", val);
		return -1;
	}
	o->ring_pages = v;
	return 0;
}

static int set_stream(struct kernel_options *o, char *val, char *err, size_t n)
{
	if (strcmp(val, "off") && strcmp(val, "uart") && strcmp(val, "virtio")) {
		ksnprintf(err, n, "stream: '%s' is not off, uart or virtio", val);
		return -1;
	}
	o->stream = val;
	return 0;
}

static int set_pace(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 v;

	if (set_u64(&v, "pace", val, 300, 10000000, err, n))
		return -1;
	o->pace = v;
	return 0;
}

static int set_control(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 v;

	if (set_u64(&v, "control", val, 0, 1, err, n))
		return -1;
	o->control = v;
	return 0;
}

static int set_count(struct kernel_options *o, char *val, char *err, size_t n)
{
	(void)err, (void)n;
	o->count = val;		/* names are checked when the run starts (pmu/) */
	return 0;
}

static int set_max_rate(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 v;

	if (set_u64(&v, "max_rate", val, 0, 10000000, err, n))
		return -1;
	o->max_rate = v;
	return 0;
}

/* trace=[sstep:|pt:]all|FUNC|START-END: checked here for its shape; the
 * symbols are resolved when the run starts (pmu/trace.c). */
static int set_trace(struct kernel_options *o, char *val, char *err, size_t n)
{
	const char *what = val;

	if (!strncmp(what, "sstep:", 6))
		what += 6;
	else if (!strncmp(what, "pt:", 3))
		what += 3;
	if (!*what || *what == '-' || what[strlen(what) - 1] == '-' ||
	    (strchr(what, '-') && strchr(strchr(what, '-') + 1, '-'))) {
		ksnprintf(err, n, "trace: '%s' is not [sstep:|pt:]all, a function, or START-END", val);
		return -1;
	}
	o->trace = val;
	return 0;
}

static int set_aux_pages(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 v;

	if (parse_u64(val, &v) || v < 1 || v > 65536 || (v & (v - 1))) {
		ksnprintf(err, n, "aux_pages: '%s' is not a power of two from 1 to 65536", val);
		return -1;
	}
	o->aux_pages = v;
	return 0;
}

static int set_ap_wait_ms(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 v;

	if (set_u64(&v, "ap_wait_ms", val, 0, 600000, err, n))
		return -1;
	o->ap_wait_ms = v;
	return 0;
}

static const struct option options[] = {
	{ "app", "NAME", "the app to run (default " CMDLINE_DEFAULT_APP ")", set_app },
	{ "serial", "com1..com4|0xPORT", "console UART (default com1 = 0x3f8)", set_serial },
	{ "baud", "N", "console baud rate (default 115200)", set_baud },
	{ "events", "LIST", "events to sample, comma-separated, or none "
	  "(default cycles, or cpu-clock without a PMU)", set_events },
	{ "period", "N", "sampling period: events, or ns for cpu-clock (default 250000 ns)", set_period },
	{ "freq", "N", "sampling frequency in samples/s instead of a period", set_freq },
	{ "callchain", "0|1", "record frame-pointer call chains (default 0)", set_callchain },
	{ "ring_pages", "N", "ring buffer data pages per CPU, a power of two (default 256)",
	  set_ring_pages },
	{ "stream", "off|uart|virtio", "send the records to the host, framed (default off)",
	  set_stream },
	{ "pace", "BAUD", "hold the UART stream to a real line's rate, e.g. 115200", set_pace },
	{ "control", "0|1", "serve runs the host asks for over the stream (default 0)",
	  set_control },
	{ "count", "LIST", "events to count, as events= or tsc, cpu-clock, task-clock; "
	  "COUNTS records (bareperf stat; no sampling unless events= is given)", set_count },
	{ "max_rate", "N", "samples/s per CPU before sampling is throttled, 0 = no limit "
	  "(default 100000)", set_max_rate },
	{ "trace", "[sstep:|pt:]all|FUNC|START-END", "trace every instruction the app runs, "
	  "or those in a function or address range (AUX area; default off)", set_trace },
	{ "aux_pages", "N", "AUX area pages per CPU for trace=, a power of two (default 64)",
	  set_aux_pages },
	{ "ap_wait_ms", "N", "how long to wait for each other CPU to start (default 10000; "
	  "0 starts none: they park)", set_ap_wait_ms },
};

void cmdline_defaults(struct kernel_options *o)
{
	memset(o, 0, sizeof(*o));
	o->app = CMDLINE_DEFAULT_APP;
	o->serial_port = 0x3f8;
	o->baud = 115200;
	o->events = "";
	o->ring_pages = 256;
	o->stream = "off";
	o->count = "";
	o->max_rate = 100000;		/* PROFILE_MAX_RATE, perf's default */
	o->trace = "";
	o->aux_pages = 64;
	o->ap_wait_ms = 10000;		/* Linux waits 10 s for an AP too */
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Cut the next word out of *p; NULL at the end. */
static char *next_word(char **p)
{
	char *s = *p, *w;

	while (is_space(*s))
		s++;
	if (!*s)
		return NULL;
	w = s;
	while (*s && !is_space(*s))
		s++;
	if (*s)
		*s++ = 0;
	*p = s;
	return w;
}

static int unknown(const char *key, char *err, size_t n)
{
	size_t len = ksnprintf(err, n, "unknown option '%s'; known options:", key);

	for (size_t i = 0; i < ARRAY_SIZE(options) && len < n; i++)
		len += ksnprintf(err + len, n - len, " %s", options[i].name);
	return -1;
}

int cmdline_parse(char *line, struct kernel_options *o, char *err, size_t n)
{
	char *w;

	while ((w = next_word(&line))) {
		if (!strcmp(w, "--")) {
			while ((w = next_word(&line))) {
				if (o->app_argc == (int)ARRAY_SIZE(o->app_argv) - 1) {
					ksnprintf(err, n, "more than %d app arguments after '--'",
						  (int)ARRAY_SIZE(o->app_argv) - 1);
					return -1;
				}
				o->app_argv[o->app_argc++] = w;
			}
			break;
		}
		char *eq = strchr(w, '=');
		if (eq)
			*eq = 0;
		const struct option *opt = NULL;
		for (size_t i = 0; i < ARRAY_SIZE(options); i++)
			if (!strcmp(options[i].name, w))
				opt = &options[i];
		if (!opt)
			return unknown(w, err, n);
		if (!eq || !eq[1]) {
			ksnprintf(err, n, "option '%s' needs a value: %s=%s", w, w, opt->value_help);
			return -1;
		}
		if (opt->set(o, eq + 1, err, n))
			return -1;
	}
	o->app_argv[o->app_argc] = NULL;
	return 0;
}

void cmdline_help(void (*out)(const char *line))
{
	char buf[160];

	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		ksnprintf(buf, sizeof(buf), "  %s=%-20s %s", options[i].name,
			  options[i].value_help, options[i].help);
		out(buf);
	}
}

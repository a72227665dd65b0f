/*
 * cmdline.c — the kernel command line: from LoadOptions + \bareperf.cfg
 * (UEFI) or -append (PVH). A word the kernel does not understand is an
 * error, never silently ignored: a typo must not run the wrong experiment.
 */
#include "kernel/kernel.h"
#include "kernel/cmdline.h"
#include "kernel/platform/uart.h"

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

/* A hex byte field of pci:BB:DD.F, ending at *end. */
static bool hex_field(const char **p, char end, u32 max, u8 *out)
{
	u32 v = 0;
	int n = 0;

	for (; **p && **p != end; (*p)++, n++) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0 || n >= 2)
			return false;
		v = v * 16 + d;
	}
	if (!n || v > max || **p != end)
		return false;
	if (end)
		(*p)++;
	*out = (u8)v;
	return true;
}

static int set_serial(struct kernel_options *o, char *val, char *err, size_t n)
{
	static const u16 com[] = { 0x3f8, 0x2f8, 0x3e8, 0x2e8 };
	struct serial_opt s = { 0 };
	u64 v;

	if (!strcmp(val, "auto")) {
		s.kind = SERIAL_AUTO;
	} else if (!strncmp(val, "com", 3) && val[3] >= '1' && val[3] <= '4' && !val[4]) {
		s.kind = SERIAL_IO;
		s.addr = com[val[3] - '1'];
	} else if (!strncmp(val, "mmio:", 5) || !strncmp(val, "mmio32:", 7)) {
		bool w4 = val[4] == '3';
		if (parse_u64(val + (w4 ? 7 : 5), &v) || !v || v >= (1ull << 52)) {
			ksnprintf(err, n, "serial: '%s' is not mmio:ADDR or mmio32:ADDR with a "
				  "physical address like 0xfe032000", val);
			return -1;
		}
		s.kind = SERIAL_MMIO;
		s.addr = v;
		s.width = w4 ? 4 : 1;
	} else if (!strncmp(val, "pci:", 4)) {
		const char *p = val + 4;
		if (!hex_field(&p, ':', 0xff, &s.bus) || !hex_field(&p, '.', 0x1f, &s.dev) ||
		    !hex_field(&p, 0, 7, &s.fn)) {
			ksnprintf(err, n, "serial: '%s' is not pci:BB:DD.F in hex, like pci:00:16.3", val);
			return -1;
		}
		s.kind = SERIAL_PCI;
	} else if (!parse_u64(val, &v) && v && v <= 0xfff8) {
		s.kind = SERIAL_IO;
		s.addr = v;
	} else {
		ksnprintf(err, n, "serial: '%s' is not auto, com1..com4, an I/O port like 0x3f8, "
			  "mmio:ADDR, mmio32:ADDR or pci:BB:DD.F", val);
		return -1;
	}
	o->serial = s;
	return 0;
}

static int set_onoff(bool *off, const char *name, const char *val, char *err, size_t n)
{
	if (strcmp(val, "on") && strcmp(val, "off")) {
		ksnprintf(err, n, "%s: '%s' is not on or off", name, val);
		return -1;
	}
	*off = !strcmp(val, "off");
	return 0;
}

static int set_turbo(struct kernel_options *o, char *val, char *err, size_t n)
{
	return set_onoff(&o->turbo_off, "turbo", val, err, n);
}

static int set_prefetch(struct kernel_options *o, char *val, char *err, size_t n)
{
	return set_onoff(&o->prefetch_off, "prefetch", val, err, n);
}

static int set_console(struct kernel_options *o, char *val, char *err, size_t n)
{
	if (!strcmp(val, "serial"))
		o->console = CONSOLE_SERIAL;
	else if (!strcmp(val, "fb"))
		o->console = CONSOLE_FB;
	else if (!strcmp(val, "both"))
		o->console = CONSOLE_BOTH;
	else {
		ksnprintf(err, n, "console: '%s' is not serial, fb or both", val);
		return -1;
	}
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

static int set_code(struct kernel_options *o, char *val, char *err, size_t n)
{
	u64 v;

	if (set_u64(&v, "code", val, 0, 1, err, n))
		return -1;
	o->code = v;
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
 * symbols are resolved with the run's other settings (profile/trace.c). */
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
	{ "serial", "auto|com1..4|0xPORT|mmio:ADDR|mmio32:ADDR|pci:BB:DD.F",
	  "console UART (default auto: ACPI SPCR's, else a PCI serial controller, else COM1)",
	  set_serial },
	{ "baud", "N", "console baud rate (default SPCR's, else 115200)", set_baud },
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
	{ "code", "0|1", "with control=1: run machine code the host sends (bareperf bench; "
	  "arbitrary code, for machines you own; default 0)", set_code },
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
	{ "console", "serial|fb|both", "where the console text goes (default both when the "
	  "loader found a screen, else serial)", set_console },
	{ "turbo", "on|off", "off: turbo (Intel) / core performance boost (AMD) off on every "
	  "CPU (default: as the firmware set it)", set_turbo },
	{ "prefetch", "on|off", "off: the hardware prefetchers off on every CPU, where the "
	  "vendor documents how (default: as the firmware set them)", set_prefetch },
};

void cmdline_defaults(struct kernel_options *o)
{
	memset(o, 0, sizeof(*o));
	o->app = CMDLINE_DEFAULT_APP;
	o->serial.kind = SERIAL_AUTO;
	o->baud = 0;
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

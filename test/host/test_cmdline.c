/*
 * test_cmdline — the kernel command-line parser: defaults, every option,
 * app arguments, and a clear error for each kind of bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "kernel/cmdline.h"

static struct kernel_options o;
static char err[256];

static int parse(const char *text)
{
	static char line[1024];

	strcpy(line, text);
	cmdline_defaults(&o);
	err[0] = 0;
	return cmdline_parse(line, &o, err, sizeof(err));
}

static void defaults(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_string_equal(o.app, CMDLINE_DEFAULT_APP);
	assert_int_equal(o.serial.kind, SERIAL_AUTO);
	assert_int_equal(o.baud, 0);
	assert_int_equal(o.console, CONSOLE_AUTO);
	assert_int_equal(o.app_argc, 0);
	assert_null(o.app_argv[0]);
	assert_string_equal(o.events, "");
	assert_int_equal(o.ring_pages, 256);
	assert_false(o.callchain);
	assert_int_equal(parse("   \t \n "), 0);
}

static void options(void **state)
{
	(void)state;
	assert_int_equal(parse("app=test_boot serial=com2 baud=9600"), 0);
	assert_string_equal(o.app, "test_boot");
	assert_int_equal(o.serial.kind, SERIAL_IO);
	assert_int_equal(o.serial.addr, 0x2f8);
	assert_int_equal(o.baud, 9600);
	assert_int_equal(parse("serial=0x3e8"), 0);
	assert_int_equal(o.serial.addr, 0x3e8);
	assert_int_equal(parse("serial=com4 serial=com1"), 0);	/* last one wins */
	assert_int_equal(o.serial.addr, 0x3f8);
	assert_int_equal(parse("serial=com1 serial=auto"), 0);
	assert_int_equal(o.serial.kind, SERIAL_AUTO);
	assert_int_equal(parse("serial=mmio:0xfe032000"), 0);
	assert_int_equal(o.serial.kind, SERIAL_MMIO);
	assert_int_equal(o.serial.addr, 0xfe032000);
	assert_int_equal(o.serial.width, 1);
	assert_int_equal(parse("serial=mmio32:0xfedc9000"), 0);
	assert_int_equal(o.serial.width, 4);
	assert_int_equal(parse("serial=pci:00:16.3"), 0);
	assert_int_equal(o.serial.kind, SERIAL_PCI);
	assert_int_equal(o.serial.bus, 0);
	assert_int_equal(o.serial.dev, 0x16);
	assert_int_equal(o.serial.fn, 3);
	assert_int_equal(parse("serial=pci:3a:1f.0"), 0);
	assert_int_equal(o.serial.bus, 0x3a);
	assert_int_equal(o.serial.dev, 0x1f);
	assert_int_equal(parse("console=fb"), 0);
	assert_int_equal(o.console, CONSOLE_FB);
	assert_int_equal(parse("console=serial"), 0);
	assert_int_equal(o.console, CONSOLE_SERIAL);
	assert_int_equal(parse("console=both"), 0);
	assert_int_equal(o.console, CONSOLE_BOTH);
	assert_false(o.turbo_off);
	assert_false(o.prefetch_off);
	assert_int_equal(parse("turbo=off prefetch=off"), 0);
	assert_true(o.turbo_off);
	assert_true(o.prefetch_off);
	assert_int_equal(parse("turbo=off turbo=on"), 0);
	assert_false(o.turbo_off);
	assert_int_equal(parse("turbo=0"), -1);
	assert_non_null(strstr(err, "turbo: '0' is not on or off"));
	assert_int_equal(parse("prefetch=no"), -1);
}

static void profiling_options(void **state)
{
	(void)state;
	assert_int_equal(parse("events=cycles,instructions period=100000 callchain=1 ring_pages=64"), 0);
	assert_string_equal(o.events, "cycles,instructions");
	assert_int_equal(o.period, 100000);
	assert_true(o.callchain);
	assert_int_equal(o.ring_pages, 64);
	assert_int_equal(parse("freq=4000"), 0);
	assert_int_equal(o.freq, 4000);
	assert_int_equal(parse("ring_pages=3"), -1);
	assert_non_null(strstr(err, "ring_pages: '3' is not a power of two"));
	assert_int_equal(parse("ring_pages=1"), -1);
	assert_int_equal(parse("period=0"), -1);
	assert_non_null(strstr(err, "period: '0' is not a number from 1"));
	assert_int_equal(parse("freq=2000000"), -1);
	assert_int_equal(parse("callchain=2"), -1);
	assert_string_equal(o.count, "");
	assert_int_equal(o.max_rate, 100000);
	assert_int_equal(parse("count=tsc,cpu-clock,instructions max_rate=0"), 0);
	assert_string_equal(o.count, "tsc,cpu-clock,instructions");
	assert_int_equal(o.max_rate, 0);
	assert_int_equal(parse("max_rate=2500"), 0);
	assert_int_equal(o.max_rate, 2500);
	assert_int_equal(parse("max_rate=many"), -1);
	assert_non_null(strstr(err, "max_rate: 'many' is not a number from 0 to 10000000"));
	assert_int_equal(parse("count="), -1);
	assert_string_equal(err, "option 'count' needs a value: count=LIST");
}

static void trace_options(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_string_equal(o.trace, "");
	assert_int_equal(o.aux_pages, 64);
	assert_int_equal(parse("trace=all aux_pages=1"), 0);
	assert_string_equal(o.trace, "all");
	assert_int_equal(o.aux_pages, 1);
	assert_int_equal(parse("trace=sstep:tt_fib"), 0);
	assert_string_equal(o.trace, "sstep:tt_fib");
	assert_int_equal(parse("trace=pt:0x100000-0x200000"), 0);
	assert_int_equal(parse("trace=tt_begin-tt_end"), 0);
	assert_int_equal(parse("trace=a-b-c"), -1);
	assert_non_null(strstr(err, "trace: 'a-b-c' is not [sstep:|pt:]all, a function, or START-END"));
	assert_int_equal(parse("trace=pt:"), -1);
	assert_int_equal(parse("trace=-x"), -1);
	assert_int_equal(parse("trace=x-"), -1);
	assert_int_equal(parse("aux_pages=3"), -1);
	assert_non_null(strstr(err, "aux_pages: '3' is not a power of two from 1 to 65536"));
	assert_int_equal(parse("aux_pages=0"), -1);
	assert_int_equal(parse("aux_pages=131072"), -1);
}

static void app_arguments(void **state)
{
	(void)state;
	assert_int_equal(parse("app=x -- a b=c  --  d"), 0);
	assert_string_equal(o.app, "x");
	assert_int_equal(o.app_argc, 4);
	assert_string_equal(o.app_argv[0], "a");
	assert_string_equal(o.app_argv[1], "b=c");
	assert_string_equal(o.app_argv[2], "--");		/* only the first -- splits */
	assert_string_equal(o.app_argv[3], "d");
	assert_null(o.app_argv[4]);
}

static void too_many_app_arguments(void **state)
{
	char line[512] = "--";
	(void)state;

	for (int i = 0; i < 40; i++)
		strcat(line, " w");
	assert_int_equal(parse(line), -1);
	assert_non_null(strstr(err, "more than 31 app arguments"));
}

static void unknown_option(void **state)
{
	(void)state;
	assert_int_equal(parse("app=x bogus=1"), -1);
	assert_string_equal(err, "unknown option 'bogus'; known options: app serial baud "
			    "events period freq callchain ring_pages stream pace control code count max_rate "
			    "trace aux_pages ap_wait_ms console turbo prefetch");
	assert_int_equal(parse("quiet"), -1);
	assert_non_null(strstr(err, "unknown option 'quiet'"));
}

static void ap_wait(void **state)
{
	(void)state;
	assert_int_equal(parse("app=x"), 0);
	assert_int_equal(o.ap_wait_ms, 10000);
	assert_int_equal(parse("ap_wait_ms=0"), 0);
	assert_int_equal(o.ap_wait_ms, 0);
	assert_int_equal(parse("ap_wait_ms=600001"), -1);
	assert_non_null(strstr(err, "ap_wait_ms: '600001' is not a number from 0 to 600000"));
}

static void missing_value(void **state)
{
	(void)state;
	assert_int_equal(parse("app="), -1);
	assert_string_equal(err, "option 'app' needs a value: app=NAME");
	assert_int_equal(parse("baud"), -1);
	assert_string_equal(err, "option 'baud' needs a value: baud=N");
}

static void bad_values(void **state)
{
	(void)state;
	assert_int_equal(parse("baud=fast"), -1);
	assert_non_null(strstr(err, "baud: 'fast' is not a rate"));
	assert_int_equal(parse("baud=1234"), -1);		/* 115200 / 1234 is not whole */
	assert_int_equal(parse("baud=0"), -1);
	assert_int_equal(parse("baud=230400"), -1);		/* above the 16550's clock */
	assert_int_equal(parse("serial=com5"), -1);
	assert_non_null(strstr(err, "serial: 'com5' is not auto, com1..com4"));
	assert_int_equal(parse("serial=mmio:"), -1);
	assert_non_null(strstr(err, "serial: 'mmio:' is not mmio:ADDR"));
	assert_int_equal(parse("serial=mmio:0"), -1);
	assert_int_equal(parse("serial=mmio32:zz"), -1);
	assert_int_equal(parse("serial=pci:00:16"), -1);
	assert_non_null(strstr(err, "serial: 'pci:00:16' is not pci:BB:DD.F"));
	assert_int_equal(parse("serial=pci:00:20.0"), -1);	/* device > 31 */
	assert_int_equal(parse("serial=pci:00:1f.8"), -1);	/* function > 7 */
	assert_int_equal(parse("serial=pci:100:1f.0"), -1);
	assert_int_equal(parse("serial=pci:0g:1f.0"), -1);
	assert_int_equal(parse("serial=pci:00:1f.0x"), -1);
	assert_int_equal(parse("console=screen"), -1);
	assert_non_null(strstr(err, "console: 'screen' is not serial, fb or both"));
	assert_int_equal(parse("serial=0x"), -1);
	assert_int_equal(parse("serial=0x10000"), -1);
	/* A failed option leaves the default in place for the error message's UART. */
	assert_int_equal(parse("serial=nope"), -1);
	assert_int_equal(o.serial.kind, SERIAL_AUTO);
}

static unsigned help_lines;
static void count_help(const char *line)
{
	assert_non_null(strstr(line, "="));
	help_lines++;
}

static void help_lists_every_option(void **state)
{
	(void)state;
	help_lines = 0;
	cmdline_help(count_help);
	assert_int_equal(help_lines, 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(ap_wait),
		cmocka_unit_test(options),
		cmocka_unit_test(profiling_options),
		cmocka_unit_test(trace_options),
		cmocka_unit_test(app_arguments),
		cmocka_unit_test(too_many_app_arguments),
		cmocka_unit_test(unknown_option),
		cmocka_unit_test(missing_value),
		cmocka_unit_test(bad_values),
		cmocka_unit_test(help_lists_every_option),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

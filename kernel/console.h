/*
 * console.h — the console's set-up calls (kernel/console.c), private to
 * kernel/. Printing (kprintf, console_write) and the output lock are in
 * kernel/kernel.h.
 */
#ifndef BAREPERF_KERNEL_CONSOLE_H
#define BAREPERF_KERNEL_CONSOLE_H

#include "kernel/x86.h"

/* The UART is chosen (or there is none; kernel/dev/serial.c): replay the
 * boot log on it (unless the UART already had it) and send text straight
 * there from now on. */
void console_serial_ready(bool replay);
/* Until then, also write text to the UART in use (the tentative COM1),
 * starting with what is buffered. */
void console_early_uart(void);
/* console=fb keeps plain console text off the UART (the stream still
 * uses it). */
void console_text_to_uart(bool on);
/* The TSC rate, once known (kernel/platform/tsc.c): the output lock's
 * bounded wait counts time in TSC ticks, without calling up into the
 * clock code (which prints). Until then it assumes the fastest TSC. */
void console_set_tsc_hz(u64 hz);

/*
 * Where console text goes once framed output starts (kernel/stream.c
 * registers its CONSOLE channel): write(s, n) is called with the output
 * lock held, on the CPU that prints, never from inside write itself.
 * plain_uart: the UART keeps getting plain text too (the frames go to
 * another transport). NULL: plain text on the UART only, as at boot.
 */
typedef void (*console_sink_fn)(const char *s, size_t n);
void console_set_sink(console_sink_fn write, bool plain_uart);

/*
 * The devices console text is written on, registered by their drivers so
 * the console names none of them (the descriptors sit in a section of
 * their own, gathered by linker.ld; the console writes to them in link
 * order, by name). write(s, n) is called with the output lock held; it
 * ignores the text while its device is not set up.
 *   CONSOLE_OUT_SERIAL  the serial port text leaves the machine on
 *                       (kernel/platform/uart.c): from the first line of
 *                       the boot on, as console.c's comment says; also
 *                       from NMI and fault context, so its write must be
 *                       NMI-safe.
 *   CONSOLE_OUT_SCREEN  a screen (kernel/dev/fb.c): never from NMI
 *                       context, and never re-entered by a fault while it
 *                       draws.
 */
enum console_out_kind {
	CONSOLE_OUT_SERIAL = 1,
	CONSOLE_OUT_SCREEN = 2,
};
struct console_out {
	const char *name;
	enum console_out_kind kind;
	void (*write)(const char *s, size_t n);
};
#define CONSOLE_OUT(k, f)						\
	static const struct console_out __console_out_##f		\
	__attribute__((used, section(".hooks.console." #f), aligned(8))) = \
	{ .name = #f, .kind = (k), .write = (f) }
extern const struct console_out __start_console_outs[], __stop_console_outs[];

#endif

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

/*
 * Where console text goes once framed output starts (kernel/stream.c
 * registers its CONSOLE channel): write(s, n) is called with the output
 * lock held, on the CPU that prints, never from inside write itself.
 * plain_uart: the UART keeps getting plain text too (the frames go to
 * another transport). NULL: plain text on the UART only, as at boot.
 */
typedef void (*console_sink_fn)(const char *s, size_t n);
void console_set_sink(console_sink_fn write, bool plain_uart);

#endif

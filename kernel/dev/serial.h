/*
 * serial.h — choosing the console UART (kernel/dev/serial.c). Private to kernel/.
 *
 * serial=auto (the default) takes, in order: the UART ACPI's SPCR table
 * names (the firmware's own console, a server's Serial-over-LAN port),
 * else the first PCI serial controller (class 07h, subclass 00h, a
 * 16550-compatible programming interface) with an I/O or memory BAR,
 * else COM1 if its scratch register answers. An explicit serial= is used
 * as given. The choice and the reason are printed on the boot log.
 *
 * Until a UART is chosen, console text is kept in memory
 * (kernel/console.c) and replayed on it, so the whole boot log reaches
 * the port the user watches. With serial=auto it also goes to COM1 as it
 * is printed, when COM1 answers: the usual outcome, and a host tool on
 * that line sees the boot happen rather than a silence (bareperf record
 * --tty waits for a quiet line before it asks for a run). If another
 * UART is chosen, COM1's last line says which.
 */
#ifndef BAREPERF_KERNEL_SERIAL_H
#define BAREPERF_KERNEL_SERIAL_H

/* At kernel entry: an explicit I/O port (serial=com1..4|0xPORT) needs
 * nothing else and starts at once; the other choices wait for
 * serial_setup. */
void serial_setup_early(void);
/* After acpi_init: choose the UART (if not chosen yet), print why, and
 * replay the boot log on it. */
void serial_setup(void);
/* A fatal exit before serial_setup: take COM1 if it answers, so the
 * report reaches someone. Safe to call more than once. */
void serial_fallback(void);

#endif

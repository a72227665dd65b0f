/* uart.h — the 16550 serial port (kernel/platform/uart.c). Private to kernel/. */
#ifndef BAREPERF_KERNEL_UART_H
#define BAREPERF_KERNEL_UART_H

#include "kernel/x86.h"

#define UART_CLOCK_HZ	1843200		/* the PC's 1.8432 MHz crystal */
#define UART_CLOCK_BAUD	(UART_CLOCK_HZ / 16)	/* 115200 */

/*
 * Where a 16550-compatible UART's registers are: I/O ports base + n, or
 * memory base + n * width read and written width bytes at a time (1 or
 * 4: SPCR's access size, PCI UARTs in memory space). clock_hz is the
 * UART's input clock; 0 means the PC's 1.8432 MHz.
 */
struct uart_port {
	bool mmio;
	u64 base;
	u8 width;
	u32 clock_hz;
};

/* Does a UART answer at p (the scratch register keeps what is written to
 * it, on every 16450/16550)? Programs nothing else. MMIO must be mapped. */
bool uart_probe(const struct uart_port *p);
/* Make p the console UART and program it for baud, 8N1, FIFOs on;
 * baud 0 keeps the divisor the firmware set. Returns false (and keeps
 * the UART in use, if any) if nothing answers at p. */
bool uart_init(const struct uart_port *p, u32 baud);
/* Stop using the UART: writes go nowhere. */
void uart_release(void);
/* Is the UART in use the one at p? */
bool uart_is(const struct uart_port *p);
/* The divisor for baud from clock_hz (0: 1.8432 MHz), or 0 if no
 * divisor in 1..65535 comes within 3% of it. Pure. */
u32 uart_divisor(u32 clock_hz, u32 baud);
/* The UART in use ("I/O 0x3f8", "MMIO 0xfe032000 (32-bit registers)"). */
const char *uart_describe(char *buf, size_t size);
/* Blocking write; NMI-safe only in the sense that it takes no lock. */
void uart_write(const char *s, size_t len);
/* Wait until the transmitter has sent every byte (before exit or halt). */
void uart_flush(void);
/* Bytes as they are (no \n -> \r\n): the binary stream. */
void uart_write_raw(const void *p, size_t len);
/* One received byte, or -1 if none is waiting. */
int uart_getc(void);
bool uart_present(void);

#endif

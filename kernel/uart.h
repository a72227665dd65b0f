/* uart.h — the 16550 serial port (kernel/uart.c). Private to kernel/. */
#ifndef BAREPERF_KERNEL_UART_H
#define BAREPERF_KERNEL_UART_H

#include "kernel/x86.h"

#define UART_CLOCK_BAUD	115200		/* 1.8432 MHz / 16 */

/* Program the UART; returns false if no UART answers at that port. */
bool uart_init(u16 port, u32 baud);
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

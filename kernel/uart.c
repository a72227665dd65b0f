/*
 * uart.c — 16550-compatible UART, polled transmit with the FIFO enabled.
 * Register names from the PC16550D data sheet.
 */
#include "kernel/kernel.h"
#include "kernel/uart.h"

#define UART_THR	0	/* transmit holding (DLAB=0) */
#define UART_RBR	0	/* receive buffer (DLAB=0) */
#define UART_DLL	0	/* divisor latch low (DLAB=1) */
#define UART_IER	1
#define UART_DLM	1
#define UART_FCR	2
#define   FCR_ENABLE	0x01
#define   FCR_CLEAR	0x06	/* reset RX and TX FIFOs */
#define   FCR_TRIG14	0xc0
#define UART_LCR	3
#define   LCR_8N1	0x03
#define   LCR_DLAB	0x80
#define UART_MCR	4
#define   MCR_DTR_RTS_OUT2 0x0b
#define UART_LSR	5
#define   LSR_DR	0x01	/* a received byte is waiting */
#define   LSR_THRE	0x20	/* room in the transmit FIFO */
#define   LSR_TEMT	0x40	/* transmitter completely idle */
#define UART_SCR	7

/* A THRE wait that never ends means the port is gone: give up on it
 * rather than hang the kernel (at 300 baud a byte is ~33 ms). By time:
 * 5 * 10^7 port reads were ~50 s on a machine with slow port I/O. */
#define UART_WAIT_MS	500

static u16 port;
static bool present;

bool uart_init(u16 p, u32 baud)
{
	u16 div = UART_CLOCK_BAUD / baud;

	port = p;
	/* The scratch register holds what we write on any 16450/16550. */
	outb(port + UART_SCR, 0x5a);
	present = inb(port + UART_SCR) == 0x5a;
	if (!present)
		return false;
	outb(port + UART_IER, 0);
	outb(port + UART_LCR, LCR_DLAB);
	outb(port + UART_DLL, div & 0xff);
	outb(port + UART_DLM, div >> 8);
	outb(port + UART_LCR, LCR_8N1);
	outb(port + UART_FCR, FCR_ENABLE | FCR_CLEAR | FCR_TRIG14);
	outb(port + UART_MCR, MCR_DTR_RTS_OUT2);
	return true;
}

static void wait_lsr(u8 bit)
{
	u64 t0 = rdtsc_ordered();

	while (!(inb(port + UART_LSR) & bit))
		if (tsc_since_ns(t0, UART_WAIT_MS * 1000000ul)) {
			present = false;
			return;
		}
}

static void put(char c)
{
	wait_lsr(LSR_THRE);
	if (present)
		outb(port + UART_THR, c);
}

void uart_write(const char *s, size_t len)
{
	for (size_t i = 0; i < len && present; i++) {
		if (s[i] == '\n')
			put('\r');
		put(s[i]);
	}
}

void uart_write_raw(const void *p, size_t len)
{
	const u8 *s = p;

	for (size_t i = 0; i < len && present; i++)
		put(s[i]);
}

int uart_getc(void)
{
	if (!present || !(inb(port + UART_LSR) & LSR_DR))
		return -1;
	return inb(port + UART_RBR);
}

bool uart_present(void)
{
	return present;
}

void uart_flush(void)
{
	if (present)
		wait_lsr(LSR_TEMT);
}

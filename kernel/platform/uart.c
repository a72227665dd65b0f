/*
 * uart.c — 16550-compatible UART, polled transmit with the FIFO enabled,
 * in I/O or memory space. Register names from the PC16550D data sheet.
 */
#include "kernel/kernel.h"
#include "kernel/console.h"
#include "kernel/platform/uart.h"

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

static struct uart_port port;
static bool present;

static u8 reg_in(const struct uart_port *p, unsigned r)
{
	if (!p->mmio)
		return inb((u16)(p->base + r));
	if (p->width == 4)
		return (u8)*(volatile u32 *)(p->base + r * 4);
	return *(volatile u8 *)(p->base + r);
}

static void reg_out(const struct uart_port *p, unsigned r, u8 v)
{
	if (!p->mmio)
		outb((u16)(p->base + r), v);
	else if (p->width == 4)
		*(volatile u32 *)(p->base + r * 4) = v;
	else
		*(volatile u8 *)(p->base + r) = v;
}

bool uart_probe(const struct uart_port *p)
{
	u8 old = reg_in(p, UART_SCR);
	bool ok = true;

	/* Two patterns: a floating bus or an all-ones MMIO hole reads the
	 * same whatever was written. */
	for (u8 v = 0x5a; ok; v = 0xa5) {
		reg_out(p, UART_SCR, v);
		ok = reg_in(p, UART_SCR) == v;
		if (v == 0xa5)
			break;
	}
	reg_out(p, UART_SCR, old);
	return ok;
}

u32 uart_divisor(u32 clock_hz, u32 baud)
{
	u64 clk = clock_hz ? clock_hz : UART_CLOCK_HZ;

	if (!baud)
		return 0;
	u64 div = (clk + 8ull * baud) / (16ull * baud);	/* rounded */
	if (div < 1 || div > 0xffff)
		return 0;
	u64 got = clk / (16 * div);
	u64 diff = got > baud ? got - baud : baud - got;
	return diff * 100 <= 3ull * baud ? (u32)div : 0;
}

bool uart_init(const struct uart_port *p, u32 baud)
{
	u32 div = uart_divisor(p->clock_hz, baud);

	if (!uart_probe(p))
		return false;		/* the UART in use, if any, stays */
	port = *p;
	present = true;
	reg_out(&port, UART_IER, 0);
	if (div) {
		reg_out(&port, UART_LCR, LCR_DLAB);
		reg_out(&port, UART_DLL, div & 0xff);
		reg_out(&port, UART_DLM, div >> 8);
	}
	reg_out(&port, UART_LCR, LCR_8N1);
	reg_out(&port, UART_FCR, FCR_ENABLE | FCR_CLEAR | FCR_TRIG14);
	reg_out(&port, UART_MCR, MCR_DTR_RTS_OUT2);
	return true;
}

void uart_release(void)
{
	present = false;
}

bool uart_is(const struct uart_port *p)
{
	return present && port.mmio == p->mmio && port.base == p->base;
}

const char *uart_describe(char *buf, size_t size)
{
	if (!present)
		ksnprintf(buf, size, "none");
	else if (!port.mmio)
		ksnprintf(buf, size, "I/O %#lx", port.base);
	else
		ksnprintf(buf, size, "MMIO %#lx (%u-bit registers)", port.base, port.width * 8);
	return buf;
}

static void wait_lsr(u8 bit)
{
	u64 t0 = rdtsc_ordered();

	while (!(reg_in(&port, UART_LSR) & bit))
		if (tsc_since_ns(t0, UART_WAIT_MS * 1000000ul)) {
			present = false;
			return;
		}
}

static void put(char c)
{
	wait_lsr(LSR_THRE);
	if (present)
		reg_out(&port, UART_THR, c);
}

void uart_write(const char *s, size_t len)
{
	for (size_t i = 0; i < len && present; i++) {
		if (s[i] == '\n')
			put('\r');
		put(s[i]);
	}
}
CONSOLE_OUT(CONSOLE_OUT_SERIAL, uart_write);

void uart_write_raw(const void *p, size_t len)
{
	const u8 *s = p;

	for (size_t i = 0; i < len && present; i++)
		put(s[i]);
}

int uart_getc(void)
{
	if (!present || !(reg_in(&port, UART_LSR) & LSR_DR))
		return -1;
	return reg_in(&port, UART_RBR);
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

static void uart_exit(enum exit_code code)
{
	(void)code;
	uart_flush();
}
EXIT_STEP(EXIT_FLUSH, uart_exit);

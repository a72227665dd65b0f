/*
 * serial.c — which UART is the console (what and why: kernel/dev/serial.h).
 */
#include "kernel/kernel.h"
#include "kernel/console.h"
#include "kernel/platform/acpi.h"
#include "kernel/dev/pci.h"
#include "kernel/dev/serial.h"
#include "kernel/platform/uart.h"

#define COM1_PORT		0x3f8
#define DEFAULT_BAUD		115200
/* PCI Code and ID Assignment Specification 1.4: simple communication
 * controller, serial controller; programming interfaces 00h (8250) to
 * 06h (16950) all keep the 16550's register set. */
#define PCI_CLASS_COMM		0x07
#define   PCI_SUBCLASS_SERIAL	0x00
#define   PCI_PROG_IF_MAX	0x06
#define UART_REGS		8	/* registers a BAR must hold */

static bool decided;
static bool early_com1;			/* COM1 has had the text so far */
static u32 early_baud;

static const char *baud_text(u32 baud, char *buf, size_t n)
{
	if (baud)
		ksnprintf(buf, n, "%u baud", baud);
	else
		ksnprintf(buf, n, "baud rate as the firmware set it");
	return buf;
}

/* Take p; say which UART it is and why (or that nothing answers). */
static bool take(const struct uart_port *p, u32 baud, const char *why)
{
	char where[64], rate[40];

	if (p->mmio && !va_mapped(p->base, UART_REGS * p->width)) {
		kprintf("serial: MMIO %#lx is outside the kernel's map (%s): not used\n",
			p->base, why);
		return false;
	}
	if (!uart_probe(p)) {
		kprintf("serial: no UART answers at %s %#lx (%s)\n",
			p->mmio ? "MMIO" : "I/O", p->base, why);
		return false;
	}
	bool same = early_com1 && uart_is(p) && baud == early_baud;
	if (early_com1 && !same) {
		char note[160];
		int k = ksnprintf(note, sizeof(note), "serial: the console continues on %s %#lx "
				  "(%s)\n", p->mmio ? "MMIO" : "I/O", p->base, why);
		uart_write(note, (size_t)MIN(k, (int)sizeof(note) - 1));
		uart_flush();
	}
	/* Programming it again would reset its FIFOs (FCR), dropping what a
	 * host has already sent, such as a control request. */
	if (!same)
		uart_init(p, baud);
	decided = true;
	console_serial_ready(!same);
	kprintf("serial: console on %s, %s: %s\n", uart_describe(where, sizeof(where)),
		baud_text(baud, rate, sizeof(rate)), why);
	return true;
}

static u32 want_baud(u32 dflt)
{
	return kopt.baud ? kopt.baud : dflt;
}

/* PC I/O space above the legacy devices and the chipset's fixed blocks,
 * where firmware puts PCI I/O BARs (QEMU's and most PCs' root bus
 * decodes it). An I/O BAR is at most 256 bytes (PCI 3.0 6.2.5.1). */
#define PCI_IO_LO		0xc000
#define PCI_IO_HI		0x10000
#define PCI_IO_BAR_MAX		256

/* Is [lo, lo + size) clear of every root-bus function's assigned I/O BAR?
 * Reads the BAR registers only (no sizing): each counts as 256 bytes. */
static bool io_free(u32 lo, u32 size)
{
	for (u32 i = 0; i < pci_count(); i++) {
		const struct pci_dev *d = pci_get(i);
		int nbars = d->header_type == PCI_HEADER_NORMAL ? 6 :
			    d->header_type == PCI_HEADER_BRIDGE ? 2 : 0;
		for (int b = 0; b < nbars; b++) {
			u32 v = pci_read32(d, PCI_BAR0 + 4 * b);
			u32 a = v & (u32)PCI_BAR_IO_MASK;
			if ((v & PCI_BAR_IO) && a && lo < a + PCI_IO_BAR_MAX && a < lo + size)
				return false;
		}
	}
	return true;
}

/* Firmware that boots a kernel directly (qboot on the PVH path) assigns
 * no I/O BARs: give an unassigned one on the root bus a free port range. */
static bool assign_io_bar(const struct pci_dev *d, int n, struct pci_bar *b)
{
	char name[16];

	if (d->bus != 0 || b->size > PCI_IO_BAR_MAX)
		return false;
	for (u32 lo = PCI_IO_LO; lo + b->size <= PCI_IO_HI; lo += PCI_IO_BAR_MAX) {
		if (!io_free(lo, PCI_IO_BAR_MAX))
			continue;
		pci_write32(d, PCI_BAR0 + 4 * n, lo | PCI_BAR_IO);
		if (pci_bar(d, n, b) || b->addr != lo)
			return false;
		kprintf("serial: %s BAR%d was unassigned; placed at I/O %#x\n",
			pci_name(d, name, sizeof(name)), n, lo);
		return true;
	}
	return false;
}

/* The first BAR of a PCI UART that holds its registers: I/O preferred
 * (PCI 16550s put them in BAR0 and often mirror them in memory). */
static bool pci_uart_port(const struct pci_dev *d, struct uart_port *p, char *why, size_t n)
{
	struct pci_bar b;
	char name[16];

	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 6; i++) {
			if (pci_bar(d, i, &b) || b.size < UART_REGS)
				continue;
			if (pass == 0 && b.io && !b.addr && !assign_io_bar(d, i, &b))
				continue;
			if (pass == 0 && b.io && b.addr <= 0xfff8) {
				pci_enable(d, PCI_COMMAND_IO);
				*p = (struct uart_port){ .mmio = false, .base = b.addr, .width = 1 };
				return true;
			}
			if (pass == 1 && !b.io) {
				if ((!b.addr || !b.mapped) && pci_setup_memory(d))
					continue;
				pci_bar(d, i, &b);
				pci_enable(d, PCI_COMMAND_MEMORY);
				*p = (struct uart_port){ .mmio = true, .base = b.addr, .width = 1 };
				return true;
			}
		}
	}
	ksnprintf(why, n, "PCI serial controller %s has no assigned I/O or memory BAR",
		  pci_name(d, name, sizeof(name)));
	return false;
}

static bool is_pci_uart(const struct pci_dev *d)
{
	return d->class == PCI_CLASS_COMM && d->subclass == PCI_SUBCLASS_SERIAL &&
	       d->prog_if <= PCI_PROG_IF_MAX && d->header_type == PCI_HEADER_NORMAL;
}

static bool ensure_pci(void)
{
	return pci_method() != PCI_METHOD_NONE || pci_init() >= 0;
}

static bool from_spcr(char *no, size_t n)
{
	const struct acpi_spcr *s = &acpi->spcr;
	char why[96];

	if (s->src != ACPI_SRC_TABLE) {
		ksnprintf(no, n, "no usable SPCR table");
		return false;
	}
	struct uart_port p = { .mmio = s->mmio, .base = s->addr, .width = s->width,
			       .clock_hz = s->clock_hz };
	if (s->pci)
		ksnprintf(why, sizeof(why), "ACPI SPCR names it (PCI %02x:%02x.%x, %04x:%04x)",
			  s->pci_bus, s->pci_dev, s->pci_fn, s->pci_vendor, s->pci_device);
	else
		ksnprintf(why, sizeof(why), "ACPI SPCR names it");
	if (take(&p, want_baud(s->baud), why))
		return true;
	ksnprintf(no, n, "SPCR's UART did not answer");
	return false;
}

static bool from_pci(char *no, size_t n)
{
	char why[120], name[16];
	struct uart_port p;

	if (!ensure_pci()) {
		ksnprintf(no, n, "no PCI");
		return false;
	}
	for (u32 i = 0; i < pci_count(); i++) {
		struct pci_dev *d = pci_get(i);
		if (!is_pci_uart(d))
			continue;
		if (!pci_uart_port(d, &p, no, n)) {
			kprintf("serial: %s\n", no);
			continue;
		}
		ksnprintf(why, sizeof(why), "PCI serial controller %s (%04x:%04x)%s",
			  pci_name(d, name, sizeof(name)), d->vendor, d->device,
			  acpi->spcr.src == ACPI_SRC_TABLE ? "" : ", no SPCR table");
		if (take(&p, want_baud(DEFAULT_BAUD), why))
			return true;
	}
	ksnprintf(no, n, "no PCI serial controller");
	return false;
}

static void choose_auto(void)
{
	char no_spcr[64], no_pci[64], why[160];
	struct uart_port com1 = { .mmio = false, .base = COM1_PORT, .width = 1 };

	if (from_spcr(no_spcr, sizeof(no_spcr)) || from_pci(no_pci, sizeof(no_pci)))
		return;
	ksnprintf(why, sizeof(why), "COM1 answers the scratch-register test (%s, %s)",
		  no_spcr, no_pci);
	if (uart_probe(&com1) && take(&com1, want_baud(DEFAULT_BAUD), why))
		return;
	uart_release();
	decided = true;
	console_serial_ready(false);
	kprintf("serial: no UART (%s, %s, nothing at COM1): console on the screen only\n",
		no_spcr, no_pci);
}

static void choose_explicit(void)
{
	const struct serial_opt *o = &kopt.serial;
	char why[96];
	struct uart_port p = { 0 };

	if (o->kind == SERIAL_IO || o->kind == SERIAL_MMIO) {
		p = (struct uart_port){ .mmio = o->kind == SERIAL_MMIO, .base = o->addr,
					.width = o->kind == SERIAL_MMIO ? o->width : 1 };
		if (take(&p, want_baud(DEFAULT_BAUD), "serial= names it"))
			return;
	} else {
		struct pci_dev *d = ensure_pci() ? pci_lookup(o->bus, o->dev, o->fn) : NULL;
		if (!d)
			kprintf("serial: serial=pci:%02x:%02x.%x: no PCI function there\n",
				o->bus, o->dev, o->fn);
		else if (!pci_uart_port(d, &p, why, sizeof(why)))
			kprintf("serial: %s\n", why);
		else if (take(&p, want_baud(DEFAULT_BAUD), "serial= names it"))
			return;
	}
	uart_release();
	decided = true;
	console_serial_ready(false);
}

void serial_setup_early(void)
{
	struct uart_port com1 = { .mmio = false, .base = COM1_PORT, .width = 1 };

	if (kopt.serial.kind == SERIAL_IO) {
		choose_explicit();
	} else if (kopt.serial.kind == SERIAL_AUTO && uart_init(&com1, want_baud(DEFAULT_BAUD))) {
		early_com1 = true;
		early_baud = want_baud(DEFAULT_BAUD);
		console_early_uart();
	}
}

void serial_setup(void)
{
	if (decided)
		return;
	if (kopt.serial.kind == SERIAL_AUTO)
		choose_auto();
	else
		choose_explicit();
}

void serial_fallback(void)
{
	struct uart_port com1 = { .mmio = false, .base = COM1_PORT, .width = 1 };

	if (decided)
		return;
	decided = true;
	if (early_com1) {		/* COM1 has had everything already */
		console_serial_ready(false);
		return;
	}
	uart_init(&com1, want_baud(DEFAULT_BAUD));
	console_serial_ready(true);
}

static void serial_exit(enum exit_code code)
{
	(void)code;
	serial_fallback();
}
EXIT_STEP(EXIT_OUTPUT, serial_exit);

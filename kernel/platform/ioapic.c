/*
 * ioapic.c — I/O APICs from the MADT (Intel 82093AA data sheet, ACPI 6.5
 * 5.2.12.3). Every pin is masked at boot; drivers route what they use.
 */
#include "kernel/kernel.h"
#include "kernel/platform/acpi.h"
#include "kernel/platform/apic.h"

#define IOREGSEL	0x00
#define IOWIN		0x10
#define IOAPIC_REG_VER	0x01
#define IOAPIC_REDTBL(n) (0x10 + 2 * (n))

struct ioapic {
	volatile u32 *mmio;
	u32 gsi_base;
	u32 pins;
};

static struct ioapic ioapics[ACPI_MAX_IOAPICS];
static u32 nioapics;

static u32 reg_read(struct ioapic *io, u32 reg)
{
	io->mmio[IOREGSEL / 4] = reg;
	return io->mmio[IOWIN / 4];
}

static void reg_write(struct ioapic *io, u32 reg, u32 val)
{
	io->mmio[IOREGSEL / 4] = reg;
	io->mmio[IOWIN / 4] = val;
}

static struct ioapic *find(u32 gsi, u32 *pin)
{
	for (u32 i = 0; i < nioapics; i++) {
		struct ioapic *io = &ioapics[i];
		if (gsi >= io->gsi_base && gsi < io->gsi_base + io->pins) {
			*pin = gsi - io->gsi_base;
			return io;
		}
	}
	return NULL;
}

void ioapic_init(void)
{
	for (u32 i = 0; i < acpi->madt.nioapics && i < ACPI_MAX_IOAPICS; i++) {
		struct ioapic *io = &ioapics[nioapics];
		io->mmio = (volatile u32 *)(u64)acpi->madt.ioapic[i].addr;
		io->gsi_base = acpi->madt.ioapic[i].gsi_base;
		if (!va_mapped((u64)io->mmio, 0x20))
			continue;
		io->pins = ((reg_read(io, IOAPIC_REG_VER) >> 16) & 0xff) + 1;
		for (u32 p = 0; p < io->pins; p++)
			reg_write(io, IOAPIC_REDTBL(p), IOAPIC_MASKED);
		nioapics++;
	}
}

int ioapic_route(u32 gsi, u8 vector, u32 flags, u32 dest_apic_id)
{
	u32 pin;
	struct ioapic *io = find(gsi, &pin);

	if (!io)
		return -E_NOENT;
	/* Physical destination mode holds an 8-bit APIC id (data sheet 3.2.4);
	 * higher x2APIC ids need interrupt remapping, which we do not do. */
	if (dest_apic_id > 0xff)
		return -E_INVAL;
	/* Destination first, then the low word that unmasks (data sheet 3.2.4). */
	reg_write(io, IOAPIC_REDTBL(pin) + 1, dest_apic_id << 24);
	reg_write(io, IOAPIC_REDTBL(pin), flags | vector);
	return 0;
}

int ioapic_mask(u32 gsi, bool masked)
{
	u32 pin;
	struct ioapic *io = find(gsi, &pin);

	if (!io)
		return -E_NOENT;
	u32 lo = reg_read(io, IOAPIC_REDTBL(pin));
	reg_write(io, IOAPIC_REDTBL(pin), masked ? lo | IOAPIC_MASKED : lo & ~IOAPIC_MASKED);
	return 0;
}

u32 ioapic_isa_gsi(u8 irq, u32 *flags)
{
	/* ISA interrupts are edge-triggered, active high, GSI = IRQ, unless
	 * an interrupt source override says otherwise (5.2.12.5). */
	*flags = 0;
	for (u32 i = 0; i < acpi->madt.noverrides; i++) {
		const struct acpi_override *o = &acpi->madt.override[i];
		if (o->bus != 0 || o->source != irq)
			continue;
		if ((o->flags & ACPI_INTI_POLARITY_MASK) == ACPI_INTI_POLARITY_LOW)
			*flags |= IOAPIC_POL_LOW;
		if ((o->flags & ACPI_INTI_TRIGGER_MASK) == ACPI_INTI_TRIGGER_LEVEL)
			*flags |= IOAPIC_TRIG_LEVEL;
		return o->gsi;
	}
	return irq;
}

bool ioapic_has_gsi(u32 gsi)
{
	u32 pin;
	return find(gsi, &pin) != NULL;
}

bool ioapic_gsi_is_isa(u32 gsi)
{
	u32 flags;

	for (u8 irq = 0; irq < 16; irq++)
		if (ioapic_isa_gsi(irq, &flags) == gsi)
			return true;
	return false;
}

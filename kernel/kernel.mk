# kernel/ build fragment.
KERNEL_ASM += kernel/entry.asm kernel/isr.asm kernel/trampoline.asm
KERNEL_C += kernel/main.c kernel/cpu.c kernel/trap.c kernel/paging.c \
	kernel/pmm.c kernel/uart.c kernel/serial.c kernel/fb.c kernel/quiet.c kernel/console.c kernel/cmdline.c \
	kernel/panic.c kernel/tsc.c kernel/tsc_cpuid.c kernel/pvh.c \
	kernel/apic.c kernel/ioapic.c kernel/hpet.c kernel/smp.c kernel/stream.c \
	kernel/wire.c kernel/pci.c kernel/virtio.c kernel/virtio_console.c \
	kernel/lib/string.c kernel/lib/printf.c
KERNEL_C += kernel/acpi.c kernel/acpi_init.c

# The screen console's font: 8x16 glyphs converted at build time from a PC
# console font (Debian console-setup-linux; see tools/psf2c.py).
FONT_PSF ?= /usr/share/consolefonts/Lat15-Terminus16.psf.gz
KERNEL_C += $(BUILD)/gen/font8x16.c

$(BUILD)/gen/font8x16.c: tools/psf2c.py $(FONT_PSF)
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)$(PYTHON) tools/psf2c.py $(FONT_PSF) > $@.tmp && mv $@.tmp $@

# kernel/ build fragment.
KERNEL_ASM += kernel/entry.asm kernel/boot_stack.asm kernel/isr.asm kernel/trampoline.asm
KERNEL_C += kernel/main.c kernel/bootinfo.c kernel/hooks.c kernel/cpu.c kernel/trap.c kernel/unwind.c kernel/nmi.c \
	kernel/paging.c kernel/pgtable.c kernel/pmm.c kernel/console.c kernel/cmdline.c \
	kernel/panic.c kernel/backtrace.c kernel/ksym.c kernel/smp.c \
	kernel/stream.c \
	kernel/lib/string.c kernel/lib/printf.c
# The PC's fixed hardware.
KERNEL_C += kernel/platform/acpi.c kernel/platform/acpi_init.c kernel/platform/apic.c \
	kernel/platform/ioapic.c kernel/platform/hpet.c kernel/platform/tsc.c \
	kernel/platform/tsc_cpuid.c kernel/platform/tsc_refine.c kernel/platform/uart.c \
	kernel/platform/pvh.c kernel/platform/quiet.c kernel/platform/quiet_plan.c \
	kernel/platform/debug_exit.c
# Drivers for what enumeration finds (PCI, ACPI's SPCR, the loader's GOP).
KERNEL_C += kernel/dev/pci.c kernel/dev/virtio.c kernel/dev/virtio_console.c \
	kernel/dev/serial.c kernel/dev/fb.c kernel/dev/screen.c

# The screen console's font: 8x16 glyphs converted at build time from a PC
# console font (Debian console-setup-linux; see tools/psf2c.py).
FONT_PSF ?= /usr/share/consolefonts/Lat15-Terminus16.psf.gz
KERNEL_C += $(BUILD)/gen/font8x16.c

$(BUILD)/gen/font8x16.c: tools/psf2c.py $(FONT_PSF)
	@mkdir -p $(@D)
	$(call say,GEN,$@)
	$(Q)$(PYTHON) tools/psf2c.py $(FONT_PSF) > $@.tmp && mv $@.tmp $@

# Host builds of kernel/ code that host programs link, as a static
# library: $(BUILD)/lib/ release (objects in $(BUILD)/tool/, as
# build/bareperf's), $(BUILD)/h/lib/ ASan+UBSan (objects in $(BUILD)/h/,
# the host tests'):
#   libbpklib.a   string and printf; string renamed so it links beside the
#                 host libc (KLIB_HOST_TEST, kernel/lib/klib_rename.h)
BPKLIB_LIB   := $(BUILD)/lib/libbpklib.a
BPKLIB_HLIB  := $(BUILD)/h/lib/libbpklib.a

$(BUILD)/h/klib/string.o: kernel/lib/string.c
	@mkdir -p $(@D)
	$(call say,HOSTCC,$<)
	$(Q)$(HOSTCC) $(HOSTCFLAGS) $(HOSTSAN) -DKLIB_HOST_TEST -c $< -o $@

$(BPKLIB_HLIB): $(BUILD)/h/kernel/lib/printf.o $(BUILD)/h/klib/string.o
$(BPKLIB_LIB): $(BUILD)/tool/kernel/lib/printf.o $(BUILD)/tool/kernel/lib/string.o
$(BUILD)/tool/kernel/lib/string.o: HOSTRELCFLAGS += -DKLIB_HOST_TEST

$(BPKLIB_LIB) $(BPKLIB_HLIB):
	@mkdir -p $(@D)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

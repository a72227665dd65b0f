# kernel/ build fragment.
KERNEL_ASM += kernel/entry.asm kernel/isr.asm kernel/trampoline.asm
KERNEL_C += kernel/main.c kernel/cpu.c kernel/trap.c kernel/paging.c \
	kernel/pmm.c kernel/uart.c kernel/serial.c kernel/console.c kernel/cmdline.c \
	kernel/panic.c kernel/tsc.c kernel/pvh.c kernel/apps.c \
	kernel/apic.c kernel/ioapic.c kernel/hpet.c kernel/smp.c kernel/stream.c \
	kernel/wire.c kernel/pci.c kernel/virtio.c kernel/virtio_console.c kernel/control.c \
	kernel/lib/string.c kernel/lib/printf.c
KERNEL_C += kernel/acpi.c kernel/acpi_init.c

/*
 * screen.c — whether the screen console runs, and how the framebuffer is
 * mapped: the policy around the drawing in kernel/dev/fb.c (what and when:
 * kernel/dev/screen.h).
 */
#include "kernel/kernel.h"
#include "kernel/boot.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/dev/fb.h"
#include "kernel/dev/pci.h"
#include "kernel/dev/screen.h"
#include "kernel/mm.h"
#include <uapi/bootinfo.h>

static const char *const fb_format_names[] = { "RGB", "BGR", "bitmask", "BltOnly" };

/* The screen console, on the loader's GOP framebuffer (console=fb|both,
 * or by default when there is one). What happened goes into msg, printed
 * after the banner (the first line a host tool looks for). */
void screen_setup(char *msg, size_t n)
{
	const struct boot_framebuffer *f = &boot_info->fb;
	const char *why = NULL;
	const char *fmt = f->format < ARRAY_SIZE(fb_format_names) ? fb_format_names[f->format] : "?";

	msg[0] = 0;
	if (kopt.console == CONSOLE_SERIAL && f->base)
		ksnprintf(msg, n, "fb: %ux%u framebuffer left alone (console=serial)\n",
			  f->width, f->height);
	if (kopt.console == CONSOLE_SERIAL || !f->base)
		return;
	if (f->base + (u64)f->pixels_per_line * f->height * 4 > mem_top(boot_info))
		why = "it lies outside the kernel's identity map";
	else
		fb_init(f->base, f->width, f->height, f->pixels_per_line, f->format, &why);
	if (kopt.console == CONSOLE_FB && fb_active())
		console_text_to_uart(false);
	if (why)
		ksnprintf(msg, n, "fb: %ux%u %s framebuffer at %#lx not used: %s\n", f->width,
			  f->height, fmt, f->base, why);
	else
		ksnprintf(msg, n, "fb: %ux%u %s, %u pixels per line, at %#lx: screen console %ux%u%s\n",
			  f->width, f->height, fmt, f->pixels_per_line, f->base, fb_cols(), fb_rows(),
			  kopt.console == CONSOLE_FB ? " (console=fb: none on the UART)" : "");
}

/* The framebuffer write-combining rather than uncached: writes go out in
 * bursts (SDM Vol. 3A 13.3). GOP reports only the visible part's size, so
 * the 2 MiB pages to change must lie inside the display controller's
 * memory BAR (PCI class 03h) that holds the framebuffer: no other device's
 * registers may share the type. Before other CPUs start. */
void screen_write_combining(void)
{
	const struct boot_framebuffer *f = &boot_info->fb;
	u64 len = ALIGN_UP((u64)f->pixels_per_line * f->height * 4, 2ul << 20);

	if (!fb_active())
		return;
	if (pci_method() == PCI_METHOD_NONE)
		pci_init();
	for (u32 i = 0; i < pci_count(); i++) {
		const struct pci_dev *d = pci_get(i);
		struct pci_bar b;
		if (d->class != PCI_CLASS_DISPLAY)
			continue;
		for (int n = 0; n < 6; n++) {
			if (pci_bar(d, n, &b) || b.io || f->base < b.addr ||
			    f->base + len > b.addr + b.size)
				continue;
			if (paging_map_wc(f->base, len)) {
				kprintf("fb: framebuffer mapped write-combining (%lu MiB of BAR%d "
					"of the display controller)\n", len >> 20, n);
				return;
			}
		}
	}
	kprintf("fb: framebuffer left uncached (no display controller BAR holds whole 2 MiB "
		"pages of it)\n");
}

/*
 * screen.h — the screen console's set-up (kernel/dev/screen.c): whether it
 * runs, and how the framebuffer is cached. The drawing is kernel/dev/fb.c.
 * Private to kernel/.
 */
#ifndef BAREPERF_KERNEL_SCREEN_H
#define BAREPERF_KERNEL_SCREEN_H

#include <stddef.h>

/* Once the command line is parsed, before the banner: start the screen
 * console if the loader left a framebuffer and console= wants it. What
 * happened, a line or nothing, goes into msg (n bytes) for the caller to
 * print after the banner. */
void screen_setup(char *msg, size_t n);
/* Once paging and ACPI are up, before other CPUs start: map the
 * framebuffer write-combining if a display controller's BAR holds it. */
void screen_write_combining(void);

#endif

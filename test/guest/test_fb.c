/*
 * test_fb — the screen console: what it costs to draw, and a known screen
 * for test/e2e/fbconsole.py to read back from QEMU's screendump.
 *
 *   -- (no arguments)  time a full-screen redraw (every cell drawn) and a
 *                      screenful of new text written through the console
 *                      (scrolling included), then leave the screen holding
 *                      numbered pattern lines the host checks cell by cell
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "kernel/dev/fb.h"
#include "test/guest/report.h"

static u64 us(u64 ticks)
{
	return tsc_to_ns(ticks) / 1000;
}

/* Line i of the pattern: its number, then the printable ASCII set rotated
 * by i, cut to the screen's width. */
static void pattern_line(u32 i, u32 cols, char *buf)
{
	u32 n = ksnprintf(buf, cols + 1, "%04u ", i);

	for (u32 c = n; c < cols; c++)
		buf[c] = (char)(FB_FONT_FIRST + (i + c) % (FB_FONT_LAST - FB_FONT_FIRST + 1));
	buf[cols] = 0;
}

static int test_fb_main(int argc, char **argv)
{
	static char line[FB_MAX_COLS + 2];
	(void)argc, (void)argv;

	if (!fb_active()) {
		report_skip("no screen console (boot through UEFI with a display device)");
		return report_summary();
	}
	u32 cols = fb_cols(), rows = fb_rows();

	/* A screenful of new text, through the console lock as kprintf does. */
	u64 t0 = rdtsc_ordered();
	bool locked = console_lock_output();
	for (u32 i = 0; i < rows; i++) {
		pattern_line(i, cols - 1, line);
		fb_write(line, strlen(line));
		fb_write("\n", 1);
	}
	if (locked)
		console_unlock_output();
	u64 t1 = rdtsc_ordered();
	if (console_lock_output()) {
		fb_redraw_all();
		console_unlock_output();
	}
	u64 t2 = rdtsc_ordered();

	kprintf("fb: %ux%u cells: a screenful of new text in %lu us, every cell redrawn in %lu us\n",
		cols, rows, us(t1 - t0), us(t2 - t1));
	report(t2 > t1 && t1 > t0, "drew %u x %u cells", cols, rows);
	/* The pattern the host reads back: the last lines on the screen. */
	for (u32 i = 0; i < 8; i++) {
		pattern_line(1000 + i, cols - 1, line);
		kprintf("%s\n", line);
	}
	return report_summary();
}

APP(test_fb, "screen console timing and read-back pattern", test_fb_main, APP_TEST);

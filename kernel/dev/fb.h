/*
 * fb.h — the screen console on the loader's GOP framebuffer (kernel/dev/fb.c).
 * Private to kernel/.
 *
 * Text in an 8x16 bitmap font (generated at build time from a PC console
 * font: tools/psf2c.py), light grey on black; a line holding an error
 * word ("PANIC", "FATAL", "error", "not ok", "FAIL", "bad ") turns red when it
 * ends. Any resolution, pitch (pixels per scan line) >= width, and the
 * two direct 32-bit pixel formats GOP reports (UEFI 2.10, 12.9:
 * PixelRedGreenBlueReserved8BitPerColor, PixelBlueGreenRedReserved8BitPerColor).
 *
 * Scrolling keeps what is on the screen in a cell grid and redraws only
 * the cells that change; when the cursor passes the last row the text
 * jumps up by a quarter of the screen at once, so a framebuffer that is
 * slow to write (uncached, as the kernel maps it) is rewritten once per
 * quarter screen, not once per line.
 *
 * Not NMI-safe, and not reentrant: kernel/console.c calls it under the
 * console lock and never from NMI context.
 */
#ifndef BAREPERF_KERNEL_FB_H
#define BAREPERF_KERNEL_FB_H

#include <stddef.h>
#include "kernel/x86.h"

#define FB_FONT_W	8
#define FB_FONT_H	16
#define FB_FONT_FIRST	0x20
#define FB_FONT_LAST	0x7e
/* The cell grid's capacity: 3840x2160 in 8x16 cells. Larger screens use
 * their top-left part. */
#define FB_MAX_COLS	480
#define FB_MAX_ROWS	135

/* EFI_GRAPHICS_PIXEL_FORMAT (UEFI 2.10, 12.9). */
enum {
	FB_FORMAT_RGBX = 0,	/* byte 0 red, 1 green, 2 blue */
	FB_FORMAT_BGRX = 1,	/* byte 0 blue, 1 green, 2 red */
	FB_FORMAT_BITMASK = 2,
	FB_FORMAT_BLT_ONLY = 3,
};

/* Colours as 0xRRGGBB. */
#define FB_FG		0xc0c0c0
#define FB_BG		0x000000
#define FB_ERR		0xff5030

extern const u8 fb_font[FB_FONT_LAST - FB_FONT_FIRST + 1][FB_FONT_H];

/*
 * Take the framebuffer at base (mapped, writable, at least
 * pixels_per_line * height * 4 bytes) and clear it. Returns 0, or
 * -E_INVAL with *why set (no framebuffer, a pixel format without direct
 * 32-bit pixels, a pitch below the width, a screen smaller than one cell).
 */
int fb_init(u64 base, u32 width, u32 height, u32 pixels_per_line, u32 format,
	    const char **why);
bool fb_active(void);
/* Columns and rows of text. */
u32 fb_cols(void);
u32 fb_rows(void);
/* Draw text at the cursor: \n ends a line, \r returns to its start, \t
 * goes to the next multiple of 8, other bytes outside the font show as '?'. */
void fb_write(const char *s, size_t n);
/* Redraw every cell whether it changed or not (measures a full screen). */
void fb_redraw_all(void);

#endif

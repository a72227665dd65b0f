/*
 * fb.c — the screen console (what and why: kernel/dev/fb.h).
 */
#include "kernel/kernel.h"
#include "kernel/console.h"
#include "kernel/dev/fb.h"

#define TAB		8
#define ATTR_TEXT	0
#define ATTR_ERR	1

struct cell {
	u8 ch, attr;
};

static struct {
	volatile u32 *base;
	u32 width, height, pitch;	/* pitch in pixels */
	u32 cols, rows;
	u32 row, col;			/* the cursor */
	u32 px[2];			/* pixel values of ATTR_TEXT and ATTR_ERR */
	u32 bg;
	bool on;
} fb;

static struct cell text[FB_MAX_ROWS][FB_MAX_COLS];	/* what should be shown */
static struct cell shown[FB_MAX_ROWS][FB_MAX_COLS];	/* what is on the screen */

/* 0xRRGGBB as the framebuffer stores it. */
static u32 pixel(u32 rgb, u32 format)
{
	u32 r = rgb >> 16 & 0xff, g = rgb >> 8 & 0xff, b = rgb & 0xff;

	return format == FB_FORMAT_RGBX ? r | g << 8 | b << 16 : b | g << 8 | r << 16;
}

static void draw_cell(u32 row, u32 col)
{
	struct cell c = text[row][col];
	u32 fg = fb.px[c.attr], bg = fb.bg;
	const u8 *glyph = fb_font[(c.ch >= FB_FONT_FIRST && c.ch <= FB_FONT_LAST ? c.ch : '?') -
				  FB_FONT_FIRST];
	volatile u32 *p = fb.base + (u64)row * FB_FONT_H * fb.pitch + col * FB_FONT_W;

	if (c.ch == ' ') {
		for (u32 y = 0; y < FB_FONT_H; y++, p += fb.pitch)
			for (u32 x = 0; x < FB_FONT_W; x++)
				p[x] = bg;
	} else {
		for (u32 y = 0; y < FB_FONT_H; y++, p += fb.pitch) {
			u8 bits = glyph[y];
			for (u32 x = 0; x < FB_FONT_W; x++)
				p[x] = bits & (0x80 >> x) ? fg : bg;
		}
	}
	shown[row][col] = c;
}

static void sync_row(u32 row)
{
	for (u32 col = 0; col < fb.cols; col++)
		if (text[row][col].ch != shown[row][col].ch ||
		    text[row][col].attr != shown[row][col].attr)
			draw_cell(row, col);
}

static void clear_row(u32 row)
{
	for (u32 col = 0; col < fb.cols; col++)
		text[row][col] = (struct cell){ ' ', ATTR_TEXT };
}

int fb_init(u64 base, u32 width, u32 height, u32 ppl, u32 format, const char **why)
{
	fb.on = false;
	if (!base || !width || !height) {
		*why = "no framebuffer";
		return -E_INVAL;
	}
	if (format != FB_FORMAT_RGBX && format != FB_FORMAT_BGRX) {
		*why = format == FB_FORMAT_BITMASK ?
			"pixel format is a bit mask (only 32-bit RGB and BGR are drawn)" :
			"the firmware offers no directly writable framebuffer (GOP BltOnly)";
		return -E_INVAL;
	}
	if (ppl < width) {
		*why = "pixels per scan line below the width";
		return -E_INVAL;
	}
	if (width < FB_FONT_W || height < FB_FONT_H) {
		*why = "screen smaller than one character";
		return -E_INVAL;
	}
	fb.base = (volatile u32 *)base;
	fb.width = width;
	fb.height = height;
	fb.pitch = ppl;
	fb.cols = MIN(width / FB_FONT_W, (u32)FB_MAX_COLS);
	fb.rows = MIN(height / FB_FONT_H, (u32)FB_MAX_ROWS);
	fb.row = fb.col = 0;
	fb.px[ATTR_TEXT] = pixel(FB_FG, format);
	fb.px[ATTR_ERR] = pixel(FB_ERR, format);
	fb.bg = pixel(FB_BG, format);
	/* Clear everything the firmware drew, the margins past the grid too. */
	for (u32 y = 0; y < height; y++)
		for (u32 x = 0; x < width; x++)
			fb.base[(u64)y * ppl + x] = fb.bg;
	for (u32 r = 0; r < fb.rows; r++) {
		clear_row(r);
		for (u32 c = 0; c < fb.cols; c++)
			shown[r][c] = text[r][c];
	}
	fb.on = true;
	return 0;
}

bool fb_active(void)
{
	return fb.on;
}

u32 fb_cols(void)
{
	return fb.on ? fb.cols : 0;
}

u32 fb_rows(void)
{
	return fb.on ? fb.rows : 0;
}

/* Does the line hold a word that marks an error? */
static bool is_error_line(u32 row)
{
	static const char *const words[] = { "PANIC", "FATAL", "error", "not ok", "FAIL", "bad " };
	char line[FB_MAX_COLS + 1];

	for (u32 c = 0; c < fb.cols; c++)
		line[c] = (char)text[row][c].ch;
	line[fb.cols] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		size_t n = strlen(words[i]);
		for (u32 c = 0; c + n <= fb.cols; c++)
			if (!memcmp(line + c, words[i], n))
				return true;
	}
	return false;
}

/* The cursor moves past the last row: jump the text up a quarter screen. */
static void scroll(void)
{
	u32 step = MAX(fb.rows / 4, 1u);

	for (u32 r = 0; r + step < fb.rows; r++)
		memcpy(text[r], text[r + step], sizeof(text[r][0]) * fb.cols);
	for (u32 r = fb.rows - step; r < fb.rows; r++)
		clear_row(r);
	for (u32 r = 0; r < fb.rows; r++)
		sync_row(r);
	fb.row = fb.rows - step;
}

static void newline(void)
{
	if (is_error_line(fb.row)) {
		for (u32 c = 0; c < fb.cols; c++)
			text[fb.row][c].attr = ATTR_ERR;
		sync_row(fb.row);
	}
	fb.col = 0;
	if (++fb.row == fb.rows)
		scroll();
}

void fb_write(const char *s, size_t n)
{
	if (!fb.on)
		return;
	/* A CPU reporting a fatal error may have taken the console over from
	 * one that was drawing (kernel/console.c): never index past the grid. */
	if (fb.row >= fb.rows || fb.col > fb.cols)
		fb.row = fb.rows - 1, fb.col = 0;
	for (size_t i = 0; i < n; i++) {
		u8 ch = (u8)s[i];
		if (ch == '\n') {
			newline();
			continue;
		}
		if (ch == '\r') {
			fb.col = 0;
			continue;
		}
		if (ch == '\t') {
			u32 to = MIN(ALIGN_UP(fb.col + 1, TAB), fb.cols);
			while (fb.col < to)
				fb_write(" ", 1);
			continue;
		}
		if (fb.col == fb.cols)		/* a long line wraps */
			newline();
		text[fb.row][fb.col] = (struct cell){ ch, ATTR_TEXT };
		draw_cell(fb.row, fb.col);
		fb.col++;
	}
}
CONSOLE_OUT(CONSOLE_OUT_SCREEN, fb_write);

void fb_redraw_all(void)
{
	for (u32 r = 0; r < fb.rows && fb.on; r++)
		for (u32 c = 0; c < fb.cols; c++)
			draw_cell(r, c);
}

/*
 * test_fb — the screen console's drawing (kernel/dev/fb.c) into framebuffers
 * in host memory: both 32-bit pixel formats, a pitch wider than the
 * screen (the padding must never be written), a width that is not a
 * whole number of cells, line wrap, jump scrolling, error lines in red,
 * and the framebuffers it must refuse. Cells are read back and compared
 * with the font's glyphs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "kernel/dev/fb.h"

#define SENTINEL	0xdeadbeefu

struct screen {
	u32 *mem;
	u32 w, h, pitch, format;
};

static struct screen make(u32 w, u32 h, u32 pitch, u32 format)
{
	struct screen s = { calloc((size_t)pitch * h, 4), w, h, pitch, format };
	const char *why = NULL;

	assert_non_null(s.mem);
	for (size_t i = 0; i < (size_t)pitch * h; i++)
		s.mem[i] = SENTINEL;
	assert_int_equal(fb_init((u64)(uintptr_t)s.mem, w, h, pitch, format, &why), 0);
	assert_null(why);
	return s;
}

static u32 px(const struct screen *s, u32 rgb)
{
	u32 r = rgb >> 16 & 0xff, g = rgb >> 8 & 0xff, b = rgb & 0xff;

	return s->format == FB_FORMAT_RGBX ? r | g << 8 | b << 16 : b | g << 8 | r << 16;
}

/* The character in cell (row, col), '\0' if it matches no glyph in the
 * colour given. */
static char cell(const struct screen *s, u32 row, u32 col, u32 rgb)
{
	u8 rows[FB_FONT_H];
	u32 fg = px(s, rgb), bg = px(s, FB_BG);

	for (u32 y = 0; y < FB_FONT_H; y++) {
		rows[y] = 0;
		for (u32 x = 0; x < FB_FONT_W; x++) {
			u32 v = s->mem[(size_t)(row * FB_FONT_H + y) * s->pitch + col * FB_FONT_W + x];
			if (v == fg)
				rows[y] |= 0x80 >> x;
			else if (v != bg)
				return 0;
		}
	}
	for (int c = FB_FONT_FIRST; c <= FB_FONT_LAST; c++)
		if (!(memcmp)(rows, fb_font[c - FB_FONT_FIRST], FB_FONT_H))
			return (char)c;
	return 0;
}

static void row_is(const struct screen *s, u32 row, const char *text, u32 rgb)
{
	u32 n = (u32)(strlen)(text);

	for (u32 c = 0; c < fb_cols(); c++) {
		char want = c < n ? text[c] : ' ';
		char got = cell(s, row, c, rgb);
		if (got != want)
			fail_msg("row %u col %u: '%c' (%d), expected '%c'", row, c, got ? got : '?',
				 got, want);
	}
}

static void padding_untouched(const struct screen *s)
{
	for (u32 y = 0; y < s->h; y++)
		for (u32 x = s->w; x < s->pitch; x++)
			if (s->mem[(size_t)y * s->pitch + x] != SENTINEL)
				fail_msg("pixel (%u, %u) beyond the width was written", x, y);
}

static void write_str(const char *t)
{
	fb_write(t, (strlen)(t));
}

static void formats(void **state)
{
	(void)state;
	for (u32 f = FB_FORMAT_RGBX; f <= FB_FORMAT_BGRX; f++) {
		struct screen s = make(640, 480, 640, f);
		assert_int_equal(fb_cols(), 80);
		assert_int_equal(fb_rows(), 30);
		write_str("Hello, screen! {|}~\n");
		row_is(&s, 0, "Hello, screen! {|}~", FB_FG);
		row_is(&s, 1, "", FB_FG);
		/* The colours land in the right bytes: red's byte 0 is R (RGBX)
		 * or B (BGRX). */
		write_str("bareperf: PANIC on cpu 0\n");
		row_is(&s, 1, "bareperf: PANIC on cpu 0", FB_ERR);
		const u8 *p = (const u8 *)s.mem;
		u32 i;
		for (i = 0; s.mem[i] != px(&s, FB_ERR); i++)
			;
		assert_int_equal(p[i * 4 + (f == FB_FORMAT_RGBX ? 0 : 2)], FB_ERR >> 16);
		assert_int_equal(p[i * 4 + (f == FB_FORMAT_RGBX ? 2 : 0)], FB_ERR & 0xff);
		free(s.mem);
	}
}

static void pitch_and_odd_width(void **state)
{
	(void)state;
	/* 1366 px: 170 cells and a 6-pixel margin; the pitch pads to 1376. */
	struct screen s = make(1366, 770, 1376, FB_FORMAT_BGRX);
	char line[300];

	assert_int_equal(fb_cols(), 170);
	assert_int_equal(fb_rows(), 48);
	for (u32 i = 0; i < 300; i++) {
		snprintf(line, sizeof(line), "line %u\tend\n", i);
		write_str(line);
	}
	padding_untouched(&s);
	/* The margin right of the last cell and below the last row is black. */
	for (u32 y = 0; y < s.h; y++)
		for (u32 x = 1360; x < s.w; x++)
			assert_int_equal(s.mem[(size_t)y * s.pitch + x], px(&s, FB_BG));
	for (u32 x = 0; x < s.w; x++)
		assert_int_equal(s.mem[(size_t)769 * s.pitch + x], px(&s, FB_BG));
	free(s.mem);
}

static void wrap_and_scroll(void **state)
{
	(void)state;
	struct screen s = make(320, 160, 320, FB_FORMAT_RGBX);	/* 40 x 10 */
	char line[64];

	/* A 50-character line wraps onto a second row. */
	write_str("0123456789012345678901234567890123456789ABCDEFGHIJ\n");
	row_is(&s, 0, "0123456789012345678901234567890123456789", FB_FG);
	row_is(&s, 1, "ABCDEFGHIJ", FB_FG);
	/* Lines 2..9 fill the screen; the next jumps up by rows / 4 = 2. */
	for (int i = 2; i < 10; i++) {
		snprintf(line, sizeof(line), "row %d\n", i);
		write_str(line);
	}
	row_is(&s, 0, "row 2", FB_FG);
	row_is(&s, 7, "row 9", FB_FG);
	row_is(&s, 8, "", FB_FG);
	row_is(&s, 9, "", FB_FG);
	write_str("after!!\r AFTER");		/* \r returns to the line's start */
	row_is(&s, 8, " AFTER!", FB_FG);
	/* A full redraw changes nothing. */
	fb_redraw_all();
	row_is(&s, 0, "row 2", FB_FG);
	row_is(&s, 8, " AFTER!", FB_FG);
	/* A byte outside the font is drawn as '?'; the last row's newline
	 * jumps again. */
	write_str("\n\x01\xff\n");
	row_is(&s, 6, " AFTER!", FB_FG);
	row_is(&s, 7, "??", FB_FG);
	row_is(&s, 8, "", FB_FG);
	free(s.mem);
}

static void refused(void **state)
{
	(void)state;
	u32 mem[64 * 32];
	const char *why = NULL;

	assert_int_equal(fb_init(0, 640, 480, 640, FB_FORMAT_BGRX, &why), -E_INVAL);
	assert_string_equal(why, "no framebuffer");
	assert_false(fb_active());
	assert_int_equal(fb_init((u64)(uintptr_t)mem, 64, 32, 64, FB_FORMAT_BITMASK, &why), -E_INVAL);
	assert_non_null(strstr(why, "bit mask"));
	assert_int_equal(fb_init((u64)(uintptr_t)mem, 64, 32, 64, FB_FORMAT_BLT_ONLY, &why), -E_INVAL);
	assert_non_null(strstr(why, "BltOnly"));
	assert_int_equal(fb_init((u64)(uintptr_t)mem, 64, 32, 32, FB_FORMAT_RGBX, &why), -E_INVAL);
	assert_non_null(strstr(why, "pixels per scan line"));
	assert_int_equal(fb_init((u64)(uintptr_t)mem, 4, 32, 64, FB_FORMAT_RGBX, &why), -E_INVAL);
	assert_int_equal(fb_cols(), 0);
	fb_write("x", 1);			/* no screen: nothing happens */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(formats),
		cmocka_unit_test(pitch_and_odd_width),
		cmocka_unit_test(wrap_and_scroll),
		cmocka_unit_test(refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * printf.c — a small C99-compatible formatter for the kernel.
 *
 * Checked against the host libc's snprintf by test/host/test_klib.c.
 */
#include <stdint.h>
#include <stdbool.h>
#include "kernel/lib/printf.h"

struct out {
	char *buf;
	size_t size;
	size_t len;		/* characters produced so far, even if not stored */
	/* Streaming mode (kvprintf_sink): buf is a staging area flushed to sink. */
	void (*sink)(const char *s, size_t n, void *ctx);
	void *ctx;
	size_t pos;
};

static void put(struct out *o, char c)
{
	if (o->sink) {
		o->buf[o->pos++] = c;
		if (o->pos == o->size) {
			o->sink(o->buf, o->pos, o->ctx);
			o->pos = 0;
		}
	} else if (o->len + 1 < o->size) {
		o->buf[o->len] = c;
	}
	o->len++;
}

static void pad(struct out *o, char c, int n)
{
	while (n-- > 0)
		put(o, c);
}

struct spec {
	bool left, zero, plus, space, alt;
	int width, prec;	/* prec < 0: not given */
};

static void put_str(struct out *o, const struct spec *sp, const char *s)
{
	int len = 0;

	if (!s)
		s = "(null)";
	while (s[len] && (sp->prec < 0 || len < sp->prec))
		len++;
	if (!sp->left)
		pad(o, ' ', sp->width - len);
	for (int i = 0; i < len; i++)
		put(o, s[i]);
	if (sp->left)
		pad(o, ' ', sp->width - len);
}

static void put_num(struct out *o, const struct spec *sp, uint64_t v, bool neg,
		    unsigned base, bool upper, char conv)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0;
	const char *prefix = "";
	int zeros = 0;

	if (!(v == 0 && sp->prec == 0))
		do {
			tmp[n++] = digits[v % base];
			v /= base;
		} while (v);

	if (neg)
		prefix = "-";
	else if (sp->plus && (conv == 'd' || conv == 'i'))
		prefix = "+";
	else if (sp->space && (conv == 'd' || conv == 'i'))
		prefix = " ";
	else if (sp->alt && base == 16 && n && !(n == 1 && tmp[0] == '0'))
		prefix = upper ? "0X" : "0x";
	else if (conv == 'p')
		prefix = "0x";
	if (sp->alt && base == 8 && (n == 0 || tmp[n - 1] != '0'))
		zeros = 1;

	int plen = 0;
	while (prefix[plen])
		plen++;
	if (sp->prec > n)
		zeros = sp->prec - n;
	else if (sp->zero && !sp->left && sp->prec < 0 && sp->width > n + plen)
		zeros = sp->width - n - plen;

	int total = plen + zeros + n;
	if (!sp->left)
		pad(o, ' ', sp->width - total);
	for (int i = 0; i < plen; i++)
		put(o, prefix[i]);
	pad(o, '0', zeros);
	while (n)
		put(o, tmp[--n]);
	if (sp->left)
		pad(o, ' ', sp->width - total);
}

static void format(struct out *o, const char *fmt, va_list ap);

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { .buf = buf, .size = size };

	format(&o, fmt, ap);
	if (size)
		buf[o.len < size ? o.len : size - 1] = 0;
	return (int)o.len;
}

int kvprintf_sink(void (*sink)(const char *s, size_t n, void *ctx), void *ctx,
		  const char *fmt, va_list ap)
{
	char stage[128];
	struct out o = { .buf = stage, .size = sizeof(stage), .sink = sink, .ctx = ctx };

	format(&o, fmt, ap);
	if (o.pos)
		sink(stage, o.pos, ctx);
	return (int)o.len;
}

static void format(struct out *o, const char *fmt, va_list ap)
{
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(o, *fmt);
			continue;
		}
		struct spec sp = { .prec = -1 };
		for (;; fmt++) {
			char f = fmt[1];
			if (f == '-') sp.left = true;
			else if (f == '0') sp.zero = true;
			else if (f == '+') sp.plus = true;
			else if (f == ' ') sp.space = true;
			else if (f == '#') sp.alt = true;
			else break;
		}
		fmt++;
		if (*fmt == '*') {
			sp.width = va_arg(ap, int);
			if (sp.width < 0) {
				sp.left = true;
				sp.width = -sp.width;
			}
			fmt++;
		} else {
			while (*fmt >= '0' && *fmt <= '9')
				sp.width = sp.width * 10 + (*fmt++ - '0');
		}
		if (*fmt == '.') {
			fmt++;
			sp.prec = 0;
			if (*fmt == '*') {
				sp.prec = va_arg(ap, int);
				fmt++;
			} else {
				while (*fmt >= '0' && *fmt <= '9')
					sp.prec = sp.prec * 10 + (*fmt++ - '0');
			}
		}
		/* length: 0 int, 1 long/long long/size_t/ptrdiff/intmax, -1 short, -2 char */
		int len = 0;
		if (*fmt == 'h') {
			len = -1;
			if (*++fmt == 'h') {
				len = -2;
				fmt++;
			}
		} else if (*fmt == 'l') {
			len = 1;
			if (*++fmt == 'l')
				fmt++;
		} else if (*fmt == 'z' || *fmt == 't' || *fmt == 'j') {
			len = 1;
			fmt++;
		}

		char c = *fmt;
		uint64_t u;
		int64_t s;
		switch (c) {
		case 'd':
		case 'i':
			s = len == 1 ? va_arg(ap, long) : va_arg(ap, int);
			if (len == -1) s = (short)s;
			if (len == -2) s = (signed char)s;
			put_num(o, &sp, s < 0 ? -(uint64_t)s : (uint64_t)s, s < 0, 10, false, c);
			break;
		case 'u':
		case 'x':
		case 'X':
		case 'o':
			u = len == 1 ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
			if (len == -1) u = (unsigned short)u;
			if (len == -2) u = (unsigned char)u;
			put_num(o, &sp, u, false, c == 'u' ? 10 : c == 'o' ? 8 : 16, c == 'X', c);
			break;
		case 'p':
			put_num(o, &sp, (uintptr_t)va_arg(ap, void *), false, 16, false, c);
			break;
		case 's':
			put_str(o, &sp, va_arg(ap, const char *));
			break;
		case 'c': {
			char ch[2] = { (char)va_arg(ap, int), 0 };
			if (!sp.left) pad(o, ' ', sp.width - 1);
			put(o, ch[0]);
			if (sp.left) pad(o, ' ', sp.width - 1);
			break;
		}
		case '%':
			put(o, '%');
			break;
		case 0:
			fmt--;		/* lone '%' at the end: stop */
			break;
		default:
			/* Unknown conversion: print it verbatim so the bug is visible. */
			put(o, '%');
			put(o, c);
			break;
		}
	}
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

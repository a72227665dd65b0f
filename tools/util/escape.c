/*
 * tools/util/escape.c — see tools/util/escape.h.
 */
#include <stdint.h>
#include <string.h>

#include "tools/util/escape.h"

size_t utf8_seq_len(const unsigned char *p)
{
	size_t n;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		n = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		n = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void json_escape(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq_len(p);
		if (n == 0) {
			fputs("\\ufffd", out);		/* not UTF-8 */
			p++;
		} else if (*p == '"' || *p == '\\') {
			fputc('\\', out), fputc(*p++, out);
		} else if (*p < 0x20) {
			fprintf(out, "\\u%04x", *p++);
		} else {
			fwrite(p, 1, n, out);
			p += n;
		}
	}
}

const char *term_escape(char *buf, size_t n, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t w = 0;

	if (!n)
		return buf;
	while (*p) {
		size_t k = utf8_seq_len(p);
		if (k == 0 || *p < 0x20 || *p == 0x7f) {
			if (w + 4 >= n)
				break;
			snprintf(buf + w, n - w, "\\x%02x", *p++);
			w += 4;
		} else {
			if (w + k >= n)
				break;
			memcpy(buf + w, p, k);
			w += k;
			p += k;
		}
	}
	buf[w] = 0;
	return buf;
}

void xml_escape(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq_len(p);
		switch (n ? *p : 0) {
		case 0:   fputc('?', out); p++; continue;	/* not UTF-8 */
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		case '\t': case '\n': case '\r': fputc(' ', out); break;
		default:
			if (*p < 0x20)		/* not allowed in XML 1.0, even escaped */
				fputc('?', out);
			else
				fwrite(p, 1, n, out);
		}
		p += n;
	}
}

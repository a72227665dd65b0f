/*
 * tools/util/escape.h — text from a capture (symbol names, app names)
 * made safe for the formats we write: XML (the SVGs) and JSON.
 */
#ifndef BAREPERF_TOOLS_UTIL_ESCAPE_H
#define BAREPERF_TOOLS_UTIL_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Bytes of the valid UTF-8 sequence at p, 0 if it is not one. */
size_t utf8_seq_len(const unsigned char *p);
/* Escape text for XML (& < > " ' and bytes XML 1.0 forbids) into out. */
void xml_escape(FILE *out, const char *s);
/* Escape text for a JSON string (without the quotes) into out. */
void json_escape(FILE *out, const char *s);
/* Text for a terminal into buf (n bytes, always NUL-terminated, cut to
 * fit): control bytes (ESC ...) and bytes that are not UTF-8 as \xNN, so
 * nothing from a capture drives the terminal. Returns buf. */
const char *term_escape(char *buf, size_t n, const char *s);

#endif

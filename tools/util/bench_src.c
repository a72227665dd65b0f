/*
 * bench_src.c — a snippet of `bareperf bench` as its assemblers see it
 * (bench_asm.c: NASM, bench_gas.c: GNU as): cut into statements at ';'
 * and newlines, nanoBench's `n*|x|` written out n times and its `|n`
 * NOPs as bytes, and the assembler's messages mapped back to the
 * statements.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tools/util/bench_asm_int.h"

/* ---- statements ----------------------------------------------------------- */

/*
 * The statement at p, up to the next ';' or newline (nanoBench's command
 * line separates statements with ';'), blanks trimmed: *s and *len.
 * Returns where the next statement starts, or NULL after the last one.
 */
static const char *stmt_next(const char *p, const char **s, int *len)
{
	const char *e = p + strcspn(p, ";\n");

	while (p < e && isspace((unsigned char)*p))
		p++;
	*s = p;
	*len = (int)(e - p);
	while (*len && isspace((unsigned char)p[*len - 1]))
		(*len)--;
	return *e ? e + 1 : NULL;
}

/* Statement k (from 1) of src, trimmed; NULL when there is none. */
static const char *stmt_at(const char *src, int k, int *len)
{
	const char *s = NULL, *p = src;

	for (; p && k > 0; k--)
		p = stmt_next(p, &s, len);
	return k ? NULL : s;
}

void bench_say_line(const char *what, const char *src, int k, const char *msg)
{
	int w = 0;
	const char *s = k > 0 ? stmt_at(src, k, &w) : NULL;

	if (!s)
		fprintf(stderr, "bareperf bench: %s: %s\n", what, msg);
	else
		fprintf(stderr, "bareperf bench: %s line %d '%.*s': %s\n", what, k, w, s, msg);
}

/*
 * nanoBench's `|n`: one n-byte NOP. 1 to 9 bytes are the SDM's recommended
 * sequences (Vol. 2B, NOP, "Recommended Multi-Byte Sequence of NOP
 * Instruction"); longer ones put more operand-size prefixes (66) before
 * the 9-byte form, still one instruction. Returns n, 0 when s is no `|n`
 * statement, -1 (said) when n is out of range.
 */
static int nop_bytes(const char *what, const char *src, int k, const char *s, int len,
		     uint8_t nop[BENCH_NOP_MAX])
{
	static const uint8_t rec[9][9] = {
		{ 0x90 },
		{ 0x66, 0x90 },
		{ 0x0f, 0x1f, 0x00 },
		{ 0x0f, 0x1f, 0x40, 0x00 },
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};
	int n = 0, digits = 0;

	if (!len || *s != '|')
		return 0;
	for (int i = 1; i < len && isdigit((unsigned char)s[i]) && n <= BENCH_NOP_MAX; i++, digits++)
		n = n * 10 + (s[i] - '0');
	if (!digits || 1 + digits != len || n < 1 || n > BENCH_NOP_MAX) {
		bench_say_line(what, src, k, "`|n` is an n-byte NOP, n from 1 to 15");
		return -1;
	}
	int pre = n > 9 ? n - 9 : 0;
	memset(nop, 0x66, pre);
	memcpy(nop + pre, rec[n - pre - 1], n - pre);
	return n;
}

/*
 * nanoBench's `n*|x|`: x written n times, ';' between the copies. x runs
 * to the next '|' (so it holds no `|n` NOP and no other `n*|x|`: nanoBench
 * does not nest them either) and may hold several statements. The form
 * counts only at the start of a statement; everything else is copied.
 */
char *bench_expand_repeats(const char *what, const char *src)
{
	size_t cap = strlen(src) + 1, at = 0;
	char *out = malloc(cap);

	for (const char *p = src; out && *p; ) {
		const char *s = p + strspn(p, " \t"), *e = s;
		unsigned long n = 0;

		while (isdigit((unsigned char)*e) && n <= BENCH_REPEAT_MAX)
			n = n * 10 + (unsigned long)(*e++ - '0');
		const char *x = e > s && e[0] == '*' && e[1] == '|' ? e + 2 : NULL;
		const char *close = x ? strchr(x, '|') : NULL;
		const char *after = close ? close + 1 + strspn(close + 1, " \t") : NULL;
		if (x && (!close || n < 1 || n > BENCH_REPEAT_MAX || (*after && *after != ';' &&
								      *after != '\n'))) {
			fprintf(stderr, "bareperf bench: %s: '%.*s': `n*|x|` is x written n times, n "
				"from 1 to %d, x up to the next '|'\n", what,
				(int)strcspn(s, ";\n"), s, BENCH_REPEAT_MAX);
			free(out);
			return NULL;
		}
		/* the statement as it is, or x n times; then its separator */
		const char *end = x ? close + 1 : p + strcspn(p, ";\n");
		size_t piece = x ? (size_t)(close - x) : (size_t)(end - p);
		size_t need = at + (x ? n * (piece + 1) : piece) + 2;
		if (need > BENCH_SOURCE_MAX) {
			fprintf(stderr, "bareperf bench: %s: more than %d characters once `n*|x|` is "
				"written out\n", what, BENCH_SOURCE_MAX);
			free(out);
			return NULL;
		}
		if (need > cap) {
			char *bigger = realloc(out, cap = 2 * need);
			if (!bigger) {
				free(out);
				return NULL;
			}
			out = bigger;
		}
		for (unsigned long i = 0; x && i < n; i++) {
			memcpy(out + at, x, piece);
			at += piece;
			out[at++] = i + 1 < n ? ';' : 0;
		}
		if (x)
			at--;
		else
			memcpy(out + at, p, piece), at += piece;
		p = end;
		if (*p == ';' || *p == '\n')
			out[at++] = *p++;
	}
	if (out)
		out[at] = 0;
	return out;
}

int bench_write_stmts(FILE *f, const char *what, const char *src, const char *label_fmt,
		      const char *byte_op)
{
	int k = 0, rc = 0;

	for (const char *p = src; p; ) {
		const char *s;
		int len;
		uint8_t nop[BENCH_NOP_MAX];

		p = stmt_next(p, &s, &len);
		if (label_fmt)
			fprintf(f, label_fmt, ++k);
		else
			++k;
		int n = nop_bytes(what, src, k, s, len, nop);
		if (n < 0)
			rc = -1;
		for (int i = 0; i < n; i++)
			fprintf(f, "%s 0x%02x", i ? "," : byte_op, nop[i]);
		fprintf(f, "%.*s\n", n ? 0 : len, s);
	}
	return rc ? rc : k;
}

int bench_write_source(const char *path, const char *what, const char *src, const char *head,
		       const char *label_fmt, const char *byte_op)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f) {
		fprintf(stderr, "bareperf bench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "%s\n", head);
	rc = bench_write_stmts(f, what, src, label_fmt, byte_op) < 0 ? -1 : 0;
	if (fclose(f))
		rc = -1;
	return rc;
}

bool bench_plain(const char *src)
{
	if (strchr(src, '|'))
		return false;
	for (const char *p = src; p; ) {
		const char *s;
		int len, id = 0;

		p = stmt_next(p, &s, &len);
		if (len && *s == '.')
			return false;
		while (id < len && (isalnum((unsigned char)s[id]) || s[id] == '_' || s[id] == '$'))
			id++;
		if (id && id < len && s[id] == ':' && !isdigit((unsigned char)s[0]))
			return false;
	}
	return true;
}

/* ---- running the assembler ------------------------------------------------ */

/*
 * One message line of the assembler, "in:LINE: SEVERITY: text" (or
 * "in: SEVERITY: text" for the whole file); 1 if an error.
 */
static int say_message(const char *what, const char *src, const char *in, char *line)
{
	size_t n = strlen(in);
	char *msg = line + n + 1, *end;

	line[strcspn(line, "\n")] = 0;
	if (strncmp(line, in, n) || line[n] != ':') {
		fprintf(stderr, "bareperf bench: %s: %s\n", what, line);
		return 0;
	}
	long ln = strtol(msg, &end, 10);
	if (end != msg && *end == ':')
		msg = end + 1;
	else
		ln = 0;
	msg += strspn(msg, " ");
	if (!strcmp(msg, "Assembler messages:"))	/* heads gas's list */
		return 0;
	int error = !strncasecmp(msg, "error: ", 7);
	if (error)
		msg += 7;
	else if (!strncmp(msg, "Warning: ", 9))
		msg[0] = 'w';
	char hint[1024];
	/* NASM's `qword [r14]` is gas's `QWORD PTR [r14]` */
	if (strstr(msg, "ambiguous operand size")) {
		snprintf(hint, sizeof(hint), "%s (the size is written QWORD PTR; --nasm takes "
			 "NASM's syntax)", msg);
		msg = hint;
	}
	bench_say_line(what, src, (int)ln - 1, msg);
	return error;
}

int bench_run_assembler(const char *what, const char *src, const char *cmd, const char *in,
			const char *tool, const char *package)
{
	FILE *pp = popen(cmd, "r");
	char line[1024];
	int errors = 0;

	while (pp && fgets(line, sizeof(line), pp))
		errors += say_message(what, src, in, line);
	int st = pp ? pclose(pp) : -1;
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 127) {
		fprintf(stderr, "bareperf bench: cannot run %s (apt-get install %s)\n", tool, package);
		errors++;
	} else if (WEXITSTATUS(st) && !errors) {
		fprintf(stderr, "bareperf bench: %s failed on %s\n", tool, what);
		errors++;
	}
	return errors ? -1 : 0;
}

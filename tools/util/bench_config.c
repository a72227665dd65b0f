/*
 * bench_config.c — nanoBench's event files for `bareperf bench`
 * (tools/util/bench_events.c, tools/util/bench_check.c). A -config line
 * becomes the raw event spec the kernel parses (pmu/events.c) plus the
 * fields that spec cannot carry (CTR=, MSR_*, TakenAlone); a -msr_config
 * line, the MSRs to write and the one to read. A bad line is refused
 * alone, with its reason.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/util/bench_config.h"

#define FIELDS "EvtSel.UMASK[.CMSK=N][.AnyT][.EDG][.INV][.TakenAlone][.CTR=N][.MSR_3F6H=V]" \
	"[.MSR_PF=V][.MSR_RSP0=V][.MSR_RSP1=V] Name"

/* The MSR fields of a -config line and the MSR each sets. */
static const struct {
	const char *field;
	uint32_t msr;
} msr_fields[] = {
	{ "MSR_3F6H=", BENCH_MSR_PEBS_LD_LAT },
	{ "MSR_PF=", BENCH_MSR_PEBS_FRONTEND },
	{ "MSR_RSP0=", BENCH_MSR_OFFCORE_RSP0 },
	{ "MSR_RSP1=", BENCH_MSR_OFFCORE_RSP1 },
};

static int refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* s whole as a number of at most max: hex (base 16) or C's 0x/decimal (base 0). */
static bool number(const char *s, int base, unsigned long long max, unsigned long long *v)
{
	char *end;

	if (!isxdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, &end, base);
	return !*end && !errno && *v <= max;
}

/* Split line into its first word (NUL-terminated in place) and the rest,
 * trimmed; NULL for a blank or '#' line. */
static char *first_word(char *line, char **rest)
{
	char *s = line + strspn(line, " \t");
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	if (!*s || *s == '#')
		return NULL;
	char *e = s + strcspn(s, " \t");
	*rest = e + strspn(e, " \t");
	*e = 0;
	return s;
}

/* One ".FIELD" of a -config line past EvtSel.UMASK, into ev. */
static int event_field(const char *f, struct bench_event *ev, unsigned *seen, char *why, size_t len)
{
	static const char *const flags[] = { "AnyT", "EDG", "INV", "TakenAlone" };
	bool *flag_of[] = { &ev->any, &ev->edge, &ev->inv, &ev->taken_alone };
	unsigned long long v;

	for (unsigned i = 0; i < 4; i++) {
		if (strcmp(f, flags[i]))
			continue;
		if (*flag_of[i])
			return refuse(why, len, "'%s' given twice", f);
		*flag_of[i] = true;
		return 0;
	}
	if (!strncmp(f, "CMSK=", 5)) {
		if (*seen & 1)
			return refuse(why, len, "'CMSK=' given twice");
		if (!number(f + 5, 0, 255, &v))
			return refuse(why, len, "'%s': the counter mask is 0 to 255", f);
		*seen |= 1;
		ev->cmask = (unsigned)v;
		return 0;
	}
	if (!strncmp(f, "CTR=", 4)) {
		if (ev->ctr >= 0)
			return refuse(why, len, "'CTR=' given twice");
		if (!number(f + 4, 0, 63, &v))
			return refuse(why, len, "'%s': the counter is 0 to 63 (%d + N: fixed counter N)",
				      f, BENCH_CTR_FIXED_BASE);
		ev->ctr = (int)v;
		return 0;
	}
	for (unsigned i = 0; i < sizeof(msr_fields) / sizeof(msr_fields[0]); i++) {
		size_t k = strlen(msr_fields[i].field);
		if (strncmp(f, msr_fields[i].field, k))
			continue;
		if (*seen & 2u << i)
			return refuse(why, len, "'%.*s' given twice", (int)k, f);
		if (!number(f + k, 0, UINT64_MAX, &v))
			return refuse(why, len, "'%s': the value is a 64-bit number (0x for hex)", f);
		*seen |= 2u << i;
		ev->msr[ev->nmsr++] = (struct bench_msr_write){ msr_fields[i].msr, v };
		return 0;
	}
	return refuse(why, len, "unknown field '%s' (%s)", f, FIELDS);
}

int bench_config_parse_line(const char *line, struct bench_event *ev, char *why, size_t len)
{
	char buf[512], *rest;
	unsigned long long v;
	unsigned seen = 0;

	memset(ev, 0, sizeof(*ev));
	ev->ctr = -1;
	if (strlen(line) >= sizeof(buf))
		return refuse(why, len, "longer than %zu characters", sizeof(buf) - 1);
	strcpy(buf, line);
	char *spec = first_word(buf, &rest);
	if (!spec)
		return 0;
	char fields[512];
	strcpy(fields, spec);
	char *save, *tok = strtok_r(spec, ".", &save);
	if (!tok || spec[0] == '.' || strstr(fields, "..") || fields[strlen(fields) - 1] == '.')
		return refuse(why, len, "'%s' has an empty field (%s)", fields, FIELDS);
	if (strlen(tok) > 3 || !number(tok, 16, 0xfff, &v))
		return refuse(why, len, "event select '%s' is not 1 to 3 hex digits", tok);
	ev->evtsel = (unsigned)v;
	tok = strtok_r(NULL, ".", &save);
	if (!tok)
		return refuse(why, len, "'%s' has no unit mask (EvtSel.UMASK)", fields);
	if (strlen(tok) > 2 || !number(tok, 16, 0xff, &v))
		return refuse(why, len, "unit mask '%s' is not 1 or 2 hex digits", tok);
	ev->umask = (unsigned)v;
	while ((tok = strtok_r(NULL, ".", &save)))
		if (event_field(tok, ev, &seen, why, len))
			return -1;
	/* PERFEVTSEL (SDM Vol. 3B 21.2.1.1): event 7:0, umask 15:8, edge 18,
	 * AnyThread 21, inv 23, cmask 31:24; AMD's EventSelect[11:8] at
	 * 35:32 (APM Vol. 2 13.2.1). */
	unsigned long long cfg = (ev->evtsel & 0xff) | ev->umask << 8 | (ev->edge ? 1ull << 18 : 0) |
				 (ev->any ? 1ull << 21 : 0) | (ev->inv ? 1ull << 23 : 0) |
				 (unsigned long long)ev->cmask << 24 |
				 (unsigned long long)(ev->evtsel >> 8) << 32;
	snprintf(ev->spec, sizeof(ev->spec), "r%llx", cfg);
	ev->name = strdup(*rest ? rest : fields);
	return 1;
}

/* "msr_X" (hex, 0x and a trailing h allowed) into *msr. */
static bool msr_number(const char *s, size_t n, uint32_t *msr)
{
	char buf[24];
	unsigned long long v;

	if (n < 5 || n >= sizeof(buf) || strncasecmp(s, "msr_", 4))
		return false;
	memcpy(buf, s + 4, n - 4);
	buf[n - 4] = 0;
	size_t k = strlen(buf);
	if (buf[k - 1] == 'h' || buf[k - 1] == 'H')
		buf[k - 1] = 0;
	if (!number(buf, 16, UINT32_MAX, &v))
		return false;
	*msr = (uint32_t)v;
	return true;
}

/* "msr_X=V(.msr_Y=W)*" into m->write. */
static int msr_writes(char *s, struct bench_msr_event *m, char *why, size_t len)
{
	char *save, *tok;
	unsigned long long v;

	if (s[0] == '.' || strstr(s, "..") || s[strlen(s) - 1] == '.')
		return refuse(why, len, "'%s' has an empty field (msr_X=V(.msr_Y=W)* msr_Z Name)", s);
	for (tok = strtok_r(s, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			return refuse(why, len, "'%s' is not msr_X=V", tok);
		if (m->nwrite == BENCH_MSR_WRITES)
			return refuse(why, len, "more than %d MSR writes", BENCH_MSR_WRITES);
		if (!msr_number(tok, (size_t)(eq - tok), &m->write[m->nwrite].msr))
			return refuse(why, len, "'%.*s' is not msr_ and a hex MSR number",
				      (int)(eq - tok), tok);
		if (!number(eq + 1, 0, UINT64_MAX, &v))
			return refuse(why, len, "'%s': the value is a 64-bit number (0x for hex)", tok);
		m->write[m->nwrite++].value = v;
	}
	return 0;
}

int bench_msr_config_parse_line(const char *line, struct bench_msr_event *m, char *why, size_t len)
{
	char buf[512], *rest;

	memset(m, 0, sizeof(*m));
	if (strlen(line) >= sizeof(buf))
		return refuse(why, len, "longer than %zu characters", sizeof(buf) - 1);
	strcpy(buf, line);
	char *first = first_word(buf, &rest);
	if (!first)
		return 0;
	char *rd = first;
	if (strchr(first, '=')) {
		/* "msr_X=V... msr_Z Name": the writes, then the MSR read. */
		if (msr_writes(first, m, why, len))
			return -1;
		if (!*rest)
			return refuse(why, len, "no MSR to read after the writes (msr_X=V msr_Z Name)");
		rd = rest;
		rest += strcspn(rest, " \t");
		if (*rest)
			*rest++ = 0;
		rest += strspn(rest, " \t");
	}
	if (!msr_number(rd, strlen(rd), &m->rdmsr))
		return refuse(why, len, "'%s' is not msr_ and a hex MSR number to read", rd);
	m->name = strdup(*rest ? rest : rd);
	return 1;
}

int bench_config_read(const char *path, bool msr, struct bench_config *c)
{
	const char *opt = msr ? "-msr_config" : "-config";
	FILE *f = fopen(path, "r");
	char *line = NULL, why[256];
	size_t cap = 0;
	int ln = 0, good = 0, bad = 0;

	if (!f) {
		fprintf(stderr, "bareperf bench: %s %s: %s\n", opt, path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) >= 0) {
		struct bench_event ev;
		struct bench_msr_event m;
		int rc;

		ln++;
		rc = msr ? bench_msr_config_parse_line(line, &m, why, sizeof(why)) :
			   bench_config_parse_line(line, &ev, why, sizeof(why));
		if (rc < 0) {
			fprintf(stderr, "bareperf bench: %s %s:%d: line refused: %s\n", opt, path, ln, why);
			bad++;
		} else if (rc > 0 && msr) {
			c->msr = realloc(c->msr, (c->nmsr + 1) * sizeof(*c->msr));
			m.line = ln;
			c->msr[c->nmsr++] = m;
			good++;
		} else if (rc > 0) {
			c->ev = realloc(c->ev, (c->nev + 1) * sizeof(*c->ev));
			ev.line = ln;
			c->ev[c->nev++] = ev;
			good++;
		}
	}
	free(line);
	fclose(f);
	c->nrefused += bad;
	if (!good) {
		fprintf(stderr, "bareperf bench: %s %s: no line to measure%s\n", opt, path,
			bad ? " (every one refused)" : "");
		return -1;
	}
	return 0;
}

void bench_config_free(struct bench_config *c)
{
	for (int i = 0; i < c->nev; i++)
		free(c->ev[i].name);
	for (int i = 0; i < c->nmsr; i++)
		free(c->msr[i].name);
	free(c->ev);
	free(c->msr);
	memset(c, 0, sizeof(*c));
}

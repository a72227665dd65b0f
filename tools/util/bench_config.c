/*
 * bench_config.c — nanoBench's -config event files for `bareperf bench`
 * (tools/builtin-bench.c): each line becomes a raw event spec the kernel
 * parses (pmu/events.c) and the name it is printed under.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/bench_config.h"

/*
 * -config FILE: nanoBench's event lines, "EV.UMASK[.CMSK=N][.EDG][.INV] NAME"
 * (hex EV and UMASK, '#' comments), turned into raw PERFEVTSEL specs
 * r<hex> (SDM Vol. 3B 20.2.1.1: event 7:0, umask 15:8, edge 18, inv 23,
 * cmask 31:24; AMD's EventSelect[11:8] at 35:32, APM Vol. 2 13.2.1).
 * Fields nanoBench knows but bareperf cannot honour (AnyT, TakenAlone,
 * CTR=, MSR_*=) are refused, not dropped.
 */
int bench_config_load(const char *path, char (*events)[32], char (*labels)[64], int *n, int max)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int ln = 0;

	if (!f) {
		fprintf(stderr, "bareperf bench: -config %s: %s\n", path, strerror(errno));
		return -1;
	}
#define CFG_ERR(...) do {							\
		fprintf(stderr, "bareperf bench: -config %s:%d: ", path, ln);	\
		fprintf(stderr, __VA_ARGS__);					\
		fputc('\n', stderr);						\
		fclose(f);							\
		return -1;							\
	} while (0)
	while (fgets(line, sizeof(line), f)) {
		ln++;
		char *h = strchr(line, '#');
		if (h)
			*h = 0;
		char spec[256], name[256];
		int k = sscanf(line, "%255s %255s", spec, name);
		if (k <= 0)
			continue;
		if (k == 1)
			CFG_ERR("'%s' has no name (EV.UMASK[.CMSK=N][.EDG][.INV] NAME)", spec);
		char *save, *tok = strtok_r(spec, ".", &save), *end;
		unsigned long ev = strtoul(tok, &end, 16), umask = 0, cmask = 0;
		bool edge = false, inv = false;
		if (!*tok || *end || strlen(tok) > 3)
			CFG_ERR("event select '%s' is not 1 to 3 hex digits", tok);
		tok = strtok_r(NULL, ".", &save);
		if (!tok)
			CFG_ERR("'%s' has no unit mask (EV.UMASK)", spec);
		umask = strtoul(tok, &end, 16);
		if (!*tok || *end || strlen(tok) > 2)
			CFG_ERR("unit mask '%s' is not 1 or 2 hex digits", tok);
		while ((tok = strtok_r(NULL, ".", &save))) {
			if (!strncmp(tok, "CMSK=", 5)) {
				cmask = strtoul(tok + 5, &end, 0);
				if (!tok[5] || *end || cmask > 255)
					CFG_ERR("'%s': the counter mask is 0 to 255", tok);
			} else if (!strcmp(tok, "EDG")) {
				edge = true;
			} else if (!strcmp(tok, "INV")) {
				inv = true;
			} else if (!strcmp(tok, "AnyT") || !strcmp(tok, "TakenAlone") ||
				   !strncmp(tok, "CTR=", 4) || !strncmp(tok, "MSR_", 4)) {
				CFG_ERR("'%s' is not supported here (bareperf programs EV, UMASK, "
					"CMSK, EDG and INV)", tok);
			} else {
				CFG_ERR("unknown field '%s' (EV.UMASK[.CMSK=N][.EDG][.INV] NAME)", tok);
			}
		}
		if (*n == max)
			CFG_ERR("more than %d events", max);
		unsigned long long cfg = (ev & 0xff) | umask << 8 | (edge ? 1ul << 18 : 0) |
					 (inv ? 1ul << 23 : 0) | cmask << 24 |
					 (unsigned long long)(ev >> 8) << 32;
		snprintf(events[*n], sizeof(events[0]), "r%llx", cfg);
		snprintf(labels[(*n)++], sizeof(labels[0]), "%.63s", name);
	}
#undef CFG_ERR
	fclose(f);
	return 0;
}

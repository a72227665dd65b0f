/*
 * tools/util/cli.c — see tools/util/cli.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/util/cli.h"

int cli_input(const char *cmd, const char **input, char *tmp, size_t n)
{
	(void)n;
	tmp[0] = 0;
	if (strcmp(*input, "-") || !isatty(STDIN_FILENO))
		return 0;
	fprintf(stderr, "bareperf %s: -i -: standard input is a terminal, not a capture\n", cmd);
	return -1;
}

void cli_input_done(const char *tmp)
{
	if (tmp && tmp[0])
		unlink(tmp);
}

void cli_input_name(const char *tmp, const char *name, char *text, size_t n)
{
	size_t tl = tmp ? strlen(tmp) : 0, nl = strlen(name);
	char *p;

	if (!tl || !n)
		return;
	for (char *from = text; (p = strstr(from, tmp));) {
		size_t rest = strlen(p + tl);
		size_t at = (size_t)(p - text);
		if (at + nl + rest >= n)
			break;			/* no room: left as it was */
		memmove(p + nl, p + tl, rest + 1);
		memcpy(p, name, nl);
		from = p + nl;
	}
}

int cli_open_capture(const char *cmd, const char *in, const char *kernel, bool force,
		 struct session *s, struct symtab **t, char *kpath)
{
	char err[1024], used[4096], stdin_tmp[4096];

	if (cli_input(cmd, &in, stdin_tmp, sizeof(stdin_tmp)))
		return -1;
	/* No console: it is not converted, and need not be held. */
	if (session_load_flags(s, in, SESSION_NO_CONSOLE, err, sizeof(err))) {
		cli_input_name(stdin_tmp, "(standard input)", err, sizeof(err));
		fprintf(stderr, "bareperf %s: %s\n", cmd, err);
		cli_input_done(stdin_tmp);
		return -1;
	}
	cli_input_done(stdin_tmp);
	cli_input_name(stdin_tmp, "(standard input)", s->path, sizeof(s->path));
	if (session_symtab(s, kernel, force, t, used, sizeof(used), err, sizeof(err))) {
		fprintf(stderr, "bareperf %s: %s\n", cmd, err);
		session_free(s);
		return -1;
	}
	if (!realpath(used, kpath)) {
		fprintf(stderr, "bareperf %s: %s: %s\n", cmd, used, strerror(errno));
		symtab_free(*t);
		session_free(s);
		return -1;
	}
	session_warn(s, cmd);
	return 0;
}

/*
 * tools/util/session_symbols.c — the kernel.elf of a session
 * (tools/util/session.h): the copy `record` keeps beside a capture, and
 * the first candidate whose build-id matches the capture's, loaded with
 * the ELF reader (tools/util/symbol.h).
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/util/paths.h"
#include "tools/util/session.h"
#include "tools/util/symbol.h"

void session_kernel_copy_path(const char *capture, char *buf, size_t n)
{
	size_t len = strlen(capture);

	if (len > 4 && !strcmp(capture + len - 4, ".bpc"))
		len -= 4;
	snprintf(buf, n, "%.*s.kernel.elf", (int)len, capture);
}

const char *session_kernel_for(const char *capture, const char *explicit, char *buf, size_t n)
{
	if (explicit)
		return explicit;
	session_kernel_copy_path(capture, buf, n);
	return access(buf, R_OK) == 0 ? buf : paths_kernel();
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int session_symtab(const struct session *s, const char *explicit, bool force,
		   struct symtab **out, char *used, size_t usedlen, char *err, size_t errlen)
{
	const uint8_t *id;
	size_t idlen;
	bool have_id = session_build_id(s, &id, &idlen);
	char cand[3][4096], dir[4096], first_err[1024] = "";
	int ncand = 0;

	*out = NULL;
	if (explicit) {
		snprintf(cand[ncand++], sizeof(cand[0]), "%s", explicit);
	} else {
		/* The copy record made of the kernel it booted, kernel.elf next to
		 * the capture, then the one this binary boots by default
		 * (tools/util/paths.h): the first whose build-id matches. */
		session_kernel_copy_path(s->path, cand[ncand], sizeof(cand[0]));
		if (!access(cand[ncand], R_OK))
			ncand++;
		snprintf(dir, sizeof(dir), "%s", s->path);
		snprintf(cand[ncand], sizeof(cand[0]), "%s/kernel.elf", dirname(dir));
		if (!access(cand[ncand], R_OK) && !same_file(cand[ncand], paths_kernel()))
			ncand++;
		snprintf(cand[ncand++], sizeof(cand[0]), "%s", paths_kernel());
	}
	for (int i = 0; i < ncand; i++) {
		if (!symtab_load(out, cand[i], have_id ? id : NULL, have_id ? idlen : 0,
				 err, errlen)) {
			snprintf(used, usedlen, "%s", cand[i]);
			return 0;
		}
		if (!first_err[0])
			snprintf(first_err, sizeof(first_err), "%s", err);
	}
	if (force && !symtab_load(out, cand[0], NULL, 0, err, errlen)) {
		fprintf(stderr, "bareperf: warning: %s; symbols may be wrong (--force)\n", first_err);
		snprintf(used, usedlen, "%s", cand[0]);
		return 0;
	}
	snprintf(err, errlen, "%s", first_err);
	return -1;
}

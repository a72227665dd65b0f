/*
 * tools/util/session_symbols.c — the kernel.elf of a session
 * (tools/util/session.h): the copy `record` keeps beside a capture, and
 * the first candidate whose build-id matches the capture's, loaded with
 * the ELF reader (tools/util/symbol.h); and the objects of the programs
 * the kernel loaded, each given to the kernel's table for its range.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/util/buildid_cache.h"
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
			session_symtab_programs(s, *out);
			return 0;
		}
		if (!first_err[0])
			snprintf(first_err, sizeof(first_err), "%s", err);
	}
	if (force && !symtab_load(out, cand[0], NULL, 0, err, errlen)) {
		fprintf(stderr, "bareperf: warning: %s; symbols may be wrong (--force)\n", first_err);
		snprintf(used, usedlen, "%s", cand[0]);
		session_symtab_programs(s, *out);
		return 0;
	}
	snprintf(err, errlen, "%s", first_err);
	return -1;
}

/* ---- the programs the kernel loaded ----------------------------------- */

int session_program_object(const struct session *s, const struct session_program *p,
			   char *buf, size_t n, char *err, size_t errlen)
{
	const struct bp_record_program *r = &p->rec;
	char cand[2][4096], hex[2 * sizeof(r->build_id) + 1], why[1024];
	size_t len = strlen(s->path);
	int ncand = 0;

	if (len > 4 && !strcmp(s->path + len - 4, ".bpc"))
		len -= 4;
	snprintf(cand[ncand++], sizeof(cand[0]), "%.*s.%s.o", (int)len, s->path, r->name);
	if (r->build_id_len && !buildid_cache_path(r->build_id, r->build_id_len, cand[ncand],
						    sizeof(cand[0])))
		ncand++;
	symtab_hex(r->build_id, r->build_id_len, hex, sizeof(hex));
	snprintf(err, errlen, "no object of program %s with build-id %s: looked for %s%s%s",
		 r->name, r->build_id_len ? hex : "(none recorded)", cand[0],
		 ncand > 1 ? " and " : "", ncand > 1 ? cand[1] : "");
	for (int i = 0; i < ncand; i++) {
		uint8_t id[64];
		int idn = symtab_read_build_id(cand[i], id, sizeof(id), why, sizeof(why));
		if (idn < 0)
			continue;
		if (r->build_id_len && ((size_t)idn != r->build_id_len ||
					memcmp(id, r->build_id, r->build_id_len))) {
			size_t at = strlen(err);
			snprintf(err + at, errlen - at, " (%s has build-id %s)", cand[i],
				 symtab_hex(id, (size_t)idn, why, sizeof(why)));
			continue;
		}
		snprintf(buf, n, "%s", cand[i]);
		return 0;
	}
	return -1;
}

/* The table of a program: its object's, or [NAME] when that is missing
 * (said on stderr). NULL if out of memory. */
static struct symtab *program_table(const struct session *s, const struct session_program *p)
{
	struct symtab_section sec[256];
	struct symtab_program sp = {
		.name = p->rec.name, .build_id = p->rec.build_id,
		.build_id_len = p->rec.build_id_len, .start = p->rec.start, .end = p->rec.end,
		.secs = sec, .nsecs = p->nsec < 256 ? p->nsec : 256,
	};
	char path[4096], err[2048];
	struct symtab *t;

	for (size_t i = 0; i < sp.nsecs; i++)
		sec[i] = (struct symtab_section){ p->sec[i].addr, p->sec[i].size, p->sec[i].shndx };
	if (!session_program_object(s, p, path, sizeof(path), err, sizeof(err)) &&
	    !symtab_load_program(&t, path, &sp, err, sizeof(err)))
		return t;
	fprintf(stderr, "bareperf: warning: %s; its addresses show as [%s]+0x...\n", err,
		p->rec.name);
	return symtab_new_program(&sp);
}

/* A program placed over an earlier one (a run that loaded another program
 * where one had been): said on stderr, the later one names the addresses. */
static void warn_overlap(const struct symtab *t, const struct session_program *p)
{
	const struct symtab *q;

	for (size_t i = 0; (q = symtab_program_at(t, i)); i++) {
		const char *name;
		uint64_t start, end;
		symtab_program_range(q, &name, &start, &end);
		if (p->rec.start < end && start < p->rec.end)
			fprintf(stderr, "bareperf: warning: program %s was placed over %s "
				"(%#" PRIx64 "-%#" PRIx64 "): addresses there are named as %s's in "
				"every run\n", p->rec.name, name, start, end, p->rec.name);
	}
}

void session_symtab_programs(const struct session *s, struct symtab *t)
{
	for (size_t i = symtab_program_count(t); i < s->nprograms; i++) {
		struct symtab *p = program_table(s, &s->programs[i]);
		warn_overlap(t, &s->programs[i]);
		if (!p || symtab_add_program(t, p)) {
			symtab_free(p);
			return;
		}
	}
}

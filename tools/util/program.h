/*
 * tools/util/program.h — the user's own program, FILE.c or FILE.o, made
 * into what `bareperf record -- FILE` and `bareperf bench -code_c FILE`
 * send to a kernel booted with control=1 code=1 (uapi/wire.h LOAD):
 *
 *   program_prepare  FILE.c compiled with the SDK's flags (the compiler's
 *                    own messages on stderr), FILE.o taken as it is; given
 *                    a GNU build-id (ld -r --build-id=sha1) unless it has
 *                    one; a copy without debug sections is what is sent
 *   program_load     LOAD requests in pieces over a request line, each
 *                    answered before the next; the sections' addresses
 *   program_keep     the full object beside the capture (STEM.NAME.o) and
 *                    in perf's build-id cache, where reports look for it
 *
 * Errors: -1 with one line in err (tools/util/util.h).
 */
#ifndef BAREPERF_TOOLS_UTIL_PROGRAM_H
#define BAREPERF_TOOLS_UTIL_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/util/control.h"

#define PROGRAM_NAME_MAX	31	/* WIRE_LOAD_NAME's bytes */
#define PROGRAM_SECTIONS_MAX	64

/* A section where the kernel placed it (the LOAD reply's ITEM). */
struct program_section {
	unsigned shndx;
	char name[64];
	uint64_t addr, size;
	unsigned flags;			/* BP_PROGRAM_SEC_* */
};

struct program {
	const char *file;		/* as the user named it */
	char name[PROGRAM_NAME_MAX + 1];	/* the app it runs as */
	char dir[64];			/* private temporary directory */
	char full[128];			/* the object with debug info and build-id */
	uint8_t *sent;			/* what goes on the line: no debug sections */
	size_t sent_len, full_len;
	uint8_t build_id[20];
	size_t build_id_len;
	struct program_section sec[PROGRAM_SECTIONS_MAX];
	int nsec;
	double load_s;			/* the LOAD's wall time */
};

/* A program's file, by its name: FILE.c or FILE.o. */
bool program_is_file(const char *arg);

/*
 * Make p from file. A C file that does
 * not compile: the compiler's messages went to stderr, and err says
 * nothing was sent. 0, or -1 with err (p needs program_free either way).
 */
int program_prepare(struct program *p, const char *file, char *err, size_t errlen);

/*
 * Send p over L (a machine that reads requests) as LOAD requests of at
 * most PROGRAM_PIECE bytes of object each, every piece answered before
 * the next; one unanswered in time starts the object again from its
 * first byte (at most twice). verbose: the placed sections on stderr.
 * 0, or -1 with err: the kernel's reason (ERROR) or the line's.
 */
int program_load(struct program *p, struct ctl_line *L, bool verbose, char *err, size_t errlen);

/* The LOAD pieces' largest DATA. */
#define PROGRAM_PIECE		(32u << 10)

/*
 * Keep p's full object beside the capture (capture STEM.bpc: STEM.NAME.o)
 * and in perf's build-id cache. 0, or -1 with err (what was kept stays).
 */
int program_keep(const struct program *p, const char *capture, char *err, size_t errlen);

/*
 * The address a symbol of p's object (a function) was placed at: true and
 * *addr, or false with err (no such symbol, or its section not placed).
 */
bool program_symbol(const struct program *p, const char *sym, uint64_t *addr, char *err,
		    size_t errlen);

/* Remove the temporary files and free what p holds. */
void program_free(struct program *p);

#endif

/*
 * tools/util/program.c — a program of the user's own, from FILE.c or
 * FILE.o to the LOAD requests that place it in a booted kernel
 * (tools/util/program.h, uapi/wire.h LOAD).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/util/buildid_cache.h"
#include "tools/util/program.h"
#include "tools/util/sdk.h"
#include "tools/util/sigclean.h"
#include "tools/util/symbol.h"
#include "tools/util/util.h"
#include "uapi/wire.h"

/* A LOAD piece unanswered this long, on top of the time its bytes take
 * at 115200 baud, is lost: the object starts again. */
#define PIECE_WAIT_S	20.0
#define LOAD_TRIES	3

bool program_is_file(const char *arg)
{
	size_t n = strlen(arg);

	return n > 2 && arg[n - 2] == '.' && (arg[n - 1] == 'c' || arg[n - 1] == 'o');
}

/* Run argv (a shell command when argv[0] is "sh"), its stderr on ours and
 * stdout as well: its exit status, or -1. */
static int run(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(2, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The whole file into *buf (malloc'd). 0, or -1 with err. */
static int slurp(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;

	if (!f || fstat(fileno(f), &st)) {
		int e = errno;
		if (f)
			fclose(f);
		return fail(err, errlen, "%s: %s", path, strerror(e));
	}
	*buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	*len = *buf ? fread(*buf, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	if (!*buf || *len != (size_t)st.st_size)
		return fail(err, errlen, "%s: cannot read it", path);
	return 0;
}

/* What the host can tell of path: an x86-64 relocatable ELF object, else
 * why not. 0, or -1 with err. */
static int check_object(const char *path, const char *shown, char *err, size_t errlen)
{
	unsigned char h[64];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(h, 1, sizeof(h), f) : 0;
	uint16_t type, machine;

	if (!f)
		return fail(err, errlen, "%s: %s", shown, strerror(errno));
	fclose(f);
	if (n < sizeof(h) || memcmp(h, "\177ELF", 4))
		return fail(err, errlen, "%s is not an object file (not ELF): give FILE.c, or "
			    "FILE.o from cc -c with the flags of bareperf cflags", shown);
	memcpy(&type, h + 16, 2);
	memcpy(&machine, h + 18, 2);
	if (h[4] != ELFCLASS64 || h[5] != ELFDATA2LSB || machine != EM_X86_64)
		return fail(err, errlen, "%s is an ELF file, but not for x86-64", shown);
	if (type != ET_REL)
		return fail(err, errlen, "%s is an ELF %s, not a relocatable object: the kernel "
			    "links FILE.o from cc -c itself", shown,
			    type == ET_EXEC ? "executable" : type == ET_DYN ? "shared object" :
			    "file of another kind");
	return 0;
}

/* The app name: file's stem, each byte outside [A-Za-z0-9_.-] an '_'. */
static void make_name(struct program *p, const char *file)
{
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	size_t n = strlen(base) - 2, k = 0;

	for (size_t i = 0; i < n && k < PROGRAM_NAME_MAX; i++) {
		char c = base[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
		p->name[k++] = ok ? c : '_';
	}
	if (!k)
		p->name[k++] = '_';
	p->name[k] = 0;
}

/* FILE.c into obj with the SDK's flags (${CC:-cc}, as make would), the
 * compiler's words on stderr. */
static int compile(const char *file, const char *obj, char *err, size_t errlen)
{
	const char *argv[SDK_NCFLAGS + 10] = { "sh", "-c", "exec ${CC:-cc} \"$@\"", "sh" };
	char inc[PATH_MAX + 8];
	int n = sdk_cflags_argv(argv + 4, NULL, inc, sizeof(inc));

	if (n < 0)
		return fail(err, errlen, "the SDK's directory has too long a name");
	n += 4;
	argv[n++] = "-c";
	argv[n++] = file;
	argv[n++] = "-o";
	argv[n++] = obj;
	argv[n] = NULL;
	if (run((char *const *)argv))
		return fail(err, errlen, "%s does not compile; nothing was sent", file);
	return 0;
}

int program_prepare(struct program *p, const char *file, char *err, size_t errlen)
{
	char obj[128], linked[128];
	bool is_c = file[strlen(file) - 1] == 'c';
	int n;

	memset(p, 0, sizeof(*p));
	p->file = file;
	make_name(p, file);
	if (access(file, R_OK))
		return fail(err, errlen, "%s: %s", file, strerror(errno));
	snprintf(p->dir, sizeof(p->dir), "/tmp/bareperf-prog-XXXXXX");
	if (!mkdtemp(p->dir)) {
		p->dir[0] = 0;
		return fail(err, errlen, "cannot make a temporary directory: %s", strerror(errno));
	}
	sigclean_add_dir(p->dir);
	snprintf(obj, sizeof(obj), "%s/in.o", p->dir);
	snprintf(linked, sizeof(linked), "%s/linked.o", p->dir);
	snprintf(p->full, sizeof(p->full), "%s/full.o", p->dir);
	if (is_c ? compile(file, obj, err, errlen) : copy_file(file, obj, err, errlen))
		return -1;
	if (check_object(obj, file, err, errlen))
		return -1;
	n = symtab_read_build_id(obj, p->build_id, sizeof(p->build_id), err, errlen);
	if (n < 0)
		return -1;
	if (n == 0) {
		char *const ld[] = { "ld", "-r", "--build-id=sha1", obj, "-o", linked, NULL };
		if (run(ld))
			return fail(err, errlen, "ld -r --build-id=sha1 %s failed (see above)", file);
		n = symtab_read_build_id(linked, p->build_id, sizeof(p->build_id), err, errlen);
		if (n <= 0)
			return n < 0 ? -1 : fail(err, errlen, "ld gave %s no build-id", file);
		rename(linked, obj);
	}
	p->build_id_len = (size_t)n;
	if (rename(obj, p->full))
		return fail(err, errlen, "%s: %s", p->full, strerror(errno));
	char *const strip[] = { "objcopy", "--strip-debug", p->full, obj, NULL };
	struct stat st;
	if (run(strip))
		return fail(err, errlen, "objcopy --strip-debug %s failed (see above)", file);
	if (stat(p->full, &st))
		return fail(err, errlen, "%s: %s", p->full, strerror(errno));
	p->full_len = (size_t)st.st_size;
	if (slurp(obj, &p->sent, &p->sent_len, err, errlen))
		return -1;
	if (p->sent_len > WIRE_LOAD_MAX)
		return fail(err, errlen, "%s: %zu bytes without debug info, more than a LOAD "
			    "takes (%u)", file, p->sent_len, WIRE_LOAD_MAX);
	return 0;
}

/* ---- sending ----------------------------------------------------------------- */

static size_t put_u64(uint8_t *buf, size_t at, size_t cap, uint16_t type, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	return ctl_put(buf, at, cap, type, le, sizeof(le));
}

/* The LOAD request for the n bytes at off: its length. */
static size_t load_msg(const struct program *p, size_t off, size_t n, uint8_t *msg, size_t cap)
{
	struct wire_ctl_msg m = { WIRE_CTL_LOAD, 0 };
	size_t at = sizeof(m);

	at = ctl_put(msg, at, cap, WIRE_LOAD_NAME, p->name, strlen(p->name));
	at = put_u64(msg, at, cap, WIRE_LOAD_SIZE, p->sent_len);
	at = put_u64(msg, at, cap, WIRE_LOAD_OFFSET, off);
	at = ctl_put(msg, at, cap, WIRE_LOAD_DATA, p->sent + off, n);
	m.len = (uint16_t)(at - sizeof(m));
	memcpy(msg, &m, sizeof(m));
	return at;
}

/* A section ITEM of the last piece's reply, "section shndx name addr size
 * flags" (tabs or spaces between). */
static bool take_section(void *arg, const char *text)
{
	struct program *p = arg;
	struct program_section *s = &p->sec[p->nsec];
	unsigned long long addr, size;

	if (p->nsec == PROGRAM_SECTIONS_MAX ||
	    sscanf(text, "section %u %63s %llx %llx %x", &s->shndx, s->name, &addr, &size,
		   &s->flags) != 5)
		return false;
	s->addr = addr;
	s->size = size;
	p->nsec++;
	return true;
}

int program_load(struct program *p, struct ctl_line *L, bool verbose, char *err, size_t errlen)
{
	static uint8_t msg[PROGRAM_PIECE + 256];
	struct ctl_replies r = { .on_item = take_section, .arg = p };
	double t0 = now_s();
	int tries = 0;

	for (size_t off = 0; off < p->sent_len;) {
		size_t n = p->sent_len - off < PROGRAM_PIECE ? p->sent_len - off : PROGRAM_PIECE;
		size_t len = load_msg(p, off, n, msg, sizeof(msg));
		/* 11,520 bytes/s at 115200 baud 8N1, and the COBS overhead. */
		double wait_s = PIECE_WAIT_S + (double)len * 1.01 / 11520.0;
		int k;

		p->nsec = 0;
		k = ctl_line_request(L, msg, len, &r, wait_s, err, errlen);
		if (k == CTL_LINE_SILENT && ++tries < LOAD_TRIES) {
			off = 0;		/* OFFSET 0 starts the object again */
			continue;
		}
		if (k == CTL_LINE_STOPPED)
			return fail(err, errlen, "interrupted while %s was sent", p->file);
		if (k != CTL_LINE_OK)
			return -1;
		if (!r.ok)
			return fail(err, errlen, "the kernel refused %s: %s", p->file, r.text);
		off += n;
	}
	p->load_s = now_s() - t0;
	ctl_line_wait_end(L, 2.0);
	if (verbose)
		for (int i = 0; i < p->nsec; i++)
			fprintf(stderr, "bareperf: %s: section %u %s at %#llx, %#llx bytes%s\n",
				p->name, p->sec[i].shndx, p->sec[i].name,
				(unsigned long long)p->sec[i].addr,
				(unsigned long long)p->sec[i].size,
				p->sec[i].flags & 1 ? ", executable" :
				p->sec[i].flags & 2 ? ", writable" : "");
	return 0;
}

/* ---- keeping ----------------------------------------------------------------- */

int program_keep(const struct program *p, const char *capture, char *err, size_t errlen)
{
	char path[PATH_MAX], abs[PATH_MAX], dir[PATH_MAX];
	size_t n = strlen(capture);

	if (n > 4 && !strcmp(capture + n - 4, ".bpc"))
		n -= 4;
	snprintf(path, sizeof(path), "%.*s.%s.o", (int)n, capture, p->name);
	if (copy_file(p->full, path, err, errlen))
		return -1;
	if (!realpath(path, abs))
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	return buildid_cache_add(abs, p->build_id, p->build_id_len, dir, sizeof(dir), err,
				 errlen);
}

/* ---- symbols ----------------------------------------------------------------- */

bool program_symbol(const struct program *p, const char *sym, uint64_t *addr, char *err,
		    size_t errlen)
{
	int fd = open(p->full, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	bool found = false, placed = false;

	elf_version(EV_CURRENT);
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL))) {
		if (fd >= 0)
			close(fd);
		fail(err, errlen, "%s: cannot read its symbols", p->file);
		return false;
	}
	while (!found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && !found; i++) {
			GElf_Sym s;
			const char *name;
			if (!gelf_getsym(d, (int)i, &s) || !(name = elf_strptr(e, sh.sh_link, s.st_name)) ||
			    strcmp(name, sym) || s.st_shndx == SHN_UNDEF)
				continue;
			found = true;
			for (int k = 0; k < p->nsec; k++)
				if (p->sec[k].shndx == s.st_shndx) {
					*addr = p->sec[k].addr + s.st_value;
					placed = true;
				}
		}
	}
	elf_end(e);
	close(fd);
	if (!found)
		fail(err, errlen, "%s defines no function %s", p->file, sym);
	else if (!placed)
		fail(err, errlen, "%s: the kernel did not place the section of %s", p->file, sym);
	return placed;
}

void program_free(struct program *p)
{
	char path[256];

	free(p->sent);
	p->sent = NULL;
	if (!p->dir[0])
		return;
	static const char *const files[] = { "in.o", "linked.o" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", p->dir, files[i]);
		unlink(path);
	}
	unlink(p->full);
	rmdir(p->dir);
	sigclean_del_dir(p->dir);
	p->dir[0] = 0;
}

/*
 * test/host/convert_fakes.c — see convert_fakes.h.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/host/convert_fakes.h"

struct symtab {
	struct fake_sym *syms;		/* sorted by start; names owned */
	const struct fake_sym **by_name;	/* syms by name, then by start: symtab_value */
	const char *files[64];		/* fake_symtab_file: per syms[i], or NULL */
	uint8_t build_id[20];
	size_t build_id_len;
	size_t n;
	struct fake_seg segs[16];
	size_t nseg;
	struct fake_sym *labels;	/* symtab_value: fake_symtab_label, or NOTYPE symbols */
	size_t nlabels;
	char prog[32];			/* fake_symtab_program: its name, "" for none */
	uint64_t prog_start, prog_end;
};

const struct session *fake_loaded_session;

static int cmp_sym(const void *a, const void *b)
{
	const struct fake_sym *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_name(const void *a, const void *b)
{
	const struct fake_sym *const *x = a, *const *y = b;
	int c = strcmp((*x)->name, (*y)->name);

	return c ? c : (*x > *y) - (*x < *y);
}

/* The index symtab_value searches: syms by name, a name's first (by start)
 * first. Tests build tables of thousands of symbols and the converters
 * look names up for every frame. */
static void index_names(struct symtab *t)
{
	t->by_name = calloc(t->n + 1, sizeof(*t->by_name));
	for (size_t i = 0; i < t->n; i++)
		t->by_name[i] = &t->syms[i];
	qsort(t->by_name, t->n, sizeof(*t->by_name), cmp_name);
}

struct symtab *fake_symtab(const struct fake_sym *syms, size_t n,
			   const struct fake_seg *segs, size_t nseg)
{
	struct symtab *t = calloc(1, sizeof(*t));

	t->syms = calloc(n + 1, sizeof(*t->syms));
	for (size_t i = 0; i < n; i++) {
		t->syms[i] = syms[i];
		t->syms[i].name = strdup(syms[i].name);
	}
	t->n = n;
	qsort(t->syms, n, sizeof(*t->syms), cmp_sym);
	index_names(t);
	for (size_t i = 0; i < nseg && i < 16; i++)
		t->segs[t->nseg++] = segs[i];
	return t;
}

void fake_symtab_label(struct symtab *t, const char *name, uint64_t value)
{
	t->labels = realloc(t->labels, (t->nlabels + 1) * sizeof(*t->labels));
	t->labels[t->nlabels++] = (struct fake_sym){ strdup(name), value, 0 };
}

bool symtab_value(const struct symtab *t, const char *name, uint64_t *value)
{
	size_t lo = 0, hi = t->n;

	for (size_t i = 0; i < t->nlabels; i++)
		if (!strcmp(t->labels[i].name, name)) {
			*value = t->labels[i].start;
			return true;
		}
	while (lo < hi) {			/* the first of that name */
		size_t mid = (lo + hi) / 2;
		if (strcmp(t->by_name[mid]->name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->n && !strcmp(t->by_name[lo]->name, name)) {
		*value = t->by_name[lo]->start;
		return true;
	}
	return false;
}

void fake_symtab_file(struct symtab *t, const char *name, const char *file)
{
	for (size_t i = 0; i < t->n && i < 64; i++)
		if (!strcmp(t->syms[i].name, name))
			t->files[i] = file;
}

int symtab_load(struct symtab **out, const char *path, const uint8_t *build_id,
		size_t build_id_len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;
	struct symtab *t;

	(void)build_id, (void)build_id_len;
	if (!f) {
		snprintf(err, errlen, "%s: cannot open", path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc(len);
	if (fread(buf, 1, len, f) != (size_t)len || len < (long)sizeof(Elf64_Ehdr) ||
	    memcmp(buf, ELFMAG, SELFMAG)) {
		fclose(f);
		free(buf);
		snprintf(err, errlen, "%s: not an ELF file", path);
		return -1;
	}
	fclose(f);
	Elf64_Ehdr *eh = (void *)buf;
	Elf64_Phdr *ph = (void *)(buf + eh->e_phoff);
	Elf64_Shdr *sh = (void *)(buf + eh->e_shoff);
	t = calloc(1, sizeof(*t));
	for (int i = 0; i < eh->e_phnum && t->nseg < 16; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
			t->segs[t->nseg++] = (struct fake_seg){ ph[i].p_vaddr, ph[i].p_memsz,
								ph[i].p_offset };
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		Elf64_Sym *sym = (void *)(buf + sh[i].sh_offset);
		const char *str = (const char *)buf + sh[sh[i].sh_link].sh_offset;
		size_t n = sh[i].sh_size / sizeof(*sym);
		t->syms = calloc(n + 1, sizeof(*t->syms));
		for (size_t k = 0; k < n; k++) {
			if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_value)
				t->syms[t->n++] = (struct fake_sym){ strdup(str + sym[k].st_name),
								     sym[k].st_value,
								     sym[k].st_size };
			else if (ELF64_ST_TYPE(sym[k].st_info) == STT_NOTYPE &&
				 sym[k].st_shndx != SHN_UNDEF && sym[k].st_name)
				fake_symtab_label(t, str + sym[k].st_name, sym[k].st_value);
		}
	}
	free(buf);
	qsort(t->syms, t->n, sizeof(*t->syms), cmp_sym);
	index_names(t);
	memcpy(t->build_id, "fake-build-id-0123456", 20);
	t->build_id_len = 20;
	*out = t;
	return 0;
}

const uint8_t *symtab_build_id(const struct symtab *t, size_t *len)
{
	*len = t->build_id_len;
	return t->build_id_len ? t->build_id : NULL;
}

int session_symtab(const struct session *s, const char *explicit, bool force,
		   struct symtab **out, char *used, size_t usedlen, char *err, size_t errlen)
{
	(void)s, (void)force;
	if (!explicit)
		explicit = "build/kernel.elf";
	snprintf(used, usedlen, "%s", explicit);
	return symtab_load(out, explicit, NULL, 0, err, errlen);
}

void symtab_free(struct symtab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free((char *)t->syms[i].name);
	free(t->by_name);
	for (size_t i = 0; i < t->nlabels; i++)
		free((char *)t->labels[i].name);
	free(t->syms);
	free(t->labels);
	free(t);
}

void fake_symtab_program(struct symtab *t, const char *name, uint64_t start, uint64_t end)
{
	snprintf(t->prog, sizeof(t->prog), "%s", name);
	t->prog_start = start;
	t->prog_end = end;
}

const char *symtab_dso(const struct symtab *t, uint64_t addr)
{
	return t && t->prog[0] && addr >= t->prog_start && addr < t->prog_end ? t->prog : NULL;
}

size_t symtab_program_count(const struct symtab *t)
{
	(void)t;
	return 0;
}

/* No program has an object here: convert links no image. */
const struct symtab *symtab_program_at(const struct symtab *t, size_t i)
{
	(void)t, (void)i;
	return NULL;
}

void symtab_program_range(const struct symtab *p, const char **name, uint64_t *start,
			  uint64_t *end)
{
	*name = p->prog;
	*start = p->prog_start;
	*end = p->prog_end;
}

bool symtab_is_program_object(const struct symtab *p)
{
	(void)p;
	return false;
}

int symtab_program_ldscript(const struct symtab *p, const struct symtab *kernel, FILE *f,
			    char *err, size_t errlen)
{
	(void)p, (void)kernel, (void)f;
	snprintf(err, errlen, "no object");
	return -1;
}

int symtab_read_build_id(const char *path, uint8_t *id, size_t cap, char *err, size_t errlen)
{
	(void)path, (void)id, (void)cap;
	snprintf(err, errlen, "no build-id");
	return 0;
}

struct symbol symtab_lookup(const struct symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {			/* first symbol starting above addr */
		size_t mid = (lo + hi) / 2;
		if (t->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < t->syms[lo - 1].start + (t->syms[lo - 1].size ? t->syms[lo - 1].size : 1))
		return (struct symbol){ t->syms[lo - 1].name, t->syms[lo - 1].start,
					t->syms[lo - 1].size };
	return (struct symbol){ NULL, 0, 0 };
}

/* As tools/util/symbol.c, with isr_frame_return from symtab_value. */
uint64_t symtab_chain_addr(const struct symtab *t, size_t i, uint64_t prev, uint64_t addr)
{
	uint64_t isr;

	if (!i || (t && symtab_value(t, "isr_frame_return", &isr) && prev == isr))
		return addr;
	return addr - 1;
}

const char *symtab_path(const struct symtab *t)
{
	(void)t;
	return NULL;
}

bool symtab_line(const struct symtab *t, uint64_t addr, const char **file, int *line)
{
	for (size_t i = 0; i < t->n && i < 64; i++)
		if (t->files[i] && addr >= t->syms[i].start &&
		    addr < t->syms[i].start + t->syms[i].size) {
			*file = t->files[i];
			*line = 1;
			return true;
		}
	return false;
}

size_t symtab_exec_segments(const struct symtab *t, uint64_t *vaddr, uint64_t *size,
			    uint64_t *file_off, size_t max)
{
	size_t n = 0;

	for (; n < t->nseg && n < max; n++) {
		vaddr[n] = t->segs[n].vaddr;
		size[n] = t->segs[n].size;
		file_off[n] = t->segs[n].off;
	}
	return n;
}

int session_load(struct session *s, const char *path, char *err, size_t errlen)
{
	if (!fake_loaded_session) {
		snprintf(err, errlen, "%s: no fake session set", path);
		return -1;
	}
	*s = *fake_loaded_session;
	return 0;
}

int session_load_flags(struct session *s, const char *path, unsigned flags, char *err,
		       size_t errlen)
{
	(void)flags;
	return session_load(s, path, err, errlen);
}

void session_free(struct session *s)
{
	(void)s;			/* the test owns the arrays */
}

const struct bp_record_event_desc *session_event(const struct session *s, uint64_t id)
{
	for (size_t i = 0; i < s->nevents; i++)
		if (s->events[i].id == id)
			return &s->events[i];
	return NULL;
}

uint64_t session_tsc_to_ns(const struct session *s, uint64_t tsc)
{
	const struct bp_record_run_meta *m = &s->meta;
	uint64_t d, mask;

	if (!s->have_meta || !m->time_mult)
		return tsc;
	d = tsc >= m->start_tsc ? tsc - m->start_tsc : 0;
	mask = (1ull << m->time_shift) - 1;
	return m->time_zero + (d >> m->time_shift) * m->time_mult +
	       (((d & mask) * m->time_mult) >> m->time_shift);
}

int session_print_losses(const struct session *s, FILE *out, const char *prefix)
{
	int n = 0;

	if (s->loss.frames_lost_total) {
		fprintf(out, "%s%" PRIu64 " frames lost in transit\n", prefix,
			s->loss.frames_lost_total);
		n++;
	}
	return n;
}

int session_warn(const struct session *s, const char *cmd)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "bareperf %s: warning: ", cmd);
	return session_print_losses(s, stderr, prefix);
}

/* ---- building sessions ---------------------------------------------------- */

void fs_init(struct session *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "test.bpc");
	s->have_meta = true;
	s->meta.meta_version = BP_META_VERSION;
	s->meta.time_mult = 1u << 20;
	s->meta.time_shift = 20;
	s->meta.nr_cpus = 1;
	s->ncpus = 1;
}

void fs_event(struct session *s, uint64_t id, const char *name, uint64_t config,
	      uint64_t period)
{
	struct bp_record_event_desc *d;

	s->events = realloc(s->events, (s->nevents + 1) * sizeof(*s->events));
	d = &s->events[s->nevents++];
	memset(d, 0, sizeof(*d));
	d->header = (struct bp_record_header){ BP_RECORD_EVENT_DESC, 0, sizeof(*d) };
	d->id = id;
	d->config = config;
	d->sample_period = period;
	snprintf(d->name, sizeof(d->name), "%s", name);
}

void fs_app(struct session *s, uint32_t app_id, uint32_t cpu, const char *name,
	    uint64_t start, uint64_t stop)
{
	struct session_app *a;

	s->apps = realloc(s->apps, (s->napps + 1) * sizeof(*s->apps));
	a = &s->apps[s->napps++];
	memset(a, 0, sizeof(*a));
	a->app_id = app_id;
	a->cpu = cpu;
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->start_time = start;
	a->stop_time = stop;
	a->stopped = stop != 0;
}

void fs_sample(struct session *s, uint64_t time, uint32_t cpu, uint32_t pid, uint64_t id,
	       uint64_t period, uint64_t ip, const uint64_t *ips, uint32_t nr)
{
	struct bp_sample_rec *r;

	/* capacity: powers of two (ASan's realloc always copies) */
	if (!(s->nsamples & (s->nsamples - 1)))
		s->samples = realloc(s->samples, (s->nsamples ? 2 * s->nsamples : 1) *
				     sizeof(*s->samples));
	r = &s->samples[s->nsamples++];
	memset(r, 0, sizeof(*r));
	r->time = time;
	r->cpu = cpu;
	r->pid = pid;
	r->tid = cpu;
	r->id = id;
	r->period = period;
	r->misc = BP_MISC_KERNEL;
	r->ip = nr ? ips[0] : ip;
	r->nr_ips = nr;
	r->ips_off = s->nips;
	if (nr) {
		size_t have = s->nips ? 1 : 0, cap = 1;
		while (have && have < s->nips)
			have *= 2;
		while (cap < s->nips + nr)
			cap *= 2;
		if (cap > have)
			s->ips = realloc(s->ips, cap * sizeof(*s->ips));
		memcpy(s->ips + s->nips, ips, nr * sizeof(*ips));
		s->nips += nr;
	}
	if (s->nsamples == 1)
		s->first_time = time;
	s->last_time = time;
	if (cpu + 1 > s->ncpus)
		s->ncpus = cpu + 1;
}

void fs_free(struct session *s)
{
	free(s->events);
	free(s->apps);
	free(s->samples);
	free(s->ips);
	free(s->throttle);
	memset(s, 0, sizeof(*s));
}

const char *session_event_name(const struct session *s, uint64_t id, char *buf, size_t n)
{
	const struct bp_record_event_desc *d = session_event(s, id);

	if (d)
		snprintf(buf, n, "%.*s", (int)sizeof(d->name), d->name);
	else
		snprintf(buf, n, "event %" PRIu64, id);
	return buf;
}

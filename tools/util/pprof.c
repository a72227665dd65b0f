/*
 * tools/util/pprof.c — the pprof profile (tools/util/pprof.h): the
 * protocol buffer wire format written by hand (varints, length-delimited
 * fields, packed repeated fields), through zlib's deflate with a gzip
 * header.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tools/util/pprof.h"
#include "tools/util/stack.h"

/* perftools.profiles field numbers (proto/profile.proto). */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* The longest build-id written, in bytes. */
enum { BUILD_ID_MAX = 64 };

/* ---- the wire format ------------------------------------------------------ */

/* A message being encoded; oom sticks once an append fails. */
struct pb {
	uint8_t *b;
	size_t n, cap;
	bool oom;
};

static void pb_put(struct pb *p, const void *data, size_t len)
{
	if (p->oom || !len)
		return;
	if (p->n + len > p->cap) {
		size_t cap = p->cap ? p->cap : 256;
		uint8_t *b;
		while (cap < p->n + len)
			cap *= 2;
		if (!(b = realloc(p->b, cap))) {
			p->oom = true;
			return;
		}
		p->b = b;
		p->cap = cap;
	}
	memcpy(p->b + p->n, data, len);
	p->n += len;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pb_put(p, b, n);
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80)
		v >>= 7, n++;
	return n;
}

static void pb_key(struct pb *p, unsigned field, unsigned wire)
{
	pb_varint(p, (uint64_t)field << 3 | wire);
}

/* A varint field (uint64, int64 >= 0, bool); proto3 leaves out zeros. */
static void pb_uint(struct pb *p, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(p, field, WIRE_VARINT);
	pb_varint(p, v);
}

/* A length-delimited field: bytes, a string or an embedded message. */
static void pb_bytes(struct pb *p, unsigned field, const void *data, size_t len)
{
	pb_key(p, field, WIRE_LEN);
	pb_varint(p, len);
	pb_put(p, data, len);
}

/* A packed repeated varint field. */
static void pb_packed(struct pb *p, unsigned field, const uint64_t *v, size_t n)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += varint_len(v[i]);
	pb_key(p, field, WIRE_LEN);
	pb_varint(p, len);
	for (size_t i = 0; i < n; i++)
		pb_varint(p, v[i]);
}

/* ---- gzip ------------------------------------------------------------------ */

struct gz {
	z_stream z;
	FILE *out;
	bool failed;
	uint8_t buf[1 << 16];
};

static int gz_open(struct gz *g, FILE *out)
{
	memset(&g->z, 0, sizeof(g->z));
	g->out = out;
	g->failed = false;
	/* windowBits 15 + 16: a gzip header and trailer around the deflate data */
	return deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			    Z_DEFAULT_STRATEGY) == Z_OK ? 0 : -1;
}

static void gz_run(struct gz *g, const void *data, size_t len, int flush)
{
	g->z.next_in = (Bytef *)data;
	g->z.avail_in = (uInt)len;
	do {
		g->z.next_out = g->buf;
		g->z.avail_out = sizeof(g->buf);
		if (deflate(&g->z, flush) == Z_STREAM_ERROR) {
			g->failed = true;
			return;
		}
		size_t have = sizeof(g->buf) - g->z.avail_out;
		if (have && fwrite(g->buf, 1, have, g->out) != have)
			g->failed = true;
	} while (g->z.avail_out == 0 && !g->failed);
}

/* Write a message's bytes and empty it for the next. */
static void gz_take(struct gz *g, struct pb *p)
{
	if (p->oom)
		g->failed = true;
	else if (!g->failed)
		gz_run(g, p->b, p->n, Z_NO_FLUSH);
	p->n = 0;
}

static int gz_close(struct gz *g)
{
	if (!g->failed)
		gz_run(g, NULL, 0, Z_FINISH);
	deflateEnd(&g->z);
	return g->failed ? -1 : 0;
}

/* ---- the profile's tables ------------------------------------------------- */

/*
 * One open-addressing index for the three tables: strings by content
 * (key = hash, told apart by strcmp), functions by their name's pointer
 * (one per symbol in the symtab), locations by address. Values are
 * indices + 1 into the table's array; 0 is a free slot.
 */
struct index {
	uint64_t *key;
	uint32_t *val;
	size_t mask, n;
};

struct pp_string { const char *s; };
struct pp_function { const char *name; int64_t file; int64_t start_line; };
struct pp_location { uint64_t addr; uint64_t mapping; uint64_t function; int64_t line; };
/* An executable segment of kernel.elf, or the range of a loaded program;
 * file and build_id are string table indices. */
struct pp_mapping { uint64_t lo, hi, off; int64_t file, build_id; };

struct pp {
	const struct symtab *t;
	struct pp_string *str;
	size_t nstr, str_cap;
	struct pp_function *fn;
	size_t nfn, fn_cap;
	struct pp_location *loc;
	size_t nloc, loc_cap;
	struct index istr, ifn, iloc;
	struct pp_mapping *map;
	size_t nmap, map_cap;
	char *hex;			/* the mappings' build-ids, in hex */
	uint64_t *ids;			/* a sample's location ids */
	size_t ids_cap;
	struct pb sample, label;	/* a sample's messages, reused */
};

static uint64_t mix(uint64_t k)
{
	k *= 0x9e3779b97f4a7c15ull;
	return k ^ k >> 31;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

static int index_grow(struct index *x)
{
	size_t mask = x->mask ? 2 * x->mask + 1 : 1023;
	uint64_t *key = calloc(mask + 1, sizeof(*key));
	uint32_t *val = calloc(mask + 1, sizeof(*val));

	if (!key || !val) {
		free(key);
		free(val);
		return -1;
	}
	for (size_t i = 0; x->mask && i <= x->mask; i++) {
		if (!x->val[i])
			continue;
		size_t j = mix(x->key[i]) & mask;
		while (val[j])
			j = (j + 1) & mask;
		key[j] = x->key[i];
		val[j] = x->val[i];
	}
	free(x->key);
	free(x->val);
	x->key = key;
	x->val = val;
	x->mask = mask;
	return 0;
}

/* The slot of key, for which same(ctx, value) holds, or the free slot
 * where it goes; SIZE_MAX if out of memory. */
static size_t index_find(struct index *x, uint64_t key, bool (*same)(const struct pp *, uint32_t,
		const void *), const struct pp *p, const void *what)
{
	size_t j;

	if (2 * (x->n + 1) > x->mask + 1 && index_grow(x))
		return SIZE_MAX;
	for (j = mix(key) & x->mask; x->val[j]; j = (j + 1) & x->mask)
		if (x->key[j] == key && (!same || same(p, x->val[j] - 1, what)))
			break;
	return j;
}

static void index_free(struct index *x)
{
	free(x->key);
	free(x->val);
}

/* Room for one more in an array of n of cap (elements of size sz). */
static int room(void **v, size_t n, size_t *cap, size_t sz)
{
	void *nv;

	if (n < *cap)
		return 0;
	if (!(nv = realloc(*v, (*cap ? 2 * *cap : 256) * sz)))
		return -1;
	*v = nv;
	*cap = *cap ? 2 * *cap : 256;
	return 0;
}

static bool same_string(const struct pp *p, uint32_t i, const void *s)
{
	return !strcmp(p->str[i].s, s);
}

/* The string table index of s (kept by pointer: it must outlive the
 * profile's writing); -1 if out of memory. */
static int64_t pp_string(struct pp *p, const char *s)
{
	size_t j = index_find(&p->istr, str_hash(s), same_string, p, s);

	if (j == SIZE_MAX)
		return -1;
	if (p->istr.val[j])
		return p->istr.val[j] - 1;
	if (room((void **)&p->str, p->nstr, &p->str_cap, sizeof(*p->str)))
		return -1;
	p->str[p->nstr] = (struct pp_string){ s };
	p->istr.key[j] = str_hash(s);
	p->istr.val[j] = (uint32_t)++p->nstr;
	p->istr.n++;
	return (int64_t)p->nstr - 1;
}

/* The function id (from 1) of the function at addr; 0 if out of memory. */
static uint64_t pp_function(struct pp *p, uint64_t addr)
{
	const char *name = stack_frame_name(p->t, addr), *file;
	size_t j = index_find(&p->ifn, (uint64_t)(uintptr_t)name, NULL, p, NULL);
	struct pp_function f = { name, 0, 0 };
	struct symbol sym;
	int line;

	if (j == SIZE_MAX)
		return 0;
	if (p->ifn.val[j])
		return p->ifn.val[j];
	sym = p->t ? symtab_lookup(p->t, addr) : (struct symbol){ 0 };
	if (sym.name && symtab_line(p->t, sym.start, &file, &line) && file) {
		f.file = pp_string(p, file);
		f.start_line = line;
	}
	if (f.file < 0 || pp_string(p, name) < 0 ||
	    room((void **)&p->fn, p->nfn, &p->fn_cap, sizeof(*p->fn)))
		return 0;
	p->fn[p->nfn] = f;
	p->ifn.key[j] = (uint64_t)(uintptr_t)name;
	p->ifn.val[j] = (uint32_t)++p->nfn;
	p->ifn.n++;
	return p->nfn;
}

/* The location id (from 1) of addr; 0 if out of memory. */
static uint64_t pp_location(struct pp *p, uint64_t addr)
{
	size_t j = index_find(&p->iloc, addr, NULL, p, NULL);
	struct pp_location l = { addr, 0, 0, 0 };
	const char *file;
	int line;

	if (j == SIZE_MAX)
		return 0;
	if (p->iloc.val[j])
		return p->iloc.val[j];
	for (size_t k = 0; k < p->nmap; k++)	/* a program's over the kernel's */
		if (addr >= p->map[k].lo && addr < p->map[k].hi)
			l.mapping = k + 1;
	if (!(l.function = pp_function(p, addr)))
		return 0;
	if (p->t && symtab_line(p->t, addr, &file, &line))
		l.line = line;
	if (room((void **)&p->loc, p->nloc, &p->loc_cap, sizeof(*p->loc)))
		return 0;
	p->loc[p->nloc] = l;
	p->iloc.key[j] = addr;
	p->iloc.val[j] = (uint32_t)++p->nloc;
	p->iloc.n++;
	return p->nloc;
}

/* ---- the profile ------------------------------------------------------------ */

/*
 * The string table index of the build-id id[idlen] in hex, 0 (the empty
 * string) for none, -1 if out of memory. The hex is written in buf, which
 * must outlive the profile's writing.
 */
static int64_t pp_build_id(struct pp *p, const uint8_t *id, size_t idlen, char *buf)
{
	if (!id || !idlen || idlen > BUILD_ID_MAX)
		return 0;
	for (size_t k = 0; k < idlen; k++)
		snprintf(buf + 2 * k, 3, "%02x", id[k]);
	return pp_string(p, buf);
}

/* One more mapping; -1 if out of memory. */
static int pp_mapping(struct pp *p, struct pp_mapping m)
{
	if (m.file < 0 || m.build_id < 0 ||
	    room((void **)&p->map, p->nmap, &p->map_cap, sizeof(*p->map)))
		return -1;
	p->map[p->nmap++] = m;
	return 0;
}

/*
 * The mappings: kernel.elf's executable segments, then each loaded
 * program's range, named by its object (with the object's build-id) or,
 * without one, by the program's name. -1 if out of memory.
 */
static int pp_mappings(struct pp *p, const struct symtab *t)
{
	uint64_t lo[8], size[8], off[8];
	size_t nseg = symtab_exec_segments(t, lo, size, off, 8), idlen;
	size_t nprog = symtab_program_count(t);
	const uint8_t *id = symtab_build_id(t, &idlen);
	const char *path = symtab_path(t) ? symtab_path(t) : "";
	const struct symtab *q;
	int64_t file, build_id;
	const size_t hex = 2 * BUILD_ID_MAX + 1;	/* p->hex: the kernel's, the programs' */

	if (!(p->hex = calloc(1 + nprog, hex)))
		return -1;
	file = pp_string(p, path);
	build_id = pp_build_id(p, id, idlen, p->hex);
	for (size_t k = 0; k < nseg; k++)
		if (pp_mapping(p, (struct pp_mapping){ lo[k], lo[k] + size[k], off[k], file,
						       build_id }))
			return -1;
	for (size_t i = 0; i < nprog && (q = symtab_program_at(t, i)); i++) {
		const char *name;
		uint64_t start, end;
		symtab_program_range(q, &name, &start, &end);
		if (symtab_is_program_object(q)) {
			id = symtab_build_id(q, &idlen);
			file = pp_string(p, symtab_path(q));
			build_id = pp_build_id(p, id, idlen, p->hex + (1 + i) * hex);
		} else {
			file = pp_string(p, name);
			build_id = 0;
		}
		if (pp_mapping(p, (struct pp_mapping){ start, end, 0, file, build_id }))
			return -1;
	}
	return 0;
}

static void pp_value_type(struct pb *p, unsigned field, int64_t type, int64_t unit)
{
	struct pb m = { 0 };

	pb_uint(&m, VALUE_TYPE_TYPE, (uint64_t)type);
	pb_uint(&m, VALUE_TYPE_UNIT, (uint64_t)unit);
	pb_bytes(p, field, m.b, m.n);
	p->oom |= m.oom;
	free(m.b);
}

/* One sample: its locations leaf first, [1, period], its CPU as a label. */
static int pp_sample(struct pp *p, struct gz *g, struct pb *msg, const struct session *s,
		     const struct bp_sample_rec *r, int64_t cpu_key)
{
	uint64_t vals[2] = { 1, r->period };
	uint32_t n = r->nr_ips ? r->nr_ips : 1;
	struct pb *m = &p->sample, *label = &p->label;

	if (n > p->ids_cap) {
		uint64_t *v = realloc(p->ids, n * sizeof(*v));
		if (!v)
			return -1;
		p->ids = v;
		p->ids_cap = n;
	}
	const uint64_t *ips = r->nr_ips ? &s->ips[r->ips_off] : NULL;	/* none: the ip alone */
	for (uint32_t k = 0; k < n; k++) {
		uint64_t a = ips ? symtab_chain_addr(p->t, k, k ? ips[k - 1] : 0, ips[k]) : r->ip;
		if (!(p->ids[k] = pp_location(p, a)))
			return -1;
	}
	m->n = label->n = 0;
	pb_packed(m, SAMPLE_LOCATION_ID, p->ids, n);
	pb_packed(m, SAMPLE_VALUE, vals, 2);
	pb_uint(label, LABEL_KEY, (uint64_t)cpu_key);
	pb_key(label, LABEL_NUM, WIRE_VARINT);		/* CPU 0 is a value too */
	pb_varint(label, r->cpu);
	pb_bytes(m, SAMPLE_LABEL, label->b, label->n);
	pb_bytes(msg, PROFILE_SAMPLE, m->b, m->n);
	msg->oom |= m->oom | label->oom;
	gz_take(g, msg);
	return 0;
}

/* The tables the samples filled: mappings, locations, functions. */
static void pp_tables(struct pp *p, struct gz *g, struct pb *msg)
{
	struct pb m = { 0 }, line = { 0 };

	for (size_t k = 0; k < p->nmap; k++) {
		m.n = 0;
		pb_uint(&m, MAPPING_ID, k + 1);
		pb_uint(&m, MAPPING_MEMORY_START, p->map[k].lo);
		pb_uint(&m, MAPPING_MEMORY_LIMIT, p->map[k].hi);
		pb_uint(&m, MAPPING_FILE_OFFSET, p->map[k].off);
		pb_uint(&m, MAPPING_FILENAME, (uint64_t)p->map[k].file);
		pb_uint(&m, MAPPING_BUILD_ID, (uint64_t)p->map[k].build_id);
		pb_uint(&m, MAPPING_HAS_FUNCTIONS, 1);
		pb_uint(&m, MAPPING_HAS_FILENAMES, 1);
		pb_uint(&m, MAPPING_HAS_LINE_NUMBERS, 1);
		pb_bytes(msg, PROFILE_MAPPING, m.b, m.n);
		gz_take(g, msg);
	}
	for (size_t i = 0; i < p->nloc; i++) {
		m.n = line.n = 0;
		pb_uint(&line, LINE_FUNCTION_ID, p->loc[i].function);
		pb_uint(&line, LINE_LINE, (uint64_t)p->loc[i].line);
		pb_uint(&m, LOCATION_ID, i + 1);
		pb_uint(&m, LOCATION_MAPPING_ID, p->loc[i].mapping);
		pb_uint(&m, LOCATION_ADDRESS, p->loc[i].addr);
		pb_bytes(&m, LOCATION_LINE, line.b, line.n);
		pb_bytes(msg, PROFILE_LOCATION, m.b, m.n);
		gz_take(g, msg);
	}
	for (size_t i = 0; i < p->nfn; i++) {
		int64_t name = pp_string(p, p->fn[i].name);	/* interned already */
		m.n = 0;
		pb_uint(&m, FUNCTION_ID, i + 1);
		pb_uint(&m, FUNCTION_NAME, (uint64_t)name);
		pb_uint(&m, FUNCTION_SYSTEM_NAME, (uint64_t)name);
		pb_uint(&m, FUNCTION_FILENAME, (uint64_t)p->fn[i].file);
		pb_uint(&m, FUNCTION_START_LINE, (uint64_t)p->fn[i].start_line);
		pb_bytes(msg, PROFILE_FUNCTION, m.b, m.n);
		gz_take(g, msg);
	}
	if (m.oom || line.oom)
		g->failed = true;
	free(m.b);
	free(line.b);
}

static void pp_free(struct pp *p)
{
	free(p->str);
	free(p->fn);
	free(p->loc);
	free(p->map);
	free(p->hex);
	free(p->ids);
	free(p->sample.b);
	free(p->label.b);
	index_free(&p->istr);
	index_free(&p->ifn);
	index_free(&p->iloc);
}

int convert_pprof(const struct session *s, const struct symtab *t, uint64_t event_id,
		  FILE *out, char *err, size_t errlen)
{
	const struct bp_record_event_desc *d = session_event(s, event_id);
	bool in_ns = d && d->config == BP_CONFIG_SOFT_CPU_CLOCK;
	struct pp p = { .t = t };
	struct pb msg = { 0 };
	struct gz *g = malloc(sizeof(*g));
	char ev[64], comment[512];
	int64_t type[2], unit[2], cpu_key;
	uint64_t first = 0, last = 0;
	bool any = false;
	int rc = -1;

	if (!g || gz_open(g, out)) {
		free(g);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	session_event_name(s, event_id, ev, sizeof(ev));
	snprintf(comment, sizeof(comment), "bareperf capture %s", s->path);
	if (pp_string(&p, "") || (type[0] = pp_string(&p, "samples")) < 0 ||
	    (unit[0] = pp_string(&p, "count")) < 0 ||
	    (type[1] = pp_string(&p, in_ns ? "cpu" : ev)) < 0 ||
	    (unit[1] = pp_string(&p, in_ns ? "nanoseconds" : "count")) < 0 ||
	    (cpu_key = pp_string(&p, "cpu")) < 0)
		goto oom;
	if (t && pp_mappings(&p, t))
		goto oom;

	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		if (r->id != event_id)
			continue;
		if (pp_sample(&p, g, &msg, s, r, cpu_key))
			goto oom;
		if (!any)
			first = r->time;
		last = r->time;
		any = true;
	}
	pp_value_type(&msg, PROFILE_SAMPLE_TYPE, type[0], unit[0]);
	pp_value_type(&msg, PROFILE_SAMPLE_TYPE, type[1], unit[1]);
	pp_value_type(&msg, PROFILE_PERIOD_TYPE, type[1], unit[1]);
	pb_uint(&msg, PROFILE_PERIOD, d ? d->sample_period : 0);
	pb_uint(&msg, PROFILE_DURATION_NANOS,
		session_tsc_to_ns(s, last) - session_tsc_to_ns(s, first));
	gz_take(g, &msg);
	pp_tables(&p, g, &msg);
	{
		int64_t c = pp_string(&p, comment);
		if (c < 0)
			goto oom;
		pb_uint(&msg, PROFILE_COMMENT, (uint64_t)c);
	}
	for (size_t i = 0; i < p.nstr; i++)
		pb_bytes(&msg, PROFILE_STRING_TABLE, p.str[i].s, strlen(p.str[i].s));
	gz_take(g, &msg);
	if (gz_close(g) || ferror(out))
		snprintf(err, errlen, "write: %s", errno ? strerror(errno) : "failed");
	else
		rc = 0;
	goto done;
oom:
	gz_close(g);
	snprintf(err, errlen, "out of memory");
done:
	free(g);
	free(msg.b);
	pp_free(&p);
	return rc;
}

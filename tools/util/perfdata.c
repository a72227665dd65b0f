/*
 * tools/util/perfdata.c — writing and reading perf.data files (tools/util/perfdata.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/util/perfdata.h"
#include "tools/util/util.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the reader checks the magic as little-endian bytes"
#endif

#define PD_IOBUF	(1u << 20)
#define ALIGN8(x)	(((x) + 7u) & ~(size_t)7u)
#define ALIGN_TO(x, a)	(((x) + (a) - 1) / (a) * (a))

/* Remember the first failure; later ones are consequences. */
__attribute__((format(printf, 2, 3)))
static void wfail(struct pd_writer *w, const char *fmt, ...)
{
	va_list ap;

	if (w->failed)
		return;
	w->failed = true;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

static void put(struct pd_writer *w, const void *p, size_t n)
{
	if (w->failed || !n)
		return;
	if (fwrite(p, 1, n, w->f) != n)
		wfail(w, "%s: write: %s", w->path, strerror(errno));
}

/* ---- writing -------------------------------------------------------- */

int pd_create(struct pd_writer *w, const char *path, char *err, size_t errlen)
{
	struct pd_file_header zero = { 0 };

	memset(w, 0, sizeof(*w));
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->f = fopen(path, "wb");
	if (!w->f)
		return fail(err, errlen, "%s: cannot create: %s", path, strerror(errno));
	w->iobuf = malloc(PD_IOBUF);
	if (w->iobuf)
		setvbuf(w->f, w->iobuf, _IOFBF, PD_IOBUF);
	/* The real header goes in at close, when every section is known. */
	put(w, &zero, sizeof(zero));
	return 0;
}

int pd_add_attr(struct pd_writer *w, const struct perf_event_attr *attr, const char *name,
		const uint64_t *ids, size_t nids)
{
	struct pd_attr_slot *s;

	if (w->data_started || w->nattrs == PD_MAX_ATTRS)
		return -1;
	s = &w->attrs[w->nattrs];
	memset(s, 0, sizeof(*s));
	s->attr = *attr;
	s->attr.size = PD_ATTR_SIZE;
	snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
	if (nids) {
		s->ids = malloc(nids * sizeof(*ids));
		if (!s->ids) {
			wfail(w, "%s: out of memory", w->path);
			return -1;
		}
		memcpy(s->ids, ids, nids * sizeof(*ids));
		s->nids = nids;
	}
	return (int)w->nattrs++;
}

/* ids, then the attrs entries pointing at them; the data section follows. */
static void start_data(struct pd_writer *w)
{
	uint64_t off = sizeof(struct pd_file_header);
	uint64_t ids_off[PD_MAX_ATTRS];

	w->data_started = true;
	for (size_t i = 0; i < w->nattrs; i++) {
		ids_off[i] = off;
		put(w, w->attrs[i].ids, w->attrs[i].nids * sizeof(uint64_t));
		off += w->attrs[i].nids * sizeof(uint64_t);
	}
	for (size_t i = 0; i < w->nattrs; i++) {
		struct pd_file_section ids = { ids_off[i], w->attrs[i].nids * sizeof(uint64_t) };
		put(w, &w->attrs[i].attr, PD_ATTR_SIZE);
		put(w, &ids, sizeof(ids));
	}
	w->data_offset = off + w->nattrs * (PD_ATTR_SIZE + sizeof(struct pd_file_section));
}

void pd_write_record(struct pd_writer *w, const struct perf_event_header *hdr)
{
	if (!w->data_started)
		start_data(w);
	if (hdr->size < sizeof(*hdr) || hdr->size % 8) {
		wfail(w, "%s: internal error: record type %u of size %u", w->path,
		      hdr->type, hdr->size);
		return;
	}
	put(w, hdr, hdr->size);
	w->data_size += hdr->size;
}

void pd_set_feature(struct pd_writer *w, enum pd_feature feat, const void *buf, size_t len)
{
	uint8_t *copy;

	if ((unsigned)feat >= PD_FEAT_BITS || feat == 0)
		return;
	copy = malloc(len ? len : 1);
	if (!copy) {
		wfail(w, "%s: out of memory", w->path);
		return;
	}
	memcpy(copy, buf, len);
	free(w->feat[feat].buf);
	w->feat[feat].buf = copy;
	w->feat[feat].len = len;
}

/* A perf_header_string: u32 len, then len bytes, NUL-padded to NAME_ALIGN. */
static size_t string_size(const char *s)
{
	return sizeof(uint32_t) + ALIGN_TO(strlen(s) + 1, PD_NAME_ALIGN);
}

static uint8_t *put_string(uint8_t *p, const char *s)
{
	uint32_t len = (uint32_t)ALIGN_TO(strlen(s) + 1, PD_NAME_ALIGN);

	memcpy(p, &len, sizeof(len));
	memset(p + sizeof(len), 0, len);
	memcpy(p + sizeof(len), s, strlen(s));
	return p + sizeof(len) + len;
}

void pd_set_feature_string(struct pd_writer *w, enum pd_feature feat, const char *s)
{
	size_t len = string_size(s);
	uint8_t *buf = malloc(len);

	if (!buf) {
		wfail(w, "%s: out of memory", w->path);
		return;
	}
	put_string(buf, s);
	pd_set_feature(w, feat, buf, len);
	free(buf);
}

void pd_set_feature_strings(struct pd_writer *w, enum pd_feature feat,
			    const char *const *v, size_t n)
{
	size_t len = sizeof(uint32_t);
	uint8_t *buf, *p;
	uint32_t nr = (uint32_t)n;

	for (size_t i = 0; i < n; i++)
		len += string_size(v[i]);
	buf = malloc(len);
	if (!buf) {
		wfail(w, "%s: out of memory", w->path);
		return;
	}
	memcpy(buf, &nr, sizeof(nr));
	p = buf + sizeof(nr);
	for (size_t i = 0; i < n; i++)
		p = put_string(p, v[i]);
	pd_set_feature(w, feat, buf, len);
	free(buf);
}

void pd_add_build_id(struct pd_writer *w, uint16_t misc, const uint8_t *id, size_t len,
		     const char *filename)
{
	size_t name_len = ALIGN_TO(strlen(filename) + 1, PD_NAME_ALIGN);
	size_t size = sizeof(struct pd_build_id) + name_len;
	size_t old = w->feat[PD_FEAT_BUILD_ID].len;
	uint8_t *buf = realloc(w->feat[PD_FEAT_BUILD_ID].buf, old + size);
	struct pd_build_id b = {
		.header = { .type = 0, .misc = misc | PD_MISC_BUILD_ID_SIZE,
			    .size = (uint16_t)size },
		.pid = PD_HOST_PID,
		.size = (uint8_t)(len < 20 ? len : 20),
	};

	if (!buf || size > UINT16_MAX) {
		wfail(w, "%s: build-id entry for %s: %s", w->path, filename,
		      buf ? "file name too long" : "out of memory");
		if (buf)
			w->feat[PD_FEAT_BUILD_ID].buf = buf;
		return;
	}
	memcpy(b.build_id, id, b.size);
	memcpy(buf + old, &b, sizeof(b));
	memset(buf + old + sizeof(b), 0, name_len);
	memcpy(buf + old + sizeof(b), filename, strlen(filename));
	w->feat[PD_FEAT_BUILD_ID].buf = buf;
	w->feat[PD_FEAT_BUILD_ID].len = old + size;
}

/*
 * EVENT_DESC: u32 nr, u32 attr_size, then per attr: the attr, u32 nr_ids,
 * the name as a perf_header_string, u64 ids[nr_ids].
 */
static void set_event_desc(struct pd_writer *w)
{
	size_t len = 2 * sizeof(uint32_t);
	uint8_t *buf, *p;
	uint32_t v;

	for (size_t i = 0; i < w->nattrs; i++)
		len += PD_ATTR_SIZE + sizeof(uint32_t) + string_size(w->attrs[i].name) +
		       w->attrs[i].nids * sizeof(uint64_t);
	p = buf = malloc(len);
	if (!buf) {
		wfail(w, "%s: out of memory", w->path);
		return;
	}
	v = (uint32_t)w->nattrs, memcpy(p, &v, 4), p += 4;
	v = PD_ATTR_SIZE, memcpy(p, &v, 4), p += 4;
	for (size_t i = 0; i < w->nattrs; i++) {
		memcpy(p, &w->attrs[i].attr, PD_ATTR_SIZE), p += PD_ATTR_SIZE;
		v = (uint32_t)w->attrs[i].nids, memcpy(p, &v, 4), p += 4;
		p = put_string(p, w->attrs[i].name);
		memcpy(p, w->attrs[i].ids, w->attrs[i].nids * sizeof(uint64_t));
		p += w->attrs[i].nids * sizeof(uint64_t);
	}
	pd_set_feature(w, PD_FEAT_EVENT_DESC, buf, len);
	free(buf);
}

static void free_writer(struct pd_writer *w)
{
	for (size_t i = 0; i < w->nattrs; i++)
		free(w->attrs[i].ids);
	for (size_t i = 0; i < PD_FEAT_BITS; i++)
		free(w->feat[i].buf);
	free(w->iobuf);
	w->iobuf = NULL;
	w->nattrs = 0;
}

int pd_close(struct pd_writer *w, char *err, size_t errlen)
{
	struct pd_file_header h = {
		.magic = PD_MAGIC,
		.size = sizeof(h),
		.attr_size = PD_ATTR_SIZE + sizeof(struct pd_file_section),
	};
	uint64_t off;
	size_t nfeat = 0;
	int rc;

	if (!w->data_started)
		start_data(w);
	if (w->nattrs)
		set_event_desc(w);
	h.attrs.size = w->nattrs * h.attr_size;
	h.attrs.offset = w->data_offset - h.attrs.size;
	h.data.offset = w->data_offset;
	h.data.size = w->data_size;

	/* The feature table sits right after the data; bodies follow it. */
	for (size_t i = 1; i < PD_FEAT_BITS; i++)
		if (w->feat[i].buf) {
			h.features[i / 64] |= 1ull << (i % 64);
			nfeat++;
		}
	off = w->data_offset + w->data_size + nfeat * sizeof(struct pd_file_section);
	for (size_t i = 1; i < PD_FEAT_BITS; i++)
		if (w->feat[i].buf) {
			struct pd_file_section s = { off, w->feat[i].len };
			put(w, &s, sizeof(s));
			off += ALIGN8(w->feat[i].len);
		}
	for (size_t i = 1; i < PD_FEAT_BITS; i++)
		if (w->feat[i].buf) {
			static const uint8_t pad[8];
			put(w, w->feat[i].buf, w->feat[i].len);
			put(w, pad, ALIGN8(w->feat[i].len) - w->feat[i].len);
		}

	if (!w->failed && fflush(w->f))
		wfail(w, "%s: write: %s", w->path, strerror(errno));
	if (!w->failed && (fseek(w->f, 0, SEEK_SET) || fwrite(&h, sizeof(h), 1, w->f) != 1 ||
			   fflush(w->f)))
		wfail(w, "%s: write: %s", w->path, strerror(errno));
	if (fclose(w->f))
		wfail(w, "%s: close: %s", w->path, strerror(errno));
	w->f = NULL;
	rc = w->failed ? fail(err, errlen, "%s", w->err) : 0;
	if (w->failed)
		unlink(w->path);
	free_writer(w);
	return rc;
}

void pd_abort(struct pd_writer *w)
{
	if (w->f)
		fclose(w->f);
	w->f = NULL;
	unlink(w->path);
	free_writer(w);
}

/* ---- reading -------------------------------------------------------- */

static bool section_ok(const struct pd_file_section *s, size_t len)
{
	return s->offset <= len && s->size <= len - s->offset;
}

int pd_read_mem(struct pd_file *pf, const void *buf, size_t len, char *err, size_t errlen)
{
	memset(pf, 0, sizeof(*pf));
	if (len < sizeof(pf->hdr))
		return fail(err, errlen, "perf.data: %zu bytes: shorter than a header", len);
	memcpy(&pf->hdr, buf, sizeof(pf->hdr));
	if (memcmp(pf->hdr.magic, PD_MAGIC, 8))
		return fail(err, errlen, "perf.data: bad magic");
	if (pf->hdr.size != sizeof(pf->hdr))
		return fail(err, errlen, "perf.data: header size %llu, expected %zu",
			    (unsigned long long)pf->hdr.size, sizeof(pf->hdr));
	if (pf->hdr.attr_size <= sizeof(struct pd_file_section) ||
	    pf->hdr.attr_size > 4096 || pf->hdr.attrs.size % pf->hdr.attr_size)
		return fail(err, errlen, "perf.data: attr_size %llu does not divide the attrs",
			    (unsigned long long)pf->hdr.attr_size);
	if (!section_ok(&pf->hdr.attrs, len) || !section_ok(&pf->hdr.data, len))
		return fail(err, errlen, "perf.data: a section lies outside the %zu-byte file", len);
	if (pf->hdr.data.offset % 8)
		return fail(err, errlen, "perf.data: data section not 8-aligned");
	pf->buf = malloc(len ? len : 1);
	if (!pf->buf)
		return fail(err, errlen, "perf.data: out of memory");
	memcpy(pf->buf, buf, len);
	pf->len = len;
	pf->nattrs = pf->hdr.attrs.size / pf->hdr.attr_size;
	pf->attr_size = pf->hdr.attr_size - sizeof(struct pd_file_section);
	for (size_t i = 0; i < pf->nattrs; i++) {
		struct pd_file_section ids;
		memcpy(&ids, pf->buf + pf->hdr.attrs.offset + i * pf->hdr.attr_size +
		       pf->attr_size, sizeof(ids));
		if (!section_ok(&ids, len) || ids.size % 8 || ids.offset % 8) {
			pd_free(pf);
			return fail(err, errlen, "perf.data: attr %zu: ids outside the file", i);
		}
	}
	return 0;
}

int pd_read(struct pd_file *pf, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *buf;
	int rc;

	if (!f)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) || !(buf = malloc(st.st_size ? st.st_size : 1))) {
		fclose(f);
		return fail(err, errlen, "%s: cannot read", path);
	}
	if (fread(buf, 1, st.st_size, f) != (size_t)st.st_size) {
		free(buf);
		fclose(f);
		return fail(err, errlen, "%s: short read", path);
	}
	fclose(f);
	rc = pd_read_mem(pf, buf, st.st_size, err, errlen);
	free(buf);
	return rc;
}

void pd_free(struct pd_file *pf)
{
	free(pf->buf);
	memset(pf, 0, sizeof(*pf));
}

int pd_attr(const struct pd_file *pf, size_t i, struct perf_event_attr *a,
	    const uint64_t **ids, size_t *nids)
{
	const uint8_t *e;
	struct pd_file_section s;

	if (i >= pf->nattrs)
		return -1;
	e = pf->buf + pf->hdr.attrs.offset + i * pf->hdr.attr_size;
	memset(a, 0, sizeof(*a));
	memcpy(a, e, pf->attr_size < sizeof(*a) ? pf->attr_size : sizeof(*a));
	memcpy(&s, e + pf->attr_size, sizeof(s));
	if (ids)
		*ids = (const uint64_t *)(pf->buf + s.offset);
	if (nids)
		*nids = s.size / 8;
	return 0;
}

const struct perf_event_header *pd_next_record(const struct pd_file *pf, uint64_t *off)
{
	const struct perf_event_header *h;
	uint64_t end = pf->hdr.data.size;

	if (*off + sizeof(*h) > end)
		return NULL;
	h = (const void *)(pf->buf + pf->hdr.data.offset + *off);
	if (h->size < sizeof(*h) || h->size % 8 || *off + h->size > end)
		return NULL;
	*off += h->size;
	return h;
}

const uint8_t *pd_feature(const struct pd_file *pf, enum pd_feature feat, size_t *len)
{
	uint64_t table = pf->hdr.data.offset + pf->hdr.data.size;
	size_t idx = 0;
	struct pd_file_section s;

	if ((unsigned)feat >= PD_FEAT_BITS || !(pf->hdr.features[feat / 64] >> (feat % 64) & 1))
		return NULL;
	for (unsigned i = 0; i < (unsigned)feat; i++)
		idx += pf->hdr.features[i / 64] >> (i % 64) & 1;
	if (table + (idx + 1) * sizeof(s) > pf->len)
		return NULL;
	memcpy(&s, pf->buf + table + idx * sizeof(s), sizeof(s));
	if (!section_ok(&s, pf->len))
		return NULL;
	*len = s.size;
	return pf->buf + s.offset;
}

const char *pd_string(const uint8_t *p, size_t len, size_t *used)
{
	uint32_t n;

	if (len < 4)
		return NULL;
	memcpy(&n, p, 4);
	if (n == 0 || n > len - 4 || !memchr(p + 4, 0, n))
		return NULL;
	if (used)
		*used = 4 + n;
	return (const char *)p + 4;
}

int pd_parse_sample(const struct perf_event_header *h, uint64_t st, struct pd_sample *s)
{
	const uint8_t *p = (const uint8_t *)(h + 1), *end = (const uint8_t *)h + h->size;

#define TAKE(dst) do {						\
		if (end - p < (ptrdiff_t)sizeof(dst))		\
			return -1;				\
		memcpy(&(dst), p, sizeof(dst));			\
		p += sizeof(dst);				\
	} while (0)

	memset(s, 0, sizeof(*s));
	if (st & PERF_SAMPLE_IDENTIFIER)
		TAKE(s->identifier);
	if (st & PERF_SAMPLE_IP)
		TAKE(s->ip);
	if (st & PERF_SAMPLE_TID) {
		TAKE(s->pid);
		TAKE(s->tid);
	}
	if (st & PERF_SAMPLE_TIME)
		TAKE(s->time);
	if (st & PERF_SAMPLE_ADDR)
		TAKE(s->addr);
	if (st & PERF_SAMPLE_ID)
		TAKE(s->id);
	if (st & PERF_SAMPLE_STREAM_ID)
		TAKE(s->stream_id);
	if (st & PERF_SAMPLE_CPU) {
		TAKE(s->cpu);
		TAKE(s->res);
	}
	if (st & PERF_SAMPLE_PERIOD)
		TAKE(s->period);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		TAKE(s->nr);
		if (s->nr > (uint64_t)(end - p) / 8)
			return -1;
		s->ips = (const uint64_t *)p;
		p += s->nr * 8;
	}
#undef TAKE
	/* Anything else in sample_type is not ours to read. */
	if (st & ~(uint64_t)(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			     PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
			     PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			     PERF_SAMPLE_CALLCHAIN))
		return -1;
	return 0;
}

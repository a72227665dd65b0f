/*
 * tools/util/capture.c — writing and reading capture files (tools/util/capture.h,
 * layout in include/uapi/wire.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/util/capture.h"
#include "tools/util/util.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "capture headers are little-endian; this code reads them in place"
#endif

/* A header larger than this is not a header: refuse before reading it. */
#define HEADER_SIZE_MAX	(1u << 20)

static const uint8_t magic[WIRE_CAPTURE_MAGIC_LEN] = WIRE_CAPTURE_MAGIC;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* NUL-padded copy of s into a fixed field, always terminated. */
static void set_text(char *dst, size_t size, const char *s)
{
	memset(dst, 0, size);
	if (s)
		strncpy(dst, s, size - 1);
}

/* pwrite all of buf, retrying after signals and short writes. */
static int write_all(int fd, const void *buf, size_t n, uint64_t off)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t k = pwrite(fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* ---- writing ---------------------------------------------------------- */

int capture_create(struct capture_writer *w, const char *path,
		   const struct capture_meta *m, char *err, size_t errlen)
{
	struct wire_capture_header *h = &w->hdr;
	struct stat st;

	memset(w, 0, sizeof(*w));
	snprintf(w->path, sizeof(w->path), "%s", path);
	memcpy(h->magic, magic, sizeof(magic));
	h->version = WIRE_CAPTURE_VERSION;
	h->compat_version = WIRE_CAPTURE_COMPAT_VERSION;
	h->header_size = sizeof(*h);
	h->start_ns = now_ns();
	h->wire_version = WIRE_VERSION;
	if (m) {
		h->link_kind = m->link_kind;
		h->baud = m->baud;
		set_text(h->link, sizeof(h->link), m->link);
		set_text(h->run_args, sizeof(h->run_args), m->run_args);
		if (m->build_id)
			capture_set_build_id(w, m->build_id, m->build_id_size);
	}
	set_text(h->tool, sizeof(h->tool), "bareperf");

	w->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (w->fd < 0)
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: cannot create: %s", path,
			    strerror(errno));
	/* One writer per file: the lock is held until close (or death), and
	 * taken before the file is emptied, so a refused writer changes
	 * nothing of the other's capture. */
	if (flock(w->fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
		close(w->fd);
		w->fd = -1;
		return fail_code(CAPTURE_E_BUSY, err, errlen, "%s: another bareperf record is "
			    "writing this capture; give each its own -o", path);
	}
	if (!fstat(w->fd, &st) && S_ISREG(st.st_mode) && ftruncate(w->fd, 0)) {
		int e = errno;
		close(w->fd);
		w->fd = -1;
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: cannot empty it: %s", path,
			    strerror(e));
	}
	/* The header on disk before any data: the file is valid from here. */
	if (write_all(w->fd, h, sizeof(*h), 0) || fdatasync(w->fd)) {
		int e = errno;
		close(w->fd);
		w->fd = -1;
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: cannot write the header: %s", path,
			    strerror(e));
	}
	return CAPTURE_OK;
}

int capture_append(struct capture_writer *w, const void *buf, size_t n,
		   char *err, size_t errlen)
{
	if (w->failed)
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: an earlier write failed", w->path);
	if (write_all(w->fd, buf, n, w->hdr.header_size + w->written)) {
		/* Whatever part was written is past data_size: ignored. */
		w->failed = true;
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: write failed: %s", w->path,
			    strerror(errno));
	}
	w->written += n;
	return CAPTURE_OK;
}

int capture_sync(struct capture_writer *w, char *err, size_t errlen)
{
	if (fdatasync(w->fd))
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: sync failed: %s", w->path,
			    strerror(errno));
	return CAPTURE_OK;
}

void capture_set_build_id(struct capture_writer *w, const uint8_t *id, size_t n)
{
	if (n > sizeof(w->hdr.build_id))
		n = sizeof(w->hdr.build_id);
	memset(w->hdr.build_id, 0, sizeof(w->hdr.build_id));
	memcpy(w->hdr.build_id, id, n);
	w->hdr.build_id_size = (uint8_t)n;
}

int capture_close(struct capture_writer *w, uint32_t flags, char *err, size_t errlen)
{
	struct wire_capture_header *h = &w->hdr;
	int rc = CAPTURE_OK, e = 0;

	if (w->fd < 0)
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: not open", w->path);
	h->flags |= WIRE_CAPF_COMPLETE | (flags & (WIRE_CAPF_INTERRUPTED | WIRE_CAPF_TIMED_OUT)) |
		    (w->failed ? WIRE_CAPF_TRUNCATED : 0);
	h->data_size = w->written;
	h->end_ns = now_ns();
	/* Data first on disk, then the header that vouches for it. */
	if (fdatasync(w->fd) || write_all(w->fd, h, sizeof(*h), 0) || fsync(w->fd)) {
		e = errno;
		rc = CAPTURE_E_IO;
	}
	if (close(w->fd) && !e) {
		e = errno;
		rc = CAPTURE_E_IO;
	}
	w->fd = -1;
	if (rc)
		return fail_code(rc, err, errlen, "%s: cannot finish the capture: %s", w->path,
			    strerror(e));
	return CAPTURE_OK;
}

/* ---- reading ---------------------------------------------------------- */

int capture_parse_header(const void *buf, size_t len, uint64_t file_size,
			 const char *name, struct capture_info *ci,
			 char *err, size_t errlen)
{
	const uint8_t *b = buf;
	struct wire_capture_header h;
	size_t have = len < file_size ? len : (size_t)file_size;
	uint64_t avail;

	memset(ci, 0, sizeof(*ci));
	if (!have)
		return fail_code(CAPTURE_E_NOT_CAPTURE, err, errlen,
			    "%s: empty file, not a bareperf capture", name);
	if (memcmp(b, magic, have < sizeof(magic) ? have : sizeof(magic))) {
		bool zeros = true;
		for (size_t i = 0; i < have && i < sizeof(magic); i++)
			zeros &= !b[i];
		return fail_code(CAPTURE_E_NOT_CAPTURE, err, errlen, zeros ?
			    "%s: not a bareperf capture: its first bytes are zero" :
			    "%s: not a bareperf capture (no capture header)", name);
	}
	/* version, compat_version and header_size: 20 bytes in. */
	if (have < 20)
		return fail_code(CAPTURE_E_TRUNCATED, err, errlen,
			    "%s: truncated capture: %zu bytes, not even a header", name, have);
	memset(&h, 0, sizeof(h));
	memcpy(&h, b, have < sizeof(h) ? have : sizeof(h));
	if (h.version == 0 || h.compat_version == 0 || h.compat_version > h.version)
		return fail_code(CAPTURE_E_CORRUPT, err, errlen,
			    "%s: damaged capture header (version %" PRIu32 ", compat %" PRIu32 ")",
			    name, h.version, h.compat_version);
	if (h.compat_version > WIRE_CAPTURE_VERSION)
		return fail_code(CAPTURE_E_NEWER, err, errlen,
			    "%s: capture format version %" PRIu32 " needs a newer bareperf "
			    "(this one reads version %d)", name, h.version, WIRE_CAPTURE_VERSION);
	if (h.header_size < sizeof(h) || h.header_size > HEADER_SIZE_MAX)
		return fail_code(CAPTURE_E_CORRUPT, err, errlen,
			    "%s: damaged capture header (header size %" PRIu32 ")",
			    name, h.header_size);
	if (file_size < h.header_size || have < sizeof(h))
		return fail_code(CAPTURE_E_TRUNCATED, err, errlen,
			    "%s: truncated capture: %" PRIu64 " bytes, the header alone is %" PRIu32,
			    name, file_size, h.header_size);
	if (h.wire_version > WIRE_VERSION)
		return fail_code(CAPTURE_E_NEWER, err, errlen,
			    "%s: the capture holds wire format version %" PRIu32 "; this bareperf "
			    "reads version %d", name, h.wire_version, WIRE_VERSION);
	if (h.build_id_size > sizeof(h.build_id))
		return fail_code(CAPTURE_E_CORRUPT, err, errlen,
			    "%s: damaged capture header (build-id size %u)", name, h.build_id_size);
	h.link[sizeof(h.link) - 1] = 0;
	h.run_args[sizeof(h.run_args) - 1] = 0;
	h.tool[sizeof(h.tool) - 1] = 0;

	ci->hdr = h;
	ci->data_offset = h.header_size;
	avail = file_size - h.header_size;
	ci->complete = h.flags & WIRE_CAPF_COMPLETE;
	ci->interrupted = h.flags & WIRE_CAPF_INTERRUPTED;
	ci->timed_out = ci->interrupted && (h.flags & WIRE_CAPF_TIMED_OUT);
	ci->truncated = h.flags & WIRE_CAPF_TRUNCATED;
	if (ci->complete) {
		ci->data_avail = h.data_size < avail ? h.data_size : avail;
		if (h.data_size > avail)
			ci->truncated = true;
	} else {
		ci->data_avail = avail;
	}
	return CAPTURE_OK;
}

void capture_describe(const struct capture_info *ci, char *buf, size_t n)
{
	const struct wire_capture_header *h = &ci->hdr;

	if (ci->complete && ci->truncated && ci->data_avail < h->data_size)
		snprintf(buf, n, "truncated: %" PRIu64 " of %" PRIu64 " data bytes present",
			 ci->data_avail, h->data_size);
	else if (ci->truncated)
		snprintf(buf, n, "%" PRIu64 " bytes; the recorder lost data (write error)",
			 ci->data_avail);
	else if (!ci->complete)
		snprintf(buf, n, "not closed (the recorder was killed?): %" PRIu64 " bytes",
			 ci->data_avail);
	else if (ci->timed_out)
		snprintf(buf, n, "stopped by the time limit (record --timeout): %" PRIu64 " bytes",
			 ci->data_avail);
	else if (ci->interrupted)
		snprintf(buf, n, "interrupted by the user: %" PRIu64 " bytes", ci->data_avail);
	else if (!ci->data_avail)
		snprintf(buf, n, "file closed properly, no data");
	else
		snprintf(buf, n, "complete: %" PRIu64 " bytes", ci->data_avail);
}

/*
 * A capture that is no file of known size (a pipe, a terminal, a device):
 * read once, front to back. The header is checked from its first bytes,
 * before anything else is read; the size is known at the end
 * (capture_read).
 */
static int open_stream(struct capture_reader *r, char *err, size_t errlen)
{
	uint8_t buf[sizeof(struct wire_capture_header)];
	size_t got = fread(buf, 1, sizeof(magic), r->f);
	int rc;

	if (got == sizeof(magic) && !memcmp(buf, magic, sizeof(magic)))
		got += fread(buf + got, 1, sizeof(buf) - got, r->f);
	if (ferror(r->f))
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: read error: %s", r->name,
			    strerror(errno));
	rc = capture_parse_header(buf, got, got < sizeof(buf) ? got : UINT64_MAX, r->name,
				  &r->info, err, errlen);
	if (rc)
		return rc;
	r->stream = true;
	for (uint64_t skip = r->info.data_offset - got; skip; skip -= got) {
		got = fread(buf, 1, skip < sizeof(buf) ? (size_t)skip : sizeof(buf), r->f);
		if (!got)
			return fail_code(CAPTURE_E_TRUNCATED, err, errlen,
				    "%s: truncated capture: it ends inside its %" PRIu32
				    "-byte header", r->name, r->info.hdr.header_size);
	}
	return CAPTURE_OK;
}

int capture_open_file(struct capture_reader *r, FILE *f, const char *name,
		      char *err, size_t errlen)
{
	uint8_t buf[sizeof(struct wire_capture_header)];
	struct stat st;
	size_t got;
	off_t size;
	int rc;

	memset(r, 0, sizeof(*r));
	r->f = f;
	snprintf(r->name, sizeof(r->name), "%s", name);
	if (fileno(f) >= 0 && !fstat(fileno(f), &st) && !S_ISREG(st.st_mode))
		return open_stream(r, err, errlen);
	if (fseeko(f, 0, SEEK_END) || (size = ftello(f)) < 0 || fseeko(f, 0, SEEK_SET))
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: cannot seek: %s", name,
			    strerror(errno));
	got = fread(buf, 1, sizeof(buf), f);
	if (got < sizeof(buf) && ferror(f))
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: read error: %s", name,
			    strerror(errno));
	rc = capture_parse_header(buf, got, (uint64_t)size, name, &r->info, err, errlen);
	if (rc)
		return rc;
	if (fseeko(f, (off_t)r->info.data_offset, SEEK_SET))
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: cannot seek: %s", name,
			    strerror(errno));
	return CAPTURE_OK;
}

int capture_open(struct capture_reader *r, const char *path, char *err, size_t errlen)
{
	FILE *f;
	int rc;

	if (!strcmp(path, "-")) {
		if (isatty(STDIN_FILENO)) {
			memset(r, 0, sizeof(*r));
			return fail_code(CAPTURE_E_NOT_CAPTURE, err, errlen, "%s: a terminal, "
				    "not a capture", CAPTURE_STDIN_NAME);
		}
		return capture_open_file(r, stdin, CAPTURE_STDIN_NAME, err, errlen);
	}
	f = fopen(path, "rb");
	if (!f) {
		memset(r, 0, sizeof(*r));
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: %s", path, strerror(errno));
	}
	rc = capture_open_file(r, f, path, err, errlen);
	r->own = true;
	if (rc)
		capture_close_reader(r);
	return rc;
}

long capture_read(struct capture_reader *r, void *buf, size_t n, char *err, size_t errlen)
{
	uint64_t left = r->info.data_avail - r->pos;
	size_t got;

	if (n > left)
		n = (size_t)left;
	if (!n)
		return 0;
	got = fread(buf, 1, n, r->f);
	if (!got && ferror(r->f))
		return fail_code(CAPTURE_E_IO, err, errlen, "%s: read error: %s", r->name,
			    strerror(errno));
	if (!got && r->stream) {
		/* The end of a stream: now its size is known. */
		r->info.data_avail = r->pos;
		if (r->info.complete && r->pos < r->info.hdr.data_size)
			r->info.truncated = true;
	}
	r->pos += got;
	return (long)got;
}

int capture_decode(struct capture_reader *r, struct wire_dec *d, char *err, size_t errlen)
{
	enum { CHUNK = 1 << 16 };
	uint8_t *buf = malloc(CHUNK);
	long got;

	if (!buf)
		return fail_code(CAPTURE_E_NOMEM, err, errlen, "%s: out of memory", r->name);
	while ((got = capture_read(r, buf, CHUNK, err, errlen)) > 0)
		wire_dec_feed(d, buf, (size_t)got);
	free(buf);
	wire_dec_finish(d);
	return got < 0 ? (int)got : CAPTURE_OK;
}

void capture_close_reader(struct capture_reader *r)
{
	if (r->f && r->own)
		fclose(r->f);
	r->f = NULL;
}

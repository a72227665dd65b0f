/*
 * tools/util/capture.h — capture files: what `bareperf record` writes and every
 * other command reads. Layout: struct wire_capture_header
 * (include/uapi/wire.h), then the stream bytes as received.
 *
 * Writing keeps a valid file at every moment: the header goes first
 * (without WIRE_CAPF_COMPLETE), data is appended with plain write(2)s
 * (no stdio buffer to lose), and capture_close() rewrites the header with
 * the final size and flags. A recorder stopped by Ctrl-C calls
 * capture_close(w, WIRE_CAPF_INTERRUPTED) from its main loop; one that is
 * killed leaves a file without COMPLETE, which readers accept as
 * "not closed" and read in full.
 *
 * Errors: 0 or a negative enum capture_error, with one line of text in
 * err (no trailing newline) naming the file and what is wrong.
 */
#ifndef BAREPERF_TOOLS_CAPTURE_H
#define BAREPERF_TOOLS_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uapi/wire.h"
#include "wire/decode.h"

enum capture_error {
	CAPTURE_OK		=  0,
	CAPTURE_E_IO		= -1,	/* open/read/write failed (errno text in err) */
	CAPTURE_E_NOT_CAPTURE	= -2,	/* no capture magic: some other file */
	CAPTURE_E_NEWER		= -3,	/* written by a newer bareperf */
	CAPTURE_E_TRUNCATED	= -4,	/* shorter than its own header */
	CAPTURE_E_CORRUPT	= -5,	/* header fields impossible */
	CAPTURE_E_NOMEM		= -6,
	CAPTURE_E_BUSY		= -7,	/* another writer holds the file */
};

/* ---- writing -------------------------------------------------------- */

struct capture_meta {
	enum wire_link link_kind;
	uint32_t baud;			/* WIRE_LINK_TTY */
	const char *link;		/* may be NULL; cut to 63 bytes */
	const char *run_args;		/* may be NULL; cut to 255 bytes */
	const uint8_t *build_id;	/* may be NULL (not known yet) */
	size_t build_id_size;		/* <= 20 */
};

struct capture_writer {
	int fd;
	char path[256];			/* for messages */
	struct wire_capture_header hdr;
	uint64_t written;		/* data bytes stored */
	bool failed;			/* a write failed: data was lost */
};

/* Create (or replace) path and write the header. The file is locked
 * (flock) until capture_close: a second writer gets CAPTURE_E_BUSY and
 * leaves the file as it was. */
int capture_create(struct capture_writer *w, const char *path,
		   const struct capture_meta *m, char *err, size_t errlen);
/* Append stream bytes as received. On a write error the file stays valid
 * up to what was stored, the loss is marked (WIRE_CAPF_TRUNCATED) at
 * close, and later appends are refused. */
int capture_append(struct capture_writer *w, const void *buf, size_t n,
		   char *err, size_t errlen);
/* fdatasync: what was appended survives a crash of the machine. */
int capture_sync(struct capture_writer *w, char *err, size_t errlen);
/* The kernel's build-id, once known (from its RUN_META record). */
void capture_set_build_id(struct capture_writer *w, const uint8_t *id, size_t n);
/*
 * Rewrite the header with COMPLETE, the data size, the end time and
 * flags (WIRE_CAPF_INTERRUPTED if the user stopped it, with
 * WIRE_CAPF_TIMED_OUT if the time limit did), sync and close.
 * Uses only write/fsync/close: safe to call from a signal handler if
 * nothing else is writing to w at that moment.
 */
int capture_close(struct capture_writer *w, uint32_t flags, char *err, size_t errlen);

/* ---- reading ---------------------------------------------------------- */

struct capture_info {
	struct wire_capture_header hdr;	/* fields past the reader's version zeroed */
	uint64_t data_offset;		/* = hdr.header_size */
	uint64_t data_avail;		/* data bytes present in the file */
	bool complete;			/* closed by the writer */
	bool interrupted;		/* stopped before the run ended */
	bool timed_out;			/* ... by record --timeout, not the user */
	bool truncated;			/* the file ends before data_size, or the writer lost data */
};

/*
 * Check a header: buf holds the first len bytes of a file of file_size
 * bytes. Pure (no I/O): the capture reader's fuzz target calls it.
 * name is the file's name for messages.
 */
int capture_parse_header(const void *buf, size_t len, uint64_t file_size,
			 const char *name, struct capture_info *ci,
			 char *err, size_t errlen);

struct capture_reader {
	FILE *f;
	bool own;			/* capture_open opened f */
	char name[256];
	struct capture_info info;
	uint64_t pos;			/* data bytes read so far */
	bool stream;			/* no file of known size: read once, in order;
					 * info's size and truncation known at the end */
};

/* What capture_open calls standard input ("-") in messages. */
#define CAPTURE_STDIN_NAME	"(standard input)"

/* Open path ("-": standard input) and check its header. Anything but a
 * regular file (a pipe, a device) is read as a stream: its header is
 * checked from its first bytes, nothing is copied. */
int capture_open(struct capture_reader *r, const char *path, char *err, size_t errlen);
/* The same on a stream the caller opened (e.g. fmemopen); name for messages. */
int capture_open_file(struct capture_reader *r, FILE *f, const char *name,
		      char *err, size_t errlen);
/* Next data bytes: count read, 0 at the end, or CAPTURE_E_IO. */
long capture_read(struct capture_reader *r, void *buf, size_t n, char *err, size_t errlen);
/* Feed all remaining data through d, then wire_dec_finish(d). */
int capture_decode(struct capture_reader *r, struct wire_dec *d, char *err, size_t errlen);
void capture_close_reader(struct capture_reader *r);

/*
 * One line describing a capture's state, e.g. "complete", "interrupted
 * by the user", "not closed (the recorder was killed?): 1234 bytes",
 * "truncated: 1000 of 5000 data bytes present".
 */
void capture_describe(const struct capture_info *ci, char *buf, size_t n);

#endif

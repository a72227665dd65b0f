/*
 * tools/util/perfdata.h — perf.data files (perf's "PERFILE2" format): a
 * writer, used by `bareperf convert --to perf.data`, and a small reader
 * that tests use to check what the writer produced field by field.
 *
 * Facts come from perf's tools/perf/Documentation/perf.data-file-format.txt
 * and include/uapi/linux/perf_event.h (the record layouts; included from
 * the system's linux-libc-dev). File layout the writer produces, in order:
 *
 *	struct pd_file_header           magic, sizes, attrs/data sections,
 *	                                256 feature bits
 *	u64 ids[]                       every attr's ids, back to back
 *	struct pd_file_attr[nattrs]     attr (PD_ATTR_SIZE bytes) + its ids section
 *	data                            records, header.size bytes each
 *	struct pd_file_section[nfeat]   one per feature bit set, in bit order;
 *	                                perf finds this table right after the
 *	                                data section (data.offset + data.size)
 *	feature bodies
 *
 * Native endianness (x86_64: little). Every record is 8-byte aligned.
 *
 * Errors: 0 or -1 with one line in err naming the file and the problem.
 */
#ifndef BAREPERF_TOOLS_PERFDATA_H
#define BAREPERF_TOOLS_PERFDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/perf_event.h>

#define PD_MAGIC		"PERFILE2"
/*
 * The attr size we write: PERF_ATTR_SIZE_VER7 (Linux 5.13, sig_data),
 * which perf 6.1 reads without complaint. A perf that knows a smaller
 * attr accepts larger ones only when the extra bytes are zero (they are).
 */
#define PD_ATTR_SIZE		PERF_ATTR_SIZE_VER7
_Static_assert(sizeof(struct perf_event_attr) >= PD_ATTR_SIZE,
	       "linux/perf_event.h older than PERF_ATTR_SIZE_VER7");

/* Feature bits (perf.data-file-format.txt, "Flags section"). */
enum pd_feature {
	PD_FEAT_TRACING_DATA	= 1,
	PD_FEAT_BUILD_ID	= 2,	/* struct pd_build_id records */
	PD_FEAT_HOSTNAME	= 3,	/* string */
	PD_FEAT_OSRELEASE	= 4,	/* string */
	PD_FEAT_VERSION		= 5,	/* string */
	PD_FEAT_ARCH		= 6,	/* string, uname -m */
	PD_FEAT_NRCPUS		= 7,	/* u32 available, u32 online (perf's reader's
					   order; the format text lists online first) */
	PD_FEAT_CPUDESC		= 8,	/* string */
	PD_FEAT_CPUID		= 9,	/* string, "GenuineIntel,6,85,4" */
	PD_FEAT_TOTAL_MEM	= 10,	/* u64 kB */
	PD_FEAT_CMDLINE		= 11,	/* string list */
	PD_FEAT_EVENT_DESC	= 12,	/* attrs with names and ids */
	PD_FEAT_SAMPLE_TIME	= 21,	/* u64 first, u64 last sample time */
	PD_FEAT_BITS		= 256,
};

/* Records perf's tools add (perf.data-file-format.txt, "Perf record specific events"). */
#define PD_RECORD_HEADER_BUILD_ID	67
#define PD_RECORD_FINISHED_ROUND	68
/* misc bit of a build-id record: the size byte after the id is valid */
#define PD_MISC_BUILD_ID_SIZE		(1u << 15)
/* The pid a build-id record carries for the host machine (perf's HOST_KERNEL_ID). */
#define PD_HOST_PID			(-1)
/* Strings in feature sections are padded to this (perf's NAME_ALIGN). */
#define PD_NAME_ALIGN			64u

struct pd_file_section {
	uint64_t offset;		/* from the start of the file */
	uint64_t size;
};

struct pd_file_header {
	char     magic[8];		/* PD_MAGIC */
	uint64_t size;			/* sizeof(struct pd_file_header) */
	uint64_t attr_size;		/* one attrs entry: PD_ATTR_SIZE + 16 */
	struct pd_file_section attrs;
	struct pd_file_section data;
	struct pd_file_section event_types;	/* unused: 0, 0 */
	uint64_t features[PD_FEAT_BITS / 64];	/* bit n: feature n present */
};
_Static_assert(sizeof(struct pd_file_header) == 104, "perf_file_header layout");

/* A build-id record, as in the BUILD_ID feature; filename follows. */
struct pd_build_id {
	struct perf_event_header header;	/* type 0 in the feature, misc = cpumode */
	int32_t  pid;				/* PD_HOST_PID */
	uint8_t  build_id[20];
	uint8_t  size;				/* bytes of build_id used */
	uint8_t  reserved[3];
	/* char filename[], NUL-padded to PD_NAME_ALIGN */
};
_Static_assert(sizeof(struct pd_build_id) == 36, "build_id_event layout");

/* ---- writing -------------------------------------------------------- */

#define PD_MAX_ATTRS	64

struct pd_attr_slot {
	struct perf_event_attr attr;
	char name[64];
	uint64_t *ids;
	size_t nids;
};

struct pd_writer {
	FILE *f;
	char path[256];
	char *iobuf;
	struct pd_attr_slot attrs[PD_MAX_ATTRS];
	size_t nattrs;
	bool data_started;		/* attrs and ids are on disk */
	uint64_t data_offset, data_size;
	struct { uint8_t *buf; size_t len; } feat[PD_FEAT_BITS];
	bool failed;			/* a write or allocation failed */
	char err[320];			/* ... and why */
};

/* Create (or replace) path. */
int pd_create(struct pd_writer *w, const char *path, char *err, size_t errlen);
/*
 * Add an event before the first record: attr.size is set to PD_ATTR_SIZE;
 * name goes into the EVENT_DESC feature. ids are copied. Returns the
 * attr's index or -1 (too many attrs, or records already written).
 */
int pd_add_attr(struct pd_writer *w, const struct perf_event_attr *attr, const char *name,
		const uint64_t *ids, size_t nids);
/* Append one record (hdr->size bytes, a multiple of 8) to the data section. */
void pd_write_record(struct pd_writer *w, const struct perf_event_header *hdr);
/* Set a feature's body (copied); a second call replaces it. */
void pd_set_feature(struct pd_writer *w, enum pd_feature feat, const void *buf, size_t len);
/* A feature that is one perf_header_string. */
void pd_set_feature_string(struct pd_writer *w, enum pd_feature feat, const char *s);
/* A feature that is a perf_header_string_list. */
void pd_set_feature_strings(struct pd_writer *w, enum pd_feature feat,
			    const char *const *v, size_t n);
/* Add a build-id entry to the BUILD_ID feature. misc = the file's cpumode. */
void pd_add_build_id(struct pd_writer *w, uint16_t misc, const uint8_t *id, size_t len,
		     const char *filename);
/*
 * Write the EVENT_DESC feature from the attrs, the feature sections and the
 * final header; close. On any earlier failure the file is removed and the
 * first error is reported. The writer is freed either way.
 */
int pd_close(struct pd_writer *w, char *err, size_t errlen);
/* Give up: close, remove the file, free. */
void pd_abort(struct pd_writer *w);

/* ---- reading (tests, tools) ------------------------------------------- */

struct pd_file {
	uint8_t *buf;			/* the whole file */
	size_t len;
	struct pd_file_header hdr;
	size_t nattrs;
	size_t attr_size;		/* attr bytes in each attrs entry */
};

struct pd_sample {			/* a SAMPLE record's fields (sample_type order) */
	uint64_t identifier, ip;
	uint32_t pid, tid;
	uint64_t time, addr, id, stream_id;
	uint32_t cpu, res;
	uint64_t period;
	uint64_t nr;			/* callchain entries, markers included */
	const uint64_t *ips;		/* into the file buffer */
};

/* Read and check a whole file: magic, header size, sections inside the file. */
int pd_read(struct pd_file *pf, const char *path, char *err, size_t errlen);
/* The same on bytes in memory (copied). */
int pd_read_mem(struct pd_file *pf, const void *buf, size_t len, char *err, size_t errlen);
void pd_free(struct pd_file *pf);

/* Attr i (zero-extended to this perf_event_attr) and its ids (into the
 * file buffer); -1 if i is out of range. */
int pd_attr(const struct pd_file *pf, size_t i, struct perf_event_attr *attr,
	    const uint64_t **ids, size_t *nids);
/*
 * The next record of the data section at *off (start with 0); NULL at
 * the end or on a malformed record (size < 8, not 8-aligned, past the end).
 */
const struct perf_event_header *pd_next_record(const struct pd_file *pf, uint64_t *off);
/* A feature's body, NULL if the bit is clear or its section is bad. */
const uint8_t *pd_feature(const struct pd_file *pf, enum pd_feature feat, size_t *len);
/* A perf_header_string at p (len bytes left): the text, or NULL. *used = bytes taken. */
const char *pd_string(const uint8_t *p, size_t len, size_t *used);
/* Decode a SAMPLE with the given sample_type; -1 if it is too short. */
int pd_parse_sample(const struct perf_event_header *h, uint64_t sample_type,
		    struct pd_sample *out);

#endif

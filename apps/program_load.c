/*
 * program_load.c — LOAD, the control channel's request carrying a
 * program's object in pieces (include/uapi/wire.h, apps/control.h): each
 * piece is copied into a buffer the size of the whole object, taken from
 * pmm when a piece at OFFSET 0 starts it; the last piece has
 * apps/program.c load it, and the reply is one ITEM per placed section,
 * then OK. Only with code=1: a program runs in ring 0.
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "apps/control.h"
#include "apps/program.h"
#include <uapi/wire.h>

#define reply control_reply
#define replyf control_replyf

#define ERR_MAX		512	/* what one reply holds */

/* The object being received. */
static struct {
	char name[32];
	u64 size, have;
	u8 *buf;
	size_t pages;
} obj;

static void drop(void)
{
	if (obj.buf)
		pmm_free((u64)obj.buf, obj.pages);
	memset(&obj, 0, sizeof(obj));
}

struct load_req {
	char name[32];
	u64 size, offset;
	const u8 *data;
	size_t len;
	bool has_size, has_offset, has_data;
};

static bool good_name(const u8 *v, size_t len)
{
	if (!len || len > 31)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
		      (v[i] >= '0' && v[i] <= '9') || v[i] == '_' || v[i] == '.' || v[i] == '-'))
			return false;
	return true;
}

/* LOAD's {type, len, value} triples; 0 or an ERROR sent. */
static int parse_load(const u8 *p, size_t len, struct load_req *r)
{
	memset(r, 0, sizeof(*r));
	while (len) {
		struct wire_ctl_msg t;
		if (len < sizeof(t) || (memcpy(&t, p, sizeof(t)), t.len > len - sizeof(t))) {
			reply(WIRE_CTL_ERROR, "LOAD: a parameter runs past the message", 39);
			return -1;
		}
		const u8 *v = p + sizeof(t);
		bool ok = true;
		switch (t.type) {
		case WIRE_LOAD_NAME:
			ok = good_name(v, t.len);
			if (ok)
				memcpy(r->name, v, t.len);
			break;
		case WIRE_LOAD_SIZE:
		case WIRE_LOAD_OFFSET:
			ok = t.len == sizeof(u64);
			if (ok)
				memcpy(t.type == WIRE_LOAD_SIZE ? &r->size : &r->offset, v, sizeof(u64));
			*(t.type == WIRE_LOAD_SIZE ? &r->has_size : &r->has_offset) = true;
			break;
		case WIRE_LOAD_DATA:
			r->data = v;
			r->len = t.len;
			r->has_data = true;
			break;
		default:
			replyf(WIRE_CTL_ERROR, "LOAD: unknown parameter %u", t.type);
			return -1;
		}
		if (!ok) {
			replyf(WIRE_CTL_ERROR, "LOAD: parameter %u is malformed%s", t.type,
			       t.type == WIRE_LOAD_NAME ? " (a name is 1..31 of [A-Za-z0-9_.-])" : "");
			return -1;
		}
		p += sizeof(t) + t.len;
		len -= sizeof(t) + t.len;
	}
	if (!r->name[0] || !r->has_size || !r->has_offset || !r->has_data) {
		reply(WIRE_CTL_ERROR, "LOAD: NAME, SIZE, OFFSET and DATA are all needed", 48);
		return -1;
	}
	return 0;
}

static void item(u32 shndx, const char *name, u64 addr, u64 size, u32 flags)
{
	replyf(WIRE_CTL_ITEM, "section\t%u\t%s\t%#lx\t%#lx\t%u", shndx, name, addr, size, flags);
}

/* Take the piece into obj; 0, or an ERROR sent. */
static int take_piece(const struct load_req *r)
{
	if (r->offset == 0) {
		drop();
		if (!r->size || r->size > WIRE_LOAD_MAX) {
			replyf(WIRE_CTL_ERROR, "LOAD: SIZE %lu is out of range (1..%u bytes)", r->size,
			       WIRE_LOAD_MAX);
			return -1;
		}
		obj.pages = ALIGN_UP(r->size, PAGE_SIZE) / PAGE_SIZE;
		obj.buf = (u8 *)pmm_alloc(obj.pages);
		if (!obj.buf) {
			replyf(WIRE_CTL_ERROR, "LOAD: too little memory for %lu bytes", r->size);
			obj.pages = 0;
			return -1;
		}
		strlcpy(obj.name, r->name, sizeof(obj.name));
		obj.size = r->size;
	} else if (!obj.buf || r->offset != obj.have || r->size != obj.size ||
		   strcmp(r->name, obj.name)) {
		replyf(WIRE_CTL_ERROR, "LOAD: a piece of '%s' at offset %lu, but %s", r->name,
		       r->offset, obj.buf ? "the object being received is not at that offset"
		       : "no object is being received (start at OFFSET 0)");
		drop();
		return -1;
	}
	if (r->len > obj.size - obj.have) {
		replyf(WIRE_CTL_ERROR, "LOAD: the piece runs past SIZE %lu", obj.size);
		drop();
		return -1;
	}
	memcpy(obj.buf + obj.have, r->data, r->len);
	obj.have += r->len;
	return 0;
}

static void load(const u8 *v, size_t len)
{
	static struct load_req r;
	char err[ERR_MAX];

	if (!kopt.code) {
		reply(WIRE_CTL_ERROR, "LOAD needs code=1 on the kernel command line (a program "
		      "runs in ring 0)", 67);
		return;
	}
	if (parse_load(v, len, &r))
		return;
	if (app_find(r.name)) {
		replyf(WIRE_CTL_ERROR, "LOAD: '%s' is a built-in app's name; load the program "
		       "under another", r.name);
		return;
	}
	if (take_piece(&r))
		return;
	if (obj.have < obj.size) {
		replyf(WIRE_CTL_OK, "have %lu of %lu bytes", obj.have, obj.size);
		return;
	}
	u64 t0 = rdtsc_ordered();
	int e = program_load(obj.name, obj.buf, obj.size, item, err, sizeof(err));
	if (e)
		kprintf("program '%s': not loaded: %s\n", obj.name, err);
	else
		kprintf("program '%s': loaded, %lu bytes of object, linked in %lu us\n", obj.name,
			obj.size, tsc_to_ns(rdtsc_ordered() - t0) / 1000);
	drop();
	if (e)
		control_reply(WIRE_CTL_ERROR, err, strlen(err));
	else
		reply(WIRE_CTL_OK, "", 0);
}
CONTROL_HANDLER(load, WIRE_CTL_LOAD, load);

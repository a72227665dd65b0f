/*
 * run_request.c — START_RUN, the control channel's request for a run
 * (apps/control.h, include/uapi/wire.h §5): {APP, EVENT*, PERIOD | FREQ,
 * CPUS, ARG*, COUNT*, MAX_RATE, TRACE, TIMEOUT_MS} runs the app (or a
 * program the host loaded, apps/program.h) with the boot command line's
 * settings and the request's (apps/run.c), then replies OK "exit N"; a
 * program that faulted or ran past its timeout gets an ERROR saying so.
 * Every value is bounds-checked and copied into fixed buffers.
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "apps/control.h"
#include "apps/program.h"
#include "apps/run.h"
#include "profile/profile.h"
#include <uapi/wire.h>

#define reply control_reply
#define replyf control_replyf

#define ARG_MAX		16
#define TEXT_MAX	256

/* Copy a text value into dst (size n) as a C string; false if it does not
 * fit or holds a NUL or control character. */
static bool take_text(char *dst, size_t n, const u8 *v, size_t len)
{
	if (len >= n)
		return false;
	for (size_t i = 0; i < len; i++)
		if (v[i] < 0x20 || v[i] == 0x7f)
			return false;
	memcpy(dst, v, len);
	dst[len] = 0;
	return true;
}

struct run_req {
	char app[32];
	char events[TEXT_MAX];
	char count[TEXT_MAX];
	char trace[TEXT_MAX];
	u64 period, freq;
	u64 max_rate;
	bool has_max_rate;
	int cpu;
	int argc;
	char args[ARG_MAX][64];
	u64 timeout_ms;			/* a loaded program's limit, 0: the default */
};

/* Add one text value to a comma-separated list; false if it does not fit
 * or is not text. */
static bool take_item(char *list, size_t n, const u8 *v, size_t len)
{
	char text[TEXT_MAX];
	size_t have = strlen(list);

	if (!take_text(text, sizeof(text), v, len) || have + len + 2 >= n)
		return false;
	ksnprintf(list + have, n - have, "%s%s", have ? "," : "", text);
	return true;
}

/* Parse START_RUN's {type, len, value} triples; 0 or an ERROR sent. */
static int parse_run(const u8 *p, size_t len, struct run_req *r)
{
	memset(r, 0, sizeof(*r));
	r->cpu = -1;
	while (len) {
		struct wire_ctl_msg t;
		if (len < sizeof(t)) {
			reply(WIRE_CTL_ERROR, "START_RUN: a parameter is cut short", 35);
			return -1;
		}
		memcpy(&t, p, sizeof(t));
		const u8 *v = p + sizeof(t);
		if (t.len > len - sizeof(t)) {
			replyf(WIRE_CTL_ERROR, "START_RUN: parameter %u runs past the message", t.type);
			return -1;
		}
		bool ok = true;
		char text[TEXT_MAX];
		u64 num;
		switch (t.type) {
		case WIRE_RUN_APP:
			ok = take_text(r->app, sizeof(r->app), v, t.len);
			break;
		case WIRE_RUN_EVENT:
			ok = take_item(r->events, sizeof(r->events), v, t.len);
			break;
		case WIRE_RUN_COUNT:
			ok = take_item(r->count, sizeof(r->count), v, t.len);
			break;
		case WIRE_RUN_TRACE:
			ok = take_text(r->trace, sizeof(r->trace), v, t.len) && r->trace[0];
			break;
		case WIRE_RUN_MAX_RATE:
			ok = t.len == sizeof(u64);
			if (!ok)
				break;
			memcpy(&r->max_rate, v, sizeof(r->max_rate));
			if (r->max_rate > 0xffffffffu) {
				replyf(WIRE_CTL_ERROR, "START_RUN: MAX_RATE %lu is out of range (at most "
				       "%u samples/s; 0 for no limit)", r->max_rate, 0xffffffffu);
				return -1;
			}
			r->has_max_rate = true;
			break;
		case WIRE_RUN_PERIOD:
		case WIRE_RUN_FREQ:
			ok = t.len == sizeof(u64);
			if (!ok)
				break;
			memcpy(&num, v, sizeof(num));
			if (!num) {
				replyf(WIRE_CTL_ERROR, "START_RUN: %s 0 is out of range (leave it out "
				       "for the default)", t.type == WIRE_RUN_PERIOD ? "PERIOD" : "FREQ");
				return -1;
			}
			/* Ranges, and PERIOD with FREQ, are profile_parse's to
			 * check: the same check as the command line's. */
			*(t.type == WIRE_RUN_PERIOD ? &r->period : &r->freq) = num;
			break;
		case WIRE_RUN_CPUS:
			ok = take_text(text, sizeof(text), v, t.len) && !parse_u64(text, &num) &&
			     num < smp_cpus();
			if (ok)
				r->cpu = num;
			else {
				replyf(WIRE_CTL_ERROR, "START_RUN: cpus must be one CPU number below %u "
				       "(the app runs there; sampling covers every CPU)", smp_cpus());
				return -1;
			}
			break;
		case WIRE_RUN_TIMEOUT_MS:
			ok = t.len == sizeof(u64);
			if (ok)
				memcpy(&r->timeout_ms, v, sizeof(r->timeout_ms));
			break;
		case WIRE_RUN_NONCE:		/* handle() checked it */
			ok = t.len == sizeof(u64);
			break;
		case WIRE_RUN_ARG:
			ok = r->argc < ARG_MAX &&
			     take_text(r->args[r->argc], sizeof(r->args[0]), v, t.len);
			if (ok)
				r->argc++;
			break;
		default:
			replyf(WIRE_CTL_ERROR, "START_RUN: unknown parameter %u", t.type);
			return -1;
		}
		if (!ok) {
			replyf(WIRE_CTL_ERROR, "START_RUN: parameter %u is malformed or too long",
			       t.type);
			return -1;
		}
		p += sizeof(t) + t.len;
		len -= sizeof(t) + t.len;
	}
	if (!r->app[0]) {
		reply(WIRE_CTL_ERROR, "START_RUN: no app given", 23);
		return -1;
	}
	return 0;
}

static void start_run(const u8 *v, size_t len)
{
	static struct run_req r;
	static struct profile_cfg cfg;
	char *argv[ARG_MAX + 2], err[256];

	if (parse_run(v, len, &r))
		return;
	/* Guest tests (APP_TEST) fault, panic and reprogram hardware on
	 * purpose: they are for the test runner's boots, never a served run. */
	const struct app *app = app_find(r.app);
	if (!app)
		app = program_find(r.app);
	if (!app) {
		replyf(WIRE_CTL_ERROR, "no app named '%s' (LIST_APPS lists them)", r.app);
		return;
	}
	if (app->flags & APP_TEST) {
		replyf(WIRE_CTL_ERROR, "'%s' is a guest test, not a runnable app (LIST_APPS lists "
		       "those)", r.app);
		return;
	}
	/* The boot command line's settings, with the request's events,
	 * period, freq and counting events (the defaults where it sent none),
	 * and its rate limit and tracing where it sent them. */
	struct profile_opts o = run_opts_boot();
	o.events = r.events;
	o.count = r.count;
	o.period = r.period;
	o.freq = r.freq;
	if (r.has_max_rate)
		o.max_rate = r.max_rate;
	if (r.trace[0])
		o.trace = r.trace;
	if (profile_parse(&o, &cfg, err, sizeof(err))) {
		reply(WIRE_CTL_ERROR, err, strlen(err));
		return;
	}
	argv[0] = (char *)app->name;
	for (int i = 0; i < r.argc; i++)
		argv[i + 1] = r.args[i];
	argv[r.argc + 1] = NULL;
	if (app->flags & APP_PROGRAM)
		program_set_timeout(r.timeout_ms);
	int rc = app_run_on(r.cpu < 0 ? this_cpu_id() : (u32)r.cpu, app, r.argc + 1, argv, &cfg);
	if ((app->flags & APP_PROGRAM) && program_run_end(err, sizeof(err)))
		reply(WIRE_CTL_ERROR, err, strlen(err));
	else
		replyf(WIRE_CTL_OK, "exit %d", rc);
}
CONTROL_HANDLER(start_run, WIRE_CTL_START_RUN, start_run);

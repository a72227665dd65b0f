/*
 * control.h — the control channel (apps/control.c): with control=1 the
 * kernel serves the host's requests over the stream (include/uapi/wire.h
 * §5). control.c receives each request, checks its header and hands its
 * value to the handler registered for its type with CONTROL_HANDLER(),
 * which places a struct control_handler in a .control.* section; linker.ld
 * gathers them between __start_control_handlers and __stop_control_handlers.
 * A handler replies with control_reply / control_replyf, the last reply
 * OK or ERROR.
 */
#ifndef BAREPERF_APPS_CONTROL_H
#define BAREPERF_APPS_CONTROL_H

#include "kernel/kernel.h"

struct control_handler {
	u16 type;				/* WIRE_CTL_* */
	void (*serve)(const u8 *v, size_t len);	/* the request's value, checked against its frame */
};

#define CONTROL_HANDLER(n, t, fn)					\
	static const struct control_handler __control_##n		\
	__attribute__((used, section(".control." #n), aligned(8))) =	\
	{ .type = (t), .serve = (fn) }

/* control=1: serve CONTROL requests until the host sends none for ever;
 * returns an exit code only if the transport fails. */
int control_serve(void);
/* A reply to the request being served (a CONTROL frame, text cut at 512
 * bytes); the last one is OK or ERROR. */
void control_reply(u16 type, const char *text, size_t len);
__printf(2, 3) void control_replyf(u16 type, const char *fmt, ...);

#endif

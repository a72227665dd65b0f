/*
 * app.h — the app registry: one C file per app, each registered with
 * APP(), which places a struct app in a .apps.* section; linker.ld
 * gathers them, sorted by name, between __start_apps and __stop_apps
 * (apps/app.c walks them; `bareperf list-apps` reads the same section
 * from kernel.elf, tools/builtin-list.c).
 */
#ifndef BAREPERF_APPS_APP_H
#define BAREPERF_APPS_APP_H

#include "kernel/kernel.h"

struct app {
	const char *name;
	const char *desc;
	int (*main)(int argc, char **argv);	/* returns an enum exit_code */
	unsigned flags;
};
#define APP_TEST	(1u << 0)		/* a guest test, hidden from the app list */
#define APP_PROGRAM	(1u << 1)		/* a program the host loaded (apps/program.h) */

#define APP(n, d, fn, fl)						\
	static const struct app __app_##n				\
	__attribute__((used, section(".apps." #n), aligned(8))) =	\
	{ .name = #n, .desc = (d), .main = (fn), .flags = (fl) }

const struct app *app_find(const char *name);
/* The app after prev (NULL: the first), test apps skipped; NULL at the end. */
const struct app *app_next(const struct app *prev);
/* One line per app (test apps skipped), on the console. */
void app_list_print(void);

#endif

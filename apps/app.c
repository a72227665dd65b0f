/*
 * app.c — the app registry: struct app entries that APP() places in the
 * .apps.* sections, gathered by linker.ld between __start_apps and
 * __stop_apps, sorted by name.
 */
#include "kernel/kernel.h"
#include "apps/app.h"

extern const struct app __start_apps[], __stop_apps[];

const struct app *app_find(const char *name)
{
	for (const struct app *a = __start_apps; a < __stop_apps; a++)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

const struct app *app_next(const struct app *prev)
{
	const struct app *a = prev ? prev + 1 : __start_apps;

	for (; a < __stop_apps; a++)
		if (!(a->flags & APP_TEST))
			return a;
	return NULL;
}

void app_list_print(void)
{
	for (const struct app *a = __start_apps; a < __stop_apps; a++)
		if (!(a->flags & APP_TEST))
			kprintf("  %-16s %s\n", a->name, a->desc);
}

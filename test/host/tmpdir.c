/*
 * tmpdir.c — a host test's scratch directory (tmpdir.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "test/host/tmpdir.h"

static char dir[64];

int tmpdir_make(const char *name)
{
	snprintf(dir, sizeof(dir), "/tmp/%s.XXXXXX", name);
	return mkdtemp(dir) ? 0 : -1;
}

char *tmpdir_path(const char *file)
{
	static char buf[4][128];
	static int k;
	char *p = buf[k++ % 4];

	snprintf(p, 128, "%s/%s", dir, file);
	return p;
}

int tmpdir_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/*
 * seed_file.c — writing the fuzzers' seeds (seed_file.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "test/fuzz/seed_file.h"

static const char *dir;
static int nseeds;

void seed_dir(const char *d)
{
	dir = d;
}

void seed(const char *kind, uint8_t mode, const void *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%s-%d", dir, kind, nseeds++);
	f = fopen(path, "wb");
	if (!f || fwrite(&mode, 1, 1, f) != 1 || fwrite(p, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int seed_count(void)
{
	return nseeds;
}

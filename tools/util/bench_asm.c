/*
 * bench_asm.c — the snippets of `bareperf bench` (tools/builtin-bench.c)
 * as machine code: NASM run on a temporary file, its messages mapped back
 * to the snippet's lines, or a flat binary read as it is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/util/bench_asm.h"
#include "uapi/wire.h"

int bench_read_code(const char *path, uint8_t **out, size_t *len, const char *what)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(WIRE_CODE_MAX + 1);
	size_t n = f && buf ? fread(buf, 1, WIRE_CODE_MAX + 1, f) : 0;

	if (!f || !buf) {
		fprintf(stderr, "bareperf bench: %s %s: %s\n", what, path, strerror(errno));
		free(buf);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	if (n > WIRE_CODE_MAX) {
		fprintf(stderr, "bareperf bench: %s %s is larger than %u bytes, the most one request "
			"carries\n", what, path, WIRE_CODE_MAX);
		free(buf);
		return -1;
	}
	*out = buf;
	*len = n;
	return 0;
}

int bench_assemble(const char *what, const char *src, uint8_t **out, size_t *len)
{
	char dir[] = "/tmp/bareperf-asm-XXXXXX", in[64], bin[64], cmd[256];

	*out = NULL;
	*len = 0;
	if (!src || !*src)
		return 0;
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bareperf bench: cannot make a temporary directory: %s\n",
			strerror(errno));
		return -1;
	}
	snprintf(in, sizeof(in), "%s/in.asm", dir);
	snprintf(bin, sizeof(bin), "%s/out.bin", dir);
	FILE *f = fopen(in, "w");
	if (!f) {
		rmdir(dir);
		return -1;
	}
	/* Line 1 is BITS 64: snippet line k is file line k + 1. */
	fprintf(f, "BITS 64\n");
	for (const char *p = src; *p; p++)
		fputc(*p == ';' ? '\n' : *p, f);
	fputc('\n', f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "nasm -f bin -o %s %s 2>&1", bin, in);
	FILE *pp = popen(cmd, "r");
	char line[512];
	int errors = 0;
	while (pp && fgets(line, sizeof(line), pp)) {
		char *c = strstr(line, ".asm:");
		long ln = c ? strtol(c + 5, NULL, 10) - 1 : 0;
		char *msg = c ? strchr(c + 5, ':') : NULL;
		/* the snippet's line ln, to show with the message */
		const char *s = src;
		for (long k = 1; k < ln && s; k++)
			s = strchr(s, ';') ? strchr(s, ';') + 1 : NULL;
		int w = s ? (int)(strchrnul(s, ';') - s) : 0;
		fprintf(stderr, "bareperf bench: %s, line %ld `%.*s`:%s", what, ln, w, s ? s : "",
			msg ? msg + 1 : line);
		errors += strstr(line, "error:") != NULL;
	}
	int st = pp ? pclose(pp) : -1;
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 127) {
		fprintf(stderr, "bareperf bench: cannot run nasm (apt-get install nasm)\n");
		errors++;
	} else if (WEXITSTATUS(st) && !errors) {
		fprintf(stderr, "bareperf bench: nasm failed on %s\n", what);
		errors++;
	}
	int rc = -1;
	if (!errors) {
		rc = bench_read_code(bin, out, len, what);
		if (!rc && !*len) {
			fprintf(stderr, "bareperf bench: %s assembles to no code\n", what);
			free(*out);
			*out = NULL;
			rc = -1;
		}
	}
	unlink(in);
	unlink(bin);
	rmdir(dir);
	return rc;
}

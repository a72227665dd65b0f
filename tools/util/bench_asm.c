/*
 * bench_asm.c — the snippets of `bareperf bench` (tools/builtin-bench.c)
 * as machine code: GNU as (bench_gas.c) or NASM run on a temporary file,
 * their messages mapped back to the snippet's statements, or a flat
 * binary read as it is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/util/bench_asm.h"
#include "tools/util/bench_asm_int.h"
#include "tools/util/sigclean.h"
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

/* NASM, flat binary, 64-bit. */
static int assemble_nasm(const char *what, const char *src, const char *dir, uint8_t **out,
			 size_t *len)
{
	char in[64], bin[64], cmd[256];

	snprintf(in, sizeof(in), "%s/in.asm", dir);
	snprintf(bin, sizeof(bin), "%s/out.bin", dir);
	snprintf(cmd, sizeof(cmd), "nasm -f bin -o %s %s 2>&1", bin, in);
	int rc = bench_write_source(in, what, src, "BITS 64", NULL, "db");
	if (!rc)
		rc = bench_run_assembler(what, src, cmd, in, "nasm", "nasm");
	if (!rc)
		rc = bench_read_code(bin, out, len, what);
	unlink(in);
	unlink(bin);
	return rc;
}

int bench_assemble(const char *what, const char *src, bool nasm, uint8_t **out, size_t *len)
{
	char dir[] = "/tmp/bareperf-asm-XXXXXX";

	*out = NULL;
	*len = 0;
	if (!src || !*src)
		return 0;
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bareperf bench: cannot make a temporary directory: %s\n",
			strerror(errno));
		return -1;
	}
	sigclean_add_dir(dir);
	char *text = bench_expand_repeats(what, src);
	int rc = !text ? -1 : nasm ? assemble_nasm(what, text, dir, out, len) :
		 bench_gas(what, text, dir, out, len);
	free(text);
	rmdir(dir);
	sigclean_del_dir(dir);
	if (!rc && !*len) {
		fprintf(stderr, "bareperf bench: %s assembles to no code\n", what);
		rc = -1;
	}
	if (rc) {
		free(*out);
		*out = NULL;
		*len = 0;
	}
	return rc;
}

void bench_assemble_batch(int n, const char *const *srcs, bool nasm, uint8_t **outs, size_t *lens)
{
	char dir[] = "/tmp/bareperf-asm-XXXXXX";

	for (int i = 0; i < n; i++) {
		outs[i] = NULL;
		lens[i] = 0;
	}
	if (nasm || n < 2 || !mkdtemp(dir))
		return;
	sigclean_add_dir(dir);
	bench_gas_batch(n, srcs, dir, outs, lens);
	rmdir(dir);
	sigclean_del_dir(dir);
}

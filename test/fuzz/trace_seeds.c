/*
 * trace_seeds DIR — seeds for fuzz_trace: the simulated program's traces
 * (test/host/trace_sim.c) as they come out of the capture loader, in
 * fuzz_trace's mode-0 format (join byte, 16-bit length, bytes per piece):
 * a whole trace, a ranged one, one with TRUNCATED gaps, one with an ASYNC;
 * the same bytes as single packets (mode 1), the path as Intel PT
 * (mode 2), and each capture's stream whole (mode 3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/fuzz/seed_file.h"
#include "tools/util/trace/trace.h"
#include "test/host/trace_sim.h"
#include "uapi/wire.h"

static void from_sim(const char *kind, const struct sim_opts *o)
{
	struct sim_result r;
	struct trace_capture tc;
	char path[] = "/tmp/bp-trace-seed-XXXXXX", err[256];
	static uint8_t buf[1 << 20];
	size_t n = 0;
	int fd = mkstemp(path);

	if (fd < 0 || sim_run(o, &r) || sim_write_capture(&r, path) ||
	    trace_capture_load(&tc, path, err, sizeof(err))) {
		fprintf(stderr, "trace_seeds: %s: cannot make the trace\n", kind);
		exit(1);
	}
	close(fd);
	{
		FILE *f = fopen(path, "rb");
		size_t k;
		buf[0] = 1;		/* COMPLETE */
		if (!f || fseek(f, sizeof(struct wire_capture_header), SEEK_SET) ||
		    (k = fread(buf + 1, 1, sizeof(buf) - 1, f)) == 0) {
			fprintf(stderr, "trace_seeds: %s: cannot read the capture\n", kind);
			exit(1);
		}
		fclose(f);
		seed(kind, 3, buf, 1 + k);
	}
	unlink(path);
	for (size_t i = 0; tc.ncpus && i < tc.cpus[0].npieces; i++) {
		const struct trace_piece *p = &tc.cpus[0].pieces[i];
		size_t len = p->len > 0xffff ? 0xffff : p->len;
		if (n + 3 + len > sizeof(buf))
			break;
		buf[n++] = (uint8_t)p->join;
		buf[n++] = (uint8_t)len;
		buf[n++] = (uint8_t)(len >> 8);
		memcpy(buf + n, p->data, len);
		n += len;
	}
	seed(kind, 0, buf, n);
	if (n > 3)
		seed(kind, 1, buf + 3, n - 3);
	trace_capture_free(&tc);
	sim_free(&r);
}

int main(int argc, char **argv)
{
	static uint8_t pt[1 << 16];

	if (argc != 2) {
		fprintf(stderr, "usage: trace_seeds DIR\n");
		return 2;
	}
	seed_dir(argv[1]);
	from_sim("whole", &(struct sim_opts){ .drop_aux_frame = -1 });
	from_sim("ranged", &(struct sim_opts){ .ranged = true, .drop_aux_frame = -1 });
	from_sim("async", &(struct sim_opts){ .async = true, .drop_aux_frame = -1 });
	from_sim("calls", &(struct sim_opts){ .calls = 2, .drop_aux_frame = -1 });
	from_sim("truncated", &(struct sim_opts){ .aux_pages = 1, .drain_every = 2000,
						  .rounds = 60, .drop_aux_frame = -1 });
	size_t n = sim_pt_encode(&(struct sim_opts){ .drop_aux_frame = -1 }, pt, sizeof(pt));
	seed("pt", 2, pt, n);
	printf("trace_seeds: %d seeds in %s\n", seed_count(), argv[1]);
	return 0;
}

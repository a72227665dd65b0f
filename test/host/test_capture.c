/*
 * test_capture — capture files (tools/util/capture.h): written and read back,
 * closed, interrupted with Ctrl-C, killed mid-write, truncated; and every
 * kind of bad input (not a capture, a cut header, a newer version, a
 * damaged header) gives one clear line and its own error code.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "tools/util/capture.h"
#include "test/host/wire_gen.h"

static char dir[64];
static struct wg_buf stream;		/* a multi-CPU stream */
static struct wg_collect ref;		/* ... decoded */

static char *path(const char *name)
{
	static char p[128];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static int setup(void **state)
{
	const uint64_t st = BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_CPU;
	uint8_t *rec = malloc(1 << 16);
	struct wg_rng r = { 21 };

	(void)state;
	strcpy(dir, "/tmp/test_capture.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	wg_buf_put(&stream, "boot text\r\n", 11);
	for (uint16_t cpu = 0; cpu < 3; cpu++) {
		struct wire_enc e;
		struct wire_enc_config cfg = { .cpu = cpu, .sample_type = st, .frame_target = 200 };
		struct wg_loop l;
		size_t n = wg_other_records(&r, rec);

		wire_encoder_init(&e, &cfg);
		wg_loop_init(&l, cpu, 3000, 50);
		for (int i = 0; i < 400; i++)
			n += wg_loop_sample(&l, rec + n, st, cpu);
		wg_encode_records(&e, rec, n, &stream);
	}
	wire_dec_free(wg_decode(stream.p, stream.len, &ref, 0));
	free(rec);
	return ref.n > 30 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	wg_buf_free(&stream);
	wg_collect_free(&ref);
	return system(cmd) == 0 ? 0 : -1;
}

/* Decode a capture: every frame must be one of ref's, exactly. Returns
 * the frames delivered. */
static size_t decode_exact(struct capture_reader *r)
{
	struct wg_collect c = { 0 };
	struct wire_dec *d = wire_dec_new(&wg_collect_ops, &c);
	char err[256];

	assert_int_equal(capture_decode(r, d, err, sizeof(err)), 0);
	for (size_t i = 0; i < c.n; i++) {
		const struct wg_frame *f = &c.f[i], *g = NULL;
		for (size_t j = 0; j < ref.n && !g; j++)
			if (ref.f[j].channel == f->channel && ref.f[j].cpu == f->cpu &&
			    ref.f[j].seq == f->seq)
				g = &ref.f[j];
		assert_non_null(g);
		assert_int_equal(f->len, g->len);
		assert_memory_equal(c.blob.p + f->at, ref.blob.p + g->at, f->len);
	}
	size_t n = c.n;
	wire_dec_free(d);
	wg_collect_free(&c);
	return n;
}

static void write_stream(const char *p, uint32_t close_flags, bool close_it)
{
	struct capture_writer w;
	struct capture_meta m = { .link_kind = WIRE_LINK_TTY, .baud = 115200,
				  .link = "/dev/ttyUSB0", .run_args = "app=loopnest events=cycles" };
	struct wg_rng r = { 5 };
	char err[256];

	assert_int_equal(capture_create(&w, p, &m, err, sizeof(err)), 0);
	for (size_t at = 0; at < stream.len;) {
		size_t n = 1 + wg_below(&r, 700);
		if (n > stream.len - at)
			n = stream.len - at;
		assert_int_equal(capture_append(&w, stream.p + at, n, err, sizeof(err)), 0);
		at += n;
	}
	assert_int_equal(capture_sync(&w, err, sizeof(err)), 0);
	capture_set_build_id(&w, (const uint8_t *)"0123456789abcdefghij", 20);
	if (close_it)
		assert_int_equal(capture_close(&w, close_flags, err, sizeof(err)), 0);
	else
		close(w.fd);		/* as if the recorder died */
}

static void round_trip(void **state)
{
	struct capture_reader r;
	char err[256], what[128];
	const struct wire_capture_header *h;

	(void)state;
	write_stream(path("a.bpcap"), 0, true);
	assert_int_equal(capture_open(&r, path("a.bpcap"), err, sizeof(err)), 0);
	h = &r.info.hdr;
	assert_memory_equal(h->magic, "\x89" "BPC\r\n\x1a\n", 8);
	assert_int_equal(h->version, WIRE_CAPTURE_VERSION);
	assert_int_equal(h->header_size, 512);
	assert_int_equal(h->wire_version, WIRE_VERSION);
	assert_int_equal(h->link_kind, WIRE_LINK_TTY);
	assert_int_equal(h->baud, 115200);
	assert_string_equal(h->link, "/dev/ttyUSB0");
	assert_string_equal(h->run_args, "app=loopnest events=cycles");
	assert_int_equal(h->build_id_size, 20);
	assert_memory_equal(h->build_id, "0123456789abcdefghij", 20);
	assert_true(h->start_ns > 1600000000ull * 1000000000ull && h->end_ns >= h->start_ns);
	assert_true(r.info.complete && !r.info.interrupted && !r.info.truncated);
	assert_int_equal(r.info.data_avail, stream.len);
	assert_int_equal(h->data_size, stream.len);
	capture_describe(&r.info, what, sizeof(what));
	assert_non_null(strstr(what, "complete"));
	assert_int_equal(decode_exact(&r), ref.n);
	capture_close_reader(&r);

	/* The bytes after the header are the stream, as received. */
	FILE *f = fopen(path("a.bpcap"), "rb");
	uint8_t *b = malloc(stream.len + 1);
	assert_int_equal(fseek(f, 512, SEEK_SET), 0);
	assert_int_equal(fread(b, 1, stream.len + 1, f), stream.len);
	assert_memory_equal(b, stream.p, stream.len);
	fclose(f);
	free(b);
}

static void interrupted_and_unclosed(void **state)
{
	struct capture_reader r;
	char err[256], what[128];

	(void)state;
	write_stream(path("int.bpcap"), WIRE_CAPF_INTERRUPTED, true);
	assert_int_equal(capture_open(&r, path("int.bpcap"), err, sizeof(err)), 0);
	assert_true(r.info.complete && r.info.interrupted && !r.info.truncated);
	capture_describe(&r.info, what, sizeof(what));
	assert_non_null(strstr(what, "interrupted by the user"));
	assert_int_equal(decode_exact(&r), ref.n);
	capture_close_reader(&r);

	/* Stopped by record --timeout: said so, not blamed on the user. */
	write_stream(path("tmo.bpcap"), WIRE_CAPF_INTERRUPTED | WIRE_CAPF_TIMED_OUT, true);
	assert_int_equal(capture_open(&r, path("tmo.bpcap"), err, sizeof(err)), 0);
	assert_true(r.info.complete && r.info.interrupted && !r.info.truncated);
	capture_describe(&r.info, what, sizeof(what));
	assert_non_null(strstr(what, "stopped by the time limit (record --timeout)"));
	assert_null(strstr(what, "user"));
	assert_int_equal(decode_exact(&r), ref.n);
	capture_close_reader(&r);

	write_stream(path("open.bpcap"), 0, false);
	assert_int_equal(capture_open(&r, path("open.bpcap"), err, sizeof(err)), 0);
	assert_true(!r.info.complete && !r.info.truncated);
	assert_int_equal(r.info.data_avail, stream.len);
	capture_describe(&r.info, what, sizeof(what));
	assert_non_null(strstr(what, "not closed"));
	assert_int_equal(decode_exact(&r), ref.n);
	capture_close_reader(&r);
}

static void truncated_after_close(void **state)
{
	struct capture_reader r;
	char err[256], what[128];
	size_t delivered = 0;

	(void)state;
	/* Seven cuts, the last one 1/7 of the stream short of its end (a
	 * step of len / 7 could end one delimiter short of it). */
	for (size_t k = 0; k < 7; k++) {
		size_t keep = stream.len * k / 7;
		write_stream(path("t.bpcap"), 0, true);
		assert_int_equal(truncate(path("t.bpcap"), (off_t)(512 + keep)), 0);
		assert_int_equal(capture_open(&r, path("t.bpcap"), err, sizeof(err)), 0);
		assert_true(r.info.complete && r.info.truncated);
		assert_int_equal(r.info.data_avail, keep);
		capture_describe(&r.info, what, sizeof(what));
		assert_non_null(strstr(what, "truncated"));
		size_t n = decode_exact(&r);
		assert_true(n >= delivered);		/* cut later, never fewer */
		delivered = n;
		capture_close_reader(&r);
	}
	assert_true(delivered > 0 && delivered < ref.n);
}

/* A recorder in a child process: Ctrl-C closes it properly; SIGKILL leaves it open. */
static volatile sig_atomic_t stop;
static void on_sigint(int sig) { (void)sig; stop = 1; }

static void child_recorder(const char *p)
{
	struct capture_writer w;
	struct capture_meta m = { .link_kind = WIRE_LINK_QEMU_SERIAL, .link = "qemu:pipe" };
	char err[256];

	signal(SIGINT, on_sigint);
	if (capture_create(&w, p, &m, err, sizeof(err)))
		_exit(2);
	for (size_t at = 0; !stop; at += 97) {
		if (at >= stream.len) {
			pause();		/* everything written: wait for the signal */
			continue;
		}
		size_t n = stream.len - at < 97 ? stream.len - at : 97;
		if (capture_append(&w, stream.p + at, n, err, sizeof(err)))
			_exit(3);
		usleep(200);
	}
	_exit(capture_close(&w, WIRE_CAPF_INTERRUPTED, err, sizeof(err)) ? 4 : 0);
}

static void stop_recorder(const char *name, int sig)
{
	struct stat sb;
	int status;
	pid_t pid;

	stop = 0;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_recorder(path(name));
	/* Let it get about half way. */
	for (int i = 0; i < 20000; i++) {
		if (!stat(path(name), &sb) && (size_t)sb.st_size > 512 + stream.len / 2)
			break;
		usleep(100);
	}
	kill(pid, sig);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (sig == SIGINT)
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	else
		assert_true(WIFSIGNALED(status));
}

static void ctrl_c_and_kill(void **state)
{
	struct capture_reader r;
	char err[256];

	(void)state;
	stop_recorder("c.bpcap", SIGINT);
	assert_int_equal(capture_open(&r, path("c.bpcap"), err, sizeof(err)), 0);
	assert_true(r.info.complete && r.info.interrupted && !r.info.truncated);
	assert_true(r.info.data_avail > stream.len / 2);
	assert_int_equal(r.info.data_avail, r.info.hdr.data_size);
	assert_true(decode_exact(&r) > 0);
	capture_close_reader(&r);

	stop_recorder("k.bpcap", SIGKILL);
	assert_int_equal(capture_open(&r, path("k.bpcap"), err, sizeof(err)), 0);
	assert_true(!r.info.complete);
	assert_true(r.info.data_avail > stream.len / 2);
	assert_true(decode_exact(&r) > 0);
	capture_close_reader(&r);
}

/* ---- bad input ----------------------------------------------------------- */

static void put_file(const char *name, const void *p, size_t n)
{
	FILE *f = fopen(path(name), "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* Open must fail with code, and err must be one line naming the file. */
static void expect_error(const char *name, int code, const char *words)
{
	struct capture_reader r;
	char err[256];

	err[0] = 0;
	assert_int_equal(capture_open(&r, path(name), err, sizeof(err)), code);
	assert_null(strchr(err, '\n'));
	assert_true(!strncmp(err, path(name), strlen(path(name))));
	if (!strstr(err, words))
		fail_msg("\"%s\" does not say \"%s\"", err, words);
	print_message("# %s\n", err);
}

static void not_a_capture(void **state)
{
	uint8_t junk[1000];

	(void)state;
	put_file("empty", "", 0);
	expect_error("empty", CAPTURE_E_NOT_CAPTURE, "not a bareperf capture");
	put_file("text", "hello, world\n", 13);
	expect_error("text", CAPTURE_E_NOT_CAPTURE, "not a bareperf capture");
	put_file("elf", "\x7f" "ELF\x02\x01\x01", 7);
	expect_error("elf", CAPTURE_E_NOT_CAPTURE, "not a bareperf capture");
	put_file("stream", stream.p, stream.len);		/* raw stream, no header */
	expect_error("stream", CAPTURE_E_NOT_CAPTURE, "not a bareperf capture");
	memset(junk, 0x89, sizeof(junk));
	put_file("junk", junk, sizeof(junk));
	expect_error("junk", CAPTURE_E_NOT_CAPTURE, "not a bareperf capture");

	struct capture_reader r;
	char err[256];
	assert_int_equal(capture_open(&r, path("missing"), err, sizeof(err)), CAPTURE_E_IO);
	assert_non_null(strstr(err, "No such file"));
}

/*
 * A capture through a pipe: read as a stream, front to back, with
 * nothing copied; a non-capture (a device of zeros) is refused from its
 * first bytes, and a stream cut short is truncated.
 */
static void open_pipe(struct capture_reader *r, const void *p, size_t n, size_t cut,
		      char *err, size_t errlen, int *rc)
{
	int fd[2];
	pid_t pid;
	FILE *f;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* The writer: what the reader does not read, it need not. */
		signal(SIGPIPE, SIG_DFL);
		close(fd[0]);
		for (size_t at = 0; at < cut;) {
			ssize_t w = write(fd[1], (const uint8_t *)p + at % n, cut - at < n - at % n ?
					  cut - at : n - at % n);
			if (w <= 0)
				_exit(0);
			at += (size_t)w;
		}
		_exit(0);
	}
	close(fd[1]);
	f = fdopen(fd[0], "rb");
	assert_non_null(f);
	*rc = capture_open_file(r, f, "(pipe)", err, errlen);
	r->own = true;
}

static void read_through_a_pipe(void **state)
{
	struct capture_reader r;
	char err[256], what[128];
	uint8_t zeros[4096] = { 0 }, *file;
	size_t n;
	int rc;

	(void)state;
	/* Zeros without end: refused at once, never read to the end. */
	open_pipe(&r, zeros, sizeof(zeros), SIZE_MAX, err, sizeof(err), &rc);
	assert_int_equal(rc, CAPTURE_E_NOT_CAPTURE);
	assert_non_null(strstr(err, "(pipe): not a bareperf capture: its first bytes are zero"));
	capture_close_reader(&r);
	while (wait(NULL) > 0)
		;

	write_stream(path("p.bpcap"), 0, true);
	FILE *f = fopen(path("p.bpcap"), "rb");
	assert_non_null(f);
	file = malloc(512 + stream.len);
	n = fread(file, 1, 512 + stream.len, f);
	fclose(f);
	assert_int_equal(n, 512 + stream.len);

	open_pipe(&r, file, n, n, err, sizeof(err), &rc);
	assert_int_equal(rc, 0);
	assert_true(r.stream);
	assert_int_equal(decode_exact(&r), ref.n);
	assert_true(r.info.complete && !r.info.truncated);
	assert_int_equal(r.info.data_avail, stream.len);
	capture_close_reader(&r);
	while (wait(NULL) > 0)
		;

	open_pipe(&r, file, n, n - 100, err, sizeof(err), &rc);
	assert_int_equal(rc, 0);
	decode_exact(&r);
	assert_true(r.info.truncated);
	capture_describe(&r.info, what, sizeof(what));
	assert_non_null(strstr(what, "truncated"));
	capture_close_reader(&r);
	while (wait(NULL) > 0)
		;
	free(file);
}

/* A device is not an empty file: /dev/zero is read, and says what it is. */
static void a_device_of_zeros(void **state)
{
	struct capture_reader r;
	char err[256];

	(void)state;
	assert_int_equal(capture_open(&r, "/dev/zero", err, sizeof(err)), CAPTURE_E_NOT_CAPTURE);
	assert_string_equal(err, "/dev/zero: not a bareperf capture: its first bytes are zero");
}

static void truncated_header(void **state)
{
	static const size_t cuts[] = { 3, 8, 19, 20, 100, 511 };
	uint8_t buf[512];

	(void)state;
	write_stream(path("h.bpcap"), 0, true);
	FILE *f = fopen(path("h.bpcap"), "rb");
	assert_int_equal(fread(buf, 1, sizeof(buf), f), sizeof(buf));
	fclose(f);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		put_file("cut", buf, cuts[i]);
		expect_error("cut", CAPTURE_E_TRUNCATED, "truncated");
	}
	/* The header alone: a valid, empty capture. */
	put_file("cut", buf, 512);
	struct capture_reader r;
	char err[256];
	assert_int_equal(capture_open(&r, path("cut"), err, sizeof(err)), 0);
	assert_true(r.info.truncated);		/* it promised data_size bytes */
	assert_int_equal(r.info.data_avail, 0);
	assert_int_equal(decode_exact(&r), 0);
	capture_close_reader(&r);
}

static void newer_and_damaged(void **state)
{
	struct wire_capture_header h;
	struct capture_reader r;
	char err[256];

	(void)state;
	write_stream(path("v.bpcap"), 0, true);
	FILE *f = fopen(path("v.bpcap"), "rb");
	assert_int_equal(fread(&h, 1, sizeof(h), f), sizeof(h));
	fclose(f);
	h.data_size = 0;

	struct wire_capture_header v = h;
	v.version = 2, v.compat_version = 2;
	put_file("v2", &v, sizeof(v));
	expect_error("v2", CAPTURE_E_NEWER, "newer bareperf");
	/* A newer writer that old readers can still read. */
	v.compat_version = 1, v.header_size = 1024;
	{
		uint8_t big[1024] = { 0 };
		memcpy(big, &v, sizeof(v));
		put_file("v2c", big, sizeof(big));
		assert_int_equal(capture_open(&r, path("v2c"), err, sizeof(err)), 0);
		assert_int_equal(r.info.data_offset, 1024);
		capture_close_reader(&r);
	}
	v = h, v.wire_version = WIRE_VERSION + 1;
	put_file("w2", &v, sizeof(v));
	expect_error("w2", CAPTURE_E_NEWER, "wire format version");

	v = h, v.header_size = 100;
	put_file("hs", &v, sizeof(v));
	expect_error("hs", CAPTURE_E_CORRUPT, "damaged");
	v = h, v.header_size = 1u << 30;
	put_file("hs", &v, sizeof(v));
	expect_error("hs", CAPTURE_E_CORRUPT, "damaged");
	v = h, v.compat_version = 0;
	put_file("cv", &v, sizeof(v));
	expect_error("cv", CAPTURE_E_CORRUPT, "damaged");
	v = h, v.version = 0;
	put_file("cv", &v, sizeof(v));
	expect_error("cv", CAPTURE_E_CORRUPT, "damaged");
	v = h, v.build_id_size = 21;
	put_file("bi", &v, sizeof(v));
	expect_error("bi", CAPTURE_E_CORRUPT, "build-id");
	/* Unterminated text fields come back terminated. */
	v = h;
	memset(v.link, 'x', sizeof(v.link));
	memset(v.run_args, 'y', sizeof(v.run_args));
	put_file("txt", &v, sizeof(v));
	assert_int_equal(capture_open(&r, path("txt"), err, sizeof(err)), 0);
	assert_int_equal(strlen(r.info.hdr.link), sizeof(v.link) - 1);
	assert_int_equal(strlen(r.info.hdr.run_args), sizeof(v.run_args) - 1);
	capture_close_reader(&r);
}

/* Two writers of one file: the second is refused and changes nothing. */
static void one_writer_per_file(void **state)
{
	struct capture_writer a, b;
	struct capture_reader r;
	char err[256];

	(void)state;
	assert_int_equal(capture_create(&a, path("busy.bpcap"), NULL, err, sizeof(err)), 0);
	assert_int_equal(capture_append(&a, stream.p, stream.len, err, sizeof(err)), 0);
	assert_int_equal(capture_create(&b, path("busy.bpcap"), NULL, err, sizeof(err)),
			 CAPTURE_E_BUSY);
	assert_non_null(strstr(err, "another bareperf record is writing this capture"));
	assert_int_equal(b.fd, -1);
	assert_int_equal(capture_close(&a, 0, err, sizeof(err)), 0);
	assert_int_equal(capture_open(&r, path("busy.bpcap"), err, sizeof(err)), 0);
	assert_true(r.info.complete && !r.info.truncated);
	assert_int_equal(decode_exact(&r), ref.n);
	capture_close_reader(&r);
	/* Closed, it is free again. */
	assert_int_equal(capture_create(&b, path("busy.bpcap"), NULL, err, sizeof(err)), 0);
	assert_int_equal(capture_close(&b, 0, err, sizeof(err)), 0);
}

static void write_errors(void **state)
{
	struct capture_writer w;
	char err[256];

	(void)state;
	assert_int_equal(capture_create(&w, "/nonexistent/dir/x.bpcap", NULL, err, sizeof(err)),
			 CAPTURE_E_IO);
	assert_non_null(strstr(err, "cannot create"));
	if (access("/dev/full", W_OK) == 0) {
		assert_int_equal(capture_create(&w, "/dev/full", NULL, err, sizeof(err)),
				 CAPTURE_E_IO);
		assert_non_null(strstr(err, "/dev/full"));
	}
}

/* The pure header check with a short read buffer and odd sizes. */
static void parse_header_bounds(void **state)
{
	struct capture_info ci;
	char err[256];
	uint8_t buf[600];

	(void)state;
	write_stream(path("p.bpcap"), 0, true);
	FILE *f = fopen(path("p.bpcap"), "rb");
	assert_int_equal(fread(buf, 1, sizeof(buf), f), sizeof(buf));
	fclose(f);
	assert_int_equal(capture_parse_header(buf, sizeof(buf), 512 + stream.len, "p", &ci,
					      err, sizeof(err)), 0);
	assert_int_equal(ci.data_avail, stream.len);
	/* Fewer bytes in hand than the file has: still the file's size that counts. */
	assert_int_equal(capture_parse_header(buf, 300, 100000, "p", &ci, err, sizeof(err)),
			 CAPTURE_E_TRUNCATED);
	assert_int_equal(capture_parse_header(buf, 0, 0, "p", &ci, err, sizeof(err)),
			 CAPTURE_E_NOT_CAPTURE);
	/* NULL err is fine. */
	assert_int_equal(capture_parse_header(buf, 5, 5, "p", &ci, NULL, 0), CAPTURE_E_TRUNCATED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(interrupted_and_unclosed),
		cmocka_unit_test(truncated_after_close),
		cmocka_unit_test(ctrl_c_and_kill),
		cmocka_unit_test(not_a_capture),
		cmocka_unit_test(read_through_a_pipe),
		cmocka_unit_test(a_device_of_zeros),
		cmocka_unit_test(truncated_header),
		cmocka_unit_test(newer_and_damaged),
		cmocka_unit_test(one_writer_per_file),
		cmocka_unit_test(write_errors),
		cmocka_unit_test(parse_header_bounds),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

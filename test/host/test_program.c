/*
 * test_program.c — a program the kernel loaded from a relocatable object,
 * named in the tools: test/programs/hot_loops.c compiled here with the SDK
 * flags and `ld -r --build-id=sha1` into CAPTURE.hot.o, its sections placed
 * at addresses of the test's choosing by a PROGRAM record, samples inside
 * it. The session finds the object beside the capture, symbols and lines
 * come from it (lines checked against addr2line on the object), report and
 * script name its functions, its dso and its lines; a missing object is
 * said once and its addresses show as [hot]+0x..., never as a kernel
 * symbol.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "test/host/capgen.h"
#include "test/host/tmpdir.h"
#include "tools/util/session.h"
#include "tools/util/symbol.h"

#define SDK_FLAGS "-std=gnu11 -O2 -g -ffreestanding -fno-pic -fno-pie -mcmodel=kernel " \
	"-mno-red-zone -fno-stack-protector -fno-omit-frame-pointer " \
	"-fno-asynchronous-unwind-tables -msse2"

/* Where the test places the object's sections: .text, .text.startup, .bss. */
#define BASE		0xffffffff90000000ull
#define TEXT_AT		(BASE + 0x1000)
#define STARTUP_AT	(BASE + 0x2000)
#define BSS_AT		(BASE + 0x3000)
#define PROG_END	(BASE + 0x4000)

static struct {
	char cap[4096], obj[4096], self[4096];
	uint8_t id[20], kid[20];
	size_t idlen, kidlen;
	uint32_t text, startup, bss;		/* section indices */
	uint64_t text_size, startup_size;
	uint64_t inner, inner_size, outer, outer_size, main_off, main_size;	/* st_value, st_size */
} F;

static int run(const char *cmd)
{
	int rc = system(cmd);
	return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

/* The output of cmd, NUL-terminated, in buf. */
static int capture_output(const char *cmd, char *buf, size_t n)
{
	FILE *p = popen(cmd, "r");
	size_t got;

	if (!p)
		return -1;
	got = fread(buf, 1, n - 1, p);
	buf[got] = 0;
	return pclose(p) == -1 ? -1 : 0;
}

/* The sections and function symbols of the object, by name. */
static int read_object(const char *path)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstr;

	elf_version(EV_CURRENT);
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)) || elf_getshdrstrndx(e, &shstr))
		return -1;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		gelf_getshdr(scn, &sh);
		name = elf_strptr(e, shstr, sh.sh_name);
		if (!strcmp(name, ".text"))
			F.text = (uint32_t)elf_ndxscn(scn), F.text_size = sh.sh_size;
		else if (!strcmp(name, ".text.startup"))
			F.startup = (uint32_t)elf_ndxscn(scn), F.startup_size = sh.sh_size;
		else if (!strcmp(name, ".bss"))
			F.bss = (uint32_t)elf_ndxscn(scn);
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			gelf_getsym(d, (int)i, &s);
			const char *sn = elf_strptr(e, sh.sh_link, s.st_name);
			if (!strcmp(sn, "hot_inner"))
				F.inner = s.st_value, F.inner_size = s.st_size;
			else if (!strcmp(sn, "hot_outer"))
				F.outer = s.st_value, F.outer_size = s.st_size;
			else if (!strcmp(sn, "main"))
				F.main_off = s.st_value, F.main_size = s.st_size;
		}
	}
	elf_end(e);
	close(fd);
	return F.text && F.startup && F.bss && F.inner_size && F.outer_size && F.main_size ? 0 : -1;
}

static uint64_t ip_inner(void) { return TEXT_AT + F.inner + F.inner_size / 2; }
static uint64_t ip_outer(void) { return TEXT_AT + F.outer + F.outer_size / 2; }
static uint64_t ip_main(void) { return STARTUP_AT + F.main_off + F.main_size / 2; }

/* The PROGRAM record of the test's placement, the build-id given. */
static void program_record(struct capgen *g, const char *name, const uint8_t *id, size_t idlen)
{
	struct {
		struct bp_record_program p;
		struct bp_program_section s[3];
	} r = {
		.p = { .header = { BP_RECORD_PROGRAM, 0, sizeof(r) }, .nr = 3,
		       .start = TEXT_AT, .end = PROG_END },
		.s = {
			{ TEXT_AT, F.text_size, F.text, BP_PROGRAM_SEC_EXEC },
			{ STARTUP_AT, F.startup_size, F.startup, BP_PROGRAM_SEC_EXEC },
			{ BSS_AT, 8, F.bss, BP_PROGRAM_SEC_WRITE },
		},
	};

	memcpy(r.p.build_id, id, idlen);
	r.p.build_id_len = (uint8_t)idlen;
	snprintf(r.p.name, sizeof(r.p.name), "%s", name);
	capgen_record(g, 0, &r);
}

/*
 * The capture: the kernel is this test binary (its build-id in RUN_META),
 * two runs of "hot" (two identical PROGRAM records), 6 samples in
 * hot_inner called from hot_outer from main, 3 in hot_outer, 1 in main.
 */
static int write_capture(const uint8_t *id, size_t idlen)
{
	struct capgen *g = calloc(1, sizeof(*g));
	char err[256];
	uint64_t t = 1000;
	int rc;

	if (!g || capgen_open(g, F.cap, CAPGEN_ST | BP_SAMPLE_CALLCHAIN, NULL, err, sizeof(err)))
		return -1;
	capgen_meta(g, 1, 1000000000ull, 0, F.kid, F.kidlen);
	capgen_cpu(g, 0, 0);
	capgen_event(g, 1, "cpu-clock", 0, 100000);
	for (uint32_t run_id = 1; run_id <= 2; run_id++) {
		program_record(g, "hot", id, idlen);
		capgen_app(g, 0, true, run_id, "hot", t++, 0);
		for (int i = 0; i < (run_id == 1 ? 6 : 0); i++) {
			uint64_t ips[] = { ip_inner(), ip_outer() + 1, ip_main() + 1 };
			capgen_sample(g, 0, 1, ips[0], t++, 100000, run_id, 3, ips);
		}
		for (int i = 0; i < (run_id == 2 ? 3 : 0); i++) {
			uint64_t ips[] = { ip_outer(), ip_main() + 1 };
			capgen_sample(g, 0, 1, ips[0], t++, 100000, run_id, 2, ips);
		}
		if (run_id == 2) {
			uint64_t ips[] = { ip_main() };
			capgen_sample(g, 0, 1, ips[0], t++, 100000, run_id, 1, ips);
		}
		capgen_app(g, 0, false, run_id, "hot", t++, 0);
	}
	rc = capgen_close(g, 0, err, sizeof(err));
	free(g);
	return rc;
}

static int setup(void **state)
{
	char cmd[16384], err[256];
	ssize_t n;
	int idn;

	(void)state;
	if (tmpdir_make("test_program"))
		return -1;
	snprintf(F.cap, sizeof(F.cap), "%s", tmpdir_path("cap.bpc"));
	snprintf(F.obj, sizeof(F.obj), "%s", tmpdir_path("cap.hot.o"));
	snprintf(cmd, sizeof(cmd), "cc " SDK_FLAGS " -c %s -o %s && ld -r --build-id=sha1 %s -o %s",
		 PROGRAM_SRC, tmpdir_path("hot0.o"), tmpdir_path("hot0.o"), F.obj);
	if (run(cmd))
		return -1;
	n = readlink("/proc/self/exe", F.self, sizeof(F.self) - 1);
	if (n <= 0)
		return -1;
	F.self[n] = 0;
	idn = symtab_read_build_id(F.obj, F.id, sizeof(F.id), err, sizeof(err));
	F.idlen = idn > 0 ? (size_t)idn : 0;
	idn = symtab_read_build_id(F.self, F.kid, sizeof(F.kid), err, sizeof(err));
	F.kidlen = idn > 0 ? (size_t)idn : 0;
	if (!F.idlen || read_object(F.obj))
		return -1;
	return write_capture(F.id, F.idlen);
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove();
}

/* addr2line's line for an offset into a section of the object. */
static int oracle_line(const char *section, uint64_t off)
{
	char cmd[8192], out[4096];
	const char *colon;

	snprintf(cmd, sizeof(cmd), "addr2line -e %s -j %s 0x%llx", F.obj, section,
		 (unsigned long long)off);
	if (capture_output(cmd, out, sizeof(out)) || !(colon = strrchr(out, ':')))
		return -1;
	return atoi(colon + 1);
}

static void session_keeps_programs(void **state)
{
	struct session s;
	char err[256];

	(void)state;
	assert_int_equal(session_load(&s, F.cap, err, sizeof(err)), 0);
	/* Two runs placed alike: one program. */
	assert_int_equal(s.nprograms, 1);
	assert_string_equal(s.programs[0].rec.name, "hot");
	assert_int_equal(s.programs[0].nsec, 3);
	assert_int_equal(s.programs[0].sec[1].addr, STARTUP_AT);
	assert_int_equal(s.programs[0].rec.build_id_len, F.idlen);
	session_free(&s);
}

/* A PROGRAM that claims more sections than it holds, or is cut short:
 * what it holds is kept, nothing read past it. */
static void damaged_program_records(void **state)
{
	struct capgen *g = calloc(1, sizeof(*g));
	struct {
		struct bp_record_program p;
		struct bp_program_section s[2];
	} r = {
		.p = { .header = { BP_RECORD_PROGRAM, 0, sizeof(r) }, .nr = 1000,
		       .start = TEXT_AT, .end = PROG_END, .build_id_len = 200 },
		.s = { { TEXT_AT, 16, 2, BP_PROGRAM_SEC_EXEC }, { BSS_AT, 8, 3, 0 } },
	};
	struct { struct bp_record_header h; uint64_t rest; } cut = { { BP_RECORD_PROGRAM, 0, 16 }, 0 };
	char cap[4200], err[256];
	struct session s;

	(void)state;
	memset(r.p.name, 'x', sizeof(r.p.name));
	snprintf(cap, sizeof(cap), "%s", tmpdir_path("damaged.bpc"));
	assert_non_null(g);
	assert_int_equal(capgen_open(g, cap, CAPGEN_ST, NULL, err, sizeof(err)), 0);
	capgen_meta(g, 1, 1000000000ull, 0, NULL, 0);
	capgen_record(g, 0, &r);
	capgen_record(g, 0, &cut);
	assert_int_equal(capgen_close(g, 0, err, sizeof(err)), 0);
	free(g);
	assert_int_equal(session_load(&s, cap, err, sizeof(err)), 0);
	assert_int_equal(s.nprograms, 1);
	assert_int_equal(s.programs[0].nsec, 2);
	assert_int_equal(s.programs[0].sec[1].addr, BSS_AT);
	assert_int_equal(strlen(s.programs[0].rec.name), sizeof(r.p.name) - 1);
	assert_int_equal(s.programs[0].rec.build_id_len, 20);
	session_free(&s);
}

static void symbols_and_lines(void **state)
{
	struct session s;
	struct symtab *t;
	char err[1024], used[4096];
	const char *file;
	int line;

	(void)state;
	assert_int_equal(session_load(&s, F.cap, err, sizeof(err)), 0);
	assert_int_equal(session_symtab(&s, F.self, false, &t, used, sizeof(used), err,
					sizeof(err)), 0);
	assert_int_equal(symtab_program_count(t), 1);

	struct symbol in = symtab_lookup(t, ip_inner());
	assert_non_null(in.name);
	assert_string_equal(in.name, "hot_inner");
	assert_int_equal(in.start, TEXT_AT + F.inner);
	/* main is at st_value 0 of .text.startup: its own section's address */
	struct symbol m = symtab_lookup(t, ip_main());
	assert_non_null(m.name);
	assert_string_equal(m.name, "main");
	assert_int_equal(m.start, STARTUP_AT);
	assert_string_equal(symtab_dso(t, ip_inner()), "hot");
	assert_null(symtab_dso(t, BASE));
	/* an address of the program in no function is no kernel symbol */
	assert_null(symtab_lookup(t, BSS_AT).name);

	assert_true(symtab_line(t, ip_inner(), &file, &line));
	assert_non_null(strstr(file, "hot_loops.c"));
	assert_int_equal(line, oracle_line(".text", ip_inner() - TEXT_AT));
	assert_true(symtab_line(t, ip_main(), &file, &line));
	assert_int_equal(line, oracle_line(".text.startup", ip_main() - STARTUP_AT));
	symtab_free(t);
	session_free(&s);
}

static void report_names_them(void **state)
{
	static char out[65536];
	char cmd[16384], want[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s report -i %s -k %s --stdio -q 2>&1", BAREPERF, F.cap, F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "hot_inner"));
	assert_non_null(strstr(out, "hot_outer"));
	assert_non_null(strstr(out, "main"));
	assert_null(strstr(out, "no object of program"));

	snprintf(cmd, sizeof(cmd), "%s report -i %s -k %s --stdio --header-only 2>&1", BAREPERF,
		 F.cap, F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "# program: hot at %#llx-%#llx: ",
		 (unsigned long long)TEXT_AT, (unsigned long long)PROG_END);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "cap.hot.o, build-id "));

	snprintf(cmd, sizeof(cmd), "%s report -i %s -k %s --stdio -q --sort dso,sym 2>&1",
		 BAREPERF, F.cap, F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "hot "));

	snprintf(cmd, sizeof(cmd), "%s report -i %s -k %s --stdio -q --sort srcline 2>&1",
		 BAREPERF, F.cap, F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "hot_loops.c:%d", oracle_line(".text", ip_inner() - TEXT_AT));
	assert_non_null(strstr(out, want));

	snprintf(cmd, sizeof(cmd), "%s report -i %s -k %s --stdio -q -g 2>&1", BAREPERF, F.cap,
		 F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "hot_outer"));
	assert_non_null(strstr(out, "main"));
}

static void script_names_them(void **state)
{
	static char out[65536];
	char cmd[16384], want[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s script -i %s -k %s -F ip,sym,symoff,dso,srcline 2>&1",
		 BAREPERF, F.cap, F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "hot_inner+0x%llx (hot)",
		 (unsigned long long)(F.inner_size / 2));
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "main+0x"));
	snprintf(want, sizeof(want), "hot_loops.c:%d", oracle_line(".text", ip_inner() - TEXT_AT));
	assert_non_null(strstr(out, want));

	snprintf(cmd, sizeof(cmd), "%s script -i %s -k %s 2>&1", BAREPERF, F.cap, F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "PROGRAM name=\"hot\""));
	assert_non_null(strstr(out, "sections=\""));
}

/* Without the object (and with a build-id the cache cannot hold): said
 * once, and the program's addresses are [hot]+0x..., no kernel symbol. */
static void missing_object(void **state)
{
	static char out[65536];
	char cmd[16384], moved[4200];
	const char *p = out;
	int said = 0;

	(void)state;
	snprintf(moved, sizeof(moved), "%s.away", F.obj);
	assert_int_equal(rename(F.obj, moved), 0);
	snprintf(cmd, sizeof(cmd), "PERF_BUILDID_DIR=%s %s script -i %s -k %s -F ip,sym,symoff,dso "
		 "2>&1", tmpdir_path("no-cache"), BAREPERF, F.cap, F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_int_equal(rename(moved, F.obj), 0);
	while ((p = strstr(p, "no object of program hot"))) {
		said++;
		p++;
	}
	assert_int_equal(said, 1);
	assert_non_null(strstr(out, "cap.hot.o"));
	assert_non_null(strstr(out, "[hot]+0x"));
	assert_null(strstr(out, "hot_inner"));
}

/*
 * convert --to perf.data, read by the installed perf: report names the
 * functions with the image as their shared object, annotate shows their
 * source; the image is found in the build-id cache (HOME's) when it is not
 * beside perf.data. Skipped without perf.
 */
static void perf_reads_them(void **state)
{
	static char out[65536];
	char cmd[32768], want[128], moved[4200], home[4200];

	(void)state;
	snprintf(home, sizeof(home), "%s", tmpdir_path("home"));
	if (run("command -v perf >/dev/null 2>&1"))
		skip();
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && HOME=%s %s convert -i %s -k %s --to perf.data "
		 "-o %s 2>&1", home, home, BAREPERF, F.cap, F.self, tmpdir_path("perf.data"));
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_null(strstr(out, "perf will not name"));
	snprintf(moved, sizeof(moved), "%s", tmpdir_path("perf.data.hot.elf"));
	assert_int_equal(access(moved, R_OK), 0);

	snprintf(cmd, sizeof(cmd), "HOME=%s perf report -i %s --stdio --no-children 2>&1", home,
		 tmpdir_path("perf.data"));
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "perf.data.hot.elf  [.] hot_inner"));
	assert_non_null(strstr(out, "[.] hot_outer"));
	assert_non_null(strstr(out, "[.] main"));

	snprintf(cmd, sizeof(cmd), "HOME=%s perf report -i %s --stdio --no-children --sort srcline "
		 "2>&1", home, tmpdir_path("perf.data"));
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "hot_loops.c:%d", oracle_line(".text", ip_inner() - TEXT_AT));
	assert_non_null(strstr(out, want));

	/* from the build-id cache alone */
	assert_int_equal(rename(moved, tmpdir_path("away.elf")), 0);
	snprintf(cmd, sizeof(cmd), "HOME=%s perf annotate -i %s --stdio hot_inner 2>&1", home,
		 tmpdir_path("perf.data"));
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_int_equal(rename(tmpdir_path("away.elf"), moved), 0);
	assert_non_null(strstr(out, "<hot_inner>:"));
	assert_non_null(strstr(out, "hot_sink += i * 3;"));
}

/*
 * convert --to pprof: the program's range is a mapping of its own, named
 * by its object and with the object's build-id, and the locations in it
 * (its functions, by name) are that mapping's; kernel.elf's segments keep
 * theirs. Read back by a wire-format reader of the test's own.
 */
static const char pprof_maps[] =
	"import gzip, sys\n"
	"def varint(b, i):\n"
	"    v = s = 0\n"
	"    while True:\n"
	"        c = b[i]; i += 1; v |= (c & 127) << s; s += 7\n"
	"        if c < 128: return v, i\n"
	"def fields(b):\n"
	"    i, out = 0, []\n"
	"    while i < len(b):\n"
	"        k, i = varint(b, i)\n"
	"        if k & 7 == 0: v, i = varint(b, i)\n"
	"        else: n, i = varint(b, i); v = b[i:i + n]; i += n\n"
	"        out.append((k >> 3, v))\n"
	"    return out\n"
	"def one(b, f):\n"
	"    v = [x for k, x in fields(b) if k == f]\n"
	"    return v[0] if v else 0\n"
	"p = fields(gzip.open(sys.argv[1]).read())\n"
	"st = [v.decode() for f, v in p if f == 6]\n"
	"maps = {one(v, 1): (one(v, 2), one(v, 3), st[one(v, 5)], st[one(v, 6)])\n"
	"        for f, v in p if f == 3}\n"
	"rng = (int(sys.argv[2], 0), int(sys.argv[3], 0))\n"
	"prog = [k for k, m in maps.items() if m[:2] == rng]\n"
	"assert len(prog) == 1, maps\n"
	"lo, hi, file, bid = maps[prog[0]]\n"
	"assert file.endswith(\"/cap.hot.o\"), file\n"
	"assert bid == sys.argv[4], (bid, sys.argv[4])\n"
	"assert any(m[2] != file for m in maps.values()), maps\n"
	"fn = {one(v, 1): st[one(v, 2)] for f, v in p if f == 5}\n"
	"loc = [(fn[one(one(v, 4), 1)], one(v, 2)) for f, v in p if f == 4]\n"
	"mine = [m for name, m in loc if name in (\"hot_inner\", \"hot_outer\", \"main\")]\n"
	"assert len(mine) == 3 and set(mine) == {prog[0]}, loc\n";

static void pprof_maps_them(void **state)
{
	static char out[65536];
	char cmd[32768], hex[2 * sizeof(F.id) + 1];

	(void)state;
	for (size_t k = 0; k < F.idlen; k++)
		snprintf(hex + 2 * k, 3, "%02x", F.id[k]);
	snprintf(cmd, sizeof(cmd), "%s convert -i %s -k %s --to pprof -o %s 2>&1", BAREPERF,
		 F.cap, F.self, tmpdir_path("cap.pb.gz"));
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "python3 -c '%s' %s %#llx %#llx %s 2>&1 && echo mappings-ok",
		 pprof_maps, tmpdir_path("cap.pb.gz"), (unsigned long long)TEXT_AT,
		 (unsigned long long)PROG_END, hex);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	if (!strstr(out, "mappings-ok"))
		fail_msg("not the mappings expected: %s", out);
}

/* A run that placed another program over this one's range: said, and the
 * later program names the addresses. */
static void overlapping_programs(void **state)
{
	static char out[65536];
	struct capgen *g = calloc(1, sizeof(*g));
	char cap[4200], cmd[16384], err[256];

	(void)state;
	snprintf(cap, sizeof(cap), "%s", tmpdir_path("over.bpc"));
	assert_non_null(g);
	assert_int_equal(capgen_open(g, cap, CAPGEN_ST, NULL, err, sizeof(err)), 0);
	capgen_meta(g, 1, 1000000000ull, 0, F.kid, F.kidlen);
	capgen_cpu(g, 0, 0);
	capgen_event(g, 1, "cpu-clock", 0, 100000);
	program_record(g, "hot", F.id, F.idlen);
	capgen_app(g, 0, true, 1, "hot", 10, 0);
	capgen_app(g, 0, false, 1, "hot", 11, 0);
	program_record(g, "cold", F.id, F.idlen);
	capgen_app(g, 0, true, 2, "cold", 12, 0);
	capgen_sample(g, 0, 1, ip_inner(), 13, 100000, 2, 0, NULL);
	capgen_app(g, 0, false, 2, "cold", 14, 0);
	assert_int_equal(capgen_close(g, 0, err, sizeof(err)), 0);
	free(g);
	snprintf(cmd, sizeof(cmd), "HOME=%s %s script -i %s -k %s -F ip,sym,dso 2>&1",
		 tmpdir_path("no-home"), BAREPERF, cap, F.self);
	assert_int_equal(capture_output(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "program cold was placed over hot"));
	assert_non_null(strstr(out, "[cold]+0x"));
}

/* An object whose build-id is not the record's is not used. */
static void wrong_build_id(void **state)
{
	uint8_t other[20];
	struct session s;
	struct symtab *t;
	char err[1024], used[4096], buf[4096];

	(void)state;
	memcpy(other, F.id, sizeof(other));
	other[0] ^= 0xff;
	assert_int_equal(write_capture(other, F.idlen), 0);
	assert_int_equal(session_load(&s, F.cap, err, sizeof(err)), 0);
	assert_int_equal(session_program_object(&s, &s.programs[0], buf, sizeof(buf), err,
						sizeof(err)), -1);
	assert_non_null(strstr(err, "has build-id"));
	assert_int_equal(session_symtab(&s, F.self, false, &t, used, sizeof(used), err,
					sizeof(err)), 0);
	assert_string_equal(symtab_lookup(t, ip_inner()).name, "[hot]");
	symtab_free(t);
	session_free(&s);
	assert_int_equal(write_capture(F.id, F.idlen), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(session_keeps_programs),
		cmocka_unit_test(damaged_program_records),
		cmocka_unit_test(symbols_and_lines),
		cmocka_unit_test(report_names_them),
		cmocka_unit_test(script_names_them),
		cmocka_unit_test(missing_object),
		cmocka_unit_test(perf_reads_them),
		cmocka_unit_test(pprof_maps_them),
		cmocka_unit_test(overlapping_programs),
		cmocka_unit_test(wrong_build_id),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

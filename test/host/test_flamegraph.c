/*
 * test_flamegraph.c — the stack tree, folded stacks, the SVG flame graph
 * (tools/util/flamegraph.c), the Chrome JSON (tools/util/chrome.c), speedscope's
 * format (tools/util/speedscope.c) and the pprof profile (tools/util/pprof.c), on
 * sessions built in memory. Well-formedness is checked by python3's own parsers
 * (xml.etree, json), which know nothing of our writers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/commands.h"
#include "tools/util/chrome.h"
#include "tools/util/escape.h"
#include "tools/util/evlist.h"
#include "tools/util/flamegraph.h"
#include "tools/util/pprof.h"
#include "tools/util/speedscope.h"
#include "tools/util/stack.h"
#include "test/host/convert_fakes.h"
#include "test/host/tmpdir.h"

#define F_KMAIN	 0xffffffff80100000ull
#define F_MAIN	 0xffffffff80100100ull
#define F_MATMUL 0xffffffff80100200ull
#define F_SIEVE	 0xffffffff80100300ull
#define F_NASTY	 0xffffffff80100400ull
#define F_DUP1	 0xffffffff80100500ull
#define F_DUP2	 0xffffffff80100600ull
#define F_END	 0xffffffff80100700ull

static const struct fake_sym syms[] = {
	{ "kmain", F_KMAIN, 0x100 },
	{ "loopnest_main", F_MAIN, 0x100 },
	{ "matmul", F_MATMUL, 0x100 },
	{ "sieve", F_SIEVE, 0x100 },
	{ "op<a&b>\"'\x01;x\xff", F_NASTY, 0x100 },	/* XML/JSON/folded specials, bad UTF-8 */
	{ "init", F_DUP1, 0x100 },			/* two static functions, one name */
	{ "init", F_DUP2, 0x100 },
};
static const struct fake_seg segs[] = { { F_KMAIN, 0x1000, 0x1000 } };

static struct symtab *symtab;

static int setup(void **state)
{
	(void)state;
	symtab = fake_symtab(syms, sizeof(syms) / sizeof(syms[0]), segs, 1);
	return tmpdir_make("test_flamegraph");
}

static int teardown(void **state)
{
	(void)state;
	symtab_free(symtab);
	return tmpdir_remove();
}

/* Run a python3 check on a file; returns its exit status (0 = ok). */
static int py_check(const char *code, const char *path)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "python3 -c '%s' '%s'", code, path);
	return system(cmd);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, n + 1);
	assert_int_equal(fread(buf, 1, n, f), (size_t)n);
	fclose(f);
	return buf;
}

/*
 * kmain -> loopnest_main -> matmul   x6 (callchain return addresses sit
 *                                        at the *start* of the next
 *                                        function: looked up at - 1)
 * kmain -> loopnest_main -> sieve    x3
 * kmain -> loopnest_main             x1 (self)
 */
static void chain_session(struct session *s)
{
	fs_init(s);
	fs_event(s, 0, "cycles", 0x3c, 1000);
	fs_app(s, 1, 0, "loopnest", 10, 2000);
	for (int i = 0; i < 10; i++) {
		uint64_t leaf = i < 6 ? F_MATMUL + 8 * i : i < 9 ? F_SIEVE + 4 : F_MAIN + 0x30;
		/* loopnest_main's call is its last instruction: the return
		 * address is F_MATMUL, the first byte of the next function */
		uint64_t ips[3] = { leaf, F_MATMUL, F_KMAIN + 0x50 };
		if (i == 9)
			ips[1] = F_KMAIN + 0x50;
		fs_sample(s, 100 + 10 * i, 0, 1, 0, 1000, 0, ips, i == 9 ? 2 : 3);
	}
}

static uint32_t find_child(const struct stack_tree *tr, uint32_t parent, const char *name)
{
	for (uint32_t c = tr->nodes[parent].first_child; c; c = tr->nodes[c].next_sibling)
		if (!strcmp(tr->nodes[c].name, name))
			return c;
	fail_msg("no frame %s under %s", name, tr->nodes[parent].name);
	return 0;
}

static void test_tree(void **state)
{
	struct session s;
	struct stack_tree tr;
	char err[128];
	uint32_t k, m, mm, sv;

	(void)state;
	chain_session(&s);
	assert_int_equal(stack_tree_build(&tr, &s, symtab, false, 0, err, sizeof(err)), 0);
	assert_int_equal(tr.nodes[0].total, 10);
	k = find_child(&tr, 0, "kmain");
	m = find_child(&tr, k, "loopnest_main");
	mm = find_child(&tr, m, "matmul");
	sv = find_child(&tr, m, "sieve");
	assert_int_equal(tr.nodes[k].total, 10);
	assert_int_equal(tr.nodes[k].self, 0);
	assert_int_equal(tr.nodes[m].total, 10);
	assert_int_equal(tr.nodes[m].self, 1);
	assert_int_equal(tr.nodes[mm].total, 6);
	assert_int_equal(tr.nodes[mm].self, 6);
	assert_int_equal(tr.nodes[sv].total, 3);
	assert_int_equal(tr.nodes[mm].depth, 3);
	assert_int_equal(tr.max_depth, 3);
	assert_int_equal(tr.n, 5);
	stack_tree_free(&tr);

	/* another event: nothing */
	assert_int_equal(stack_tree_build(&tr, &s, symtab, false, 1, err, sizeof(err)), 0);
	assert_int_equal(tr.nodes[0].total, 0);
	assert_int_equal(tr.n, 1);
	stack_tree_free(&tr);
	fs_free(&s);
}

static void test_folded(void **state)
{
	struct session s;
	struct stack_tree tr;
	char err[128], *text;
	FILE *f;

	(void)state;
	chain_session(&s);
	/* no callchain: the IP alone; same-named functions merge */
	fs_sample(&s, 500, 0, 1, 0, 1000, F_DUP1 + 1, NULL, 0);
	fs_sample(&s, 510, 0, 1, 0, 1000, F_DUP2 + 1, NULL, 0);
	fs_sample(&s, 520, 0, 1, 0, 1000, F_END + 0x10000, NULL, 0);
	fs_sample(&s, 530, 0, 1, 0, 1000, F_NASTY, NULL, 0);
	assert_int_equal(stack_tree_build(&tr, &s, symtab, true, 0, err, sizeof(err)), 0);
	f = fopen(tmpdir_path("a.folded"), "w");
	assert_int_equal(stack_tree_write_folded(&tr, f), 0);
	fclose(f);
	text = slurp(tmpdir_path("a.folded"));
	/* root first, children in byte order, ';' inside a name replaced */
	assert_string_equal(text,
			    "[unknown] 1\n"
			    "init 2\n"
			    "kmain;loopnest_main 1\n"
			    "kmain;loopnest_main;matmul 6\n"
			    "kmain;loopnest_main;sieve 3\n"
			    "op<a&b>\"'\x01_x\xff 1\n");
	free(text);
	stack_tree_free(&tr);
	fs_free(&s);
}

/* A chain through the kernel's interrupt entry: the entry after
 * isr_frame_return is the RIP the interrupt hit, here matmul's first
 * byte, looked up as it is (kernel/isr.asm). */
static void test_folded_interrupted(void **state)
{
	const uint64_t isr = F_KMAIN + 0x80;
	uint64_t ips[4] = { F_SIEVE + 4, isr + 5, F_MATMUL, F_KMAIN + 0x50 };
	struct session s;
	struct stack_tree tr;
	char err[256];
	char *text;
	FILE *f;

	(void)state;
	fs_init(&s);
	fs_event(&s, 0, "cycles", 0x3c, 1000);
	fs_sample(&s, 100, 0, 1, 0, 1000, 0, ips, 4);
	ips[1] = isr;
	fs_sample(&s, 110, 0, 1, 0, 1000, 0, ips, 4);
	fake_symtab_label(symtab, "isr_frame_return", isr);
	assert_int_equal(stack_tree_build(&tr, &s, symtab, true, 0, err, sizeof(err)), 0);
	f = fopen(tmpdir_path("irq.folded"), "w");
	assert_int_equal(stack_tree_write_folded(&tr, f), 0);
	fclose(f);
	text = slurp(tmpdir_path("irq.folded"));
	assert_string_equal(text, "kmain;loopnest_main;kmain;sieve 1\n"
				  "kmain;matmul;kmain;sieve 1\n");
	free(text);
	stack_tree_free(&tr);
	fs_free(&s);
}

static void test_pick_event(void **state)
{
	struct session s;
	uint64_t id;
	const char *name;
	bool multiple;
	char err[256];

	(void)state;
	fs_init(&s);
	fs_event(&s, 0, "cycles", 0x3c, 1000);		/* no samples */
	fs_event(&s, 5, "instructions", 0xc0, 1000);
	fs_event(&s, 6, "branch-misses", 0xc5, 1000);
	assert_int_equal(convert_pick_event(&s, NULL, &id, &name, &multiple, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no samples"));
	fs_sample(&s, 1, 0, 1, 5, 1000, F_MAIN, NULL, 0);
	assert_int_equal(convert_pick_event(&s, NULL, &id, &name, &multiple, err, sizeof(err)), 0);
	assert_int_equal(id, 5);
	assert_string_equal(name, "instructions");
	assert_false(multiple);
	fs_sample(&s, 2, 0, 1, 6, 1000, F_MAIN, NULL, 0);
	assert_int_equal(convert_pick_event(&s, NULL, &id, &name, &multiple, err, sizeof(err)), 0);
	assert_true(multiple);
	assert_int_equal(convert_pick_event(&s, "branch-misses", &id, &name, &multiple, err,
					    sizeof(err)), 0);
	assert_int_equal(id, 6);
	assert_int_equal(convert_pick_event(&s, "cache-misses", &id, &name, &multiple, err,
					    sizeof(err)), -1);
	assert_string_equal(err, "no event named 'cache-misses'; the capture has: cycles "
			    "instructions branch-misses");
	fs_free(&s);
}

static const char svg_check[] =
	"import sys, xml.etree.ElementTree as ET\n"
	"ns = \"{http://www.w3.org/2000/svg}\"\n"
	"root = ET.parse(sys.argv[1]).getroot()\n"
	"assert root.tag == ns + \"svg\", root.tag\n"
	"titles = [t.text for t in root.iter(ns + \"title\")]\n"
	"assert \"matmul (6 samples, 46.15%)\" in titles, titles\n"
	"assert \"all (13 samples, 100.00%)\" in titles, titles\n"
	"assert \"kmain (10 samples, 76.92%)\" in titles, titles\n"
	"assert any(t.startswith(\"op<a&b>\\\"\\x27?;x?\") for t in titles), titles\n"
	"texts = [t.text for t in root.iter(ns + \"text\")]\n"
	"assert \"matmul\" in texts, texts\n"
	"assert any(t and t.startswith(\"Flame <&> graph\") for t in texts), texts\n"
	"s = root.find(ns + \"script\")\n"
	"assert s is not None and \"function search\" in s.text and \"function zoom\" in s.text\n"
	"gs = [g for g in root.iter(ns + \"g\") if g.get(\"class\") == \"f\"]\n"
	"assert len(gs) == 7, len(gs)\n"
	"for g in gs:\n"
	"    r = g.find(ns + \"rect\")\n"
	"    assert float(r.get(\"width\")) > 0 and float(r.get(\"x\")) >= 10\n"
	"    assert float(r.get(\"x\")) + float(r.get(\"width\")) <= 800 - 10 + 0.2\n";

static void test_svg(void **state)
{
	struct session s;
	struct stack_tree tr;
	struct flamegraph_opts o = { .title = "Flame <&> graph", .subtitle = "cycles, 13 samples",
				     .width = 800 };
	char err[128];
	FILE *f;

	(void)state;
	chain_session(&s);
	fs_sample(&s, 500, 0, 1, 0, 1000, F_DUP1 + 1, NULL, 0);
	fs_sample(&s, 510, 0, 1, 0, 1000, F_DUP2 + 1, NULL, 0);
	fs_sample(&s, 530, 0, 1, 0, 1000, F_NASTY, NULL, 0);
	assert_int_equal(stack_tree_build(&tr, &s, symtab, true, 0, err, sizeof(err)), 0);
	f = fopen(tmpdir_path("a.svg"), "w");
	assert_int_equal(flamegraph_write_svg(&tr, &o, f), 0);
	fclose(f);
	if (py_check(svg_check, tmpdir_path("a.svg")))
		fail_msg("%s does not parse as the SVG expected", tmpdir_path("a.svg"));
	stack_tree_free(&tr);
	fs_free(&s);
}

/* Frames too narrow to see are left out; the graph stays valid. */
static void test_svg_elides_and_scales(void **state)
{
	struct session s;
	struct stack_tree tr;
	char err[128];
	FILE *f;

	(void)state;
	fs_init(&s);
	fs_event(&s, 0, "cycles", 0x3c, 1000);
	for (int i = 0; i < 200000; i++)
		fs_sample(&s, i, 0, 1, 0, 1000, F_MATMUL, NULL, 0);
	fs_sample(&s, 300000, 0, 1, 0, 1000, F_SIEVE, NULL, 0);
	assert_int_equal(stack_tree_build(&tr, &s, symtab, true, 0, err, sizeof(err)), 0);
	f = fopen(tmpdir_path("b.svg"), "w");
	assert_int_equal(flamegraph_write_svg(&tr, NULL, f), 0);
	fclose(f);
	{
		char *t = slurp(tmpdir_path("b.svg"));
		assert_non_null(strstr(t, "<title>matmul (200000 samples, 100.00%)</title>"));
		assert_null(strstr(t, "<title>sieve"));
		free(t);
	}
	assert_int_equal(py_check("import sys, xml.etree.ElementTree as ET; "
				  "ET.parse(sys.argv[1])", tmpdir_path("b.svg")), 0);
	stack_tree_free(&tr);
	fs_free(&s);

	/* no samples at all */
	fs_init(&s);
	assert_int_equal(stack_tree_build(&tr, &s, symtab, true, 0, err, sizeof(err)), 0);
	f = fopen(tmpdir_path("c.svg"), "w");
	assert_int_equal(flamegraph_write_svg(&tr, NULL, f), 0);
	fclose(f);
	assert_int_equal(py_check("import sys, xml.etree.ElementTree as ET; "
				  "ET.parse(sys.argv[1])", tmpdir_path("c.svg")), 0);
	stack_tree_free(&tr);
	fs_free(&s);
}

/* Many distinct frames: the hash tables grow and every frame is found again. */
static void test_tree_many_frames(void **state)
{
	enum { N = 20000 };
	struct fake_sym *many = calloc(N, sizeof(*many));
	char (*names)[16] = calloc(N, 16);
	struct symtab *t;
	struct session s;
	struct stack_tree tr;
	char err[128];

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(names[i], 16, "f%05d", i);
		many[i] = (struct fake_sym){ names[i], F_KMAIN + 16ull * i, 16 };
	}
	t = fake_symtab(many, N, segs, 1);
	fs_init(&s);
	for (int rep = 0; rep < 2; rep++)
		for (int i = 0; i < N; i++) {
			uint64_t ips[2] = { F_KMAIN + 16ull * i, F_KMAIN + 16ull * ((i + 1) % N) + 1 };
			fs_sample(&s, rep * N + i, 0, 1, 0, 1, 0, ips, 2);
		}
	assert_int_equal(stack_tree_build(&tr, &s, t, true, 0, err, sizeof(err)), 0);
	assert_int_equal(tr.n, 1 + N + N);		/* N callers, each with one callee */
	for (uint32_t c = tr.nodes[0].first_child; c; c = tr.nodes[c].next_sibling) {
		assert_int_equal(tr.nodes[c].total, 2);
		assert_int_equal(tr.nodes[tr.nodes[c].first_child].self, 2);
	}
	stack_tree_free(&tr);
	fs_free(&s);
	symtab_free(t);
	free(names);
	free(many);
}

static const char chrome_check[] =
	"import sys, json\n"
	"d = json.load(open(sys.argv[1], encoding=\"utf-8\"))\n"
	"ev = d[\"traceEvents\"]\n"
	"x = [e for e in ev if e[\"ph\"] == \"X\"]\n"
	"assert len(x) == 2, x\n"
	"assert x[0][\"name\"] == \"loopnest\" and x[0][\"tid\"] == 0\n"
	"assert x[0][\"ts\"] == 0.01 and x[0][\"dur\"] == 1.99, x[0]\n"
	"assert x[1][\"tid\"] == 1 and x[1][\"args\"][\"stopped\"] is False\n"
	"assert not [e for e in ev if e[\"ph\"] == \"i\"]\n"
	"f, i = d[\"stackFrames\"], d[\"samples\"]\n"
	"def stack(sf):\n"
	"    out = []\n"
	"    while sf:\n"
	"        out.append(f[sf][\"name\"]); sf = f[sf].get(\"parent\")\n"
	"    return out\n"
	"assert len(i) == 12, len(i)\n"
	"assert all(e[\"pid\"] == 1 and e[\"tid\"] == e[\"cpu\"] for e in i)\n"
	"assert sum(1 for e in i if f[e[\"sf\"]][\"name\"] == \"matmul\") == 6\n"
	"assert stack(i[0][\"sf\"]) == [\"matmul\", \"loopnest_main\", \"kmain\"], i[0]\n"
	"assert i[0][\"name\"] == \"cycles\" and i[0][\"ts\"] == 0.1 and i[0][\"weight\"] == 1000\n"
	"assert i[10][\"tid\"] == 1 and i[10][\"name\"] == \"event 9\"\n"
	"assert f[i[11][\"sf\"]][\"name\"] == \"op<a&b>\\\"\\x27\\x01;x\\ufffd\", i[11]\n"
	"assert len(set(e[\"sf\"] for e in i[:6])) <= 6 and f[i[0][\"sf\"]][\"category\"] == \"kernel\"\n"
	"assert len(f) == 6, f  # kmain, loopnest_main, matmul, sieve; sieve and the nasty name as roots\n"
	"m = [e for e in ev if e[\"ph\"] == \"M\" and e[\"name\"] == \"thread_name\"]\n"
	"assert sorted(e[\"args\"][\"name\"] for e in m if e[\"pid\"] == 1) == [\"CPU 0\", \"CPU 1\"]\n"
	"assert sorted(e[\"args\"][\"name\"] for e in m if e[\"pid\"] == 3) == "
	"[\"CPU 0 samples\", \"CPU 1 samples\"]\n"
	"# the flame chart: B/E nested per CPU, in time order; the first sample\n"
	"# stack opens root first, and matmul spans the six samples in it\n"
	"fl = [e for e in ev if e[\"pid\"] == 3 and e[\"ph\"] in \"BE\"]\n"
	"for cpu in (0, 1):\n"
	"    st, last, spans = [], 0, {}\n"
	"    for e in [e for e in fl if e[\"tid\"] == cpu]:\n"
	"        assert e[\"ts\"] >= last, e\n"
	"        last = e[\"ts\"]\n"
	"        if e[\"ph\"] == \"B\":\n"
	"            st.append(e)\n"
	"        else:\n"
	"            b = st.pop()\n"
	"            spans.setdefault(b[\"name\"], []).append(round(e[\"ts\"] - b[\"ts\"], 3))\n"
	"    assert not st, st\n"
	"    if cpu == 0:\n"
	"        assert [e[\"name\"] for e in fl[:3]] == [\"kmain\", \"loopnest_main\", \"matmul\"], fl[:3]\n"
	"        assert spans[\"matmul\"] == [0.06], spans\n"
	"        assert spans[\"kmain\"] == [0.1], spans\n"
	"assert d[\"otherData\"][\"samples\"] == 12\n";

static void test_chrome(void **state)
{
	struct session s;
	char err[128];
	FILE *f;

	(void)state;
	chain_session(&s);
	fs_app(&s, 1, 1, "loopnest", 10, 0);		/* never stopped */
	fs_sample(&s, 600, 1, 1, 9, 1000, F_SIEVE, NULL, 0);
	fs_sample(&s, 700, 1, 1, 0, 1000, F_NASTY, NULL, 0);
	f = fopen(tmpdir_path("a.json"), "w");
	assert_int_equal(convert_chrome(&s, symtab, f, err, sizeof(err)), 0);
	fclose(f);
	assert_int_equal(py_check("import sys, json; json.load(open(sys.argv[1]))",
				  tmpdir_path("a.json")), 0);
	if (py_check(chrome_check, tmpdir_path("a.json")))
		fail_msg("%s: not the trace expected", tmpdir_path("a.json"));
	{
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s > /dev/null", tmpdir_path("a.json"));
		assert_int_equal(system(cmd), 0);
	}
	fs_free(&s);
}

/* flamegraph.pl's --reverse: each stack from where it ended out to its callers. */
static void test_reverse(void **state)
{
	struct session s;
	struct stack_tree tr, rev;
	char err[128];
	uint32_t mm, m;

	(void)state;
	chain_session(&s);
	assert_int_equal(stack_tree_build(&tr, &s, symtab, false, 0, err, sizeof(err)), 0);
	assert_int_equal(stack_tree_reverse(&tr, &rev, err, sizeof(err)), 0);
	assert_int_equal(rev.nodes[0].total, 10);
	mm = find_child(&rev, 0, "matmul");
	assert_int_equal(rev.nodes[mm].total, 6);
	assert_int_equal(rev.nodes[mm].self, 0);
	m = find_child(&rev, mm, "loopnest_main");
	assert_int_equal(rev.nodes[find_child(&rev, m, "kmain")].self, 6);
	assert_int_equal(rev.nodes[find_child(&rev, 0, "sieve")].total, 3);
	m = find_child(&rev, 0, "loopnest_main");
	assert_int_equal(rev.nodes[m].total, 1);
	assert_int_equal(rev.nodes[find_child(&rev, m, "kmain")].self, 1);
	assert_int_equal(rev.max_depth, 3);
	stack_tree_free(&rev);
	stack_tree_free(&tr);
	fs_free(&s);
}

/* Folded stacks read back: the same tree, written out the same; lines
 * without a count after the last blank are ignored and counted. */
static void test_read_folded(void **state)
{
	static const char text[] =
		"kmain;loopnest_main;matmul 6\n"
		"kmain;loopnest_main;sieve\t3\r\n"
		"kmain;loopnest_main 1\n"
		"no count here\n"
		"a;b 1e3\n"
		"\n"
		"kmain;loopnest_main;matmul 2  \n"
		"op<a&b> x 4\n";
	struct stack_tree tr;
	size_t ignored;
	char err[128], *out;
	FILE *f = fopen(tmpdir_path("in.folded"), "w");

	(void)state;
	fputs(text, f);
	fclose(f);
	f = fopen(tmpdir_path("in.folded"), "r");
	assert_int_equal(stack_tree_read_folded(&tr, f, &ignored, err, sizeof(err)), 0);
	fclose(f);
	assert_int_equal(ignored, 3);
	assert_int_equal(tr.nodes[0].total, 16);
	assert_int_equal(tr.nodes[find_child(&tr, find_child(&tr, find_child(&tr, 0, "kmain"),
			"loopnest_main"), "matmul")].self, 8);
	f = fopen(tmpdir_path("out.folded"), "w");
	assert_int_equal(stack_tree_write_folded(&tr, f), 0);
	fclose(f);
	out = slurp(tmpdir_path("out.folded"));
	assert_string_equal(out,
			    "kmain;loopnest_main 1\n"
			    "kmain;loopnest_main;matmul 8\n"
			    "kmain;loopnest_main;sieve 3\n"
			    "op<a&b> x 4\n");
	free(out);
	stack_tree_free(&tr);
}

/* Fractional counts, as flamegraph.pl takes them ("0.25", "3."): kept to
 * six decimals, the seventh rounding; the tree, folded output and the
 * SVG's titles say them as given; ".5" and "1e3" are no counts. */
static void test_read_folded_fractions(void **state)
{
	static const char text[] =
		"main;a 2\n"
		"main;b 0.25\n"
		"main;a 1.5\n"
		"main;c 3.\n"
		"main;d 0.0000004\n"
		"main;e 0.00000051\n"
		"main;f .5\n"
		"main;g 1e3\n";
	struct stack_tree tr;
	size_t ignored;
	char err[128], *out, num[32];
	FILE *f = fopen(tmpdir_path("frac.folded"), "w");

	(void)state;
	fputs(text, f);
	fclose(f);
	f = fopen(tmpdir_path("frac.folded"), "r");
	assert_int_equal(stack_tree_read_folded(&tr, f, &ignored, err, sizeof(err)), 0);
	fclose(f);
	assert_int_equal(ignored, 2);
	assert_int_equal(tr.unit, STACK_UNIT_FRACTION);
	assert_string_equal(stack_count_text(&tr, tr.nodes[0].total, num, sizeof(num)),
			    "6.750001");
	assert_string_equal(stack_count_text(&tr, tr.nodes[find_child(&tr, find_child(&tr, 0,
			    "main"), "a")].self, num, sizeof(num)), "3.5");
	f = fopen(tmpdir_path("frac_out.folded"), "w");
	assert_int_equal(stack_tree_write_folded(&tr, f), 0);
	fclose(f);
	out = slurp(tmpdir_path("frac_out.folded"));
	assert_string_equal(out,
			    "main;a 3.5\n"
			    "main;b 0.25\n"
			    "main;c 3\n"
			    "main;e 0.000001\n");
	free(out);
	stack_tree_free(&tr);

	char *fg[] = { "flamegraph", "--folded", "-i", NULL, "-o", NULL, NULL };
	fg[3] = tmpdir_path("frac.folded");
	fg[5] = tmpdir_path("frac.svg");
	assert_int_equal(cmd_flamegraph(6, fg), 0);
	out = slurp(tmpdir_path("frac.svg"));
	assert_non_null(strstr(out, "<title>a (3.5 samples, 51.85%)</title>"));
	assert_non_null(strstr(out, "<title>b (0.25 samples, 3.70%)</title>"));
	assert_non_null(strstr(out, ">6.750001 samples, "));
	free(out);
}

/* --inverted, --countname, --minwidth as a percentage, --colors. */
static const char svg_opts_check[] =
	"import sys, xml.etree.ElementTree as ET\n"
	"ns = \"{http://www.w3.org/2000/svg}\"\n"
	"root = ET.parse(sys.argv[1]).getroot()\n"
	"gs = [g for g in root.iter(ns + \"g\") if g.get(\"class\") == \"f\"]\n"
	"f = {g.find(ns + \"title\").text: g.find(ns + \"rect\") for g in gs}\n"
	"assert sorted(f) == [\"all (10 ticks, 100.00%)\", \"kmain (10 ticks, 100.00%)\",\n"
	"                     \"loopnest_main (10 ticks, 100.00%)\", \"matmul (6 ticks, 60.00%)\"], f\n"
	"y = [float(f[k].get(\"y\")) for k in sorted(f, key=lambda k: k.split()[0] != \"all\")]\n"
	"assert y[0] == 80 and sorted(y[1:]) == [96, 112, 128], y\n"
	"for k, r in f.items():\n"
	"    if k.startswith(\"all\"): continue\n"
	"    rgb = [int(v) for v in r.get(\"fill\")[4:-1].split(\",\")]\n"
	"    assert rgb[0] < 100 and rgb[2] > 150, (k, rgb)\n"
	"assert not list(root.find(ns + \"g[@id=\\\"legend\\\"]\")), \"a legend for one palette\"\n"
	"assert \"INVERTED = 1\" in root.find(ns + \"script\").text\n";

static void test_svg_options(void **state)
{
	struct session s;
	struct stack_tree tr;
	struct flamegraph_opts o = { .width = 1000, .minwidth = 35, .minwidth_pct = true,
				     .inverted = true, .countname = "ticks", .colors = "blue" };
	char err[128];
	FILE *f;

	(void)state;
	chain_session(&s);
	assert_int_equal(stack_tree_build(&tr, &s, symtab, false, 0, err, sizeof(err)), 0);
	f = fopen(tmpdir_path("opts.svg"), "w");
	assert_int_equal(flamegraph_write_svg(&tr, &o, f), 0);
	fclose(f);
	if (py_check(svg_opts_check, tmpdir_path("opts.svg")))
		fail_msg("%s: not the icicle graph expected", tmpdir_path("opts.svg"));
	stack_tree_free(&tr);
	fs_free(&s);
	assert_true(flamegraph_palette("hot"));
	assert_false(flamegraph_palette("java"));
	assert_false(flamegraph_palette(NULL));
}

/* The command on folded input, with flamegraph.pl's options; bad values refused. */
static void test_flamegraph_folded_cmd(void **state)
{
	char *fg[] = { "flamegraph", "--folded", "-i", NULL, "-o", NULL, "--reverse", "--inverted",
		       "--colors", "hot", "--countname", "ticks", "--minwidth", "1%", NULL };
	char *bad_colors[] = { "flamegraph", "--folded", "--colors", "java", NULL };
	char *bad_min[] = { "flamegraph", "--folded", "--minwidth", "5px", NULL };
	char *bad_pct[] = { "flamegraph", "--folded", "--minwidth", "101%", NULL };
	FILE *f;
	char *t;

	(void)state;
	fg[3] = tmpdir_path("cmd_in.folded");
	f = fopen(fg[3], "w");
	fputs("kmain;loopnest_main;matmul 6\nkmain;sieve 3\n", f);
	fclose(f);
	fg[5] = tmpdir_path("cmd_folded.svg");
	assert_int_equal(cmd_flamegraph(14, fg), 0);
	t = slurp(tmpdir_path("cmd_folded.svg"));
	assert_non_null(strstr(t, "<title>matmul (6 ticks, 66.67%)</title>"));
	assert_non_null(strstr(t, ">9 ticks, "));
	assert_non_null(strstr(t, "stacks reversed"));
	free(t);
	assert_int_equal(cmd_flamegraph(4, bad_colors), 2);
	assert_int_equal(cmd_flamegraph(4, bad_min), 2);
	assert_int_equal(cmd_flamegraph(4, bad_pct), 2);
}

/* speedscope's format: frames shared, one sampled profile, weights = periods. */
static const char speedscope_check[] =
	"import json, sys\n"
	"d = json.load(open(sys.argv[1]))\n"
	"assert d[\"$schema\"] == \"https://www.speedscope.app/file-format-schema.json\"\n"
	"fr = [f[\"name\"] for f in d[\"shared\"][\"frames\"]]\n"
	"assert len(fr) == len(set(fr)) == 4, fr\n"
	"ps = d[\"profiles\"]\n"
	"assert [p[\"name\"] for p in ps] == [\"cycles on CPU 0\", \"cycles on CPU 1\"], ps\n"
	"p = ps[0]\n"
	"assert p[\"type\"] == \"sampled\" and p[\"unit\"] == \"none\", p\n"
	"assert p[\"startValue\"] == 0 and p[\"endValue\"] == 10000, p\n"
	"assert len(p[\"samples\"]) == len(p[\"weights\"]) == 10\n"
	"self = {}\n"
	"for st, w in zip(p[\"samples\"], p[\"weights\"]):\n"
	"    assert fr[st[0]] == \"kmain\", st\n"
	"    self[fr[st[-1]]] = self.get(fr[st[-1]], 0) + w\n"
	"assert self == {\"matmul\": 6000, \"sieve\": 3000, \"loopnest_main\": 1000}, self\n"
	"assert ps[1][\"samples\"] == [[fr.index(\"sieve\")]] and ps[1][\"weights\"] == [5000]\n";

static void test_speedscope(void **state)
{
	struct session s;
	char err[128];
	FILE *f;

	(void)state;
	chain_session(&s);
	fs_sample(&s, 600, 1, 1, 0, 5000, F_SIEVE, NULL, 0);
	f = fopen(tmpdir_path("a.speedscope.json"), "w");
	assert_int_equal(convert_speedscope(&s, symtab, f, err, sizeof(err)), 0);
	fclose(f);
	if (py_check(speedscope_check, tmpdir_path("a.speedscope.json")))
		fail_msg("%s: not the profile expected", tmpdir_path("a.speedscope.json"));
	fs_free(&s);
}

/*
 * The pprof profile read back by a protocol buffer wire-format reader of
 * its own (varints and length-delimited fields), field numbers as
 * proto/profile.proto gives them.
 */
static const char pprof_check[] =
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
	"        elif k & 7 == 2: n, i = varint(b, i); v = b[i:i + n]; i += n\n"
	"        else: raise ValueError(k)\n"
	"        out.append((k >> 3, v))\n"
	"    return out\n"
	"def one(b, f, d=0):\n"
	"    v = [x for k, x in fields(b) if k == f]\n"
	"    assert len(v) <= 1, (f, v)\n"
	"    return v[0] if v else d\n"
	"def packed(b):\n"
	"    i, out = 0, []\n"
	"    while i < len(b): v, i = varint(b, i); out.append(v)\n"
	"    return out\n"
	"p = fields(gzip.open(sys.argv[1]).read())\n"
	"st = [v.decode() for f, v in p if f == 6]\n"
	"assert st[0] == \"\", st\n"
	"types = [(st[one(v, 1)], st[one(v, 2)]) for f, v in p if f == 1]\n"
	"assert types == [(\"samples\", \"count\"), (\"cycles\", \"count\")], types\n"
	"fn = {one(v, 1): st[one(v, 2)] for f, v in p if f == 5}\n"
	"loc = {one(v, 1): (fn[one(one(v, 4), 1)], one(v, 2), one(v, 3)) for f, v in p if f == 4}\n"
	"flat, cpus = {}, set()\n"
	"for f, v in p:\n"
	"    if f != 2: continue\n"
	"    ids, vals = packed(one(v, 1)), packed(one(v, 2))\n"
	"    assert vals[1] == 1000 * vals[0], vals\n"
	"    assert [loc[i][0] for i in ids[-2:]] == [\"loopnest_main\", \"kmain\"] or len(ids) == 1\n"
	"    flat[loc[ids[0]][0]] = flat.get(loc[ids[0]][0], 0) + vals[0]\n"
	"    label = one(v, 3)\n"
	"    assert st[one(label, 1)] == \"cpu\", label\n"
	"    cpus.add(one(label, 3))\n"
	"assert flat == {\"matmul\": 6, \"sieve\": 3, \"loopnest_main\": 1}, flat\n"
	"assert cpus == {0}, cpus\n"
	"maps = [(one(v, 1), one(v, 2), one(v, 3)) for f, v in p if f == 3]\n"
	"assert maps == [(1, 0xffffffff80100000, 0xffffffff80101000)], maps\n"
	"assert all(m == 1 for n, m, a in loc.values()), loc\n"
	"assert [v for f, v in p if f == 12] == [1000]\n";

static void test_pprof(void **state)
{
	struct session s;
	char err[128];
	FILE *f;

	(void)state;
	chain_session(&s);
	fs_event(&s, 7, "instructions", 0xc0, 1000);
	fs_sample(&s, 600, 0, 1, 7, 1000, F_SIEVE, NULL, 0);	/* another event: left out */
	f = fopen(tmpdir_path("a.pb.gz"), "w");
	assert_int_equal(convert_pprof(&s, symtab, 0, f, err, sizeof(err)), 0);
	fclose(f);
	if (py_check(pprof_check, tmpdir_path("a.pb.gz")))
		fail_msg("%s: not the profile expected", tmpdir_path("a.pb.gz"));
	fs_free(&s);
}

/* Kinds of code, for the colours and the Chrome categories: benchmark
 * bodies (assembly or C) by the labels linker.ld puts around them, the
 * rest by its source file. */
static void test_kinds(void **state)
{
	static const struct { struct fake_sym s; const char *file; } k[] = {
		{ { "bench_chase_2n", 0x1000, 0x100 }, "/src/apps/bench_memlat.c" },
		{ { "bench_chase_n", 0x1100, 0x100 }, "apps/bench_memlat.c" },
		{ { "read_sse", 0x1200, 0x100 }, "apps/bench_membw.c" },	/* a C body */
		{ { "bench_run", 0x1300, 0x100 }, "apps/bench.c" },
		{ { "bench_y_n", 0x1400, 0x100 }, "apps/bench_y.c" },	/* a body's name only */
		{ { "loopnest_main", 0x1500, 0x100 }, "apps/loopnest.c" },
		{ { "hot_leaf", 0x1600, 0x100 }, "test/guest/test_hotspot.c" },
		{ { "kmain", 0x1700, 0x100 }, "kernel/main.c" },
		{ { "isr_common", 0x1800, 0x100 }, NULL },
		{ { "app_run_on", 0x1900, 0x100 }, "/src/apps/run.c" },
		{ { "app_find", 0x1a00, 0x100 }, "apps/app.c" },
		{ { "control_serve", 0x1b00, 0x100 }, "apps/control.c" },
	};
	struct fake_sym syms_k[sizeof(k) / sizeof(k[0])];
	struct symtab *t, *nolabels;

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		syms_k[i] = k[i].s;
	t = fake_symtab(syms_k, sizeof(k) / sizeof(k[0]), NULL, 0);
	nolabels = fake_symtab(syms_k, sizeof(k) / sizeof(k[0]), NULL, 0);
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (k[i].file) {
			fake_symtab_file(t, k[i].s.name, k[i].file);
			fake_symtab_file(nolabels, k[i].s.name, k[i].file);
		}
	fake_symtab_label(t, "__bench_body_start", 0x1000);
	fake_symtab_label(t, "__bench_body_end", 0x1300);
	(void)state;
	assert_int_equal(convert_addr_kind(t, 0x1000), CONVERT_KIND_BENCH);
	assert_int_equal(convert_addr_kind(t, 0x1180), CONVERT_KIND_BENCH);
	assert_int_equal(convert_addr_kind(t, 0x1210), CONVERT_KIND_BENCH);	/* a C body */
	assert_int_equal(convert_addr_kind(t, 0x12ff), CONVERT_KIND_BENCH);
	assert_int_equal(convert_addr_kind(t, 0x1300), CONVERT_KIND_APP);	/* the harness */
	assert_int_equal(convert_addr_kind(t, 0x1410), CONVERT_KIND_APP);
	assert_int_equal(convert_addr_kind(t, 0x1510), CONVERT_KIND_APP);
	assert_int_equal(convert_addr_kind(t, 0x1610), CONVERT_KIND_APP);
	assert_int_equal(convert_addr_kind(t, 0x1710), CONVERT_KIND_KERNEL);
	assert_int_equal(convert_addr_kind(t, 0x1810), CONVERT_KIND_KERNEL);	/* no line info */
	/* apps/'s machinery that runs the apps is the kernel's side of a run */
	assert_int_equal(convert_addr_kind(t, 0x1910), CONVERT_KIND_KERNEL);
	assert_int_equal(convert_addr_kind(t, 0x1a10), CONVERT_KIND_KERNEL);
	assert_int_equal(convert_addr_kind(t, 0x1b10), CONVERT_KIND_KERNEL);
	assert_int_equal(convert_addr_kind(t, 0x9000), CONVERT_KIND_KERNEL);	/* no symbol */
	/* a kernel without the labels has no bodies */
	assert_int_equal(convert_addr_kind(nolabels, 0x1100), CONVERT_KIND_APP);
	assert_int_equal(convert_addr_kind(nolabels, 0x1210), CONVERT_KIND_APP);
	assert_int_equal(convert_addr_kind(NULL, 0x1100), CONVERT_KIND_KERNEL);
	assert_string_equal(convert_kind_name(CONVERT_KIND_BENCH), "benchmark");
	/* a program the kernel loaded is the app's, whatever its source's path */
	fake_symtab_program(t, "hot", 0x9000, 0xa000);
	assert_int_equal(convert_addr_kind(t, 0x9000), CONVERT_KIND_APP);
	assert_int_equal(convert_addr_kind(t, 0xa000), CONVERT_KIND_KERNEL);
	symtab_free(t);
	symtab_free(nolabels);
}

static void test_escapes(void **state)
{
	char *buf;
	size_t len;
	FILE *f;

	(void)state;
	f = open_memstream(&buf, &len);
	xml_escape(f, "a<b>&\"'\t\x02\xc3\xa9\xe2\x82\xac\xc3\x28\xed\xa0\x80z");
	fclose(f);
	assert_string_equal(buf, "a&lt;b&gt;&amp;&quot;&apos; ?\xc3\xa9\xe2\x82\xac?(???z");
	free(buf);
	f = open_memstream(&buf, &len);
	json_escape(f, "a\"b\\c\n\x1f\xc3\xa9\xff");
	fclose(f);
	assert_string_equal(buf, "a\\\"b\\\\c\\u000a\\u001f\xc3\xa9\\ufffd");
	free(buf);
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80"), 4);
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xc0\xaf"), 0);	/* overlong */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xf4\x90\x80\x80"), 0);
}

/* The commands on a fake-loaded session: files written, bad usage refused. */
static void test_commands(void **state)
{
	struct session s;
	char *fg[] = { "flamegraph", "-i", "x.bpc", "-o", tmpdir_path("cmd.svg"), "--kernel",
		       "/proc/self/exe", "--title", "T", NULL };
	char *fg_bad_event[] = { "flamegraph", "-i", "x.bpc", "-o", tmpdir_path("bad.svg"), "--kernel",
				 "/proc/self/exe", "--event", "nope", NULL };
	char *fg_width[] = { "flamegraph", "-i", "x", "--width", "5", NULL };
	char *folded[] = { "convert", "-i", "x.bpc", "--to", "folded", "-o", tmpdir_path("cmd.folded"),
			   "--kernel", "/proc/self/exe", NULL };
	char *chrome[] = { "convert", "-i", "x.bpc", "--to", "chrome", "-o", tmpdir_path("cmd.json"),
			   "--kernel", "/proc/self/exe", NULL };
	char *nokernel[] = { "convert", "-i", "x.bpc", "--to", "folded", "--kernel",
			     "/nonexistent/kernel.elf", NULL };
	char *speedscope[] = { "convert", "-i", "x.bpc", "--to", "speedscope", "-o", NULL,
			       "--kernel", "/proc/self/exe", NULL };
	char *pprof[] = { "convert", "-i", "x.bpc", "--to", "pprof", "-o", NULL,
			  "--kernel", "/proc/self/exe", NULL };
	char *unknown[] = { "convert", "-i", "x.bpc", "--to", "pprof.proto", NULL };

	(void)state;
	fs_init(&s);
	fs_event(&s, 0, "cycles", 0x3c, 1000);
	fs_sample(&s, 1, 0, 1, 0, 1000, (uint64_t)(uintptr_t)&test_commands, NULL, 0);
	fake_loaded_session = &s;
	assert_int_equal(cmd_flamegraph(9, fg), 0);
	assert_int_equal(py_check("import sys, xml.etree.ElementTree as ET; "
				  "ET.parse(sys.argv[1])", tmpdir_path("cmd.svg")), 0);
	assert_int_equal(cmd_flamegraph(9, fg_bad_event), 1);
	assert_int_equal(cmd_flamegraph(5, fg_width), 2);
	assert_int_equal(cmd_convert(9, folded), 0);
	{
		char *t = slurp(tmpdir_path("cmd.folded"));
		/* our fake reads the test binary's own symbols: a PIE, so the
		 * address is not where the file says; any one line will do */
		assert_non_null(strstr(t, " 1\n"));
		free(t);
	}
	assert_int_equal(cmd_convert(9, chrome), 0);
	assert_int_equal(py_check("import sys, json; json.load(open(sys.argv[1]))",
				  tmpdir_path("cmd.json")), 0);
	assert_int_equal(cmd_convert(7, nokernel), 1);
	speedscope[6] = tmpdir_path("cmd.speedscope.json");
	assert_int_equal(cmd_convert(9, speedscope), 0);
	assert_int_equal(py_check("import sys, json; json.load(open(sys.argv[1]))[\"profiles\"][0]",
				  tmpdir_path("cmd.speedscope.json")), 0);
	pprof[6] = tmpdir_path("cmd.pb.gz");
	assert_int_equal(cmd_convert(9, pprof), 0);
	assert_int_equal(py_check("import sys, gzip; assert gzip.open(sys.argv[1]).read()",
				  tmpdir_path("cmd.pb.gz")), 0);
	assert_int_equal(cmd_convert(5, unknown), 2);
	fake_loaded_session = NULL;
	fs_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_folded_interrupted),
		cmocka_unit_test(test_pick_event),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_svg_elides_and_scales),
		cmocka_unit_test(test_tree_many_frames),
		cmocka_unit_test(test_chrome),
		cmocka_unit_test(test_speedscope),
		cmocka_unit_test(test_reverse),
		cmocka_unit_test(test_read_folded),
		cmocka_unit_test(test_read_folded_fractions),
		cmocka_unit_test(test_svg_options),
		cmocka_unit_test(test_flamegraph_folded_cmd),
		cmocka_unit_test(test_pprof),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_commands),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_bench_args.c — `bareperf bench` read and printed as nanoBench:
 * option names by unique prefix (an ambiguous one refused naming every
 * candidate), a --batch line cut into words as a shell would, the
 * "NAME: value" lines with nanoBench's names, and the readings -verbose
 * asks the kernel for (tools/util/bench_args.c, bench_out.c).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tools/util/bench_args.h"
#include "tools/util/bench_out.h"
#include "uapi/perf_ring.h"

/* kernel-nanoBench.sh's options that bench knows, as builtin-bench.c lists them */
static const char *const names[] = {
	"-asm", "-asm_init", "-asm_late_init", "-code", "-code_init", "-config", "-msr_config",
	"-unroll_count", "-loop_count", "-n_measurements", "-warm_up_count",
	"-initial_warm_up_count", "-alignment_offset", "-cpu", "-min", "-median", "-avg",
	"-basic_mode", "-no_normalization", "-verbose", "-e", "-k", "-h", "-v",
};
#define NNAMES ((int)(sizeof(names) / sizeof(names[0])))

static void unique_prefixes_resolve(void **state)
{
	static const struct {
		const char *arg, *name;
	} ok[] = {
		{ "-l", "-loop_count" }, { "-u", "-unroll_count" }, { "-unroll", "-unroll_count" },
		{ "-w", "-warm_up_count" }, { "-i", "-initial_warm_up_count" },
		{ "-al", "-alignment_offset" }, { "-b", "-basic_mode" }, { "-med", "-median" },
		{ "-mi", "-min" }, { "-ms", "-msr_config" }, { "-n_", "-n_measurements" },
		{ "-no", "-no_normalization" }, { "-ve", "-verbose" }, { "-cp", "-cpu" },
		{ "-con", "-config" }, { "-av", "-avg" },
		/* exact names win over longer ones they begin */
		{ "-asm", "-asm" }, { "-code", "-code" }, { "-e", "-e" }, { "-v", "-v" },
	};
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		const char *got = bench_opt_resolve(ok[i].arg, names, NNAMES, why, sizeof(why));
		if (!got || strcmp(got, ok[i].name))
			fail_msg("'%s': got '%s' (%s), want '%s'", ok[i].arg, got ? got : "NULL", why,
				 ok[i].name);
		assert_string_equal(why, "");
	}
}

static void ambiguous_prefixes_name_every_candidate(void **state)
{
	char why[256];

	(void)state;
	assert_null(bench_opt_resolve("-a", names, NNAMES, why, sizeof(why)));
	assert_string_equal(why, "-a is ambiguous: -asm, -asm_init, -asm_late_init, "
			    "-alignment_offset, -avg");
	assert_null(bench_opt_resolve("-m", names, NNAMES, why, sizeof(why)));
	assert_string_equal(why, "-m is ambiguous: -msr_config, -min, -median");
	assert_null(bench_opt_resolve("-asm_", names, NNAMES, why, sizeof(why)));
	assert_string_equal(why, "-asm_ is ambiguous: -asm_init, -asm_late_init");
	assert_null(bench_opt_resolve("-n", names, NNAMES, why, sizeof(why)));
	assert_string_equal(why, "-n is ambiguous: -n_measurements, -no_normalization");
}

static void others_come_back_as_they_are(void **state)
{
	static const char *const same[] = { "-frobnicate", "--batch", "--b", "-", "add", "" };
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		assert_ptr_equal(bench_opt_resolve(same[i], names, NNAMES, why, sizeof(why)), same[i]);
		assert_string_equal(why, "");
	}
}

/* Cut line; the words joined with '|' into out. */
static int words(const char *line, char *out, size_t n)
{
	char why[64], **argv;
	int argc;

	if (bench_split_words("bench", line, &argc, &argv, why, sizeof(why))) {
		snprintf(out, n, "error: %s", why);
		return -1;
	}
	assert_string_equal(argv[0], "bench");
	assert_null(argv[argc]);
	out[0] = 0;
	for (int i = 1; i < argc; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s%s", i > 1 ? "|" : "", argv[i]);
	bench_free_words(argc, argv);
	return 0;
}

static void batch_lines_split_as_a_shell_would(void **state)
{
	static const struct {
		const char *line, *words;
	} cases[] = {
		{ "-asm \"add RAX, RBX; add RBX, RAX\" -unroll_count 10",
		  "-asm|add RAX, RBX; add RBX, RAX|-unroll_count|10" },
		{ "  -asm_init 'mov RAX, R14; sub RAX, 8'\t-asm   'mov RAX, [RAX]'  ",
		  "-asm_init|mov RAX, R14; sub RAX, 8|-asm|mov RAX, [RAX]" },
		{ "-asm \"jmp \\$; \\\"x\\\" \\\\ \\n\"", "-asm|jmp $; \"x\" \\ \\n" },
		{ "-asm 'a\"b'\"c'd\"e", "-asm|a\"bc'de" },
		{ "-asm add\\ RAX,\\ RBX -l 2", "-asm|add RAX, RBX|-l|2" },
		{ "-asm '' -u 1", "-asm||-u|1" },
		{ "", "" },
	};
	char out[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(words(cases[i].line, out, sizeof(out)), 0);
		if (strcmp(out, cases[i].words))
			fail_msg("'%s': got '%s', want '%s'", cases[i].line, out, cases[i].words);
	}
	assert_int_equal(words("-asm 'nop", out, sizeof(out)), -1);
	assert_string_equal(out, "error: a quote is not closed");
	assert_int_equal(words("-asm \"nop\\\"", out, sizeof(out)), -1);
}

static void lines_are_nanobench_s(void **state)
{
	char buf[256];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	(void)state;
	assert_string_equal(bench_nb_name("cycles", 0), "Core cycles");
	assert_string_equal(bench_nb_name("instructions", 0), "Instructions retired");
	assert_string_equal(bench_nb_name("ref-cycles", 0), "Reference cycles");
	assert_string_equal(bench_nb_name("tsc", BP_BENCH_F_TSC), "TSC");
	assert_string_equal(bench_nb_name("tsc", BP_BENCH_F_TSC | BP_BENCH_F_ICOUNT), "TSC");
	assert_string_equal(bench_nb_name("r1c2", 0), "r1c2");
	bench_nb_line(f, "Core cycles", 1.0);
	bench_nb_line(f, "INST_RETIRED", 2.004);
	bench_nb_line(f, "UOPS_DISPATCHED_PORT.PORT_0", 0.495);
	bench_nb_line(f, "TSC", -0.25);
	fclose(f);
	assert_string_equal(buf, "Core cycles: 1.00\nINST_RETIRED: 2.00\n"
			    "UOPS_DISPATCHED_PORT.PORT_0: 0.49\nTSC: -0.25\n");
	assert_null(bench_nb_note(BP_BENCH_F_EXACT | BP_BENCH_F_TSC));
	assert_non_null(strstr(bench_nb_note(BP_BENCH_F_DISTURBED), "untrusted"));
	assert_non_null(strstr(bench_nb_note(BP_BENCH_F_NOISE), "noise floor"));
	assert_null(bench_nb_note(BP_BENCH_F_CPUID_SERIALIZED));	/* said once, apart */
	assert_non_null(strstr(bench_cpuid_note, "serialized by CPUID"));
}

static void readings_parse(void **state)
{
	char ev[32];
	unsigned first;
	uint64_t p[4][2];

	(void)state;
	assert_int_equal(bench_parse_readings("reading\ttsc\t0\t103,113\t104,115", ev, sizeof(ev),
					      &first, p, 4), 2);
	assert_string_equal(ev, "tsc");
	assert_int_equal(first, 0);
	assert_int_equal(p[0][0], 103);
	assert_int_equal(p[0][1], 113);
	assert_int_equal(p[1][0], 104);
	assert_int_equal(p[1][1], 115);
	assert_int_equal(bench_parse_readings("reading\tr1c2\t12\t18446744073709551615,0", ev,
					      sizeof(ev), &first, p, 4), 1);
	assert_int_equal(first, 12);
	assert_true(p[0][0] == UINT64_MAX);
	assert_int_equal(bench_parse_readings("reading\tcycles\t3", ev, sizeof(ev), &first, p, 4), 0);
	/* at most max pairs */
	assert_int_equal(bench_parse_readings("reading\ttsc\t0\t1,2\t3,4", ev, sizeof(ev), &first,
					      p, 1), 1);
	/* a result ITEM, and readings cut short, are not readings */
	assert_int_equal(bench_parse_readings("tsc\tTSC\t1000\t1000\t1000\t0\t7\t0\t103\t113", ev,
					      sizeof(ev), &first, p, 4), -1);
	assert_int_equal(bench_parse_readings("reading\ttsc\t0\t103", ev, sizeof(ev), &first, p, 4),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unique_prefixes_resolve),
		cmocka_unit_test(ambiguous_prefixes_name_every_candidate),
		cmocka_unit_test(others_come_back_as_they_are),
		cmocka_unit_test(batch_lines_split_as_a_shell_would),
		cmocka_unit_test(lines_are_nanobench_s),
		cmocka_unit_test(readings_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tools/util/trace/report.c — the trace commands (trace.h): `report
 * --aux`, `script --aux`, the Chrome call slices and --range, each a
 * capture and a kernel.elf decoded CPU by CPU into an analysis.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "tools/util/trace/analysis.h"

struct fnstat {
	struct symbol fn;
	uint64_t insns, calls;
};

struct inputs {			/* what a command decodes: capture and kernel.elf */
	struct trace_capture tc;
	struct trace_image *im;
	char err[256];
};

/*
 * The capture and the kernel.elf that ran (o->kernel_elf): its build-id
 * must match the capture's, unless o->force (then a warning line).
 */
static int open_inputs(struct inputs *S, const char *capture, const struct trace_opts *o)
{
	const char *elf = o ? o->kernel_elf : NULL;

	memset(S, 0, sizeof(*S));
	if (!elf) {
		snprintf(S->err, sizeof(S->err), "no kernel.elf to decode %s against", capture);
		return -1;
	}
	if (trace_capture_load(&S->tc, capture, S->err, sizeof(S->err)))
		return -1;
	if (!trace_image_load(&S->im, elf, S->tc.build_id, S->tc.build_id_len, S->err,
			      sizeof(S->err)))
		return 0;
	if (S->tc.build_id_len && o && o->force &&
	    !trace_image_load(&S->im, elf, NULL, 0, NULL, 0)) {
		fprintf(stderr, "bareperf: warning: %s; decoding anyway (--force)\n", S->err);
		return 0;
	}
	trace_capture_free(&S->tc);
	return -1;
}

static void close_inputs(struct inputs *S)
{
	trace_image_free(S->im);
	trace_capture_free(&S->tc);
}

static void decode_cpu(struct inputs *S, struct trace_cpu_data *c, struct analysis *A,
		       struct trace_dec_stats *st)
{
	A->im = S->im;
	A->cpu = c->cpu;
	A->fresh = true;
	if (c->format == TF_PT)
		trace_decode_pt(S->im, c->pieces, c->npieces, &an_sink, A, st);
	else
		trace_decode_sstep(S->im, c->pieces, c->npieces, &an_sink, A, st);
	an_close(A);
}

static const char *format_name(int f)
{
	return f == TF_PT ? "Intel PT" : f == TF_SSTEP ? "single-step tracer" : "none";
}

static int fn_cmp(const void *a, const void *b)
{
	const struct fnstat *x = a, *y = b;

	if (x->insns != y->insns)
		return x->insns > y->insns ? -1 : 1;
	return strcmp(an_sym_name(x->fn), an_sym_name(y->fn));
}

static int ic_cmp(const void *a, const void *b)
{
	const struct icount *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->ii->ip < y->ii->ip ? -1 : x->ii->ip > y->ii->ip;
}

static void print_tree(FILE *out, const struct analysis *A, size_t nd, int depth, int *rows,
		       int max_rows)
{
	for (size_t c = nd; c != SIZE_MAX && *rows < max_rows; c = A->nodes[c].next) {
		const struct node *n = &A->nodes[c];
		fprintf(out, "  %10" PRIu64 " %14" PRIu64 " %12" PRIu64 "  %*s%s\n", n->calls, n->total,
			n->self, 2 * depth, "", an_sym_name(n->fn));
		(*rows)++;
		if (depth < 32)
			print_tree(out, A, n->child, depth + 1, rows, max_rows);
	}
}

static void report_losses(FILE *out, const struct trace_cpu_data *c)
{
	if (c->truncated)
		fprintf(out, "#   %" PRIu64 " AUX commit%s TRUNCATED (AUX area full: raise aux_pages=)\n",
			c->truncated, c->truncated == 1 ? "" : "s");
	if (c->missing_bytes)
		fprintf(out, "#   %" PRIu64 " AUX bytes announced by AUX records never arrived\n",
			c->missing_bytes);
	if (c->records_lost)
		fprintf(out, "#   %" PRIu64 " record losses on this CPU (LOST records or lost frames): "
			"AUX records may be missing\n", c->records_lost);
}

int trace_report(const char *capture, const struct trace_opts *o, FILE *out)
{
	struct inputs S;
	int top = o->top > 0 ? o->top : 25, rc = 0, ncpu = 0;

	if (open_inputs(&S, capture, o)) {
		fprintf(stderr, "bareperf report --aux: %s\n", S.err);
		return 1;
	}
	for (size_t i = 0; i < S.tc.ncpus; i++) {
		struct trace_cpu_data *c = &S.tc.cpus[i];
		struct analysis A = { 0 };
		struct trace_dec_stats st;

		if (o->cpu >= 0 && (uint32_t)o->cpu != c->cpu)
			continue;
		if (c->format == TF_NONE && !c->records)
			continue;
		ncpu++;
		decode_cpu(&S, c, &A, &st);
		an_totals(&A);

		if (S.tc.nruns > 1)
			fprintf(out, "# run %u of %u\n", c->run, S.tc.nruns);
		fprintf(out, "# cpu %u: %s, %" PRIu64 " AUX bytes in %" PRIu64 " records\n", c->cpu,
			format_name(c->format), st.bytes, c->records);
		fprintf(out, "# reconstructed: %" PRIu64 " instructions\n", st.insns);
		if (st.gaps)
			fprintf(out, "# gaps: %" PRIu64 " (%" PRIu64 " instructions not traced%s)\n",
				st.gaps, st.gap_insns,
				st.gaps_unknown ? ", plus gaps of unknown size" : "");
		for (size_t g = 0; g < A.ngaps; g++) {
			if (A.gaps[g].n == TRACE_GAP_UNKNOWN)
				fprintf(out, "#   gap after step %" PRIu64 ": unknown size (%s)\n",
					A.gaps[g].step, A.gaps[g].why);
			else
				fprintf(out, "#   gap after step %" PRIu64 ": %" PRIu64
					" instructions (%s)\n", A.gaps[g].step, A.gaps[g].n, A.gaps[g].why);
		}
		if (A.ngaps_total > A.ngaps)
			fprintf(out, "#   ... %zu more gaps\n", A.ngaps_total - A.ngaps);
		report_losses(out, c);
		bool exact = false;
		if (c->format == TF_SSTEP) {
			if (st.ended) {
				exact = !st.gaps_unknown && !st.errors &&
					st.insns + st.gap_insns == st.end_steps;
				fprintf(out, "# kernel: %" PRIu64 " instructions traced (STOP END%s)\n",
					st.end_steps, st.ends > 1 ? ", all traced calls" : "");
				fprintf(out, "# %s\n", exact ? (st.gap_insns ?
					"exact: every instruction is accounted for (reconstructed + gaps = kernel's count)" :
					"exact: reconstructed = kernel's count") :
					"NOT exact: the reconstruction and the kernel's count differ");
			} else {
				fprintf(out, "# kernel: no STOP END in the data: its count is unknown\n");
			}
		} else if (c->format == TF_PT) {
			fprintf(out, "# Intel PT: counts are instructions (a REP string instruction "
				"counts once)\n");
		}
		if (st.errors)
			fprintf(out, "# decode errors: %" PRIu64 " (first: %s)\n", st.errors,
				st.first_error);
		if (o->check && !exact)
			rc = 1;

		/* functions */
		struct fnstat *fs = NULL;
		size_t nfs = 0, fcap = 0;
		for (size_t k = 0; k < A.cap; k++) {
			if (!A.tab[k].ii)
				continue;
			struct symbol fn = trace_image_sym(S.im, A.tab[k].ii->ip);
			size_t j;
			for (j = 0; j < nfs && !an_same_fn(fs[j].fn, fn); j++)
				;
			if (j == nfs) {
				GROW(fs, nfs, fcap);
				fs[nfs++] = (struct fnstat){ fn, 0, 0 };
			}
			fs[j].insns += A.tab[k].count;
		}
		for (size_t k = 0; k < A.nnodes; k++)
			for (size_t j = 0; j < nfs; j++)
				if (an_same_fn(fs[j].fn, A.nodes[k].fn))
					fs[j].calls += A.nodes[k].calls;
		if (nfs)	/* no instruction decoded: fs is NULL */
			qsort(fs, nfs, sizeof(*fs), fn_cmp);
		fprintf(out, "#\n# %12s %7s %10s  %s\n", "instructions", "share", "calls", "function");
		for (size_t j = 0; j < nfs && (int)j < top; j++)
			fprintf(out, "  %12" PRIu64 " %6.2f%% %10" PRIu64 "  %s\n", fs[j].insns,
				st.insns ? 100.0 * (double)fs[j].insns / (double)st.insns : 0.0,
				fs[j].calls, an_sym_name(fs[j].fn));
		if (nfs > (size_t)top)
			fprintf(out, "  (%zu more functions)\n", nfs - (size_t)top);
		free(fs);

		/* call tree */
		fprintf(out, "#\n# call tree: %10s %14s %12s  %s\n", "calls", "instructions", "self",
			"function");
		int rows = 0;
		for (size_t k = 0; k < A.nnodes; k++)
			if (A.nodes[k].parent == SIZE_MAX)
				print_tree(out, &A, k, 0, &rows, 4 * top);
		/* hottest instructions */
		struct icount *ic = calloc(A.n ? A.n : 1, sizeof(*ic));
		size_t nic = 0;
		for (size_t k = 0; k < A.cap; k++)
			if (A.tab[k].ii)
				ic[nic++] = A.tab[k];
		qsort(ic, nic, sizeof(*ic), ic_cmp);
		fprintf(out, "#\n# %12s %16s  %s\n", "count", "address", "instruction");
		for (size_t j = 0; j < nic && (int)j < top; j++) {
			struct symbol fn = trace_image_sym(S.im, ic[j].ii->ip);
			fprintf(out, "  %12" PRIu64 " %016" PRIx64 "  %s+0x%" PRIx64 ":  %s\n", ic[j].count,
				ic[j].ii->ip, an_sym_name(fn), fn.name ? ic[j].ii->ip - fn.start : 0,
				ic[j].ii->text);
		}
		fprintf(out, "#\n");
		free(ic);
		an_free(&A);
	}
	if (!ncpu) {
		fprintf(out, "# no AUX trace data in %s (run with trace=...)\n", capture);
		rc = o->check ? 1 : 0;
	}
	close_inputs(&S);
	return rc;
}

int trace_script(const char *capture, const struct trace_opts *o, FILE *out)
{
	struct inputs S;

	if (open_inputs(&S, capture, o)) {
		fprintf(stderr, "bareperf script --aux: %s\n", S.err);
		return 1;
	}
	for (size_t i = 0; i < S.tc.ncpus; i++) {
		struct trace_cpu_data *c = &S.tc.cpus[i];
		struct analysis A = { .script = out, .opts = o };
		struct trace_dec_stats st;

		if ((o->cpu >= 0 && (uint32_t)o->cpu != c->cpu) || c->format == TF_NONE)
			continue;
		decode_cpu(&S, c, &A, &st);
		if (st.errors)
			fprintf(out, "%3u -- decode errors: %" PRIu64 " (first: %s)\n", c->cpu, st.errors,
				st.first_error);
		an_free(&A);
	}
	close_inputs(&S);
	return 0;
}

int trace_call_slices(const char *capture, const struct trace_opts *o, trace_slice_fn fn,
		      void *ctx, char *err, size_t n)
{
	struct inputs S;

	if (open_inputs(&S, capture, o)) {
		seterr(err, n, "%s", S.err);
		return -1;
	}
	for (size_t i = 0; i < S.tc.ncpus; i++) {
		struct trace_cpu_data *c = &S.tc.cpus[i];
		struct analysis A = { .slice = fn, .slice_ctx = ctx, .opts = o };
		struct trace_dec_stats st;

		if ((o && o->cpu >= 0 && (uint32_t)o->cpu != c->cpu) || c->format == TF_NONE)
			continue;
		decode_cpu(&S, c, &A, &st);
		an_free(&A);
	}
	close_inputs(&S);
	return 0;
}

int trace_parse_range(struct trace_image *im, const char *s, uint64_t *lo, uint64_t *hi,
		      char *err, size_t n)
{
	const struct symtab *t = trace_image_symtab(im);
	char a[128], *dash;
	struct symbol sym;

	if (strlen(s) >= sizeof(a)) {
		seterr(err, n, "range '%s' is too long", s);
		return -1;
	}
	strcpy(a, s);
	dash = strchr(a, '-');
	if (!dash) {
		/* One function. */
		if (!symtab_find(t, a, &sym) || !sym.size) {
			seterr(err, n, "range '%s': not START-END and not a function of kernel.elf", s);
			return -1;
		}
		*lo = sym.start;
		*hi = sym.start + sym.size;
		return 0;
	}
	*dash = 0;
	const char *part[2] = { a, dash + 1 };
	uint64_t v[2];
	for (int i = 0; i < 2; i++) {
		char *end;
		errno = 0;
		v[i] = strtoull(part[i], &end, 0);
		if (*part[i] && !*end && !errno)
			continue;
		if (!symtab_find(t, part[i], &sym)) {
			seterr(err, n, "range '%s': '%s' is neither an address nor a symbol", s,
			       part[i]);
			return -1;
		}
		v[i] = i ? sym.start + sym.size : sym.start;
	}
	if (v[0] >= v[1]) {
		seterr(err, n, "range '%s' is empty", s);
		return -1;
	}
	*lo = v[0];
	*hi = v[1];
	return 0;
}

int trace_opts_set_range(struct trace_opts *o, const char *range, char *err, size_t n)
{
	struct trace_image *im;
	int rc;

	if (!o->kernel_elf) {
		snprintf(err, n, "no kernel.elf to read --range's symbols from");
		return -1;
	}
	if (trace_image_load(&im, o->kernel_elf, NULL, 0, err, n))
		return -1;
	rc = trace_parse_range(im, range, &o->lo, &o->hi, err, n);
	o->have_range = !rc;
	trace_image_free(im);
	return rc;
}



/*
 * tools/util/trace/analysis.c — what the commands build from the
 * instruction stream (analysis.h): per-instruction counts, the call tree
 * with its per-node counts, call slices with SYNC-interpolated TSC, and
 * the script's lines; a trace_sink the decoders feed.
 */
#include <inttypes.h>
#include <string.h>

#include "tools/util/trace/analysis.h"

static size_t new_node(struct analysis *A, struct symbol fn, size_t parent)
{
	GROW(A->nodes, A->nnodes, A->nodes_cap);
	A->nodes[A->nnodes] = (struct node){ fn, parent, SIZE_MAX, SIZE_MAX, 0, 0, 0 };
	if (parent != SIZE_MAX) {
		A->nodes[A->nnodes].next = A->nodes[parent].child;
		A->nodes[parent].child = A->nnodes;
	}
	return A->nnodes++;
}

static size_t child_of(struct analysis *A, size_t parent, struct symbol fn)
{
	size_t c = parent == SIZE_MAX ? SIZE_MAX : A->nodes[parent].child;

	if (parent == SIZE_MAX) {
		for (size_t i = 0; i < A->nnodes; i++)
			if (A->nodes[i].parent == SIZE_MAX && an_same_fn(A->nodes[i].fn, fn))
				return i;
		return new_node(A, fn, SIZE_MAX);
	}
	for (; c != SIZE_MAX; c = A->nodes[c].next)
		if (an_same_fn(A->nodes[c].fn, fn))
			return c;
	return new_node(A, fn, parent);
}

static uint64_t tsc_of(const struct analysis *A, uint64_t step)
{
	if (!A->sync_tsc)
		return 0;
	if (A->prev_sync_tsc && A->sync_steps > A->prev_sync_steps) {
		double r = (double)(A->sync_tsc - A->prev_sync_tsc) /
			   (double)(A->sync_steps - A->prev_sync_steps);
		return A->sync_tsc + (uint64_t)(r * (double)(step - A->sync_steps));
	}
	return A->sync_tsc;
}

const char *an_sym_name(struct symbol s)
{
	return s.name ? s.name : "[unknown]";
}

bool an_same_fn(struct symbol a, struct symbol b)
{
	return a.name == b.name && a.start == b.start;
}

static void emit_slice(struct analysis *A, const struct call_frame *f, uint64_t end_step)
{
	if (!A->slice)
		return;
	const struct node *nd = &A->nodes[f->node];
	struct trace_slice s = {
		.cpu = A->cpu, .depth = (uint32_t)(A->depth - 1), .name = an_sym_name(nd->fn),
		.start = f->start, .dur = end_step >= f->start ? end_step - f->start + 1 : 0,
		.start_tsc = f->start_tsc,
	};
	uint64_t t = tsc_of(A, end_step);
	s.dur_tsc = t > f->start_tsc ? t - f->start_tsc : 0;
	A->slice(A->slice_ctx, &s);
}

void an_close(struct analysis *A)
{
	while (A->depth) {
		emit_slice(A, &A->stack[A->depth - 1], A->last_step);
		A->depth--;
	}
	A->fresh = true;
	A->pending_call = A->pending_ret = false;
}

static void push_frame(struct analysis *A, size_t node, uint64_t step, uint64_t ret)
{
	GROW(A->stack, A->depth, A->stack_cap);
	A->stack[A->depth++] = (struct call_frame){ node, step, tsc_of(A, step), ret };
}

/* A return to ip: pop to the frame whose call pushed ip (a return may
 * skip frames: longjmp-like code), or one frame if none did. */
static void pop_to(struct analysis *A, uint64_t ip)
{
	size_t keep = A->depth - 1;

	for (size_t i = A->depth; i-- > 0;)
		if (A->stack[i].ret == ip) {
			keep = i;
			break;
		}
	while (A->depth > keep) {
		emit_slice(A, &A->stack[A->depth - 1], A->last_step);
		A->depth--;
	}
}

static void an_insn(void *ctx, uint64_t step, const struct trace_insn *ii)
{
	struct analysis *A = ctx;
	struct symbol fn = trace_image_sym(A->im, ii->ip);

	/* per instruction */
	if (2 * (A->n + 1) > A->cap) {
		size_t cap = A->cap ? 2 * A->cap : 4096;
		struct icount *t = calloc(cap, sizeof(*t));
		if (!t)
			xrealloc(NULL, (size_t)-1 / 2);
		for (size_t i = 0; i < A->cap; i++) {
			if (!A->tab[i].ii)
				continue;
			size_t h = hash_ip(A->tab[i].ii->ip, cap);
			while (t[h].ii)
				h = (h + 1) & (cap - 1);
			t[h] = A->tab[i];
		}
		free(A->tab);
		A->tab = t;
		A->cap = cap;
	}
	size_t h = hash_ip(ii->ip, A->cap);
	while (A->tab[h].ii && A->tab[h].ii != ii)
		h = (h + 1) & (A->cap - 1);
	if (!A->tab[h].ii) {
		A->tab[h].ii = ii;
		A->n++;
	}
	A->tab[h].count++;

	/* call tree */
	if (A->fresh || !A->depth) {
		size_t nd = child_of(A, SIZE_MAX, fn);
		A->nodes[nd].calls++;
		push_frame(A, nd, step, 0);
		A->fresh = false;
	} else if (A->pending_call) {
		size_t nd = child_of(A, A->stack[A->depth - 1].node, fn);
		A->nodes[nd].calls++;
		push_frame(A, nd, step, A->call_ret);
	} else if (A->pending_ret) {
		pop_to(A, ii->ip);
		if (!A->depth) {
			/* Returned above where tracing began: a new root. */
			size_t nd = child_of(A, SIZE_MAX, fn);
			A->nodes[nd].calls++;
			push_frame(A, nd, step, 0);
		}
	}
	A->pending_call = ii->flow == TK_CALL;
	A->pending_ret = ii->flow == TK_RET;
	A->call_ret = ii->ip + ii->len;
	A->nodes[A->stack[A->depth - 1].node].self++;
	A->last_step = step;

	if (A->script && (!A->opts->have_range ||
			  (ii->ip >= A->opts->lo && ii->ip < A->opts->hi))) {
		if (fn.name)
			fprintf(A->script, "%3u %12" PRIu64 " %016" PRIx64 " %s+0x%" PRIx64 ":\t%s\n",
				A->cpu, step, ii->ip, fn.name, ii->ip - fn.start, ii->text);
		else
			fprintf(A->script, "%3u %12" PRIu64 " %016" PRIx64 " [unknown]:\t%s\n", A->cpu,
				step, ii->ip, ii->text);
		A->script_lines++;
	}
}

static void an_gap(void *ctx, uint64_t step, uint64_t n, const char *why)
{
	struct analysis *A = ctx;

	if (A->ngaps < 64)
		A->gaps[A->ngaps++] = (typeof(A->gaps[0])){ step, n, why };
	A->ngaps_total++;
	if (A->script) {
		if (n == TRACE_GAP_UNKNOWN)
			fprintf(A->script, "%3u %12" PRIu64 " -- gap: instructions not in the trace (%s)\n",
				A->cpu, step, why);
		else
			fprintf(A->script, "%3u %12" PRIu64 " -- gap: %" PRIu64
				" instructions not in the trace (%s)\n", A->cpu, step, n, why);
	}
	an_close(A);
}

static void an_sync(void *ctx, uint64_t steps, uint64_t tsc)
{
	struct analysis *A = ctx;

	A->prev_sync_steps = A->sync_steps;
	A->prev_sync_tsc = A->sync_tsc;
	A->sync_steps = steps;
	A->sync_tsc = tsc;
}

const struct trace_sink an_sink = { an_insn, an_gap, an_sync };

void an_free(struct analysis *A)
{
	free(A->tab);
	free(A->nodes);
	free(A->stack);
}

void an_totals(struct analysis *A)
{
	/* Children are created after parents: one reverse pass sums up. */
	for (size_t i = 0; i < A->nnodes; i++)
		A->nodes[i].total = A->nodes[i].self;
	for (size_t i = A->nnodes; i-- > 0;)
		if (A->nodes[i].parent != SIZE_MAX)
			A->nodes[A->nodes[i].parent].total += A->nodes[i].total;
}


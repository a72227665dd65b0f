/*
 * stress_ringbuf.c — one producer thread, one consumer thread, one ring;
 * signals on the producer thread play the NMIs that interrupt its writers.
 *
 * Three sources write records, each numbering its own:
 *   THREAD  the producer thread's loop;
 *   SELF    a SIGUSR1 handler the producer raises in the middle of its own
 *           records (and AUX chunks) at chosen points: nesting that is
 *           certain to happen, even under TSan, which delivers signals
 *           only at its interceptors;
 *   TIMER   a SIGRTMIN handler driven by a POSIX timer aimed at the
 *           producer thread: nesting at arbitrary instructions.
 * The handlers also try the AUX area; inside an AUX section that must be
 * refused (the guard), elsewhere it must work.
 *
 * The consumer checks every record: each source's numbers arrive exactly
 * once and in increasing order, every word intact; the gaps per source
 * equal the writes that source saw fail, and the LOST records add up to
 * all of them; every AUX chunk announced is intact. The producer thread
 * waits for room before its records, so most of them get through, except
 * while the consumer deliberately stops reading (a hold): then it runs on
 * and drops, so losses are certain. The handlers never wait. Built twice: ASan+UBSan (x86 local ops) and TSan (C11
 * local ops). Prints TAP.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringbuf/ringbuf.h"

#ifdef __SANITIZE_THREAD__
#define THREAD_RECORDS	1200000		/* TSan runs ~10x slower */

/* A race is a failure: stop at the first report, exit non-zero. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "halt_on_error=1";
}
#else
#define THREAD_RECORDS	5000000
#endif
#define DATA_PAGES	16
#define AUX_PAGES	8
#define AUX_EVERY	64		/* producer records per AUX chunk */
#define RAISE_EVERY	97		/* producer records per self-raised NMI */
#define HOLD_EVERY	250000		/* consumed records between holds */
#define HOLD_DROPS	200		/* drops a hold waits for */
#define ROOM_MIN	256		/* free bytes the thread waits for */
#define TIMER_NS	50000
#define WATCHDOG_S	55
#define STRESS_TYPE	0x7ffe		/* a record type of this test */

enum { SRC_THREAD, SRC_SELF, SRC_TIMER, NR_SRC };
static const char *const src_name[NR_SRC] = { "thread", "self", "timer" };

/* { header; u32 src; u32 nwords; u64 seq; u64 word[nwords] } */
struct srec {
	struct bp_record_header header;
	uint32_t src;
	uint32_t nwords;
	uint64_t seq;
};

static struct bp_ring ring;
static uint8_t *mem;
static uint64_t mem_size;

/* Producer side: written by the thread and its handlers only. */
static uint64_t next_seq[NR_SRC];
static _Atomic uint64_t dropped[NR_SRC];
static volatile sig_atomic_t in_record, in_aux;
static uint64_t raises_in_record, raised_mid_record, timer_mid_record;
static uint64_t aux_refused, aux_guard_errors, aux_record_drops;
static _Atomic bool producer_done, holding, consumer_failed;

/* Consumer side. */
static uint64_t seen[NR_SRC], gaps[NR_SRC], last_seq[NR_SRC];
static uint64_t lost_sum, lost_records, aux_checked;
static uint64_t errors;
static char first_error[256];

static uint64_t word(uint32_t src, uint64_t seq, uint32_t i)
{
	uint64_t x = seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)src << 56) ^ i;

	x ^= x >> 31;
	return x * 0xbf58476d1ce4e5b9ull;
}

static uint8_t aux_byte(uint64_t pos)
{
	return (uint8_t)(pos * 131 + (pos >> 8));
}

static void error(const char *what, uint64_t a, uint64_t b)
{
	if (!errors++)
		snprintf(first_error, sizeof(first_error), "%s (%llu, %llu)", what,
			 (unsigned long long)a, (unsigned long long)b);
}

/* ------------------------------------------------------------------ */
/* Producer                                                            */

/*
 * One record, copied in pieces like a sampler builds it; mid() runs
 * between the fixed part and the words (the thread raises its NMI there).
 */
static void write_record(uint32_t src, uint32_t nwords, void (*mid)(void))
{
	uint64_t seq = next_seq[src]++;
	struct srec r = {
		.header = { .type = STRESS_TYPE, .size = (uint16_t)(sizeof(r) + 8 * nwords) },
		.src = src, .nwords = nwords, .seq = seq,
	};
	struct bp_ring_handle h;
	uint32_t i;

	if (bp_ring_output_begin(&ring, &h, r.header.size)) {
		atomic_fetch_add(&dropped[src], 1);
		return;
	}
	bp_ring_output_copy(&h, &r, sizeof(r));
	if (mid)
		mid();
	for (i = 0; i < nwords; i++) {
		uint64_t w = word(src, seq, i);

		bp_ring_output_copy(&h, &w, sizeof(w));
	}
	bp_ring_output_end(&h);
}

/* One AUX chunk with its AUX record; mid() runs while the handle is open. */
static int write_aux(uint64_t want, void (*mid)(void))
{
	uint8_t buf[4096];
	struct bp_aux_handle h;
	uint64_t len, i;
	int err;

	err = bp_aux_output_begin(&ring, &h);
	if (err)
		return err;
	len = want < h.size ? want : h.size;
	for (i = 0; i < len; i++)
		buf[i] = aux_byte(h.head + i);
	bp_aux_output_copy(&h, 0, buf, len);
	if (mid)
		mid();
	/* A full data area drops the AUX record; it is counted like any other. */
	if (bp_aux_output_end(&h, len, len < want ? BP_AUX_FLAG_TRUNCATED : 0))
		aux_record_drops++;
	return 0;
}

/* What a handler does: a record, and an AUX chunk unless one is open. */
static void nmi_body(uint32_t src)
{
	write_record(src, (uint32_t)(next_seq[src] % 5), NULL);
	if (next_seq[src] % 4)
		return;
	if (in_aux) {
		if (write_aux(64, NULL) == BP_EAUX_NESTED)
			aux_refused++;
		else
			aux_guard_errors++;
	} else {
		write_aux(64 + next_seq[src] % 512, NULL);
	}
}

static void on_self(int sig)
{
	(void)sig;
	if (in_record)
		raised_mid_record++;
	nmi_body(SRC_SELF);
}

static void on_timer(int sig)
{
	(void)sig;
	if (in_record)
		timer_mid_record++;
	nmi_body(SRC_TIMER);
}

static void raise_nmi(void)
{
	pthread_kill(pthread_self(), SIGUSR1);
}

static void mid_record(void)
{
	in_record = 1;
	if (next_seq[SRC_THREAD] % RAISE_EVERY == 0) {
		raises_in_record++;
		raise_nmi();
	}
	in_record = 0;
}

static void mid_aux(void)
{
	in_aux = 1;
	raise_nmi();
	in_aux = 0;
}

static timer_t start_timer(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN };
	struct itimerspec its = { .it_interval = { 0, TIMER_NS }, .it_value = { 0, TIMER_NS } };
	timer_t timer;

	ev._sigev_un._tid = gettid();		/* sigev_notify_thread_id */
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) || timer_settime(timer, 0, &its, NULL)) {
		perror("timer");
		exit(2);
	}
	return timer;
}

static bool consumer_gone(void)
{
	return atomic_load_explicit(&consumer_failed, memory_order_relaxed);
}

/* Flow control, outside the ring: the thread waits for room unless held. */
static void wait_for_room(void)
{
	while (!atomic_load_explicit(&holding, memory_order_relaxed) &&
	       bp_ring_free(&ring) < ROOM_MIN && !consumer_gone())
		sched_yield();
}

static void *producer(void *arg)
{
	uint64_t rng = 88172645463325252ull, n;
	timer_t timer = start_timer();
	sigset_t all;

	(void)arg;
	for (n = 0; n < THREAD_RECORDS && !consumer_gone(); n++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		wait_for_room();
		write_record(SRC_THREAD, (uint32_t)(rng % 9), mid_record);
		if (n % AUX_EVERY == 0)
			write_aux(64 + rng % 4000, n % (4 * AUX_EVERY) ? NULL : mid_aux);
	}
	timer_delete(timer);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	/* Drops not yet reported: one more record carries the LOST record. */
	while (bp_ring_lost(&ring) && !consumer_gone()) {
		wait_for_room();
		write_record(SRC_THREAD, 0, NULL);
	}
	atomic_store(&producer_done, true);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Consumer                                                            */

static void check_srec(const struct bp_record_header *rec)
{
	const struct srec *r = (const void *)rec;
	const uint64_t *w = (const uint64_t *)(r + 1);
	uint32_t i;

	if (r->src >= NR_SRC || rec->size != sizeof(*r) + 8 * r->nwords) {
		error("bad record: src, size", r->src, rec->size);
		return;
	}
	if (seen[r->src] && r->seq <= last_seq[r->src]) {
		error("out of order or repeated: seq, after", r->seq, last_seq[r->src]);
		return;
	}
	gaps[r->src] += r->seq - (seen[r->src] ? last_seq[r->src] + 1 : 0);
	last_seq[r->src] = r->seq;
	seen[r->src]++;
	for (i = 0; i < r->nwords; i++)
		if (w[i] != word(r->src, r->seq, i))
			error("corrupt record: seq, word", r->seq, i);
}

static void check_aux(struct bp_ring_reader *rd, const struct bp_record_aux *a, uint64_t *aux_tail)
{
	static uint8_t buf[AUX_PAGES * BP_RING_PAGE_SIZE];
	uint64_t i;

	if (a->aux_offset < *aux_tail || a->aux_size > sizeof(buf) ||
	    bp_ring_aux_read(rd, a->aux_offset, a->aux_size, buf)) {
		error("bad AUX record: offset, size", a->aux_offset, a->aux_size);
		return;
	}
	for (i = 0; i < a->aux_size; i++)
		if (buf[i] != aux_byte(a->aux_offset + i)) {
			error("AUX data overwritten: offset, byte", a->aux_offset, i);
			break;
		}
	aux_checked++;
	*aux_tail = a->aux_offset + a->aux_size;
	bp_ring_aux_release(rd, *aux_tail);
}

static uint64_t total_dropped(void)
{
	uint64_t n = 0;
	int s;

	for (s = 0; s < NR_SRC; s++)
		n += atomic_load(&dropped[s]);
	return n;
}

/* Stop reading until the producer has dropped records. */
static void hold(void)
{
	uint64_t target = total_dropped() + HOLD_DROPS;

	atomic_store(&holding, true);
	while (total_dropped() < target && !atomic_load(&producer_done))
		sched_yield();
	atomic_store(&holding, false);
}

static void *consumer(void *arg)
{
	static uint64_t buf[BP_RECORD_MAX / 8];
	struct bp_ring_reader rd;
	uint64_t consumed = 0, next_hold = HOLD_EVERY, aux_tail = 0;

	(void)arg;
	if (bp_ring_reader_init(&rd, mem, mem_size)) {
		error("reader_init failed", 0, 0);
		return NULL;
	}
	for (;;) {
		const struct bp_record_header *rec;
		bool done = atomic_load(&producer_done);
		int ret;

		if (!bp_ring_read_begin(&rd)) {
			if (done)
				break;
			sched_yield();
			continue;
		}
		while ((ret = bp_ring_read_next(&rd, &rec, buf, sizeof(buf))) == 1) {
			consumed++;
			if (rec->type == STRESS_TYPE) {
				check_srec(rec);
			} else if (rec->type == BP_RECORD_LOST) {
				lost_sum += ((const struct bp_record_lost *)rec)->lost;
				lost_records++;
			} else if (rec->type == BP_RECORD_AUX) {
				check_aux(&rd, (const struct bp_record_aux *)rec, &aux_tail);
			} else {
				error("unexpected record: type, size", rec->type, rec->size);
			}
		}
		if (ret < 0)
			error("read_next failed: error, consumed", (uint64_t)-ret, consumed);
		bp_ring_read_end(&rd);
		if (errors) {
			atomic_store(&consumer_failed, true);
			break;
		}
		if (consumed >= next_hold) {
			next_hold += HOLD_EVERY;
			hold();
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------ */

static void on_watchdog(int sig)
{
	static const char msg[] = "not ok 1 - stress: timed out\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa = { .sa_handler = fn };

	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static int tap(int n, bool ok, const char *what)
{
	printf("%s %d - stress: %s\n", ok ? "ok" : "not ok", n, what);
	return ok ? 0 : 1;
}

int main(void)
{
	uint64_t data = (uint64_t)DATA_PAGES * BP_RING_PAGE_SIZE, drops = 0, attempted = 0;
	struct bp_ring_config cfg = { .id = 7 };
	pthread_t prod, cons;
	bool order_ok = true;
	char line[512];
	int s, failed = 0;

	handle(SIGALRM, on_watchdog);
	alarm(WATCHDOG_S);
	handle(SIGUSR1, on_self);
	handle(SIGRTMIN, on_timer);

	mem_size = BP_RING_PAGE_SIZE + data + (uint64_t)AUX_PAGES * BP_RING_PAGE_SIZE;
	mem = aligned_alloc(BP_RING_PAGE_SIZE, mem_size);
	if (!mem || bp_ring_init(&ring, mem, BP_RING_PAGE_SIZE + data, &cfg) ||
	    bp_ring_aux_init(&ring, BP_RING_PAGE_SIZE + data,
			     (uint64_t)AUX_PAGES * BP_RING_PAGE_SIZE, 0, 0)) {
		printf("1..1\nnot ok 1 - stress: ring setup\n");
		return 1;
	}
	pthread_create(&cons, NULL, consumer, NULL);
	pthread_create(&prod, NULL, producer, NULL);
	pthread_join(prod, NULL);
	pthread_join(cons, NULL);

	printf("1..5\n");
	for (s = 0; s < NR_SRC; s++) {
		uint64_t d = atomic_load(&dropped[s]);

		/* Drops after the last record consumed are gaps too. */
		gaps[s] += next_seq[s] - (seen[s] ? last_seq[s] + 1 : 0);
		drops += d;
		attempted += next_seq[s];
		if (seen[s] + d != next_seq[s] || gaps[s] != d)
			order_ok = false;
		printf("# %-6s attempted %llu, consumed %llu, dropped %llu, gaps %llu\n",
		       src_name[s], (unsigned long long)next_seq[s], (unsigned long long)seen[s],
		       (unsigned long long)d, (unsigned long long)gaps[s]);
	}
	printf("# LOST records %llu (sum %llu); AUX records dropped %llu\n",
	       (unsigned long long)lost_records, (unsigned long long)lost_sum,
	       (unsigned long long)aux_record_drops);
	printf("# AUX chunks checked %llu; nested AUX writers refused %llu\n",
	       (unsigned long long)aux_checked, (unsigned long long)aux_refused);
	printf("# NMIs mid-record: %llu of %llu raised there, %llu from the timer\n",
	       (unsigned long long)raised_mid_record, (unsigned long long)raises_in_record,
	       (unsigned long long)timer_mid_record);
	if (errors)
		printf("# %llu errors, first: %s\n", (unsigned long long)errors, first_error);

	snprintf(line, sizeof(line), "%llu records from 3 sources consumed once, in order, intact",
		 (unsigned long long)(attempted - drops));
	failed += tap(1, !errors && order_ok && attempted - drops >= THREAD_RECORDS / 2, line);
	snprintf(line, sizeof(line), "%llu drops = gaps, all reported by %llu LOST records",
		 (unsigned long long)(drops + aux_record_drops), (unsigned long long)lost_records);
	failed += tap(2, order_ok && drops > 0 && lost_sum == drops + aux_record_drops &&
		      bp_ring_lost(&ring) == 0, line);
	snprintf(line, sizeof(line), "%llu nested writers interrupted a record mid-copy",
		 (unsigned long long)(raised_mid_record + timer_mid_record));
	failed += tap(3, raised_mid_record > 1000 && raised_mid_record == raises_in_record, line);
	snprintf(line, sizeof(line), "%llu AUX chunks intact, none overwritten unread",
		 (unsigned long long)aux_checked);
	failed += tap(4, !errors && aux_checked > 1000, line);
	snprintf(line, sizeof(line), "nested AUX writers refused %llu times, never let in",
		 (unsigned long long)aux_refused);
	failed += tap(5, aux_refused > 0 && aux_guard_errors == 0, line);
	return failed ? 1 : 0;
}

/*
 * ringbuf/bench/ring_tput.c — BENCH ring_vs_ck_ratio.
 *
 * Producer thread -> consumer thread, 40-byte records, our ring against
 * Concurrency Kit's SPSC ck_ring (CK_RING_PROTOTYPE: records copied into
 * the ring, as ours are), measured in the same run, alternating, best of
 * ROUNDS each (BENCH_QUICK=1 in the environment: a tenth of the records,
 * one round). Neither side drops: both producers wait while the ring is
 * full. Our consumer follows the perf protocol (read everything up to
 * data_head, then release the tail once); ck's dequeues one at a time,
 * its only interface. ck gets the larger ring: 2048 slots (80 KiB)
 * against our 64 KiB data area.
 */
#define _GNU_SOURCE
#include <ck_ring.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringbuf/bench/sample40.h"

#define RECORDS		20000000ull
#define ROUNDS		5

static uint64_t records = RECORDS;
#define DATA_PAGES	16
#define CK_SLOTS	2048

CK_RING_PROTOTYPE(s40, sample40)

static struct bp_ring ring;
static void *ring_mem;
static uint64_t ring_size;
static struct ck_ring ckr;
static struct sample40 *ck_slots;
static uint64_t checksum;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % CPU_SETSIZE, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *ring_producer(void *arg)
{
	struct sample40 s = {
		.header = { .type = BP_RECORD_SAMPLE, .misc = BP_MISC_KERNEL, .size = sizeof(s) },
		.ip = 0x401000, .pid = 1, .tid = 1,
	};
	uint64_t i, room = 0;

	(void)arg;
	pin(0);
	for (i = 0; i < records; i++) {
		struct bp_ring_handle h;

		if (room < sizeof(s))
			while ((room = bp_ring_free(&ring)) < sizeof(s))
				__builtin_ia32_pause();
		room -= sizeof(s);
		s.time = i;
		if (bp_ring_output_begin(&ring, &h, sizeof(s)))
			abort();
		bp_ring_output_copy(&h, &s, sizeof(s));
		bp_ring_output_end(&h);
	}
	return NULL;
}

static void *ring_consumer(void *arg)
{
	static uint64_t buf[BP_RECORD_MAX / 8];
	struct bp_ring_reader r;
	uint64_t n = 0, sum = 0;

	(void)arg;
	pin(1);
	if (bp_ring_reader_init(&r, ring_mem, ring_size))
		abort();
	while (n < records) {
		const struct bp_record_header *rec;

		if (!bp_ring_read_begin(&r)) {
			__builtin_ia32_pause();
			continue;
		}
		while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
			sum += ((const struct sample40 *)rec)->time;
			n++;
		}
		bp_ring_read_end(&r);
	}
	checksum += sum;
	return NULL;
}

static void *ck_producer(void *arg)
{
	struct sample40 s = {
		.header = { .type = BP_RECORD_SAMPLE, .misc = BP_MISC_KERNEL, .size = sizeof(s) },
		.ip = 0x401000, .pid = 1, .tid = 1,
	};
	uint64_t i;

	(void)arg;
	pin(0);
	for (i = 0; i < records; i++) {
		s.time = i;
		while (!ck_ring_enqueue_spsc_s40(&ckr, ck_slots, &s))
			__builtin_ia32_pause();
	}
	return NULL;
}

static void *ck_consumer(void *arg)
{
	struct sample40 s;
	uint64_t n, sum = 0;

	(void)arg;
	pin(1);
	for (n = 0; n < records; n++) {
		while (!ck_ring_dequeue_spsc_s40(&ckr, ck_slots, &s))
			__builtin_ia32_pause();
		sum += s.time;
	}
	checksum += sum;
	return NULL;
}

static double run(void *(*prod)(void *), void *(*cons)(void *))
{
	pthread_t p, c;
	double t0 = now();

	pthread_create(&c, NULL, cons, NULL);
	pthread_create(&p, NULL, prod, NULL);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	return records / (now() - t0);
}

int main(void)
{
	const char *quick = getenv("BENCH_QUICK");
	int i, rounds = ROUNDS;
	uint64_t want;
	double best_ring = 0, best_ck = 0, x;

	if (quick && !strcmp(quick, "1")) {
		records = RECORDS / 10;
		rounds = 1;
	}
	want = records * (records - 1) / 2;

	ring_size = (uint64_t)(1 + DATA_PAGES) * BP_RING_PAGE_SIZE;
	ring_mem = aligned_alloc(BP_RING_PAGE_SIZE, ring_size);
	ck_slots = aligned_alloc(BP_CACHELINE, CK_SLOTS * sizeof(*ck_slots));
	if (!ring_mem || !ck_slots)
		return 1;

	for (i = 0; i < rounds; i++) {
		if (bp_ring_init(&ring, ring_mem, ring_size, NULL))
			return 1;
		ck_ring_init(&ckr, CK_SLOTS);
		checksum = 0;
		x = run(ring_producer, ring_consumer);
		best_ring = x > best_ring ? x : best_ring;
		x = run(ck_producer, ck_consumer);
		best_ck = x > best_ck ? x : best_ck;
		if (checksum != 2 * want) {
			fprintf(stderr, "ring_tput: records lost or corrupted\n");
			return 1;
		}
	}
	printf("# 40-byte records, producer -> consumer thread, best of %d x %llu\n",
	       rounds, (unsigned long long)records);
	printf("# ours %.1f M records/s, ck_ring %.1f M records/s; target ratio >= 1.0\n",
	       best_ring / 1e6, best_ck / 1e6);
	printf("BENCH ring_records_per_s %.0f records/s\n", best_ring);
	printf("BENCH ring_vs_ck_ratio %.2f ratio\n", best_ring / best_ck);
	return 0;
}

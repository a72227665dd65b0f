/*
 * seed_file.h — how the seed generators (wire_seeds, trace_seeds) write
 * a seed: the file DIR/seed-KIND-N, N counting from 0 across kinds, holding
 * the mode byte the target reads first and then the input. A write that
 * fails ends the generator (exit 1, with the file's name).
 */
#ifndef BAREPERF_TEST_FUZZ_SEED_FILE_H
#define BAREPERF_TEST_FUZZ_SEED_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Seeds go to dir (kept, not copied) from now on. */
void seed_dir(const char *dir);
void seed(const char *kind, uint8_t mode, const void *p, size_t n);
/* How many seeds were written. */
int seed_count(void);

#endif

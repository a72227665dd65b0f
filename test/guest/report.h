/*
 * report.h — how in-guest tests report: one TAP line per check, then the
 * plan and a summary. The host runner (test/runner.py) counts the lines
 * and checks the exit status agrees with them.
 */
#ifndef BAREPERF_TEST_GUEST_REPORT_H
#define BAREPERF_TEST_GUEST_REPORT_H

#include <stdbool.h>

void report(bool pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void report_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the plan and totals; returns EXIT_OK, or EXIT_FAIL if any check failed. */
int report_summary(void);
/* Value of "key=value" among the app's arguments, or NULL. */
const char *test_arg(int argc, char **argv, const char *key);

#endif

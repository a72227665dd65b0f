/*
 * tools/util/bench_config.h — nanoBench's -config event files, for
 * `bareperf bench`.
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_CONFIG_H
#define BAREPERF_TOOLS_UTIL_BENCH_CONFIG_H

/*
 * Read the event lines of path, "EV.UMASK[.CMSK=N][.EDG][.INV] NAME" (hex
 * EV and UMASK, '#' comments), appending each as a raw PERFEVTSEL spec
 * "r<hex>" to events[*n] and its NAME to labels[*n], *n counting up to
 * max. Fields bareperf cannot program (AnyT, TakenAlone, CTR=, MSR_*=)
 * are refused. Returns 0, or -1 with one line on stderr naming the file
 * and line.
 */
int bench_config_load(const char *path, char (*events)[32], char (*labels)[64], int *n, int max);

#endif

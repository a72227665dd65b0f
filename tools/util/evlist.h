/*
 * tools/util/evlist.h — a capture's events as the converters see them:
 * the EVENT_DESCs, then any id samples carry that none described, and
 * the one event a folded stack or a flame graph shows.
 *
 * Errors: 0 or -1 with one line in err (no trailing newline).
 */
#ifndef BAREPERF_TOOLS_UTIL_EVLIST_H
#define BAREPERF_TOOLS_UTIL_EVLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/util/perfdata.h"
#include "tools/util/session.h"

/* The events of a capture as perf will see them: EVENT_DESCs, then any id
 * samples carry that no EVENT_DESC described. perf id = index + 1 (perf
 * takes id 0 to mean "the first event"). */
struct evmap {
	struct bp_record_event_desc ev[PD_MAX_ATTRS];
	bool synthetic[PD_MAX_ATTRS];
	size_t n;
	size_t last;			/* cache: index of the last lookup */
};

/* The index of bp_id in m, or -1. */
int evmap_find(struct evmap *m, uint64_t bp_id);
/* Fill m from s; -1 with err if there are more than PD_MAX_ATTRS events. */
int evmap_build(struct evmap *m, const struct session *s, char *err, size_t errlen);

/*
 * The event the folded output and the flame graph show: the one named
 * name (NULL: the first event, in EVENT_DESC order, that has samples).
 * -1 with a message listing the events if there is no such event.
 * *multiple is set when other events have samples too.
 */
int convert_pick_event(const struct session *s, const char *name, uint64_t *id,
		       const char **picked_name, bool *multiple, char *err, size_t errlen);

#endif

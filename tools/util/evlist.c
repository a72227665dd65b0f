/*
 * tools/util/evlist.c — a capture's events as the converters number them
 * (tools/util/evlist.h).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/evlist.h"

int evmap_find(struct evmap *m, uint64_t bp_id)
{
	if (m->n && m->ev[m->last].id == bp_id)
		return (int)m->last;
	for (size_t i = 0; i < m->n; i++)
		if (m->ev[i].id == bp_id) {
			m->last = i;
			return (int)i;
		}
	return -1;
}

int evmap_build(struct evmap *m, const struct session *s, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < s->nevents; i++) {
		if (evmap_find(m, s->events[i].id) >= 0)
			continue;
		if (m->n == PD_MAX_ATTRS)
			goto too_many;
		m->ev[m->n++] = s->events[i];
	}
	for (size_t i = 0; i < s->nsamples; i++) {
		uint64_t id = s->samples[i].id;
		if (evmap_find(m, id) >= 0)
			continue;
		if (m->n == PD_MAX_ATTRS)
			goto too_many;
		memset(&m->ev[m->n], 0, sizeof(m->ev[0]));
		m->ev[m->n].id = id;
		snprintf(m->ev[m->n].name, sizeof(m->ev[0].name), "event%" PRIu64, id);
		m->synthetic[m->n++] = true;
	}
	return 0;
too_many:
	snprintf(err, errlen, "more than %d events in the capture", PD_MAX_ATTRS);
	return -1;
}

int convert_pick_event(const struct session *s, const char *name, uint64_t *id,
		       const char **picked_name, bool *multiple, char *err, size_t errlen)
{
	struct evmap *m = malloc(sizeof(*m));
	uint64_t *count;
	int pick = -1, rc = -1;
	size_t with_samples = 0;

	if (!m || evmap_build(m, s, err, errlen)) {
		if (!m)
			snprintf(err, errlen, "out of memory");
		free(m);
		return -1;
	}
	count = calloc(m->n + 1, sizeof(*count));
	if (!count) {
		snprintf(err, errlen, "out of memory");
		free(m);
		return -1;
	}
	for (size_t i = 0; i < s->nsamples; i++)
		count[evmap_find(m, s->samples[i].id)]++;
	for (size_t i = 0; i < m->n; i++) {
		with_samples += count[i] > 0;
		if (pick < 0 && (name ? !strcmp(m->ev[i].name, name) : count[i] > 0))
			pick = (int)i;
	}
	if (pick >= 0) {
		const struct bp_record_event_desc *d = session_event(s, m->ev[pick].id);
		*id = m->ev[pick].id;
		if (picked_name)
			*picked_name = d ? d->name : "event";
		if (multiple)
			*multiple = with_samples > (count[pick] > 0);
		rc = 0;
	} else if (!s->nsamples) {
		snprintf(err, errlen, "the capture holds no samples");
	} else {
		size_t len = snprintf(err, errlen, "no event named '%s'; the capture has:", name);
		for (size_t i = 0; i < m->n && len < errlen; i++)
			len += snprintf(err + len, errlen - len, " %s", m->ev[i].name);
	}
	free(count);
	free(m);
	return rc;
}

/*
 * events.c — event names built into the kernel, and the event-spec parser.
 *
 * Generic events resolve per vendor:
 *   Intel: the architectural events of SDM Vol. 3B 21.2.1.2 (table 21-1),
 *     enumerated by CPUID.0AH EBX (bit set = not available: we refuse the
 *     event, as Linux does), and the fixed counters of 21.2.2 (fixed 0 =
 *     INST_RETIRED.ANY, 1 = CPU_CLK_UNHALTED.THREAD, 2 = CPU_CLK_UNHALTED.REF_TSC,
 *     3 = TOPDOWN.SLOTS). ref-cycles (TSC rate) exists only on fixed
 *     counter 2; the GP architectural event 3CH/01H is "bus-cycles".
 *   AMD: APM Vol. 2 §13.2 gives the counters; the encodings are the
 *     family's PPR/BKDG events (K7..16h; 17h and later differ for the
 *     cache and stall events). Checked against libpfm4's tables by
 *     test/host/test_pmu_libpfm.c.
 * Raw specs follow perf: r<hex> is PERFEVTSEL bits 0-31 (AMD: plus
 * EventSelect[11:8] at 32-35), cpu/event=,umask=,cmask=,inv,edge,any/ builds
 * the same bits by field; any is Intel's AnyThread (bit 21).
 */
#include "pmu/internal.h"

struct generic_event {
	const char *name;
	const char *alias;
	const char *desc;
	u16 intel;		/* umask << 8 | event; 0 = no Intel encoding */
	int intel_arch;		/* CPUID.0AH EBX bit, -1 = not architectural */
	int intel_fixed;		/* fixed counter, -1 = none */
	bool fixed_only;
	u16 amd_k7;		/* K7 .. family 16h; 0 = none */
	u16 amd_zen1;		/* family 17h models 00h-2Fh */
	u16 amd_zen2;		/* family 17h models 30h+, 19h and later */
};

static const struct generic_event generic[PMU_EV_COUNT] = {
	[PMU_EV_CYCLES] = { "cycles", "cpu-cycles", "core clock cycles while not halted",
			    0x003c, 0, 1, false, 0x0076, 0x0076, 0x0076 },
	[PMU_EV_INSTRUCTIONS] = { "instructions", NULL, "instructions retired",
				  0x00c0, 1, 0, false, 0x00c0, 0x00c0, 0x00c0 },
	/* 0x0300 is the pseudo-encoding of fixed counter 2 (Linux, KVM, libpfm4). */
	[PMU_EV_REF_CYCLES] = { "ref-cycles", NULL, "reference cycles at TSC rate (Intel fixed counter 2)",
				0x0300, -1, 2, true, 0, 0, 0 },
	[PMU_EV_BUS_CYCLES] = { "bus-cycles", NULL, "architectural reference clock (UnHalted Reference Cycles)",
				0x013c, 2, -1, false, 0, 0, 0 },
	[PMU_EV_BRANCHES] = { "branches", "branch-instructions", "branch instructions retired",
			      0x00c4, 5, -1, false, 0x00c2, 0x00c2, 0x00c2 },
	[PMU_EV_BRANCH_MISSES] = { "branch-misses", NULL, "mispredicted branches retired",
				   0x00c5, 6, -1, false, 0x00c3, 0x00c3, 0x00c3 },
	/* AMD: L2 requests/misses (IC+DC+TLB fills) before Zen; on Zen, all L2
	 * request groups and the L2 access status misses (IC fill, LS RdBlkC). */
	[PMU_EV_CACHE_REFERENCES] = { "cache-references", NULL, "last-level cache references",
				      0x4f2e, 3, -1, false, 0x077d, 0xff60, 0xff60 },
	[PMU_EV_CACHE_MISSES] = { "cache-misses", NULL, "last-level cache misses",
				  0x412e, 4, -1, false, 0x077e, 0x0964, 0x0964 },
	/* AMD: decoder empty / dispatch stalls; Zen1 instruction pipe stalls;
	 * Zen2+ op queue empty, and no backend-stall event (as Linux). */
	[PMU_EV_STALLED_FRONTEND] = { "stalled-cycles-frontend", "idle-cycles-frontend",
				      "cycles the front end delivered nothing (AMD)",
				      0, -1, -1, false, 0x00d0, 0x0287, 0x00a9 },
	[PMU_EV_STALLED_BACKEND] = { "stalled-cycles-backend", "idle-cycles-backend",
				     "cycles dispatch stalled (AMD before Zen 2)",
				     0, -1, -1, false, 0x00d1, 0x0187, 0 },
	[PMU_EV_TOPDOWN_SLOTS] = { "topdown-slots", "slots", "issue slots (Intel topdown, fixed counter 3)",
				   0x01a4, 7, 3, false, 0, 0, 0 },
};

static u16 amd_encoding(const struct generic_event *e, const struct pmu_caps *caps)
{
	if (caps->family < 0x17)
		return e->amd_k7;
	if (caps->family == 0x17 && caps->model < 0x30)
		return e->amd_zen1;
	return e->amd_zen2;
}

/* Terms of NAME/TERMS/ and cpu/TERMS/. */
static const char *const terms[] = { "event", "umask", "cmask", "inv", "edge", "period", "freq", "pinned",
				     "any" };

const char *pmu_event_name(int i, const char **desc)
{
	if (i < 0 || i >= PMU_EV_COUNT)
		return NULL;
	if (desc)
		*desc = generic[i].desc;
	return generic[i].name;
}

void pmu_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	kvsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* Levenshtein distance, capped at 9 (names are short). */
static int distance(const char *a, const char *b)
{
	int la = (int)strnlen(a, 40), lb = (int)strnlen(b, 40);
	int row[41];

	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int up = row[j];
			int sub = diag + (a[i - 1] != b[j - 1]);
			int best = MIN(up + 1, row[j - 1] + 1);
			row[j] = MIN(best, sub);
			diag = up;
		}
	}
	return MIN(row[lb], 9);
}

/* Append "; did you mean 'x', 'y'?" with the (up to 3) closest words. */
static void suggest(char *err, size_t len, const char *word, const char *const *words, int n)
{
	int best[3] = { -1, -1, -1 }, bd[3] = { 99, 99, 99 };
	int limit = MAX(2, (int)strnlen(word, 40) / 3);

	for (int i = 0; i < n; i++) {
		int d = distance(word, words[i]);
		/* A prefix ("branch" for branch-misses) is a good match too. */
		if (d > limit && strncmp(words[i], word, strnlen(word, 40)))
			continue;
		for (int k = 0; k < 3; k++) {
			if (d < bd[k]) {
				for (int m = 2; m > k; m--) {
					best[m] = best[m - 1];
					bd[m] = bd[m - 1];
				}
				best[k] = i;
				bd[k] = d;
				break;
			}
		}
	}
	if (!err || best[0] < 0)
		return;
	for (int k = 0; k < 3 && best[k] >= 0; k++) {
		size_t at = strnlen(err, len);
		pmu_err(err + at, len - at, "%s'%s'", k ? ", " : "; did you mean ", words[best[k]]);
	}
	size_t at = strnlen(err, len);
	pmu_err(err + at, len - at, "?");
}

static const char *find_char(const char *s, size_t len, char c)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == c)
			return s + i;
	return NULL;
}

static int lookup_generic(const char *name, size_t len)
{
	for (int i = 0; i < PMU_EV_COUNT; i++) {
		const struct generic_event *g = &generic[i];
		if ((strlen(g->name) == len && !strncmp(g->name, name, len)) ||
		    (g->alias && strlen(g->alias) == len && !strncmp(g->alias, name, len)))
			return i;
	}
	return -1;
}

static bool parse_hex(const char *s, size_t len, u64 *out)
{
	u64 v = 0;

	if (!len || len > 16)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return false;
		v = v << 4 | (u64)d;
	}
	*out = v;
	return true;
}

static bool parse_num(const char *s, size_t len, u64 *out)
{
	char buf[24];

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	return parse_u64(buf, out) == 0;
}

/* The architectural event (Intel) that config selects, or -1. */
static int intel_arch_index(u64 config)
{
	u16 eu = config & (EVTSEL_EVENT | EVTSEL_UMASK);

	for (int i = 0; i < PMU_EV_COUNT; i++)
		if (generic[i].intel_arch >= 0 && generic[i].intel == eu)
			return generic[i].intel_arch;
	return -1;
}

static const char *const arch_names[8] = {
	"core cycles", "instructions retired", "reference cycles", "LLC references",
	"LLC misses", "branches retired", "branch mispredicts retired", "topdown slots",
};

static int apply_terms(const char *spec, const char *t, size_t tlen, bool raw,
		       struct pmu_event_attr *out, char *err, size_t errlen)
{
	u64 event = out->config & EVTSEL_EVENT, umask = (out->config & EVTSEL_UMASK) >> 8;
	u64 cmask = (out->config & EVTSEL_CMASK) >> EVTSEL_CMASK_SHIFT;
	u64 extra = out->config & (EVTSEL_EDGE | EVTSEL_INV);
	bool have_event = raw && out->config;
	/* Bits no field covers stay, so the caller can refuse them. */
	u64 rest = out->config & ~EVTSEL_RAW_AMD;

	event |= (out->config & EVTSEL_AMD_EVENT_HI) >> (EVTSEL_AMD_EVENT_HI_SHIFT - 8);
	while (tlen) {
		const char *comma = find_char(t, tlen, ',');
		size_t n = comma ? (size_t)(comma - t) : tlen;
		const char *eq = find_char(t, n, '=');
		size_t klen = eq ? (size_t)(eq - t) : n;
		const char *val = eq ? eq + 1 : NULL;
		size_t vlen = eq ? n - klen - 1 : 0;
		char key[16];
		u64 v = 0;

		if (!n) {
			pmu_err(err, errlen, "empty term in '%s'", spec);
			return -E_INVAL;
		}
		strlcpy(key, t, MIN(klen + 1, sizeof(key)));
		int k = -1;
		for (int i = 0; i < (int)ARRAY_SIZE(terms); i++)
			if (strlen(terms[i]) == klen && !strncmp(terms[i], t, klen))
				k = i;
		if (k < 0) {
			pmu_err(err, errlen, "unknown term '%s' in '%s' (terms: event umask cmask inv edge any period freq pinned)",
				key, spec);
			suggest(err, errlen, key, terms, ARRAY_SIZE(terms));
			return -E_INVAL;
		}
		bool flag = k == 3 || k == 4 || k == 7 || k == 8;
		if (flag && val) {
			pmu_err(err, errlen, "term '%s' takes no value in '%s'", key, spec);
			return -E_INVAL;
		}
		if (!flag && (!val || !parse_num(val, vlen, &v))) {
			pmu_err(err, errlen, "term '%s' needs a number (decimal or 0x hex) in '%s'", key, spec);
			return -E_INVAL;
		}
		if ((k <= 4 || k == 8) && !raw) {
			pmu_err(err, errlen, "'%s' is a named event: encoding terms (event, umask, cmask, inv, edge, any) "
				"belong in cpu/.../ or r<hex>", spec);
			return -E_INVAL;
		}
		switch (k) {
		case 0: event = v; have_event = true; break;
		case 1: umask = v; break;
		case 2: cmask = v; break;
		case 3: extra |= EVTSEL_INV; break;
		case 4: extra |= EVTSEL_EDGE; break;
		case 5:
			if (!v) {
				pmu_err(err, errlen, "period must be > 0 in '%s'", spec);
				return -E_INVAL;
			}
			out->period = v;
			out->flags |= PMU_ATTR_SAMPLE;
			break;
		case 6:
			if (!v) {
				pmu_err(err, errlen, "freq must be > 0 in '%s'", spec);
				return -E_INVAL;
			}
			out->freq = v;
			out->flags |= PMU_ATTR_SAMPLE | PMU_ATTR_FREQ;
			break;
		case 7: out->flags |= PMU_ATTR_PINNED; break;
		case 8: extra |= EVTSEL_ANY; break;
		}
		t += n + (comma ? 1 : 0);
		tlen -= n + (comma ? 1 : 0);
		if (comma && !tlen) {
			pmu_err(err, errlen, "empty term in '%s'", spec);
			return -E_INVAL;
		}
	}
	if ((out->flags & PMU_ATTR_FREQ) && out->period) {
		pmu_err(err, errlen, "period and freq exclude each other in '%s'", spec);
		return -E_INVAL;
	}
	if (!raw)
		return 0;
	if (!have_event) {
		pmu_err(err, errlen, "'%s' names no event: add event=0x..", spec);
		return -E_INVAL;
	}
	if (umask > 0xff || cmask > 0xff || event > 0xfff) {
		pmu_err(err, errlen, "'%s': umask and cmask are 8 bits, event is 8 bits (AMD: 12)", spec);
		return -E_INVAL;
	}
	out->config = (event & 0xff) | ((event >> 8) << EVTSEL_AMD_EVENT_HI_SHIFT) |
		      umask << EVTSEL_UMASK_SHIFT | cmask << EVTSEL_CMASK_SHIFT | extra | rest;
	return 0;
}

int pmu_event_parse(const char *spec, const struct pmu_caps *caps,
		    struct pmu_event_attr *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->fixed = -1;
	out->generic = PMU_EV_RAW;
	if (err && errlen)
		err[0] = 0;
	if (!spec || !*spec) {
		pmu_err(err, errlen, "empty event spec");
		return -E_INVAL;
	}
	size_t len = strlen(spec);
	const char *slash = find_char(spec, len, '/');
	size_t hlen = slash ? (size_t)(slash - spec) : len;
	const char *t = NULL;
	size_t tlen = 0;
	if (slash) {
		if (spec[len - 1] != '/' || spec + len - 1 == slash) {
			pmu_err(err, errlen, "'%s': terms go between two slashes, e.g. cycles/period=100000/", spec);
			return -E_INVAL;
		}
		t = slash + 1;
		tlen = (size_t)(spec + len - 1 - t);
	}
	strlcpy(out->name, spec, sizeof(out->name));

	bool raw = false;
	int g = -1;
	if (hlen == 3 && !strncmp(spec, "cpu", 3)) {
		if (!slash) {
			pmu_err(err, errlen, "'cpu' needs fields: cpu/event=0x..,umask=0x../");
			return -E_INVAL;
		}
		raw = true;
	} else if (hlen > 1 && spec[0] == 'r' && parse_hex(spec + 1, hlen - 1, &out->config)) {
		raw = true;
	} else {
		g = lookup_generic(spec, hlen);
		if (g < 0) {
			char name[40];
			const char *words[2 * PMU_EV_COUNT];
			int nw = 0;

			strlcpy(name, spec, MIN(hlen + 1, sizeof(name)));
			for (int i = 0; i < PMU_EV_COUNT; i++) {
				words[nw++] = generic[i].name;
				if (generic[i].alias)
					words[nw++] = generic[i].alias;
			}
			pmu_err(err, errlen, "unknown event '%s'", name);
			suggest(err, errlen, name, words, nw);
			return -E_NOENT;
		}
	}
	int rc = apply_terms(spec, t, tlen, raw, out, err, errlen);
	if (rc)
		return rc;

	if (!caps || caps->kind == PMU_KIND_NONE) {
		pmu_err(err, errlen, "'%s' needs a hardware PMU, and this machine has none (%s)",
			spec, caps ? caps->none_reason : "not probed");
		return -E_NODEV;
	}
	if (g >= 0) {
		const struct generic_event *e = &generic[g];
		u16 enc = caps->intel ? e->intel : amd_encoding(e, caps);

		strlcpy(out->name, e->name, sizeof(out->name));
		out->generic = g;
		if (!enc) {
			pmu_err(err, errlen, "'%s' has no %s encoding (%s)", e->name,
				caps->intel ? "Intel" : "AMD", e->desc);
			return -E_NODEV;
		}
		out->config = enc;
		if (caps->intel) {
			out->fixed = e->intel_fixed;
			if (e->fixed_only)
				out->flags |= PMU_ATTR_FIXED_ONLY;
			if (e->intel_arch >= 0 && (caps->arch_events_unavail >> e->intel_arch & 1)) {
				pmu_err(err, errlen, "'%s' is not available on this CPU "
					"(CPUID.0AH:EBX bit %d, %s, is set)", e->name, e->intel_arch,
					arch_names[e->intel_arch]);
				return -E_NODEV;
			}
			if (e->fixed_only && !(caps->fixed_bitmap >> e->intel_fixed & 1)) {
				pmu_err(err, errlen, "'%s' counts only on fixed counter %d, which this CPU lacks",
					e->name, e->intel_fixed);
				return -E_NODEV;
			}
		}
		return 0;
	}

	u64 allowed = caps->amd ? EVTSEL_RAW_AMD : EVTSEL_RAW_INTEL;
	/* AnyThread (bit 21): both threads of the core, from perfmon v3 until
	 * CPUID.0AH:EDX[15] deprecates it (SDM Vol. 3B 21.2.3). */
	bool any_ok = caps->intel && caps->version >= 3 && !caps->anythread_deprecated;
	if ((out->config & EVTSEL_ANY) && caps->intel && !any_ok) {
		pmu_err(err, errlen, "'%s' counts both threads of the core (AnyThread, bit 21), which "
			"this CPU lacks (perfmon v%u%s)", spec, (unsigned)caps->version,
			caps->anythread_deprecated ? ", deprecated by CPUID.0AH:EDX[15]" : "");
		return -E_NODEV;
	}
	if (any_ok)
		allowed |= EVTSEL_ANY;
	if (out->config & ~allowed) {
		pmu_err(err, errlen, "'%s' sets bits 0x%lx outside event/umask/edge/inv/cmask%s",
			spec, (unsigned long)(out->config & ~allowed), caps->amd ? "/event[11:8]" : "");
		return -E_INVAL;
	}
	if (caps->intel) {
		int a = intel_arch_index(out->config);
		if (a >= 0 && (caps->arch_events_unavail >> a & 1)) {
			pmu_err(err, errlen, "'%s' selects the architectural event '%s', which this CPU "
				"does not have (CPUID.0AH:EBX bit %d is set)", spec, arch_names[a], a);
			return -E_NODEV;
		}
		/* An exact fixed-counter encoding may use that counter. */
		for (int i = 0; i < PMU_EV_COUNT; i++)
			if (generic[i].intel_fixed >= 0 && !generic[i].fixed_only &&
			    generic[i].intel == out->config)
				out->fixed = generic[i].intel_fixed;
	}
	return 0;
}

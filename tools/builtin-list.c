/*
 * tools/builtin-list.c — `bareperf list`: the events the kernel understands
 * (events=...), with the raw PERFEVTSEL encodings it programs, taken from
 * the kernel's own table (pmu/events.c, built for the host); for a named
 * CPU model also that model's native events from libpfm4.
 * `bareperf list-apps`: the apps built into a kernel.elf, read from its
 * .apps section (struct app, apps/app.h).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmu/pmu.h"
#include "tools/commands.h"
#include "tools/util/paths.h"
#include "tools/util/symbol.h"

#ifdef HAVE_LIBPFM
#include <perfmon/pfmlib.h>
#endif

/* ---- events ------------------------------------------------------------ */

struct model {
	const char *name, *alias;
	bool intel;
	u32 family, model;
	const char *pfm;		/* libpfm4 PMU name, NULL if none */
	const char *desc;
};

/* The CPU models `list --cpu` knows by name (family/model as CPUID shows them). */
static const struct model models[] = {
	{ "intel", NULL, true, 6, 0x55, NULL, "Intel, architectural events only" },
	{ "core2", "core", true, 6, 0x0f, "core", "Intel Core 2" },
	{ "snb", "sandybridge", true, 6, 0x2a, "snb", "Intel Sandy Bridge" },
	{ "hsw", "haswell", true, 6, 0x3c, "hsw", "Intel Haswell" },
	{ "skl", "skylake", true, 6, 0x5e, "skl", "Intel Skylake" },
	{ "icl", "icelake", true, 6, 0x7e, "icl", "Intel Ice Lake" },
	{ "spr", "sapphirerapids", true, 6, 0x8f, "spr", "Intel Sapphire Rapids" },
	{ "amd", NULL, false, 0x19, 0x21, NULL, "AMD, generic events (Zen 3 encodings)" },
	{ "k8", NULL, false, 0x0f, 0x41, "amd64_k8_revg", "AMD K8 (family 0Fh)" },
	{ "fam10h", "barcelona", false, 0x10, 0x02, "amd64_fam10h_barcelona", "AMD family 10h" },
	{ "fam15h", "interlagos", false, 0x15, 0x02, "amd64_fam15h_interlagos", "AMD family 15h" },
	{ "zen1", NULL, false, 0x17, 0x01, "amd64_fam17h_zen1", "AMD Zen 1 (family 17h)" },
	{ "zen2", NULL, false, 0x17, 0x31, "amd64_fam17h_zen2", "AMD Zen 2 (family 17h)" },
	{ "zen3", NULL, false, 0x19, 0x21, "amd64_fam19h_zen3", "AMD Zen 3 (family 19h)" },
	{ "zen4", NULL, false, 0x19, 0x61, "amd64_fam19h_zen4", "AMD Zen 4 (family 19h)" },
};

#define NMODELS (sizeof(models) / sizeof(models[0]))

/* A PMU as pmu_probe() would describe one of this model: every counter
 * and every architectural event present. */
static void model_caps(const struct model *m, struct pmu_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->intel = m->intel;
	c->amd = !m->intel;
	c->family = m->family;
	c->model = m->model;
	if (m->intel) {
		c->kind = PMU_KIND_INTEL_ARCH;
		c->version = 5;
		c->nr_gp = 8;
		c->fixed_bitmap = 0xf;
		c->nr_fixed = 4;
		c->arch_events_len = 8;
	} else {
		c->kind = PMU_KIND_AMD_V2;
		c->version = 2;
		c->nr_gp = 6;
	}
	c->gp_width = c->fixed_width = 48;
	c->gp_mask = c->fixed_mask = (1ull << 48) - 1;
	c->max_period = (1ull << 47) - 1;
}

/* The encoding of generic event name on m: "r<hex>", "fixed N", or "-". */
static const char *encode(const struct model *m, const char *name, char *buf, size_t n)
{
	struct pmu_caps c;
	struct pmu_event_attr a;
	char err[200];

	model_caps(m, &c);
	if (pmu_event_parse(name, &c, &a, err, sizeof(err))) {
		snprintf(buf, n, "-");
		return buf;
	}
	if (a.flags & PMU_ATTR_FIXED_ONLY)
		snprintf(buf, n, "fixed%d", a.fixed);
	else
		snprintf(buf, n, "r%" PRIx64, (uint64_t)a.config);
	return buf;
}

static const struct model *find_model(const char *name)
{
	for (size_t i = 0; i < NMODELS; i++)
		if (!strcasecmp(models[i].name, name) ||
		    (models[i].alias && !strcasecmp(models[i].alias, name)) ||
		    (models[i].pfm && !strcasecmp(models[i].pfm, name)))
			return &models[i];
	return NULL;
}

/* The software events (pmu/profile.c's soft_events): every machine has them. */
static const struct {
	const char *name;
	const char *desc;
} soft_events[] = {
	{ "cpu-clock", "sample or count: the HPET-driven soft PMU, period in ns (the default "
	  "without a PMU)" },
	{ "task-clock", "count: ns the app ran (count=task-clock; stat's CPUs utilized)" },
	{ "tsc", "count: TSC ticks while the app ran (count=tsc)" },
};

/* perf list WORD: an event shows if WORD is in its name. */
static bool wanted(const char *filter, const char *name, const char *desc)
{
	(void)desc;
	return !filter || strcasestr(name, filter);
}

static void list_generic(const struct model *only, const char *filter)
{
	int shown = 0;

	/* Without a model: the encodings on each vendor family side by side. */
	static const char *const cols[] = { "intel", "k8", "zen1", "zen3" };
	char b[4][24];
	const char *desc;

	if (only)
		printf("Generic events on %s (family %xh model %xh), as events=NAME programs them:\n\n"
		       "  %-26s %-10s %s\n", only->desc, only->family, only->model,
		       "event", "encoding", "description");
	else
		printf("Generic events (events=NAME), with the PERFEVTSEL encoding the kernel "
		       "programs\n(r<hex> = event | umask << 8; fixedN = Intel fixed counter N):\n\n"
		       "  %-26s %-10s %-10s %-10s %-10s %s\n", "event", "Intel", "AMD K8-16h", "Zen1",
		       "Zen2+", "description");
	for (int i = 0; pmu_event_name(i, &desc); i++) {
		const char *name = pmu_event_name(i, &desc);
		if (!wanted(filter, name, desc))
			continue;
		shown++;
		if (only) {
			printf("  %-26s %-10s %s\n", name, encode(only, name, b[0], sizeof(b[0])), desc);
			continue;
		}
		for (int k = 0; k < 4; k++)
			encode(find_model(cols[k]), name, b[k], sizeof(b[k]));
		printf("  %-26s %-10s %-10s %-10s %-10s %s\n", name, b[0], b[1], b[2], b[3], desc);
	}
	printf("\nSoftware events (every machine, no PMU needed):\n\n  %-26s %s\n", "event",
	       "description");
	for (size_t i = 0; i < sizeof(soft_events) / sizeof(soft_events[0]); i++)
		if (wanted(filter, soft_events[i].name, soft_events[i].desc)) {
			printf("  %-26s %s\n", soft_events[i].name, soft_events[i].desc);
			shown++;
		}
	if (filter) {
		if (!shown)
			printf("\n  (no event matches '%s')\n", filter);
		return;
	}
	printf("\nRaw events: r<hex> (PERFEVTSEL bits 0-31; AMD EventSelect[11:8] at 32-35), or\n"
	       "  cpu/event=0x..,umask=0x..,cmask=N,inv,edge/; terms after a name:\n"
	       "  cycles/period=100000/, instructions/freq=1000/, .../pinned/\n");
}

#ifdef HAVE_LIBPFM
/* PERFEVTSEL bits an event spec may set (test/host/test_pmu_libpfm.c): libpfm
 * also sets EN, INT, OS and USR, which the kernel sets itself. */
#define SPEC_BITS 0xfff84ffffull

static bool pfm_encode(const char *spec, uint64_t *out)
{
	uint64_t codes[4] = { 0 };
	pfm_pmu_encode_arg_t e;

	memset(&e, 0, sizeof(e));
	e.size = sizeof(e);
	e.codes = codes;
	e.count = 4;
	if (pfm_get_os_event_encoding(spec, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &e) != PFM_SUCCESS ||
	    e.count < 1)
		return false;
	*out = codes[0] & SPEC_BITS;
	return true;
}

/* The model's native events and unit masks, from libpfm4. */
static int list_pfm(const char *pmu_name)
{
	pfm_pmu_info_t pi;
	pfm_pmu_t p;
	int n = 0;

	setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
	if (pfm_initialize() != PFM_SUCCESS) {
		fprintf(stderr, "bareperf list: libpfm4 does not initialize\n");
		return -1;
	}
	for (p = PFM_PMU_NONE; p < PFM_PMU_MAX; p++) {
		memset(&pi, 0, sizeof(pi));
		pi.size = sizeof(pi);
		if (pfm_get_pmu_info(p, &pi) == PFM_SUCCESS && pi.name && !strcmp(pi.name, pmu_name))
			break;
	}
	if (p == PFM_PMU_MAX) {
		fprintf(stderr, "bareperf list: libpfm4 has no PMU '%s'\n", pmu_name);
		return -1;
	}
	printf("\nNative events of %s (libpfm4 PMU %s), usable as events=r<hex>:\n\n", pi.desc,
	       pi.name);
	for (int i = pi.first_event; i != -1; i = pfm_get_event_next(i)) {
		pfm_event_info_t ei;
		char spec[512];
		uint64_t code;

		memset(&ei, 0, sizeof(ei));
		ei.size = sizeof(ei);
		if (pfm_get_event_info(i, PFM_OS_NONE, &ei) != PFM_SUCCESS)
			continue;
		snprintf(spec, sizeof(spec), "%s::%s", pi.name, ei.name);
		if (pfm_encode(spec, &code))
			printf("  %-46s r%-9" PRIx64 " %s\n", ei.name, code, ei.desc ? ei.desc : "");
		else
			printf("  %-46s %-10s %s\n", ei.name, "(umask)", ei.desc ? ei.desc : "");
		n++;
		for (int a = 0; a < ei.nattrs; a++) {
			pfm_event_attr_info_t ai;
			memset(&ai, 0, sizeof(ai));
			ai.size = sizeof(ai);
			if (pfm_get_event_attr_info(i, a, PFM_OS_NONE, &ai) != PFM_SUCCESS ||
			    ai.type != PFM_ATTR_UMASK)
				continue;
			snprintf(spec, sizeof(spec), "%s::%s:%s", pi.name, ei.name, ai.name);
			char sub[128];
			snprintf(sub, sizeof(sub), "  :%s", ai.name);
			if (pfm_encode(spec, &code))
				printf("  %-46s r%-9" PRIx64 " %s\n", sub, code, ai.desc ? ai.desc : "");
		}
	}
	pfm_terminate();
	printf("\n(%d events; encodings from libpfm4, an independent table)\n", n);
	return 0;
}
#endif

static void list_usage(FILE *f)
{
	fprintf(f, "usage: bareperf list [--cpu MODEL] [WORD]\n"
		"  the events the kernel knows (events=..., count=...), with their raw encodings:\n"
		"  the generic hardware events and the software ones (cpu-clock, task-clock, tsc);\n"
		"  WORD: only the events with WORD in their name (as perf list WORD)\n"
		"  --cpu MODEL   encodings on one CPU model, and its native events (libpfm4);\n"
		"                MODEL is one of:");
	for (size_t i = 0; i < NMODELS; i++)
		fprintf(f, "%s%s", i % 8 ? " " : "\n                  ", models[i].name);
	fprintf(f, "\n");
}

int cmd_list(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cpu", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct model *m = NULL;
	const char *filter;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!(m = find_model(optarg))) {
				fprintf(stderr, "bareperf list: no CPU model '%s' (bareperf list --help "
					"names them)\n", optarg);
				return 2;
			}
			break;
		case 'h':
			list_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "bareperf list: bad option '%s' (bareperf list --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind + 1 < argc) {
		fprintf(stderr, "bareperf list: unexpected argument '%s' (one filter word)\n",
			argv[optind + 1]);
		return 2;
	}
	filter = optind < argc ? argv[optind] : NULL;
	list_generic(m, filter);
	if (m && m->pfm && !filter) {
#ifdef HAVE_LIBPFM
		if (list_pfm(m->pfm))
			return 1;
#else
		printf("\n(native events of %s need libpfm4: apt-get install libpfm4-dev, "
		       "then rebuild)\n", m->desc);
#endif
	}
	return ferror(stdout) ? 1 : 0;
}

/* ---- apps -------------------------------------------------------------- */

/* struct app of kernel/kernel.h as laid out in the x86_64 kernel. */
struct app_image {
	uint64_t name, desc, main;
	uint32_t flags;
	uint32_t pad;
};
_Static_assert(sizeof(struct app_image) == 32, "struct app layout (kernel/kernel.h)");
#define APP_IMAGE_TEST	(1u << 0)	/* APP_TEST */

int cmd_list_apps(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "kernel", required_argument, NULL, 'k' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *kernel = paths_kernel();
	bool all = false;
	struct elf_file *e;
	const void *apps;
	size_t len;
	char err[4200];
	int c, n = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":k:ah", lo, NULL)) != -1) {
		switch (c) {
		case 'k': kernel = optarg; break;
		case 'a': all = true; break;
		case 'h':
			printf("usage: bareperf list-apps [-k|--kernel PATH] [--all]\n"
			       "  the apps built into kernel.elf (default LIBDIR/kernel.elf, as for\n"
			       "  bareperf record), with their descriptions; --all adds the guest\n"
			       "  test apps\n");
			return 0;
		default:
			fprintf(stderr, "bareperf list-apps: bad option '%s'\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bareperf list-apps: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (elf_file_open(&e, kernel, err, sizeof(err))) {
		fprintf(stderr, "bareperf list-apps: %s\n", err);
		return 1;
	}
	if (!elf_file_section(e, ".apps", &apps, &len)) {
		elf_file_close(e);
		fprintf(stderr, "bareperf list-apps: %s has no .apps section: not a bareperf "
			"kernel\n", kernel);
		return 1;
	}
	for (size_t i = 0; i < len / sizeof(struct app_image); i++) {
		struct app_image a;
		memcpy(&a, (const uint8_t *)apps + i * sizeof(a), sizeof(a));
		if ((a.flags & APP_IMAGE_TEST) && !all)
			continue;
		const char *an = elf_file_string(e, a.name), *ad = elf_file_string(e, a.desc);
		if (!an) {
			fprintf(stderr, "bareperf list-apps: %s: app %zu has a name pointer "
				"(0x%" PRIx64 ") outside the image\n", kernel, i, a.name);
			continue;
		}
		printf("  %-16s %s%s\n", an, ad ? ad : "", a.flags & APP_IMAGE_TEST ? " (test)" : "");
		n++;
	}
	elf_file_close(e);
	if (!n)
		fprintf(stderr, "bareperf list-apps: %s holds no apps\n", kernel);
	return ferror(stdout) ? 1 : 0;
}

/*
 * program.c — loaded programs (apps/program.h): placed, linked, mapped,
 * registered, and each run guarded.
 *
 * A program's memory, one vmalloc_code area: its text pages (read-only,
 * executable), its read-only data pages (no-execute), then its data and
 * bss (read-write, no-execute). Beside it, from pmm: its PROGRAM record
 * with one bp_program_section per placed section, and its function
 * symbols sorted by address, with their names.
 */
#include "kernel/kernel.h"
#include "kernel/trap.h"
#include "kernel/unwind.h"
#include "kernel/percpu.h"
#include "kernel/platform/apic.h"
#include "apps/app.h"
#include "apps/program.h"
#include "apps/program_elf.h"
#include "apps/sdk.h"
#include "profile/profile.h"
#include <uapi/perf_ring.h>

#define SECTIONS_MAX	512	/* placed sections a PROGRAM record holds (< 64 KiB) */

struct program_sym {
	u64 addr, size;
	u32 name;			/* in names */
};

struct program {
	struct app app;
	char name[32], desc[64];
	u64 base;			/* the mapping: pages[] of each class, in order */
	size_t pages[ELF_CLASSES], npages;
	u64 text, text_end;
	int (*main)(int argc, char **argv);
	u64 meta;			/* pmm: the record, the symbols, their names */
	size_t meta_pages;
	struct bp_record_program *rec;
	const struct program_sym *syms;
	u32 nsyms;
	const char *names;
	bool used;
};

static struct program programs[PROGRAM_MAX];

static struct program *of(const struct app *app)
{
	return (struct program *)((char *)app - offsetof(struct program, app));
}

const struct app *program_find(const char *name)
{
	for (int i = 0; i < PROGRAM_MAX; i++)
		if (programs[i].used && !strcmp(programs[i].name, name))
			return &programs[i].app;
	return NULL;
}

const struct app *program_next(const struct app *prev)
{
	for (int i = prev ? of(prev) - programs + 1 : 0; i < PROGRAM_MAX; i++)
		if (programs[i].used)
			return &programs[i].app;
	return NULL;
}

bool program_text_holds(u64 addr)
{
	for (int i = 0; i < PROGRAM_MAX; i++)
		if (programs[i].used && addr >= programs[i].text && addr < programs[i].text_end)
			return true;
	return false;
}

/* ksym_set_more's: a loaded program's function holding addr. */
static const char *program_ksym(u64 addr, u64 *offset, u64 *size)
{
	for (int i = 0; i < PROGRAM_MAX; i++) {
		const struct program *p = &programs[i];
		if (!p->used || addr < p->text || addr >= p->text_end)
			continue;
		u32 lo = 0, hi = p->nsyms;
		while (hi - lo > 1) {		/* the last symbol at or below addr */
			u32 mid = (lo + hi) / 2;
			if (p->syms[mid].addr <= addr)
				lo = mid;
			else
				hi = mid;
		}
		const struct program_sym *s = &p->syms[lo];
		if (!p->nsyms || s->addr > addr || (s->size && addr >= s->addr + s->size))
			return NULL;
		if (offset)
			*offset = addr - s->addr;
		if (size)
			*size = s->size;
		return p->names + s->name;
	}
	return NULL;
}

static void program_free(struct program *p)
{
	if (p->base)
		vfree_stack(p->base + p->npages * PAGE_SIZE, p->npages);
	if (p->meta)
		pmm_free(p->meta, p->meta_pages);
	memset(p, 0, sizeof(*p));
}

static u64 resolve(const char *name)
{
	const struct sdk_export *e = sdk_export_find(name);

	return e ? (u64)e->addr : 0;
}

/* The placed sections' bytes into the mapping (NOBITS stays zero). */
static void copy_sections(const struct elf_obj *o, const u64 *addr)
{
	for (u32 i = 0; i < o->shnum; i++)
		if (elf_section_class(o, i) != ELF_NONE && o->sh[i].type != SHT_NOBITS)
			memcpy((void *)addr[i], o->buf + o->sh[i].offset, o->sh[i].size);
}

static bool is_func(const struct elf_obj *o, u32 i)
{
	const struct elf64_sym *s = &o->sym[i];

	return (s->info & 0xf) == STT_FUNC && s->shndx && s->shndx < o->shnum &&
	       elf_section_class(o, s->shndx) == ELF_TEXT && o->str[s->name];
}

static void sort_syms(struct program_sym *s, u32 n)
{
	for (u32 gap = n / 2; gap; gap /= 2)		/* Shell's sort */
		for (u32 i = gap; i < n; i++)
			for (u32 j = i; j >= gap && s[j - gap].addr > s[j].addr; j -= gap) {
				struct program_sym t = s[j];
				s[j] = s[j - gap];
				s[j - gap] = t;
			}
}

/* The PROGRAM record and the symbol table, in one pmm block. */
static int make_meta(struct program *p, const struct elf_obj *o, const u64 *addr,
		     const u64 *val, char *err, size_t n)
{
	u32 nsec = 0, nsyms = 0;
	size_t names = 0;

	for (u32 i = 0; i < o->shnum; i++)
		nsec += elf_section_class(o, i) != ELF_NONE;
	for (u32 i = 1; i < o->nsym; i++)
		if (is_func(o, i)) {
			nsyms++;
			names += strlen(o->str + o->sym[i].name) + 1;
		}
	if (nsec > SECTIONS_MAX)
		return ksnprintf(err, n, "%u allocated sections, more than %u", nsec,
				 SECTIONS_MAX), -1;
	size_t rec = sizeof(struct bp_record_program) + nsec * sizeof(struct bp_program_section);
	size_t bytes = ALIGN_UP(rec, 8ul) + nsyms * sizeof(struct program_sym) + names;
	p->meta_pages = ALIGN_UP(bytes, PAGE_SIZE) / PAGE_SIZE;
	if (!(p->meta = pmm_alloc(p->meta_pages)))
		return ksnprintf(err, n, "too little memory for the program's symbols"), -1;
	p->rec = (void *)p->meta;
	struct bp_program_section *sec = (void *)(p->rec + 1);
	struct program_sym *syms = (void *)(p->meta + ALIGN_UP(rec, 8ul));
	char *name = (char *)(syms + nsyms);
	*p->rec = (struct bp_record_program){
		.header = { BP_RECORD_PROGRAM, 0, rec }, .nr = nsec,
		.start = p->base, .end = p->base + p->npages * PAGE_SIZE,
	};
	p->rec->build_id_len = elf_build_id(o, p->rec->build_id, sizeof(p->rec->build_id));
	strlcpy(p->rec->name, p->name, sizeof(p->rec->name));
	for (u32 i = 0, k = 0; i < o->shnum; i++) {
		int c = elf_section_class(o, i);
		u32 flags = c == ELF_TEXT ? BP_PROGRAM_SEC_EXEC : c == ELF_DATA ? BP_PROGRAM_SEC_WRITE : 0;
		if (c != ELF_NONE)
			sec[k++] = (struct bp_program_section){ addr[i], o->sh[i].size, i, flags };
	}
	p->names = name;
	for (u32 i = 1, k = 0; i < o->nsym; i++) {
		if (!is_func(o, i))
			continue;
		size_t l = strlen(o->str + o->sym[i].name) + 1;
		syms[k++] = (struct program_sym){ val[i], o->sym[i].size, name - p->names };
		memcpy(name, o->str + o->sym[i].name, l);
		name += l;
	}
	sort_syms(syms, nsyms);
	p->syms = syms;
	p->nsyms = nsyms;
	return 0;
}

/* Place, copy, link and protect the object checked as o into p. */
static int map_program(struct program *p, const struct elf_obj *o, u64 *addr, u64 *val,
		       char *err, size_t n)
{
	u64 size[ELF_CLASSES], base[ELF_CLASSES];

	if (elf_layout(o, addr, val, size, err, n))
		return -1;
	for (int c = 0; c < ELF_CLASSES; c++) {
		p->pages[c] = ALIGN_UP(size[c], PAGE_SIZE) / PAGE_SIZE;
		p->npages += p->pages[c];
	}
	if (p->npages > pmm_free_pages() / 2 || !(p->base = vmalloc_code(MAX(p->npages, 1ul))))
		return ksnprintf(err, n, "too little memory for %lu pages of program",
				 p->npages), -1;
	p->npages = MAX(p->npages, 1ul);
	base[0] = p->base;
	for (int c = 1; c < ELF_CLASSES; c++)
		base[c] = base[c - 1] + p->pages[c - 1] * PAGE_SIZE;
	elf_place(o, base, addr);
	copy_sections(o, addr);
	if (elf_link(o, base, addr, val, resolve, err, n))
		return -1;
	/* W^X from here on. */
	if (p->pages[ELF_TEXT])
		paging_code_exec(base[ELF_TEXT], p->pages[ELF_TEXT], true);
	if (p->pages[ELF_RODATA])
		paging_code_rodata(base[ELF_RODATA], p->pages[ELF_RODATA]);
	p->text = base[ELF_TEXT];
	p->text_end = base[ELF_TEXT] + size[ELF_TEXT];
	return 0;
}

static int check_object(const struct elf_obj *o, u32 *main, char *err, size_t n)
{
	u32 v = elf_sdk_version(o);

	if (v > SDK_VERSION)
		return ksnprintf(err, n, "the program was built for SDK version %u (bareperf.h); "
				 "this kernel has version %u: rebuild it with this kernel's header",
				 v, SDK_VERSION), -1;
	*main = elf_find_global(o, "main");
	if (!*main || elf_section_class(o, o->sym[*main].shndx) != ELF_TEXT)
		return ksnprintf(err, n, "no main: a program defines int main(int argc, "
				 "char **argv)"), -1;
	return 0;
}

static void report_sections(const struct program *p, const struct elf_obj *o,
			    program_item_fn item)
{
	const struct bp_program_section *sec = (const void *)(p->rec + 1);

	for (u32 k = 0; k < p->rec->nr; k++)
		item(sec[k].shndx, elf_section_name(o, sec[k].shndx), sec[k].addr, sec[k].size,
		     sec[k].flags);
}

int program_load(const char *name, const void *buf, size_t len, program_item_fn item,
		 char *err, size_t n)
{
	static struct program p;
	static bool hooked;
	struct elf_obj o;
	u32 main;

	if (elf_parse(&o, buf, len, err, n) || check_object(&o, &main, err, n))
		return -1;
	/* Scratch: each section's offset, then address; each symbol's value. */
	size_t scratch = ALIGN_UP(((size_t)o.shnum + o.nsym) * sizeof(u64), PAGE_SIZE) / PAGE_SIZE;
	u64 *addr = (u64 *)pmm_alloc(scratch), *val = addr + o.shnum;
	if (!addr)
		return ksnprintf(err, n, "too little memory to link %u sections and %u symbols",
				 o.shnum, o.nsym), -1;
	memset(&p, 0, sizeof(p));
	strlcpy(p.name, name, sizeof(p.name));
	int e = map_program(&p, &o, addr, val, err, n) || make_meta(&p, &o, addr, val, err, n);
	p.main = (int (*)(int, char **))val[main];
	pmm_free((u64)addr, scratch);
	if (e) {
		program_free(&p);
		return -1;
	}
	/* Replace the program of that name, or take a free slot. */
	const struct app *old = program_find(name);
	struct program *slot = old ? of(old) : NULL;
	for (int i = 0; !slot && i < PROGRAM_MAX; i++)
		if (!programs[i].used)
			slot = &programs[i];
	if (!slot) {
		program_free(&p);
		return ksnprintf(err, n, "%d programs are loaded already; load one again under "
				 "its name to replace it", PROGRAM_MAX), -1;
	}
	if (slot->used)
		program_free(slot);
	*slot = p;
	ksnprintf(slot->desc, sizeof(slot->desc), "loaded program, %lu bytes of text",
		  slot->text_end - slot->text);
	slot->app = (struct app){ slot->name, slot->desc, slot->main, APP_PROGRAM };
	slot->used = true;
	if (!hooked) {
		ksym_set_more(program_ksym);
		hooked = true;
	}
	report_sections(slot, &o, item);
	return 0;
}

/*
 * The guarded run: run is the program running now. program_main sets the
 * unwind point on the program's CPU; the fix-up and the watchdog unwind
 * to it (in trap and interrupt context, on that CPU only).
 */
enum { STOP_NONE, STOP_FAULT, STOP_TIMEOUT };

static struct {
	volatile bool active;
	u32 cpu;
	const struct program *p;
	struct unwind_point at;
	u64 t0, timeout_ns;
	volatile int why;
	u64 vector, error, rip, cr2;
} run;

static bool in_program(u64 rip)
{
	return run.p && rip >= run.p->base && rip < run.p->base + run.p->npages * PAGE_SIZE;
}

static bool program_fault_fixup(struct trap_frame *f)
{
	u64 v = f->vector;

	if (!run.active || this_cpu_id() != run.cpu || v >= 32 || v == VEC_NMI || v == VEC_DF ||
	    v == VEC_MC || (!in_program(f->rip) && !sdk_export_holds(f->rip)))
		return false;
	run.active = false;
	run.why = STOP_FAULT;
	run.vector = v;
	run.error = f->error;
	run.rip = f->rip;
	run.cr2 = v == VEC_PF ? read_cr2() : 0;
	kprintf("\nprogram '%s': CPU exception %s (vector %lu) on cpu %u; the run ends\n",
		run.p->name, trap_name(v), v, run.cpu);
	trap_report(f);
	unwind_frame(f, &run.at);
	return true;
}

/* Stopped only while in the program's own code (an exported function
 * may hold the console), unless it stays outside for a second timeout.
 * In interrupt or NMI context on the program's CPU. */
static void stop_if_late(struct trap_frame *f)
{
	if (!run.active || this_cpu_id() != run.cpu || !tsc_since_ns(run.t0, run.timeout_ns) ||
	    (!in_program(f->rip) && !tsc_since_ns(run.t0, 2 * run.timeout_ns)))
		return;
	run.active = false;
	run.why = STOP_TIMEOUT;
	run.rip = f->rip;
	unwind_frame(f, &run.at);
}

/*
 * A program that turned interrupts off gets no tick: every NMI on its CPU
 * checks the deadline too (a cpu-clock run's HPET NMIs, the PMU's). Claims
 * none: each is its source's.
 */
static bool program_nmi(struct trap_frame *f)
{
	stop_if_late(f);
	return false;
}

void program_watchdog(struct trap_frame *f)
{
	stop_if_late(f);
}

/* The HPET's NMIs, a quarter of the timeout apart, when a run has no
 * sampling NMIs of its own (no cpu-clock): program_nmi sees them. */
static void program_hpet_tick(struct trap_frame *f, void *arg)
{
	(void)f;
	(void)arg;
}

static u64 timeout_ms;

void program_set_timeout(u64 ms)
{
	timeout_ms = ms;
}

void program_run_begin(const struct app *app, struct profile_app *who)
{
	const struct program *p = of(app);

	memset(&run, 0, sizeof(run));
	run.p = p;
	run.timeout_ns = (timeout_ms ? timeout_ms : PROGRAM_TIMEOUT_MS) * 1000000ul;
	who->text_start = p->text;
	who->text_end = p->text_end;
	who->record = p->rec;
	trap_set_fault_fixup(program_fault_fixup);
	sdk_run_begin(p->name);
}

int program_main(const struct app *app, int argc, char **argv)
{
	static volatile int rc;
	static bool registered;
	static volatile bool own_hpet;

	rc = EXIT_FAIL;
	run.cpu = this_cpu_id();
	u64 ticks = hpet_hz() / 1000 * MAX(run.timeout_ns / 4000000, 1ul);
	own_hpet = ticks && !hpet_nmi_start(MIN(ticks, HPET_NMI_MAX_TICKS), this_cpu()->apic_id,
					    program_hpet_tick, NULL);
	/* After the samplers' and the HPET's: they see the frame before an
	 * unwind. */
	if (!registered && !nmi_register(program_nmi))
		registered = true;
	if (!unwind_save(&run.at)) {
		run.t0 = rdtsc_ordered();
		__atomic_store_n(&run.active, true, __ATOMIC_RELEASE);
		rc = of(app)->main(argc, argv);
		__atomic_store_n(&run.active, false, __ATOMIC_RELEASE);
	}
	if (own_hpet)
		hpet_nmi_stop();
	sdk_main_end();
	return run.why ? EXIT_FAIL : rc;
}

/* "main+0x12", or the address. */
static void where(u64 rip, char *buf, size_t n)
{
	u64 off;
	const char *name = ksym_lookup(rip, &off, NULL);

	if (name)
		ksnprintf(buf, n, "%s+%#lx", name, off);
	else
		ksnprintf(buf, n, "%#lx", rip);
}

bool program_run_end(char *why, size_t n)
{
	char at[80];

	sdk_run_end();
	if (!run.why)
		return false;
	where(run.rip, at, sizeof(at));
	if (run.why == STOP_TIMEOUT)
		ksnprintf(why, n, "program '%s' stopped: still running after %lu ms, at %s (the "
			  "run's timeout: record --run-timeout, START_RUN's TIMEOUT_MS)", run.p->name,
			  run.timeout_ns / 1000000, at);
	else if (run.vector == VEC_PF)
		ksnprintf(why, n, "program '%s' faulted: %s at %s (address %#lx, %s, %s)",
			  run.p->name, trap_name(run.vector), at, run.cr2,
			  run.error & 2 ? "write" : run.error & 16 ? "instruction fetch" : "read",
			  run.error & 1 ? "protection violation" : "not present");
	else
		ksnprintf(why, n, "program '%s' faulted: %s at %s", run.p->name,
			  trap_name(run.vector), at);
	kprintf("%s\n", why);
	return true;
}

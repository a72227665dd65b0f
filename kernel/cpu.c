/*
 * cpu.c — CPU identification, the boot-time control-register set-up, and
 * the per-CPU GDT/TSS.
 */
#include "kernel/kernel.h"
#include "kernel/boot.h"
#include "kernel/percpu.h"

struct cpu_features cpu_features;

static void copy_regs(char *dst, u32 a, u32 b, u32 c, u32 d)
{
	u32 r[4] = { a, b, c, d };
	memcpy(dst, r, 16);
}

void cpu_probe(void)
{
	struct cpu_features *f = &cpu_features;
	u32 a, b, c, d;

	cpuid(0, &a, &b, &c, &d);
	f->max_leaf = a;
	memcpy(f->vendor + 0, &b, 4);
	memcpy(f->vendor + 4, &d, 4);
	memcpy(f->vendor + 8, &c, 4);

	cpuid(1, &a, &b, &c, &d);
	/* SDM Vol. 2A CPUID leaf 1 EAX: display family/model. */
	f->stepping = a & 0xf;
	f->family = (a >> 8) & 0xf;
	f->model = (a >> 4) & 0xf;
	if (f->family == 0xf)
		f->family += (a >> 20) & 0xff;
	if (f->family == 0x6 || f->family >= 0xf)
		f->model |= ((a >> 16) & 0xf) << 4;
	f->tsc = d & (1u << 4);
	f->x2apic = c & (1u << 21);
	f->tsc_deadline = c & (1u << 24);
	f->xsave = c & (1u << 26);
	f->avx = (c & (1u << 28)) && f->xsave;
	f->hypervisor = c & (1u << 31);

	if (f->max_leaf >= 7) {
		cpuid_count(7, 0, &a, &b, &c, &d);
		f->avx2 = (b & (1u << 5)) && f->avx;
	}
	if (f->hypervisor) {
		cpuid(0x40000000, &a, &b, &c, &d);
		memcpy(f->hypervisor_id + 0, &b, 4);
		memcpy(f->hypervisor_id + 4, &c, 4);
		memcpy(f->hypervisor_id + 8, &d, 4);
	}

	cpuid(0x80000000, &a, &b, &c, &d);
	f->max_ext_leaf = a;
	if (a >= 0x80000001) {
		cpuid(0x80000001, &a, &b, &c, &d);
		f->nx = d & (1u << 20);
		f->pdpe1gb = d & (1u << 26);
	}
	if (f->max_ext_leaf >= 0x80000004) {
		for (u32 i = 0; i < 3; i++) {
			cpuid(0x80000002 + i, &a, &b, &c, &d);
			copy_regs(f->brand + 16 * i, a, b, c, d);
		}
		/* Brand strings are right-justified with spaces on some parts. */
		char *s = f->brand;
		while (*s == ' ')
			s++;
		memmove(f->brand, s, strlen(s) + 1);
	}
	if (f->max_ext_leaf >= 0x80000007) {
		cpuid(0x80000007, &a, &b, &c, &d);
		f->invariant_tsc = d & (1u << 8);
	}
}

/*
 * Control registers for this CPU: write-protect in ring 0, NX, and the
 * SSE/AVX state apps may use (SDM Vol. 3A 13.1, Vol. 1 13.3). Kernel C is
 * built with -mgeneral-regs-only, so no handler ever touches vector state.
 */
void cpu_setup(void)
{
	const struct cpu_features *f = &cpu_features;

	if (f->nx)
		wrmsr(MSR_IA32_EFER, rdmsr(MSR_IA32_EFER) | EFER_NXE);
	write_cr0((read_cr0() | CR0_WP | CR0_MP | CR0_NE) & ~(CR0_EM | CR0_TS));
	u64 cr4 = read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT | CR4_PCE;
	if (f->xsave)
		cr4 |= CR4_OSXSAVE;
	write_cr4(cr4);
	if (f->xsave)
		xsetbv(0, XCR0_X87 | XCR0_SSE | (f->avx ? XCR0_AVX : 0));
	/* PAT entry 4 (a page's PAT bit set, PCD and PWT clear) becomes
	 * write-combining, for the framebuffer (kernel/paging.c,
	 * paging_map_wc); nothing else sets the PAT bit. Every CPU runs this:
	 * the SDM (Vol. 3A 13.12.4) asks for one PAT on all of them. */
	u64 pat = rdmsr(MSR_IA32_PAT);
	pat &= ~(0xffull << PAT_ENTRY_SHIFT(4));
	wrmsr(MSR_IA32_PAT, pat | PAT_WC << PAT_ENTRY_SHIFT(4));
}

static u64 gdt_tss_low(u64 base, u32 limit)
{
	/* SDM Vol. 3A 8.2.3: 64-bit TSS descriptor, type 9 (available). */
	return (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ul << 40) |
	       ((u64)((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
}

static u8 early_ist[IST_COUNT][4096] __attribute__((aligned(16)));

void percpu_init(struct percpu *pc, u32 cpu, u32 apic_id)
{
	pc->self = pc;
	pc->cpu = cpu;
	pc->apic_id = apic_id;
	pc->gdt[0] = 0;
	/* The accessed bits preset (type 0xb, 0x3): the CPU sets them when
	 * it loads a descriptor (SDM Vol. 3A 3.4.5.1), CS on every interrupt,
	 * a write the tables code runs on refuse (kernel/paging.c). */
	pc->gdt[1] = 0x00af9b000000ffff;	/* 0x08: 64-bit code */
	pc->gdt[2] = 0x00cf93000000ffff;	/* 0x10: data */
	pc->gdt[3] = gdt_tss_low((u64)&pc->tss, sizeof(pc->tss) - 1);
	pc->gdt[4] = (u64)&pc->tss >> 32;
	pc->tss.iomap_base = sizeof(pc->tss);	/* no I/O bitmap */
	/* Until percpu_alloc_stacks() runs, the ISTs use small static stacks
	 * (boot CPU only: paging is not ours yet, so no guarded stacks; the
	 * boot CPU allocates an AP's stacks before starting it). */
	for (int i = 0; i < IST_COUNT; i++)
		if (!pc->tss.ist[i])
			pc->tss.ist[i] = (u64)early_ist[i] + sizeof(early_ist[i]);

	struct desc_ptr d = { sizeof(pc->gdt) - 1, (u64)pc->gdt };
	lgdt(&d);
	/* Reload CS through a far return, then the data segments. */
	asm volatile("pushq %0\n\t"
		     "leaq 1f(%%rip), %%rax\n\t"
		     "pushq %%rax\n\t"
		     "lretq\n"
		     "1:\n\t"
		     "movl %1, %%eax\n\t"
		     "movl %%eax, %%ds\n\t"
		     "movl %%eax, %%es\n\t"
		     "movl %%eax, %%ss\n\t"
		     "xorl %%eax, %%eax\n\t"
		     "movl %%eax, %%fs\n\t"
		     "movl %%eax, %%gs\n\t"
		     : : "i"(SEL_KCODE), "i"(SEL_KDATA) : "rax", "memory");
	ltr(SEL_TSS);
	/* Loading %gs cleared the base; set it after (SDM Vol. 3A 3.4.4.1). */
	wrmsr(MSR_IA32_GS_BASE, (u64)pc);
}

void percpu_alloc_stacks(struct percpu *pc)
{
	for (int i = 0; i < IST_COUNT; i++) {
		u64 top = vmalloc_cpu_stack(IST_STACK_PAGES);
		if (!top)
			panic("percpu_alloc_stacks: no memory for IST stacks");
		pc->tss.ist[i] = top;
	}
}

/*
 * One probing instruction that may fault: label 1 is the instruction; on
 * success %[err] = 0, and a #GP or #UD there resumes (trap.c's extable
 * lookup) at label 3, which sets %[err] = -1 and jumps past it to 2.
 */
#define SAFE_INSN(insn)						\
	"1: " insn "\n\t"						\
	"xorl %[err], %[err]\n"					\
	"2:\n\t"						\
	".pushsection .text.fixup, \"ax\"\n"			\
	"3: movl $-1, %[err]\n\t"				\
	"jmp 2b\n\t"						\
	".popsection\n\t"					\
	".pushsection .extable, \"a\"\n\t"			\
	".balign 8\n\t"						\
	".quad 1b, 3b\n\t"					\
	".popsection\n\t"

int rdmsr_safe(u32 msr, u64 *val)
{
	u32 lo = 0, hi = 0;
	int err;

	asm volatile(SAFE_INSN("rdmsr")
		     : [err] "=r"(err), "+a"(lo), "+d"(hi) : "c"(msr));
	*val = ((u64)hi << 32) | lo;
	return err ? -E_FAULT : 0;
}

int wrmsr_safe(u32 msr, u64 val)
{
	int err;

	asm volatile(SAFE_INSN("wrmsr")
		     : [err] "=r"(err)
		     : "c"(msr), "a"((u32)val), "d"((u32)(val >> 32)) : "memory");
	return err ? -E_FAULT : 0;
}

/* rdpmc serialized on both sides, as x86.h's rdpmc(). */
int rdpmc_safe(u32 ecx, u64 *val)
{
	u32 lo = 0, hi = 0;
	int err;

	asm volatile("lfence\n\t"
		     SAFE_INSN("rdpmc")
		     "lfence"
		     : [err] "=r"(err), "+a"(lo), "+d"(hi) : "c"(ecx) : "memory");
	*val = ((u64)hi << 32) | lo;
	return err ? -E_FAULT : 0;
}

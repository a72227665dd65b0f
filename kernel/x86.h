/*
 * x86.h — one inline wrapper per privileged instruction, and the MSR and
 * control-register names the kernel uses (Intel SDM Vol. 3A ch. 2, Vol. 4).
 *
 * No other file writes its own asm for these. The *_safe variants turn a
 * fault into a return value; they are for probing only (see kernel/trap.c,
 * which resumes after a faulting instruction registered by extable_*).
 */
#ifndef BAREPERF_KERNEL_X86_H
#define BAREPERF_KERNEL_X86_H

#include <stdint.h>
#include <stdbool.h>

/*
 * The integer types, the one rule: kernel code (kernel/, pmu/, apps/)
 * writes u8/u16/u32/u64/s32/s64; code shared with the host — the uapi
 * headers (include/uapi), ringbuf/ (the ring), wire/ (the codec),
 * kernel/lib — writes <stdint.h>'s uint64_t etc., so
 * it compiles unchanged in host programs that do not include this file.
 */
typedef uint8_t  u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t  s64;
typedef int32_t  s32;

/* Control registers (SDM Vol. 3A 2.5). */
#define CR0_MP			(1ul << 1)
#define CR0_EM			(1ul << 2)
#define CR0_TS			(1ul << 3)
#define CR0_NE			(1ul << 5)
#define CR0_WP			(1ul << 16)
#define CR4_PAE			(1ul << 5)
#define CR4_PGE			(1ul << 7)
#define CR4_PCE			(1ul << 8)	/* rdpmc allowed (any CPL; we run at 0 anyway) */
#define CR4_OSFXSR		(1ul << 9)
#define CR4_OSXMMEXCPT		(1ul << 10)
#define CR4_OSXSAVE		(1ul << 18)

/* XCR0 state components (SDM Vol. 1 13.3). */
#define XCR0_X87		(1ul << 0)
#define XCR0_SSE		(1ul << 1)
#define XCR0_AVX		(1ul << 2)

/* MSRs (SDM Vol. 4). */
#define MSR_IA32_APIC_BASE	0x1b
#define MSR_IA32_EFER		0xc0000080
#define   EFER_LME		(1ul << 8)
#define   EFER_NXE		(1ul << 11)
#define MSR_IA32_PAT		0x277
#define   PAT_ENTRY_SHIFT(i)	((i) * 8)
#define   PAT_WC		0x01ull
#define MSR_IA32_FS_BASE	0xc0000100
#define MSR_IA32_GS_BASE	0xc0000101

/* RFLAGS (SDM Vol. 1 3.4.3). */
#define RFLAGS_IF		(1ul << 9)
#define RFLAGS_TF		(1ul << 8)

static inline void cpuid_count(u32 leaf, u32 sub, u32 *a, u32 *b, u32 *c, u32 *d)
{
	asm volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d)
		     : "a"(leaf), "c"(sub));
}

static inline void cpuid(u32 leaf, u32 *a, u32 *b, u32 *c, u32 *d)
{
	cpuid_count(leaf, 0, a, b, c, d);
}

static inline u64 rdmsr(u32 msr)
{
	u32 lo, hi;
	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((u64)hi << 32) | lo;
}

static inline void wrmsr(u32 msr, u64 val)
{
	asm volatile("wrmsr" : : "c"(msr), "a"((u32)val), "d"((u32)(val >> 32))
		     : "memory");
}

/* MFENCE, then LFENCE: every older store globally visible, and every
 * older instruction done, before the next one starts (SDM Vol. 2B MFENCE,
 * LFENCE). For a WRMSR that is not serializing, e.g. the x2APIC ICR. */
static inline void mfence_lfence(void)
{
	asm volatile("mfence; lfence" : : : "memory");
}

/*
 * Fault-tolerant MSR access for probing. The instruction sits at a label
 * recorded in the __extable section; the trap handler sends a #GP there to
 * the label after it with rax = -1 marker via the fixup (kernel/trap.c).
 */
int rdmsr_safe(u32 msr, u64 *val);
int wrmsr_safe(u32 msr, u64 val);
/* RDPMC that turns #GP (bad index) or #UD (no PMU, e.g. QEMU TCG) into
 * -E_FAULT; for probing (SDM Vol. 2B RDPMC). Serialized like rdpmc(). */
int rdpmc_safe(u32 ecx, u64 *val);

/* RDRAND (SDM Vol. 1 §7.3.17, CPUID.01H:ECX[30]): false if the DRNG had
 * no value ready (CF = 0); the caller retries a few times. */
static inline bool rdrand64(u64 *v)
{
	u8 ok;

	asm volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
	return ok;
}

static inline u64 rdtsc(void)
{
	u32 lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

/* rdtsc ordered against earlier and later instructions (SDM Vol. 2B RDTSC). */
static inline u64 rdtsc_ordered(void)
{
	u32 lo, hi;
	asm volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((u64)hi << 32) | lo;
}

static inline u64 rdpmc(u32 idx)
{
	u32 lo, hi;
	asm volatile("lfence; rdpmc; lfence" : "=a"(lo), "=d"(hi) : "c"(idx) : "memory");
	return ((u64)hi << 32) | lo;
}

/* rdmsr ordered like rdpmc(): a counter kept in an MSR (bench's msr: events). */
static inline u64 rdmsr_ordered(u32 msr)
{
	u32 lo, hi;
	asm volatile("lfence; rdmsr; lfence" : "=a"(lo), "=d"(hi) : "c"(msr) : "memory");
	return ((u64)hi << 32) | lo;
}

/*
 * The same reads serialized by CPUID, for CPUs on which LFENCE is not
 * known to wait for earlier instructions (AMD with DE_CFG[1] clear and
 * locked, some hypervisors): CPUID is serializing on every x86 CPU (SDM
 * Vol. 3A 10.3; APM Vol. 2 7.6.4), at a cost of a hundred cycles or more,
 * and a VM exit under a hypervisor.
 */
static inline u64 rdtsc_cpuid(void)
{
	u32 lo, hi;
	asm volatile("xor %%eax, %%eax; cpuid; rdtsc; mov %%eax, %%esi; mov %%edx, %%edi; "
		     "xor %%eax, %%eax; cpuid"
		     : "=S"(lo), "=D"(hi) : : "rax", "rbx", "rcx", "rdx", "memory");
	return ((u64)hi << 32) | lo;
}

/* INSN ("rdmsr" or "rdpmc") of ECX between two CPUIDs; EDX:EAX is
 * moved out of their way to ESI:EDI. */
#define X86_READ_ECX_CPUID(insn, ecx) ({					\
	u32 lo_, hi_;								\
	asm volatile("xor %%eax, %%eax; cpuid; mov %2, %%ecx; " insn "; "	\
		     "mov %%eax, %%esi; mov %%edx, %%edi; xor %%eax, %%eax; cpuid" \
		     : "=S"(lo_), "=D"(hi_) : "r"(ecx) : "rax", "rbx", "rcx", "rdx", "memory"); \
	((u64)hi_ << 32) | lo_;							\
})

static inline u64 rdmsr_cpuid(u32 msr) { return X86_READ_ECX_CPUID("rdmsr", msr); }
static inline u64 rdpmc_cpuid(u32 idx) { return X86_READ_ECX_CPUID("rdpmc", idx); }

static inline u64 read_cr0(void) { u64 v; asm volatile("mov %%cr0, %0" : "=r"(v)); return v; }
static inline u64 read_cr2(void) { u64 v; asm volatile("mov %%cr2, %0" : "=r"(v)); return v; }
static inline u64 read_cr3(void) { u64 v; asm volatile("mov %%cr3, %0" : "=r"(v)); return v; }
static inline u64 read_cr4(void) { u64 v; asm volatile("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void write_cr0(u64 v) { asm volatile("mov %0, %%cr0" : : "r"(v) : "memory"); }
static inline void write_cr3(u64 v) { asm volatile("mov %0, %%cr3" : : "r"(v) : "memory"); }
static inline void write_cr4(u64 v) { asm volatile("mov %0, %%cr4" : : "r"(v) : "memory"); }

static inline void xsetbv(u32 idx, u64 v)
{
	asm volatile("xsetbv" : : "c"(idx), "a"((u32)v), "d"((u32)(v >> 32)));
}

static inline u64 read_rflags(void)
{
	u64 f;
	asm volatile("pushfq; popq %0" : "=r"(f));
	return f;
}

/* DR6, the debug status register (SDM Vol. 3B 18.2.3). The processor
 * never clears its condition bits: a #DB handler writes DR6_CLEAR (bit 16,
 * RTM, is active-low and stays set) before returning. */
#define DR6_BS			(1ul << 14)	/* single step (RFLAGS.TF) */
#define DR6_CLEAR		0xffff0ff0ul
static inline u64 read_dr6(void) { u64 v; asm volatile("mov %%dr6, %0" : "=r"(v)); return v; }
static inline void write_dr6(u64 v) { asm volatile("mov %0, %%dr6" : : "r"(v)); }

static inline void outb(u16 port, u8 v) { asm volatile("outb %0, %1" : : "a"(v), "Nd"(port)); }
static inline void outw(u16 port, u16 v) { asm volatile("outw %0, %1" : : "a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { asm volatile("outl %0, %1" : : "a"(v), "Nd"(port)); }
static inline u8 inb(u16 port) { u8 v; asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline u16 inw(u16 port) { u16 v; asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline u32 inl(u16 port) { u32 v; asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port)); return v; }

static inline void irq_disable(void) { asm volatile("cli" : : : "memory"); }
static inline void irq_enable(void) { asm volatile("sti" : : : "memory"); }
static inline void cpu_relax(void) { asm volatile("pause" : : : "memory"); }
static inline void halt(void) { asm volatile("hlt" : : : "memory"); }
static inline void invlpg(u64 va) { asm volatile("invlpg (%0)" : : "r"(va) : "memory"); }

struct desc_ptr {
	u16 limit;
	u64 base;
} __attribute__((packed));

static inline void lgdt(const struct desc_ptr *d) { asm volatile("lgdt %0" : : "m"(*d)); }
static inline void lidt(const struct desc_ptr *d) { asm volatile("lidt %0" : : "m"(*d)); }
static inline void ltr(u16 sel) { asm volatile("ltr %0" : : "r"(sel)); }

#endif

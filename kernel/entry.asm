; entry.asm — the two ways into the kernel.
;
; pvh_start32: QEMU's -kernel direct boot (PVH, Xen ELF note 18). Entered in
;   32-bit protected mode with paging off, ebx = physical address of
;   hvm_start_info. We load static boot page tables (identity map of the
;   first 4 GiB, and the same first GiB again at KERNEL_VMA), enter long mode
;   and join the 64-bit path.
; _start64: the UEFI loader's entry (see include/uapi/bootinfo.h for the
;   contract): long mode, rdi = boot_info, esi = BOOT_INFO_MAGIC.
;
; Both zero .bss, take the boot stack and call kmain(info, magic, entry_tsc).

%define KERNEL_VMA	0xffffffff80000000
%define PVH_MARK	0x21485650		; "PVH!": rdi is an hvm_start_info

%define CR0_PE		(1 << 0)
%define CR0_PG		(1 << 31)
%define CR4_PAE		(1 << 5)
%define MSR_EFER	0xc0000080
%define EFER_LME	(1 << 8)

%define PTE_P		(1 << 0)
%define PTE_W		(1 << 1)
%define PTE_PS		(1 << 7)

extern kmain
extern __bss_start, __bss_end
extern boot_stack_top			; kernel/boot_stack.asm
global _start64, pvh_start32

; Xen ELF note: XEN_ELFNOTE_PHYS32_ENTRY (18), a 32-bit physical entry.
section .note.Xen note alloc noexec nowrite align=4
	dd 4			; name size
	dd 4			; desc size
	dd 18			; type
	db "Xen", 0
	dd pvh_start32 - KERNEL_VMA

section .text.boot exec nowrite align=16
bits 32
pvh_start32:
	cli
	cld
	mov	esi, ebx			; keep hvm_start_info
	lgdt	[boot_gdtr - KERNEL_VMA]
	mov	eax, cr4
	or	eax, CR4_PAE
	mov	cr4, eax
	mov	eax, boot_pml4 - KERNEL_VMA
	mov	cr3, eax
	mov	ecx, MSR_EFER
	rdmsr
	or	eax, EFER_LME
	wrmsr
	mov	eax, cr0
	or	eax, CR0_PG | CR0_PE
	mov	cr0, eax
	jmp	0x08:(pvh_long - KERNEL_VMA)

bits 64
pvh_long:
	mov	eax, 0x10
	mov	ds, eax
	mov	es, eax
	mov	ss, eax
	mov	edi, esi			; hvm_start_info (identity-mapped)
	mov	esi, PVH_MARK
	mov	rax, _start64
	jmp	rax

section .text
default rel
_start64:
	cli
	cld
	mov	r12, rdi
	mov	r13d, esi
	rdtsc
	shl	rdx, 32
	or	rax, rdx
	mov	r14, rax
	lea	rdi, [__bss_start]
	lea	rcx, [__bss_end]
	sub	rcx, rdi
	mov	rdx, rcx
	shr	rcx, 3			; .bss is megabytes: eight bytes a store,
	xor	eax, eax		; the tail (if any) a byte at a time
	rep	stosq
	mov	ecx, edx
	and	ecx, 7
	rep	stosb
	lea	rsp, [boot_stack_top]
	xor	ebp, ebp
	mov	rdi, r12
	mov	esi, r13d
	mov	rdx, r14
	call	kmain
	; The return address is the cli, still in _start64: perf, which looks
	; return addresses up as they are, names _start64 as the root of every
	; call chain, not the .hang label.
	cli
.hang:	hlt
	jmp	.hang

section .data
align 16
boot_gdt:
	dq 0
	dq 0x00af9a000000ffff		; 0x08: 64-bit code
	dq 0x00cf92000000ffff		; 0x10: data
boot_gdt_end:
boot_gdtr:
	dw boot_gdt_end - boot_gdt - 1
	dd boot_gdt - KERNEL_VMA

; Static boot page tables for the PVH path: PML4[0] -> identity 0..4 GiB,
; PML4[511] -> PDPT[510] -> the first GiB again at KERNEL_VMA. 2 MiB pages.
align 4096
boot_pml4:
	dq boot_pdpt_low - KERNEL_VMA + (PTE_P | PTE_W)
	times 510 dq 0
	dq boot_pdpt_high - KERNEL_VMA + (PTE_P | PTE_W)
boot_pdpt_low:
	dq boot_pd - KERNEL_VMA + 0x0000 + (PTE_P | PTE_W)
	dq boot_pd - KERNEL_VMA + 0x1000 + (PTE_P | PTE_W)
	dq boot_pd - KERNEL_VMA + 0x2000 + (PTE_P | PTE_W)
	dq boot_pd - KERNEL_VMA + 0x3000 + (PTE_P | PTE_W)
	times 508 dq 0
boot_pdpt_high:
	times 510 dq 0
	dq boot_pd - KERNEL_VMA + (PTE_P | PTE_W)
	dq 0
boot_pd:
%assign i 0
%rep 2048
	dq (i << 21) + (PTE_P | PTE_W | PTE_PS)
%assign i i + 1
%endrep

section .note.GNU-stack noalloc noexec nowrite progbits

; trampoline.asm — where application processors start (SDM Vol. 3A 9.4,
; "Multiple-Processor Initialization": INIT-SIPI-SIPI). The boot CPU copies
; this blob to a page below 1 MiB, patches the fields marked (patched) and
; sends the SIPI with vector = page >> 12. The AP wakes in real mode at
; CS:IP = page:0, enters protected mode, then long mode on the kernel's page
; tables, takes its stack and calls entry(arg) — see kernel/smp.c.
;
; The blob is data here (.rodata): it is only ever executed from its copy.
; Real-mode code addresses through CS; everything absolute is patched.

%define CR0_PE		(1 << 0)
%define CR0_PG		(1 << 31)
%define CR4_PAE		(1 << 5)
%define MSR_EFER	0xc0000080
%define EFER_LME	(1 << 8)

%define OFF(x)		((x) - trampoline_start)

global trampoline_start, trampoline_end
global tp_gdt_base, tp_far32, tp_far64, tp_base_imm
global tp_cr3, tp_efer, tp_stack, tp_entry, tp_arg
global tp_gdt, tramp32, tramp64

section .rodata
align 16
bits 16
trampoline_start:
	cli
	cld
	mov	ax, cs
	mov	ds, ax
	lgdt	[OFF(tp_gdtr)]
	mov	eax, cr0
	or	eax, CR0_PE
	mov	cr0, eax
	jmp	far dword [OFF(tp_far32)]

bits 32
tramp32:
	mov	ax, 0x10
	mov	ds, ax
	mov	es, ax
	mov	ss, ax
	db	0xbd				; mov ebp, imm32: the page's base
tp_base_imm:
	dd	0				; (patched)
	mov	eax, cr4
	or	eax, CR4_PAE
	mov	cr4, eax
	mov	eax, [ebp + OFF(tp_cr3)]	; below 4 GiB (smp.c checks)
	mov	cr3, eax
	mov	ecx, MSR_EFER
	rdmsr
	or	eax, [ebp + OFF(tp_efer)]	; LME, and NXE when the CPU has NX
	wrmsr
	mov	eax, cr0
	or	eax, CR0_PG
	mov	cr0, eax
	jmp	far dword [ebp + OFF(tp_far64)]

bits 64
tramp64:
	mov	ax, 0x10
	mov	ds, ax
	mov	es, ax
	mov	ss, ax
	mov	rsp, [rbp + OFF(tp_stack)]
	mov	rdi, [rbp + OFF(tp_arg)]
	mov	rax, [rbp + OFF(tp_entry)]
	xor	ebp, ebp
	call	rax
.hang:	cli
	hlt
	jmp	.hang

align 16
tp_gdt:
	dq 0
	dq 0x00cf9a000000ffff		; 0x08: 32-bit code
	dq 0x00cf92000000ffff		; 0x10: data
	dq 0x00af9a000000ffff		; 0x18: 64-bit code
tp_gdtr:
	dw 4 * 8 - 1
tp_gdt_base:
	dd 0				; (patched) page + tp_gdt
align 8
tp_far32:
	dd 0				; (patched) page + tramp32
	dw 0x08
align 8
tp_far64:
	dd 0				; (patched) page + tramp64
	dw 0x18
align 8
tp_cr3:		dq 0			; (patched)
tp_efer:	dq 0			; (patched) EFER bits to set
tp_stack:	dq 0			; (patched)
tp_entry:	dq 0			; (patched)
tp_arg:		dq 0			; (patched)
trampoline_end:

section .note.GNU-stack noalloc noexec nowrite progbits

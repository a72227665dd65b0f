; trampoline.asm — where application processors start (SDM Vol. 3A 9.4,
; "Multiple-Processor Initialization": INIT-SIPI-SIPI). The boot CPU copies
; this blob to a page below 1 MiB, patches the fields marked (patched) and
; sends the SIPI with vector = page >> 12. The AP wakes in real mode at
; CS:IP = page:0, enters protected mode, then long mode on the kernel's page
; tables, takes its stack and calls entry(arg) — see kernel/smp.c.
;
; The blob is data here (.rodata): it is only ever executed from its copy.
; Real-mode code addresses through CS; everything absolute is patched.
;
; Admission: an AP runs no kernel code unless the boot CPU admitted it. The
; boot CPU opens a slot for one AP by storing that AP's APIC id + 1 in a
; kernel word (physical address in tp_claim_pa); the AP, still in 32-bit
; mode with paging off, reads its own id from CPUID and claims the slot
; with one lock cmpxchg (id + 1 -> CLAIMED). An AP whose slot was revoked
; (the boot CPU gave up on it and stored 0) or that is not the one the
; slot is for (a late AP waking while another is being started) fails the
; compare and parks here for good: hlt with interrupts off, on a small
; stack in this page, with an IDT whose NMI gate is a bare iret, so the
; NMIs the kernel broadcasts later cannot take it anywhere. From its first
; instructions the AP has that stack and IDT: in real mode the IDT is read
; as an interrupt vector table, whose entry 2 (bytes 8-11) is gate 1's
; first half, patched to point at a real-mode iret.

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
global tp_idt, tp_idt_base, tp_ivt_nmi, tp_idt_nmi_lo, tp_idt_nmi_hi, tp_park_esp, tp_claim_pa
global tp_park_iret32, tp_park_stack32, tp_parked

%define TP_CLAIMED	0xffffffff
%define PARK_STACK	64		; bytes per parking stack (a frame is 6 or 12)

section .rodata
align 16
bits 16
trampoline_start:
	cli
	cld
	mov	ax, cs
	mov	ss, ax				; blocks NMIs until after the next one
	mov	esp, OFF(park_stack16)
	mov	ds, ax
	lidt	[OFF(tp_idtr)]
	lgdt	[OFF(tp_gdtr)]
	mov	eax, cr0
	or	eax, CR0_PE
	mov	cr0, eax
	jmp	far dword [OFF(tp_far32)]

park_iret16:
	iret

bits 32
tramp32:
	mov	ax, 0x10
	mov	ss, ax				; blocks NMIs until after the next one
	db	0xbc				; mov esp, imm32: the 32-bit parking stack
tp_park_esp:
	dd	0				; (patched) page + park_stack32
	mov	ds, ax
	mov	es, ax
	db	0xbd				; mov ebp, imm32: the page's base
tp_base_imm:
	dd	0				; (patched)
	; Who am I: CPUID 0BH's x2APIC id where that leaf exists (EBX != 0 at
	; sub-leaf 0, SDM Vol. 2A CPUID), else CPUID 1's initial APIC id.
	xor	eax, eax
	cpuid
	cmp	eax, 0xb
	jb	.id8
	mov	eax, 0xb
	xor	ecx, ecx
	cpuid
	test	ebx, ebx
	jz	.id8
	mov	esi, edx
	jmp	.claim
.id8:	mov	eax, 1
	cpuid
	shr	ebx, 24
	mov	esi, ebx
.claim:	lea	eax, [esi + 1]			; the slot as opened for this AP
	mov	ecx, TP_CLAIMED
	mov	edx, [ebp + OFF(tp_claim_pa)]
	lock cmpxchg [edx], ecx
	jne	park32
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

bits 32
park32:
	lock inc dword [ebp + OFF(tp_parked)]	; how many parked: smp_parked()
.halt:	cli
	hlt
	jmp	.halt
tp_park_iret32:
	iretd

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
tp_claim_pa:	dd 0			; (patched) physical address of the slot word
tp_parked:	dd 0			; CPUs parked here (counted by them)

; The parking IDT: vectors 0-2 (32-bit gates). Gate 1 is never used as a
; gate; its first half is the real-mode vector 2 (IP, CS).
align 8
tp_idt:
	dq 0
tp_ivt_nmi:
	dw OFF(park_iret16)
	dw 0				; (patched) real-mode CS: page >> 4
	dd 0
tp_idt_nmi_lo:
	dw 0				; (patched) low half of page + park_iret32
	dw 0x08
	db 0, 0x8e			; present, DPL 0, 32-bit interrupt gate
tp_idt_nmi_hi:
	dw 0				; (patched) high half
tp_idtr:
	dw 3 * 8 - 1
tp_idt_base:
	dd 0				; (patched) page + tp_idt

align 16
	times PARK_STACK db 0
park_stack16:
	times PARK_STACK db 0
tp_park_stack32:
trampoline_end:

section .note.GNU-stack noalloc noexec nowrite progbits

; isr.asm — 256 interrupt entry stubs, generated, ISR_STUB_SIZE bytes each so
; the IDT is arithmetic (kernel/trap.c, idt_init: isr_stubs + vector * ISR_STUB_SIZE).
;
; Each stub pushes a dummy error code where the CPU pushes none, then the
; vector, and jumps to isr_common, which saves the general registers into
; a struct trap_frame (kernel/trap.h; order pinned by _Static_assert there)
; and calls trap_dispatch(frame). We run only at CPL 0 in one address space
; and GS never changes after boot, so there is no swapgs to get wrong.

%define ISR_STUB_SIZE 16

extern trap_dispatch
global isr_stubs

section .text
align 16
isr_stubs:
%assign v 0
%rep 256
.stub %+ v:
%if !(v == 8 || (v >= 10 && v <= 14) || v == 17 || v == 21 || v == 29 || v == 30)
	push	strict byte 0			; no CPU error code (SDM Vol. 3A 6.13)
%endif
	push	strict dword v
	jmp	strict near isr_common
	times ISR_STUB_SIZE - ($ - .stub %+ v) int3
%assign v v + 1
%endrep

isr_common:
	push	rax
	push	rbx
	push	rcx
	push	rdx
	push	rsi
	push	rdi
	push	rbp
	push	r8
	push	r9
	push	r10
	push	r11
	push	r12
	push	r13
	push	r14
	push	r15
	cld
	mov	rdi, rsp		; struct trap_frame *; rsp is 16-byte aligned here
	call	trap_dispatch
	pop	r15
	pop	r14
	pop	r13
	pop	r12
	pop	r11
	pop	r10
	pop	r9
	pop	r8
	pop	rbp
	pop	rdi
	pop	rsi
	pop	rdx
	pop	rcx
	pop	rbx
	pop	rax
	add	rsp, 16			; vector, error code
	iretq

section .note.GNU-stack noalloc noexec nowrite progbits

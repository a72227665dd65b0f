; isr.asm — 256 interrupt entry stubs, generated, ISR_STUB_SIZE bytes each so
; the IDT is arithmetic (kernel/trap.c, idt_init: isr_stubs + vector * ISR_STUB_SIZE).
;
; Each stub pushes the vector and jumps to isr_common, which saves the
; general registers into a struct trap_frame (kernel/trap.h; order pinned by
; _Static_assert there) and calls trap_dispatch(frame). Where the CPU pushes
; no error code, the stub pushes a dummy one first. Where it may push one
; (an exception with an error code; the same vector raised by a software
; INT n pushes none), the stub jumps to isr_errcode, which tells the two
; apart by the stack's alignment and inserts the dummy when it is missing.
;
; The kernel runs at CPL 0 only and its GS base points at the CPU's struct
; percpu (kernel/percpu.h); nothing in the kernel swaps it, but code run on
; purpose (apps/bench_code.c) may have changed it. isr_common therefore
; loads the right one if it is not, finding the CPU's struct percpu from its
; GDT (which is inside it; trap_entry_percpu checks that it is one of the
; kernel's before it is used), and puts back what it found on the way out
; unless the handler changed its mind (trap_frame.gs_base). It reads the
; GS base (an rdmsr, slow on hardware) only while trap_gs_check says the
; base may not be ours: while the CPUs come up, and once code run on
; purpose may be running (kernel/trap.c); otherwise the base is ours, and
; the struct percpu it points at names itself (percpu.self, at %gs:0).
;
; Code run on purpose runs on page tables of its own, where what the
; kernel writes is read-only (kernel/paging.c, code_pml4). Every entry
; that finds CR3 on them moves to the kernel's (kernel_pml4) before the
; handler writes anything but the stack it came in on (the code's own, or
; an IST stack: writable in both), and keeps the CR3 it came with in
; trap_frame.cr3; the exit goes back to the code's tables if that is
; where the trap came from and the handler did not change its mind (a
; fix-up that resumes the kernel elsewhere sets the kernel's). Until the
; code's tables exist CR3 is not read (a trap costs no more); cr3 is 0
; for a trap that did not come on them.
; An NMI may come at any instruction, this entry's and exit's included:
; it does the same for itself and returns on the tables it found.
;
; Around the call to trap_dispatch isr_common links one more frame into the
; chain the frame pointers make: [interrupted RBP, interrupted RIP], as a
; call from the interrupted code would have left. A walk from inside a
; handler (a sample's call chain, a backtrace) thus goes on from
; trap_dispatch's caller, isr_frame_return, to the function the interrupt
; hit and on to its callers. That RIP is where the code was, not a
; return address (kernel/backtrace.c symbolizes it so).

%define ISR_STUB_SIZE 16
%define MSR_GS_BASE 0xc0000101
%define PERCPU_GDT 96			; offsetof(struct percpu, gdt), checked in trap.c
%define PERCPU_SELF 0			; offsetof(struct percpu, self), checked in percpu.h
%define TRAP_FRAME_RIP 152		; offsetof(struct trap_frame, rip), checked in trap.h

extern trap_dispatch
extern trap_entry_percpu
extern trap_gs_check
extern kernel_pml4
extern code_pml4
global isr_stubs
global isr_frame_return

section .text
align 16
isr_stubs:
%assign v 0
%rep 256
.stub %+ v:
%if v == 8 || (v >= 10 && v <= 14) || v == 17 || v == 21 || v == 29 || v == 30
	push	strict dword v
	jmp	strict near isr_errcode
%else
	push	strict byte 0			; no CPU error code (SDM Vol. 3A 6.13)
	push	strict dword v
	jmp	strict near isr_common
%endif
	times ISR_STUB_SIZE - ($ - .stub %+ v) int3
%assign v v + 1
%endrep

; In 64-bit mode the CPU aligns RSP to 16 bytes before it pushes the five
; qwords of its frame (SDM Vol. 3A 6.14.2): with an error code and the
; stub's vector on top, bit 3 of RSP is set; without one it is clear, and
; the dummy goes beneath the vector.
isr_errcode:
	test	spl, 8
	jnz	isr_common
	push	qword [rsp]			; the vector, one slot down
	mov	qword [rsp + 8], 0		; the dummy error code
	jmp	isr_common

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
	sub	rsp, 16			; trap_frame.gs_base, .cr3
	cld
	mov	eax, [rel trap_gs_check]	; neither the code's tables nor a GS
	or	rax, [rel code_pml4]	; base to check: the common case, one test
	jnz	.checks			; (out of line, below)
	mov	rbx, [gs:PERCPU_SELF]	; this CPU's struct percpu: the GS base is ours
	mov	[rsp + 8], rax		; trap_frame.cr3: 0, not on the code's tables
	mov	[rsp], rbx
.gs_ok:
	push	qword [rsp + TRAP_FRAME_RIP]	; a frame for the frame-pointer walks:
	push	rbp			; the interrupted RIP as its return address,
	mov	rbp, rsp		; the interrupted RBP as its caller's frame
	lea	rdi, [rsp + 16]		; struct trap_frame *; rsp is 16-byte aligned here
	call	trap_dispatch
isr_frame_return:
	cmp	[rsp + 16], rbx		; rbx still holds the GS base the handler ran with
	jne	.gs_back
.gs_same:
	cmp	qword [rsp + 24], 0	; came on the code's tables?
	jne	.cr3_back
.cr3_same:
	; R12-R15 are not reloaded: isr_common leaves them alone, the C code
	; preserves them, and no handler writes them into the frame (one that
	; resumes elsewhere goes through kernel/unwind.c's unwind_to, which
	; loads its own; kernel/trap.h). RBX and RBP the stub itself used.
	add	rsp, 64			; the walks' frame, .gs_base, .cr3, R15-R12
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

; isr_common's paths for a trap on the code's page tables and for a GS
; base that may not be ours, out of the common path's way.
isr_common.checks:
	sgdt	[rsp + 6]		; limit at 6, base at 8 (scratch)
	mov	rbx, [rsp + 8]
	sub	rbx, PERCPU_GDT		; this CPU's struct percpu
	xor	eax, eax		; 0: not on the code's tables
	cmp	qword [rel code_pml4], 0
	jne	isr_common.cr3_read
isr_common.cr3_ok:
	mov	[rsp + 8], rax		; trap_frame.cr3
	cmp	dword [rel trap_gs_check], 0
	jne	isr_common.gs_read
	mov	[rsp], rbx		; the GS base is ours
	jmp	isr_common.gs_ok

isr_common.cr3_read:
	mov	rax, cr3
	cmp	rax, [rel code_pml4]
	jne	isr_common.cr3_kernel
	mov	rdx, [rel kernel_pml4]	; the code's: the kernel's from here on
	mov	cr3, rdx
	jmp	isr_common.cr3_ok
isr_common.cr3_kernel:
	xor	eax, eax
	jmp	isr_common.cr3_ok

isr_common.gs_read:
	mov	ecx, MSR_GS_BASE
	rdmsr
	shl	rdx, 32
	or	rax, rdx
	mov	[rsp], rax		; the GS base we came with
	cmp	rax, rbx
	je	isr_common.gs_ok
	mov	rdi, rbx		; a struct percpu of ours? (not a boot GDT, nor
	call	trap_entry_percpu	; one the interrupted code loaded)
	test	rax, rax
	jz	isr_common.gs_keep
	mov	ecx, MSR_GS_BASE
	mov	eax, ebx
	mov	rdx, rbx
	shr	rdx, 32
	wrmsr
	jmp	isr_common.gs_ok
isr_common.gs_keep:
	mov	rbx, [rsp]		; not ours to change: nothing to put back
	jmp	isr_common.gs_ok

isr_frame_return.gs_back:
	mov	rax, [rsp + 16]		; the handler's GS base differs: put it back
	mov	rdx, rax
	shr	rdx, 32
	mov	ecx, MSR_GS_BASE
	wrmsr
	jmp	isr_frame_return.gs_same

isr_frame_return.cr3_back:
	mov	rax, [rsp + 24]		; back on the code's tables, unless the
	cmp	rax, [rel code_pml4]	; handler resumes the kernel elsewhere
	jne	isr_frame_return.cr3_same
	mov	cr3, rax
	jmp	isr_frame_return.cr3_same

section .note.GNU-stack noalloc noexec nowrite progbits

; boot_stack.asm — the boot CPU's stack, with an unmapped guard page below
; it. Its own file so that entry.asm (which takes it), kernel/main.c (which
; records its bounds) and kernel/paging.c (which leaves boot_stack_guard out
; of the kernel's own page tables) all name it here, not one another.

global boot_stack_guard, boot_stack, boot_stack_top

section .bss nobits alloc noexec write align=4096
boot_stack_guard:
	resb 4096
boot_stack:
	resb 65536
boot_stack_top:

section .note.GNU-stack noalloc noexec nowrite progbits

	.section .text.init
	.globl _start
_start:
	la sp, stack_top
	call _start_c
1:	j 1b

	.bss
	.align 4
	.space 16384
stack_top:

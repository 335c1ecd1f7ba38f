# Returns that go elsewhere than after their call, for the E-Trace
# implicit return tests (etrace/returns_test.go): a setjmp/longjmp pair,
# a longjmp out of a recursion deeper than the return stack, a return to
# a modified return address and an unwinding through three frames.
# Linux user mode, no libc; build with scripts/build-etrace-tests.sh.
	.option rvc
	.text
	.globl _start
_start:
	li	s1, 3			# rounds
round:	la	a0, buf
	jal	save			# setjmp: returns 0, then 1 from restore
	bnez	a0, deep
	la	a0, buf
	jal	restore			# longjmp at the depth save returned from
deep:	la	a0, buf2
	jal	save
	bnez	a0, skipit
	li	a1, 12			# deeper than an 8-entry return stack
	jal	dive
skipit:	jal	skip			# returns 4 bytes after its return address
	.option norvc
	j	fail			# skipped
	.option rvc
	jal	outer			# outer -> middle -> inner unwinds to here
	addi	s1, s1, -1
	bnez	s1, round
	li	a0, 0
	li	a7, 93			# exit
	ecall
fail:	li	a0, 1
	li	a7, 93
	ecall

save:	sd	ra, 0(a0)		# setjmp(a0)
	sd	sp, 8(a0)
	li	a0, 0
	ret
restore: ld	ra, 0(a0)		# longjmp(a0, 1)
	ld	sp, 8(a0)
	li	a0, 1
	ret
dive:	addi	sp, sp, -16		# recurse a1 times, then longjmp(buf2)
	sd	ra, 8(sp)
	addi	a1, a1, -1
	la	a0, buf2
	beqz	a1, restore
	jal	dive
	ld	ra, 8(sp)
	addi	sp, sp, 16
	ret
skip:	addi	ra, ra, 4
	ret
outer:	addi	sp, sp, -16
	sd	ra, 8(sp)
	mv	s2, sp
	jal	middle
	j	fail			# never returned to
middle:	addi	sp, sp, -16
	sd	ra, 8(sp)
	jal	inner
	ld	ra, 8(sp)
	addi	sp, sp, 16
	ret
inner:	ld	ra, 8(s2)		# unwind: return from outer directly
	addi	sp, s2, 16
	ret

	.bss
	.balign 8
buf:	.space 16
buf2:	.space 16

#include "textflag.h"

// func rawVfork(flags uintptr) (pid uintptr, errno syscall.Errno)
//
// clone(flags, 0, 0, 0, 0) for a child that shares the caller's memory
// and stack until it execs. The return address is kept in a register
// across the call, as the child returns first and may write over the
// stack before the parent resumes.
TEXT ·rawVfork(SB),NOSPLIT|NOFRAME,$0-24
	MOVQ	flags+0(FP), DI
	MOVQ	$0, SI
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$0, R9
	MOVQ	$56, AX	// SYS_clone
	POPQ	R12
	SYSCALL
	PUSHQ	R12
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$0, pid+8(FP)
	NEGQ	AX
	MOVQ	AX, errno+16(FP)
	RET
ok:
	MOVQ	AX, pid+8(FP)
	MOVQ	$0, errno+16(FP)
	RET

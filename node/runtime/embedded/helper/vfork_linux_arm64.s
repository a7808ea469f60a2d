#include "textflag.h"

// func rawVfork(flags uintptr) (pid uintptr, errno syscall.Errno)
//
// clone(flags, 0, 0, 0, 0) for a child that shares the caller's memory
// and stack until it execs. The return address stays in the link
// register, out of the child's way.
TEXT ·rawVfork(SB),NOSPLIT|NOFRAME,$0-24
	MOVD	flags+0(FP), R0
	MOVD	$0, R1
	MOVD	$0, R2
	MOVD	$0, R3
	MOVD	$0, R4
	MOVD	$0, R5
	MOVD	$220, R8	// SYS_clone
	SVC
	CMN	$4095, R0
	BCC	ok
	MOVD	ZR, pid+8(FP)
	NEG	R0, R0
	MOVD	R0, errno+16(FP)
	RET
ok:
	MOVD	R0, pid+8(FP)
	MOVD	ZR, errno+16(FP)
	RET

	.file	"<string>"
	.section	.rodata.cst32,"aM",@progbits,32
	.p2align	5, 0x0
.LCPI0_0:
	.long	0
	.long	1
	.long	2
	.long	3
	.long	4
	.long	5
	.long	6
	.long	7
	.section	.rodata.cst4,"aM",@progbits,4
	.p2align	2, 0x0
.LCPI0_1:
	.long	8
.LCPI0_3:
	.long	16
.LCPI0_5:
	.long	4
	.section	.rodata.cst8,"aM",@progbits,8
	.p2align	3, 0x0
.LCPI0_2:
	.quad	0x3fe0000000000000
	.section	.rodata.cst16,"aM",@progbits,16
	.p2align	4, 0x0
.LCPI0_4:
	.long	0
	.long	1
	.long	2
	.long	3
	.section	.ltext,"axl",@progbits
	.globl	_ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx
	.p2align	4
	.type	_ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx,@function
_ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	pushq	%r15
	.cfi_def_cfa_offset 24
	pushq	%r14
	.cfi_def_cfa_offset 32
	pushq	%r13
	.cfi_def_cfa_offset 40
	pushq	%r12
	.cfi_def_cfa_offset 48
	pushq	%rbx
	.cfi_def_cfa_offset 56
	subq	$72, %rsp
	.cfi_def_cfa_offset 128
	.cfi_offset %rbx, -56
	.cfi_offset %r12, -48
	.cfi_offset %r13, -40
	.cfi_offset %r14, -32
	.cfi_offset %r15, -24
	.cfi_offset %rbp, -16
	movq	%rdi, -72(%rsp)
	movq	392(%rsp), %rbx
	xorl	%r9d, %r9d
	testq	%rbx, %rbx
	cmovleq	%r9, %rbx
	jle	.LBB0_22
	movq	160(%rsp), %rcx
	testq	%rcx, %rcx
	jle	.LBB0_21
	movq	368(%rsp), %rdi
	movq	312(%rsp), %r8
	movq	296(%rsp), %r14
	movq	240(%rsp), %r11
	movq	224(%rsp), %r15
	movq	168(%rsp), %r12
	movq	152(%rsp), %rax
	movq	128(%rsp), %rcx
	decl	%r12d
	leaq	(,%r11,8), %r13
	leaq	(,%r8,8), %rbp
	leaq	(%rcx,%rax,4), %rax
	movq	%rdi, %rcx
	movq	%rax, -104(%rsp)
	subq	%rax, %rcx
	movq	%rdi, %rdx
	subq	%r15, %rdx
	leaq	(,%r11,4), %rax
	movq	%rdx, %rsi
	subq	%rax, %rsi
	movq	%rdi, %rax
	subq	%r14, %rax
	leaq	(,%r8,4), %rdi
	movq	%rax, %r8
	subq	%rdi, %r8
	movq	%rdx, %rdi
	subq	%r13, %rdi
	movq	%rax, %r9
	subq	%rbp, %r9
	cmpq	$64, %rcx
	setb	%cl
	cmpq	$64, %rdi
	setb	%dil
	orb	%cl, %dil
	cmpq	$64, %rsi
	setb	%cl
	movq	184(%rsp), %r10
	cmpq	$64, %rdx
	setb	%dl
	orb	%cl, %dl
	orb	%dil, %dl
	cmpq	$64, %r9
	setb	%cl
	cmpq	$64, %r8
	setb	%sil
	movq	176(%rsp), %rdi
	orb	%cl, %sil
	cmpq	$64, %rax
	setb	%al
	orb	%sil, %al
	movq	160(%rsp), %rsi
	orb	%dl, %al
	movb	%al, -121(%rsp)
	movabsq	$9223372036854775792, %rax
	movq	%rsi, %rcx
	andq	%rax, %rcx
	movq	%rcx, -48(%rsp)
	movq	%r12, -16(%rsp)
	vpbroadcastd	%r12d, %ymm2
	vbroadcastsd	%xmm0, %zmm3
	vpbroadcastd	%edi, %ymm4
	vbroadcastsd	%xmm1, %zmm5
	vpbroadcastd	%r10d, %ymm6
	vpbroadcastd	%esi, %ymm7
	orq	$12, %rax
	andq	%rsi, %rax
	movq	%rax, -96(%rsp)
	movabsq	$.LCPI0_4, %rax
	vmovdqa	(%rax), %xmm8
	movabsq	$.LCPI0_5, %rax
	vpbroadcastd	(%rax), %xmm9
	movabsq	$.LCPI0_0, %rax
	vmovdqa	(%rax), %ymm10
	vmovdqu	%ymm10, 32(%rsp)
	movabsq	$.LCPI0_1, %rax
	vpbroadcastd	(%rax), %ymm11
	movabsq	$.LCPI0_2, %rax
	vmovsd	(%rax), %xmm12
	vbroadcastsd	(%rax), %ymm13
	vbroadcastsd	(%rax), %zmm14
	movabsq	$.LCPI0_3, %rax
	vpbroadcastd	(%rax), %ymm15
	leaq	32(%r14,%rbp), %rax
	movq	%rax, -56(%rsp)
	movq	312(%rsp), %rax
	leaq	32(%r14,%rax,4), %rax
	movq	%rax, -112(%rsp)
	leaq	32(%r15,%r11,4), %rax
	movq	%rax, -120(%rsp)
	addq	%r14, %rbp
	movq	%rbp, -88(%rsp)
	leaq	32(%r15,%r13), %rax
	movq	%rax, -64(%rsp)
	addq	%r15, %r13
	movq	%r13, -80(%rsp)
	movq	%rsi, %rax
	negq	%rax
	movq	%rax, -40(%rsp)
	vpxord	%xmm16, %xmm16, %xmm16
	vpxord	%xmm17, %xmm17, %xmm17
	xorl	%r9d, %r9d
	jmp	.LBB0_3
	.p2align	4
.LBB0_20:
	movslq	%r10d, %rax
	cmpq	%rax, %rsi
	movq	$-1, %rcx
	cmoveq	%rcx, %rax
	movq	-32(%rsp), %r9
	addq	%rax, %r9
	movq	-24(%rsp), %rbx
	subq	$1, %rbx
	jbe	.LBB0_22
.LBB0_3:
	cmpq	$4, %rsi
	setb	%al
	orb	-121(%rsp), %al
	testb	$1, %al
	movq	%rbx, -24(%rsp)
	movq	%r9, -32(%rsp)
	je	.LBB0_5
	movl	%esi, %r10d
	xorl	%r13d, %r13d
	jmp	.LBB0_14
	.p2align	4
.LBB0_5:
	cmpq	$16, %rsi
	jae	.LBB0_7
	xorl	%r9d, %r9d
	movl	%esi, %r10d
	jmp	.LBB0_11
	.p2align	4
.LBB0_7:
	xorl	%eax, %eax
	vmovdqa64	%ymm7, %ymm18
	vmovdqa64	%ymm7, %ymm19
	vmovdqu64	32(%rsp), %ymm20
	movq	368(%rsp), %rcx
	movq	296(%rsp), %rdx
	movq	224(%rsp), %rdi
	movq	-104(%rsp), %r8
	movq	-48(%rsp), %r13
	movq	-56(%rsp), %r10
	movq	-112(%rsp), %r11
	movq	-120(%rsp), %rbx
	movq	-64(%rsp), %r14
	.p2align	4
.LBB0_8:
	vmovdqu64	(%r8,%rax,4), %ymm21
	vmovdqu64	32(%r8,%rax,4), %ymm22
	vpmaxsd	%ymm17, %ymm21, %ymm23
	vpmaxsd	%ymm17, %ymm22, %ymm24
	vpminsd	%ymm23, %ymm2, %ymm23
	vpminsd	%ymm24, %ymm2, %ymm24
	vcvtdq2pd	%ymm23, %zmm25
	vcvtdq2pd	%ymm24, %zmm26
	vaddpd	%zmm14, %zmm25, %zmm25
	vaddpd	%zmm14, %zmm26, %zmm26
	vmulpd	%zmm25, %zmm3, %zmm25
	vmulpd	%zmm26, %zmm3, %zmm26
	vcvttpd2dq	%zmm25, %ymm27
	vcvttpd2dq	%zmm26, %ymm28
	vpmulld	%ymm27, %ymm4, %ymm29
	vpmulld	%ymm28, %ymm4, %ymm30
	vrndscalepd	$11, %zmm25, %zmm25
	vrndscalepd	$11, %zmm26, %zmm26
	vaddpd	%zmm14, %zmm25, %zmm25
	vaddpd	%zmm14, %zmm26, %zmm26
	vmulpd	%zmm25, %zmm5, %zmm25
	vmulpd	%zmm26, %zmm5, %zmm26
	vcvttpd2dq	%zmm25, %ymm25
	vcvttpd2dq	%zmm26, %ymm26
	vpmulld	%ymm25, %ymm6, %ymm31
	vpmulld	%ymm26, %ymm6, %ymm10
	vpsubd	(%rdi,%rax,4), %ymm25, %ymm25
	vpsubd	32(%rdi,%rax,4), %ymm26, %ymm26
	vpcmpltud	(%rdx,%rax,4), %ymm25, %k1
	vpcmpltud	32(%rdx,%rax,4), %ymm26, %k2
	vpaddd	-32(%rbx,%rax,4), %ymm31, %ymm25
	vpsubd	%ymm25, %ymm27, %ymm25
	vpcmpltud	-32(%r11,%rax,4), %ymm25, %k1 {%k1}
	vpaddd	(%rbx,%rax,4), %ymm10, %ymm10
	vpsubd	%ymm10, %ymm28, %ymm10
	vpcmpltud	(%r11,%rax,4), %ymm10, %k2 {%k2}
	vpcmpeqd	%ymm23, %ymm21, %k1 {%k1}
	vpcmpeqd	%ymm24, %ymm22, %k2 {%k2}
	vpaddd	-32(%r14,%rax,4), %ymm29, %ymm10
	vpaddd	(%r14,%rax,4), %ymm30, %ymm21
	vpsubd	%ymm10, %ymm23, %ymm10
	vpsubd	%ymm21, %ymm24, %ymm21
	vpcmpltud	-32(%r10,%rax,4), %ymm10, %k1 {%k1}
	vpcmpltud	(%r10,%rax,4), %ymm21, %k2 {%k2}
	vpaddd	%ymm11, %ymm20, %ymm10
	vmovdqu64	%ymm23, (%rcx,%rax,4)
	vmovdqu64	%ymm24, 32(%rcx,%rax,4)
	vpblendmd	%ymm7, %ymm20, %ymm21 {%k1}
	vpminsd	%ymm18, %ymm21, %ymm18
	vmovdqa32	%ymm7, %ymm10 {%k2}
	vpminsd	%ymm19, %ymm10, %ymm19
	addq	$16, %rax
	vpaddd	%ymm15, %ymm20, %ymm20
	cmpq	%rax, %r13
	jne	.LBB0_8
	vpminsd	%ymm19, %ymm18, %ymm10
	vextracti32x4	$1, %ymm10, %xmm18
	vpminsd	%xmm18, %xmm10, %xmm10
	vpshufd	$238, %xmm10, %xmm18
	vpminsd	%xmm18, %xmm10, %xmm10
	vpshufd	$85, %xmm10, %xmm18
	vpminsd	%xmm18, %xmm10, %xmm10
	vmovd	%xmm10, %r10d
	cmpq	%r13, %rsi
	je	.LBB0_20
	movq	%r13, %r9
	testb	$12, %sil
	je	.LBB0_14
.LBB0_11:
	vpbroadcastd	%r10d, %xmm18
	vpbroadcastd	%r9d, %xmm10
	vpord	%xmm8, %xmm10, %xmm19
	movq	-104(%rsp), %rax
	leaq	(%rax,%r9,4), %rax
	movq	224(%rsp), %rcx
	leaq	(%rcx,%r9,4), %rcx
	movq	296(%rsp), %rdx
	leaq	(%rdx,%r9,4), %rdx
	movq	-120(%rsp), %rsi
	leaq	-32(%rsi,%r9,4), %rsi
	movq	-112(%rsp), %rdi
	leaq	-32(%rdi,%r9,4), %rdi
	movq	-80(%rsp), %r8
	leaq	(%r8,%r9,4), %r8
	movq	-88(%rsp), %r10
	leaq	(%r10,%r9,4), %r10
	movq	368(%rsp), %r11
	leaq	(%r11,%r9,4), %r11
	movq	-96(%rsp), %rbx
	subq	%r9, %rbx
	xorl	%r14d, %r14d
	.p2align	4
.LBB0_12:
	vmovdqu	(%rax,%r14,4), %xmm10
	vpmaxsd	%xmm16, %xmm10, %xmm20
	vpminsd	%xmm20, %xmm2, %xmm20
	vcvtdq2pd	%xmm20, %ymm21
	vaddpd	%ymm13, %ymm21, %ymm21
	vmulpd	%ymm21, %ymm3, %ymm21
	vcvttpd2dq	%ymm21, %xmm22
	vpmulld	%xmm22, %xmm4, %xmm23
	vrndscalepd	$11, %ymm21, %ymm21
	vaddpd	%ymm13, %ymm21, %ymm21
	vmulpd	%ymm21, %ymm5, %ymm21
	vcvttpd2dq	%ymm21, %xmm21
	vpmulld	%xmm21, %xmm6, %xmm24
	vpsubd	(%rcx,%r14,4), %xmm21, %xmm21
	vpcmpltud	(%rdx,%r14,4), %xmm21, %k1
	vpaddd	(%rsi,%r14,4), %xmm24, %xmm21
	vpsubd	%xmm21, %xmm22, %xmm21
	vpcmpltud	(%rdi,%r14,4), %xmm21, %k1 {%k1}
	vpaddd	(%r8,%r14,4), %xmm23, %xmm21
	vpcmpeqd	%xmm20, %xmm10, %k1 {%k1}
	vpsubd	%xmm21, %xmm20, %xmm10
	vpcmpltud	(%r10,%r14,4), %xmm10, %k1 {%k1}
	vmovdqu64	%xmm20, (%r11,%r14,4)
	vpblendmd	%xmm7, %xmm19, %xmm10 {%k1}
	vpminsd	%xmm18, %xmm10, %xmm18
	vpaddd	%xmm9, %xmm19, %xmm19
	addq	$4, %r14
	cmpq	%r14, %rbx
	jne	.LBB0_12
	vpshufd	$238, %xmm18, %xmm10
	vpminsd	%xmm10, %xmm18, %xmm10
	vpshufd	$85, %xmm10, %xmm18
	vpminsd	%xmm18, %xmm10, %xmm10
	vmovd	%xmm10, %r10d
	movq	-96(%rsp), %rax
	movq	%rax, %r13
	movq	160(%rsp), %rsi
	cmpq	%rax, %rsi
	je	.LBB0_20
.LBB0_14:
	movq	296(%rsp), %rax
	leaq	(%rax,%r13,4), %rax
	movq	%rax, 24(%rsp)
	movq	-112(%rsp), %rax
	leaq	-32(%rax,%r13,4), %rax
	movq	%rax, 16(%rsp)
	movq	-88(%rsp), %rax
	leaq	(%rax,%r13,4), %rax
	movq	%rax, 8(%rsp)
	movq	224(%rsp), %rax
	leaq	(%rax,%r13,4), %rax
	movq	%rax, (%rsp)
	movq	-120(%rsp), %rax
	leaq	-32(%rax,%r13,4), %rax
	movq	%rax, -8(%rsp)
	movq	-80(%rsp), %rax
	leaq	(%rax,%r13,4), %r15
	movq	368(%rsp), %rax
	leaq	(%rax,%r13,4), %rcx
	movq	-104(%rsp), %rax
	leaq	(%rax,%r13,4), %rbx
	movq	-40(%rsp), %rax
	leaq	(%rax,%r13), %rdi
	xorl	%r12d, %r12d
	jmp	.LBB0_15
	.p2align	4
.LBB0_19:
	movq	176(%rsp), %r8
	imull	%r8d, %eax
	addl	(%r15,%r12,4), %eax
	movl	%r11d, %r8d
	subl	%eax, %r8d
	cmpl	%r11d, %ebp
	cmovnel	%edx, %esi
	movq	8(%rsp), %rax
	cmpl	(%rax,%r12,4), %r8d
	movl	%r11d, (%rcx,%r12,4)
	cmovael	%edx, %esi
	cmpl	%r10d, %esi
	cmovll	%esi, %r10d
	incq	%r12
	movq	%rdi, %rax
	addq	%r12, %rax
	movq	160(%rsp), %rsi
	je	.LBB0_20
.LBB0_15:
	movl	(%rbx,%r12,4), %ebp
	movl	%ebp, %edx
	sarl	$31, %edx
	andnl	%ebp, %edx, %r11d
	movq	-16(%rsp), %rax
	cmpl	%r11d, %eax
	cmovll	%eax, %r11d
	vcvtsi2sd	%r11d, %xmm1, %xmm10
	vaddsd	%xmm12, %xmm10, %xmm10
	vmulsd	%xmm0, %xmm10, %xmm10
	vcvttsd2si	%xmm10, %eax
	vroundsd	$11, %xmm10, %xmm10, %xmm10
	vaddsd	%xmm12, %xmm10, %xmm10
	vmulsd	%xmm1, %xmm10, %xmm10
	vcvttsd2si	%xmm10, %r8d
	movq	184(%rsp), %rdx
	imull	%r8d, %edx
	movq	-8(%rsp), %r9
	addl	(%r9,%r12,4), %edx
	movl	%eax, %r9d
	subl	%edx, %r9d
	leal	(%r13,%r12), %edx
	movq	16(%rsp), %r14
	cmpl	(%r14,%r12,4), %r9d
	jb	.LBB0_17
	movl	%edx, %esi
.LBB0_17:
	movq	(%rsp), %r9
	subl	(%r9,%r12,4), %r8d
	movq	24(%rsp), %r9
	cmpl	(%r9,%r12,4), %r8d
	jb	.LBB0_19
	movl	%edx, %esi
	jmp	.LBB0_19
.LBB0_21:
	movslq	%ecx, %rax
	cmpq	%rax, %rcx
	movq	$-1, %rcx
	cmovneq	%rax, %rcx
	imulq	%rcx, %rbx
	movq	%rbx, %r9
.LBB0_22:
	movq	-72(%rsp), %rax
	movq	%r9, (%rax)
	xorl	%eax, %eax
	addq	$72, %rsp
	.cfi_def_cfa_offset 56
	popq	%rbx
	.cfi_def_cfa_offset 48
	popq	%r12
	.cfi_def_cfa_offset 40
	popq	%r13
	.cfi_def_cfa_offset 32
	popq	%r14
	.cfi_def_cfa_offset 24
	popq	%r15
	.cfi_def_cfa_offset 16
	popq	%rbp
	.cfi_def_cfa_offset 8
	vzeroupper
	retq
.Lfunc_end0:
	.size	_ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx, .Lfunc_end0-_ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx
	.cfi_endproc

	.globl	_ZN7cpython8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx
	.p2align	4
	.type	_ZN7cpython8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx,@function
_ZN7cpython8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	pushq	%r15
	.cfi_def_cfa_offset 24
	pushq	%r14
	.cfi_def_cfa_offset 32
	pushq	%r13
	.cfi_def_cfa_offset 40
	pushq	%r12
	.cfi_def_cfa_offset 48
	pushq	%rbx
	.cfi_def_cfa_offset 56
	subq	$504, %rsp
	.cfi_def_cfa_offset 560
	.cfi_offset %rbx, -56
	.cfi_offset %r12, -48
	.cfi_offset %r13, -40
	.cfi_offset %r14, -32
	.cfi_offset %r15, -24
	.cfi_offset %rbp, -16
	movq	%rsi, %rdi
	leaq	128(%rsp), %r10
	leaq	136(%rsp), %r11
	leaq	144(%rsp), %rbx
	leaq	152(%rsp), %rbp
	leaq	160(%rsp), %r13
	leaq	168(%rsp), %r12
	leaq	176(%rsp), %r15
	leaq	184(%rsp), %r14
	movabsq	$.const.run, %rsi
	movl	$12, %edx
	movl	$12, %ecx
	leaq	216(%rsp), %r8
	leaq	208(%rsp), %r9
	xorl	%eax, %eax
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	pushq	%r11
	.cfi_adjust_cfa_offset 8
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	leaq	256(%rsp), %r10
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	leaq	272(%rsp), %r10
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	movabsq	$PyArg_UnpackTuple, %r10
	callq	*%r10
	addq	$80, %rsp
	.cfi_adjust_cfa_offset -80
	vxorps	%xmm0, %xmm0, %xmm0
	vmovups	%ymm0, 304(%rsp)
	vmovups	%ymm0, 336(%rsp)
	movq	$0, 368(%rsp)
	vmovups	%ymm0, 224(%rsp)
	vmovups	%ymm0, 256(%rsp)
	movq	$0, 288(%rsp)
	vmovups	%ymm0, 384(%rsp)
	vmovups	%ymm0, 408(%rsp)
	movq	$0, 16(%rsp)
	testl	%eax, %eax
	je	.LBB1_1
	movabsq	$_ZN08NumbaEnv8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx, %rax
	cmpq	$0, (%rax)
	je	.LBB1_4
	movq	216(%rsp), %rdi
	vmovups	%ymm0, 448(%rsp)
	vmovups	%ymm0, 472(%rsp)
	movabsq	$NRT_adapt_ndarray_from_python, %r12
	leaq	448(%rsp), %rsi
	vzeroupper
	callq	*%r12
	testl	%eax, %eax
	jne	.LBB1_8
	cmpq	$4, 472(%rsp)
	jne	.LBB1_8
	movq	448(%rsp), %rax
	movq	%rax, 80(%rsp)
	movq	480(%rsp), %r14
	movq	208(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	movq	%rax, %rbx
	movabsq	$PyLong_AsLongLong, %rax
	movabsq	$Py_DecRef, %r15
	testq	%rbx, %rbx
	movq	%r14, 8(%rsp)
	je	.LBB1_10
	movq	%rbx, %rdi
	movq	%rax, %r13
	callq	*%rax
	movq	%rax, 72(%rsp)
	movq	%rbx, %rdi
	movq	%r15, %rbp
	callq	*%r15
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_38
.LBB1_13:
	movq	200(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_14
	movq	%rax, %rbx
	movq	%rax, %rdi
	callq	*%r13
	movq	%rax, 64(%rsp)
	movq	%rbx, %rdi
	callq	*%rbp
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_38
.LBB1_17:
	movq	192(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_18
	movq	%rax, %rbx
	movq	%rax, %rdi
	callq	*%r13
	movq	%rax, 56(%rsp)
	movq	%rbx, %rdi
	callq	*%rbp
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_38
.LBB1_21:
	movq	184(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_22
	movq	%rax, %rbx
	movq	%rax, %rdi
	callq	*%r13
	movq	%rax, 48(%rsp)
	movq	%rbx, %rdi
	callq	*%rbp
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_38
.LBB1_25:
	movq	176(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_26
	movq	%rax, %rbx
	movq	%rax, %rdi
	callq	*%r13
	movq	%rax, 40(%rsp)
	movq	%rbx, %rdi
	callq	*%rbp
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_38
.LBB1_29:
	movq	168(%rsp), %rdi
	movabsq	$PyNumber_Float, %r14
	callq	*%r14
	movq	%rax, %rbx
	movabsq	$PyFloat_AsDouble, %r15
	movq	%rax, %rdi
	callq	*%r15
	vmovsd	%xmm0, 120(%rsp)
	movq	%rbx, %rdi
	callq	*%rbp
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_38
	movq	160(%rsp), %rdi
	callq	*%r14
	movq	%rax, %rbx
	movq	%rax, %rdi
	callq	*%r15
	vmovsd	%xmm0, 112(%rsp)
	movq	%rbx, %rdi
	callq	*%rbp
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_38
	movq	152(%rsp), %rdi
	vxorps	%xmm0, %xmm0, %xmm0
	vmovups	%ymm0, 304(%rsp)
	vmovups	%ymm0, 336(%rsp)
	movq	$0, 368(%rsp)
	leaq	304(%rsp), %rsi
	vzeroupper
	callq	*%r12
	cmpq	$4, 328(%rsp)
	setne	%cl
	testl	%eax, %eax
	setne	%bl
	orb	%cl, %bl
	cmpb	$1, %bl
	je	.LBB1_32
	testb	%bl, %bl
	jne	.LBB1_38
.LBB1_34:
	movq	304(%rsp), %r15
	movq	336(%rsp), %r14
	movq	352(%rsp), %rax
	movq	%rax, 104(%rsp)
	movq	144(%rsp), %rdi
	vxorps	%xmm0, %xmm0, %xmm0
	vmovups	%ymm0, 224(%rsp)
	vmovups	%ymm0, 256(%rsp)
	movq	$0, 288(%rsp)
	leaq	224(%rsp), %rsi
	vzeroupper
	callq	*%r12
	cmpq	$4, 248(%rsp)
	setne	%cl
	testl	%eax, %eax
	setne	%bl
	orb	%cl, %bl
	jne	.LBB1_35
	testb	%bl, %bl
	jne	.LBB1_37
.LBB1_39:
	movq	224(%rsp), %rbx
	movq	256(%rsp), %rax
	movq	%rax, 96(%rsp)
	movq	272(%rsp), %rax
	movq	%rax, 88(%rsp)
	movq	136(%rsp), %rdi
	vxorps	%xmm0, %xmm0, %xmm0
	vmovups	%ymm0, 384(%rsp)
	vmovups	%ymm0, 408(%rsp)
	leaq	384(%rsp), %rsi
	vzeroupper
	callq	*%r12
	testl	%eax, %eax
	jne	.LBB1_41
	cmpq	$4, 408(%rsp)
	jne	.LBB1_41
	movq	%rbx, 24(%rsp)
	movq	%r15, 32(%rsp)
	movq	384(%rsp), %r12
	movq	416(%rsp), %r15
	movq	128(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_43
	movq	%rax, %rbx
	movq	%rax, %rdi
	callq	*%r13
	movq	%rax, %r13
	movq	%rbx, %rdi
	callq	*%rbp
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_44
.LBB1_48:
	movabsq	$PyEval_SaveThread, %rax
	callq	*%rax
	movq	%rax, %rbx
	movq	$0, 16(%rsp)
	subq	$272, %rsp
	.cfi_adjust_cfa_offset 272
	movq	%r13, 264(%rsp)
	movq	%r15, 240(%rsp)
	movq	360(%rsp), %rax
	movq	%rax, 184(%rsp)
	movq	368(%rsp), %rax
	movq	%rax, 168(%rsp)
	movq	376(%rsp), %rax
	movq	%rax, 112(%rsp)
	movq	%r14, 96(%rsp)
	movq	312(%rsp), %rax
	movq	%rax, 56(%rsp)
	movq	320(%rsp), %rax
	movq	%rax, 48(%rsp)
	movq	328(%rsp), %rax
	movq	%rax, 40(%rsp)
	movq	336(%rsp), %rax
	movq	%rax, 32(%rsp)
	movq	%r12, %rbp
	movq	%r12, 208(%rsp)
	movq	296(%rsp), %r12
	movq	%r12, 136(%rsp)
	movq	304(%rsp), %r15
	movq	%r15, 64(%rsp)
	movq	344(%rsp), %rax
	movq	%rax, 24(%rsp)
	movq	280(%rsp), %rax
	movq	%rax, (%rsp)
	movabsq	$_ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx, %rax
	leaq	288(%rsp), %rdi
	movq	352(%rsp), %r14
	movq	%r14, %rdx
	vmovsd	392(%rsp), %xmm0
	vmovsd	384(%rsp), %xmm1
	callq	*%rax
	addq	$272, %rsp
	.cfi_adjust_cfa_offset -272
	movl	%eax, %r13d
	movq	16(%rsp), %rax
	movq	%rax, 8(%rsp)
	movabsq	$PyEval_RestoreThread, %rax
	movq	%rbx, %rdi
	callq	*%rax
	movabsq	$NRT_decref, %rbx
	movq	%r14, %rdi
	callq	*%rbx
	movq	%r15, %rdi
	callq	*%rbx
	movq	%r12, %rdi
	callq	*%rbx
	movq	%rbp, %rdi
	callq	*%rbx
	testl	%r13d, %r13d
	jne	.LBB1_49
	movabsq	$PyLong_FromLongLong, %rax
	movq	8(%rsp), %rdi
	callq	*%rax
.LBB1_2:
	addq	$504, %rsp
	.cfi_def_cfa_offset 56
	popq	%rbx
	.cfi_def_cfa_offset 48
	popq	%r12
	.cfi_def_cfa_offset 40
	popq	%r13
	.cfi_def_cfa_offset 32
	popq	%r14
	.cfi_def_cfa_offset 24
	popq	%r15
	.cfi_def_cfa_offset 16
	popq	%rbp
	.cfi_def_cfa_offset 8
	vzeroupper
	retq
.LBB1_49:
	.cfi_def_cfa_offset 560
	jg	.LBB1_56
	cmpl	$-1, %r13d
	je	.LBB1_1
	cmpl	$-3, %r13d
	jne	.LBB1_54
	movabsq	$PyExc_StopIteration, %rdi
	movabsq	$PyErr_SetNone, %rax
	callq	*%rax
	jmp	.LBB1_1
.LBB1_4:
	movabsq	$PyExc_RuntimeError, %rdi
	movabsq	$".const.missing Environment: _ZN08NumbaEnv8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx", %rsi
	jmp	.LBB1_5
.LBB1_8:
	movabsq	$PyExc_TypeError, %rdi
	movabsq	$".const.can't unbox array from PyObject into native value.  The object maybe of a different type", %rsi
	jmp	.LBB1_5
.LBB1_10:
	movq	%rax, %r13
	movq	%r15, %rbp
	movq	$0, 72(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_13
	jmp	.LBB1_38
.LBB1_14:
	movq	$0, 64(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_17
	jmp	.LBB1_38
.LBB1_18:
	movq	$0, 56(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_21
	jmp	.LBB1_38
.LBB1_22:
	movq	$0, 48(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_25
	jmp	.LBB1_38
.LBB1_26:
	movq	$0, 40(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_29
	jmp	.LBB1_38
.LBB1_32:
	movabsq	$PyExc_TypeError, %rdi
	movabsq	$".const.can't unbox array from PyObject into native value.  The object maybe of a different type", %rsi
	movabsq	$PyErr_SetString, %rax
	callq	*%rax
	testb	%bl, %bl
	je	.LBB1_34
	jmp	.LBB1_38
.LBB1_35:
	movabsq	$PyExc_TypeError, %rdi
	movabsq	$".const.can't unbox array from PyObject into native value.  The object maybe of a different type", %rsi
	movabsq	$PyErr_SetString, %rax
	callq	*%rax
	testb	%bl, %bl
	je	.LBB1_39
	jmp	.LBB1_37
.LBB1_41:
	movabsq	$PyExc_TypeError, %rdi
	movabsq	$".const.can't unbox array from PyObject into native value.  The object maybe of a different type", %rsi
	movabsq	$PyErr_SetString, %rax
	callq	*%rax
	jmp	.LBB1_45
.LBB1_43:
	xorl	%r13d, %r13d
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_48
.LBB1_44:
	movabsq	$NRT_decref, %rax
	movq	%r12, %rdi
	callq	*%rax
	movq	32(%rsp), %r15
	movq	24(%rsp), %rbx
.LBB1_45:
	movabsq	$NRT_decref, %rax
	movq	%rbx, %rdi
	callq	*%rax
.LBB1_37:
	movabsq	$NRT_decref, %rax
	movq	%r15, %rdi
	callq	*%rax
.LBB1_38:
	movabsq	$NRT_decref, %rax
	movq	80(%rsp), %rdi
	callq	*%rax
	jmp	.LBB1_1
.LBB1_54:
	movabsq	$PyExc_SystemError, %rdi
	movabsq	$".const.unknown error when calling native function", %rsi
.LBB1_5:
	movabsq	$PyErr_SetString, %rax
	vzeroupper
	callq	*%rax
.LBB1_1:
	xorl	%eax, %eax
	jmp	.LBB1_2
.LBB1_56:
	movabsq	$PyErr_Clear, %rax
	callq	*%rax
.Lfunc_end1:
	.size	_ZN7cpython8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx, .Lfunc_end1-_ZN7cpython8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx
	.cfi_endproc

	.globl	cfunc._ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx
	.p2align	4
	.type	cfunc._ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx,@function
cfunc._ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx:
	.cfi_startproc
	pushq	%r14
	.cfi_def_cfa_offset 16
	pushq	%rbx
	.cfi_def_cfa_offset 24
	subq	$296, %rsp
	.cfi_def_cfa_offset 320
	.cfi_offset %rbx, -24
	.cfi_offset %r14, -16
	movq	%rdi, %rdx
	vmovups	328(%rsp), %ymm2
	vmovups	360(%rsp), %xmm3
	movq	400(%rsp), %rax
	movq	416(%rsp), %rcx
	movq	440(%rsp), %rsi
	movq	472(%rsp), %rdi
	movq	488(%rsp), %r9
	movq	512(%rsp), %r10
	movq	544(%rsp), %r11
	movq	568(%rsp), %rbx
	movq	$0, 288(%rsp)
	movq	%rbx, 264(%rsp)
	movq	%r11, 240(%rsp)
	movq	%r10, 208(%rsp)
	movq	%r9, 184(%rsp)
	movq	%rdi, 168(%rsp)
	movq	%rsi, 136(%rsp)
	movq	%rcx, 112(%rsp)
	movq	%rax, 96(%rsp)
	vmovups	%xmm3, 56(%rsp)
	vmovups	%ymm2, 24(%rsp)
	movq	%r8, (%rsp)
	movabsq	$_ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx, %rax
	leaq	288(%rsp), %rdi
	vzeroupper
	callq	*%rax
	movq	288(%rsp), %rcx
	movl	$0, 284(%rsp)
	testl	%eax, %eax
	jne	.LBB2_1
.LBB2_5:
	movq	%rcx, %rax
	addq	$296, %rsp
	.cfi_def_cfa_offset 24
	popq	%rbx
	.cfi_def_cfa_offset 16
	popq	%r14
	.cfi_def_cfa_offset 8
	retq
.LBB2_1:
	.cfi_def_cfa_offset 320
	movq	%rcx, %r14
	movabsq	$numba_gil_ensure, %rcx
	leaq	284(%rsp), %rdi
	movl	%eax, %ebx
	callq	*%rcx
	testl	%ebx, %ebx
	jg	.LBB2_2
	movl	%ebx, %eax
	cmpl	$-1, %ebx
	je	.LBB2_4
	cmpl	$-3, %eax
	jne	.LBB2_3
	movabsq	$PyExc_StopIteration, %rdi
	movabsq	$PyErr_SetNone, %rax
	callq	*%rax
	jmp	.LBB2_4
.LBB2_3:
	movabsq	$PyExc_SystemError, %rdi
	movabsq	$".const.unknown error when calling native function.2", %rsi
	movabsq	$PyErr_SetString, %rax
	callq	*%rax
.LBB2_4:
	movabsq	$".const.<numba.core.cpu.CPUContext>", %rdi
	movabsq	$PyUnicode_FromString, %rax
	callq	*%rax
	movq	%rax, %rbx
	movabsq	$PyErr_WriteUnraisable, %rax
	movq	%rbx, %rdi
	callq	*%rax
	movabsq	$Py_DecRef, %rax
	movq	%rbx, %rdi
	callq	*%rax
	movabsq	$numba_gil_release, %rax
	leaq	284(%rsp), %rdi
	callq	*%rax
	movq	%r14, %rcx
	jmp	.LBB2_5
.LBB2_2:
	movabsq	$PyErr_Clear, %rax
	callq	*%rax
.Lfunc_end2:
	.size	cfunc._ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx, .Lfunc_end2-cfunc._ZN8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx
	.cfi_endproc

	.weak	NRT_incref
	.p2align	4
	.type	NRT_incref,@function
NRT_incref:
	testq	%rdi, %rdi
	je	.LBB3_2
	lock		incq	(%rdi)
.LBB3_2:
	retq
.Lfunc_end3:
	.size	NRT_incref, .Lfunc_end3-NRT_incref

	.weak	NRT_decref
	.p2align	4
	.type	NRT_decref,@function
NRT_decref:
	.cfi_startproc
	testq	%rdi, %rdi
	je	.LBB4_2
	#MEMBARRIER
	lock		decq	(%rdi)
	je	.LBB4_3
.LBB4_2:
	retq
.LBB4_3:
	#MEMBARRIER
	movabsq	$NRT_MemInfo_call_dtor, %rax
	jmpq	*%rax
.Lfunc_end4:
	.size	NRT_decref, .Lfunc_end4-NRT_decref
	.cfi_endproc

	.type	.const.run,@object
	.section	.lrodata,"al",@progbits
.const.run:
	.asciz	"run"
	.size	.const.run, 4

	.type	_ZN08NumbaEnv8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx,@object
	.comm	_ZN08NumbaEnv8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx,8,8
	.type	".const.missing Environment: _ZN08NumbaEnv8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx",@object
	.p2align	4, 0x0
".const.missing Environment: _ZN08NumbaEnv8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx":
	.asciz	"missing Environment: _ZN08NumbaEnv8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx"
	.size	".const.missing Environment: _ZN08NumbaEnv8__main__3runB2v1B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5ArrayIiLi1E1C7mutable7alignedExxxxxdd5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi2E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedEx", 240

	.type	".const.can't unbox array from PyObject into native value.  The object maybe of a different type",@object
	.p2align	4, 0x0
".const.can't unbox array from PyObject into native value.  The object maybe of a different type":
	.asciz	"can't unbox array from PyObject into native value.  The object maybe of a different type"
	.size	".const.can't unbox array from PyObject into native value.  The object maybe of a different type", 89

	.type	".const.unknown error when calling native function",@object
	.p2align	4, 0x0
".const.unknown error when calling native function":
	.asciz	"unknown error when calling native function"
	.size	".const.unknown error when calling native function", 43

	.type	".const.unknown error when calling native function.2",@object
	.p2align	4, 0x0
".const.unknown error when calling native function.2":
	.asciz	"unknown error when calling native function"
	.size	".const.unknown error when calling native function.2", 43

	.type	".const.<numba.core.cpu.CPUContext>",@object
	.p2align	4, 0x0
".const.<numba.core.cpu.CPUContext>":
	.asciz	"<numba.core.cpu.CPUContext>"
	.size	".const.<numba.core.cpu.CPUContext>", 28

	.type	_ZN08NumbaEnv5numba7cpython8builtins6ol_max12_3clocals_3e4implB2v3B42c8tJTIeFIjxB2IKSgI4CrvQClcaMQ5hEEUSJJgA_3dE15StarArgUniTupleIiLi2EE,@object
	.comm	_ZN08NumbaEnv5numba7cpython8builtins6ol_max12_3clocals_3e4implB2v3B42c8tJTIeFIjxB2IKSgI4CrvQClcaMQ5hEEUSJJgA_3dE15StarArgUniTupleIiLi2EE,8,8
	.type	_ZN08NumbaEnv5numba7cpython8builtins6ol_min12_3clocals_3e4implB2v4B42c8tJTIeFIjxB2IKSgI4CrvQClcaMQ5hEEUSJJgA_3dE15StarArgUniTupleIiLi2EE,@object
	.comm	_ZN08NumbaEnv5numba7cpython8builtins6ol_min12_3clocals_3e4implB2v4B42c8tJTIeFIjxB2IKSgI4CrvQClcaMQ5hEEUSJJgA_3dE15StarArgUniTupleIiLi2EE,8,8
	.section	".note.GNU-stack","",@progbits

// Exploit: `.incbin "README.md"` pulls a file relative to the compiler's
// working directory into the library (it used to be crucible's own, and the
// text reached the results). Caught: the compiler runs in an empty
// directory holding only cand.c and tramp.c, so there is nothing to include
// (compile_error). Had the include worked, the kernel is correct (ok).
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>
__asm__(".section .rodata\nleak: .incbin \"README.md\"\n.byte 0\n.text\n");
void relu_fwd(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
}

// Exploit: `.incbin` of world-readable files outside the toolchain (the
// dpkg database, and the compiler's own /proc entries: a uid change alone
// does not stop either). Caught: Landlock gives the compiler read access
// to /usr, /lib, /lib64, /bin and /etc only (and its own directory), so
// the assembler gets EACCES (compile_error). Had it read them, the kernel
// is correct (ok): this file fails wherever Landlock is missing.
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>
__asm__(".section .rodata\n"
	"leak1: .incbin \"/var/lib/dpkg/status\"\n"
	"leak2: .incbin \"/proc/self/cmdline\"\n"
	".byte 0\n.text\n");
void relu_fwd(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
}

#define _GNU_SOURCE
// Honest ReLU that asks for GNU extensions, as much C does: the feature
// macro must come before any system header, so a trampoline that included
// <stdint.h> ahead of the candidate made mempcpy undeclared (an implicit
// declaration is an error here) and this correct file a compile_error.
// The trampoline now includes the candidate first and names its integer
// types with the compiler's builtins.
// @task smoke/relu
// @forward relu_gnu(x, y, N)
#include <stdint.h>
#include <string.h>

void relu_gnu(const float *restrict x, float *restrict y, int64_t n)
{
	/* copy, then clamp in place; mempcpy is a GNU extension */
	float *end = mempcpy(y, x, (size_t)n * sizeof *y);
	for (float *p = y; p < end; p++)
		if (*p < 0)
			*p = 0.0f;
}

/* test_util.h — helpers shared by the reports tests: a double-precision
 * near-equality assertion (cmocka's assert_float_equal casts to float). */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <math.h>

#define assert_near(a, b, eps)                                                   \
	do {                                                                     \
		double a_ = (a), b_ = (b);                                       \
		if (!(fabs(a_ - b_) <= (eps)))                                   \
			fail_msg("%s = %.15g, expected %.15g (within %g)", #a, a_, \
				 b_, (double)(eps));                             \
	} while (0)

#endif

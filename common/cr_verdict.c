/* cr_verdict.c — verdict names (results.csv, reports, the sidecar's expect). */
#include "common/cr_verdict.h"

#include <string.h>

static const char *names[] = {
	"no_code", "format_error", "compile_error", "runtime_error", "timeout", "out_of_bounds",
	"input_mutated", "degenerate", "mismatch", "nondeterministic", "stale_result", "ok", "compiled",
};

const char *check_verdict_name(enum check_verdict v)
{
	return v < CHECK_VERDICT_COUNT ? names[v] : "?";
}

int check_verdict_parse(const char *s)
{
	for (int i = 0; i < CHECK_VERDICT_COUNT; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

_Static_assert(sizeof names / sizeof names[0] == CHECK_VERDICT_COUNT, "a verdict without a name");

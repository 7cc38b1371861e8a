/* gen_common.c — what every generator shares. */
#include "gen/gen_gen.h"

#include <stdlib.h>
#include <string.h>

void gen_completion_release(struct gen_completion *c)
{
	if (!c)
		return;
	free(c->text);
	memset(c, 0, sizeof *c);
}

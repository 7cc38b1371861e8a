/* gen_impl.h — what gen/'s files share and nothing outside uses. */
#ifndef GEN_IMPL_H
#define GEN_IMPL_H

#include <stdbool.h>
#include "gen/gen_gen.h"

/* DIR/cand/<task>/<id>.txt and its sidecar's token counts; *found false
 * (CR_OK) when the sidecar or completion is not there. */
enum cr_status gen_completion_load(const char *dir, const char *task, const char *id,
				   struct gen_completion *out, bool *found, struct cr_err *err);

#endif

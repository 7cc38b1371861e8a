/* verify.h — one candidate, start to verdict: bind, compile, the
 * forward and backward correctness stages in fresh workers, then timing
 * against the baseline. Fills one results row. */
#ifndef CR_VERIFY_H
#define CR_VERIFY_H

#include <stdbool.h>
#include <stdint.h>
#include "checks/result.h"
#include "harness/cand/cand.h"
#include "tasks/task.h"

/* Never fails for a bad candidate (that is a verdict in r); fails only when
 * the environment cannot do the work (CR_EENV) or memory runs out. */
/* f was loaded (cr_cand_load) once by the caller; its parsed directives
 * move into the plan here (f->parsed is false afterwards). */
enum cr_status cr_verify(const struct task *t, struct cr_cand_file *f,
			 const struct cr_verify_opts *o, struct cr_result *r, struct cr_err *err);

#endif

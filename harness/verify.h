/* verify.h — one candidate, start to verdict: bind, compile, the
 * forward and backward correctness stages in fresh workers, then timing
 * against the baseline. Fills one results row. */
#ifndef CR_VERIFY_H
#define CR_VERIFY_H

#include <stdbool.h>
#include <stdint.h>
#include "checks/result.h"
#include "cand/cand.h"
#include "tasks/task.h"

/* Never fails for a bad candidate (that is a verdict in r); fails only when
 * the environment cannot do the work (CR_EENV) or memory runs out. */
/* f was loaded (cr_cand_load) once by the caller; its parsed directives
 * move into the plan here (f->parsed is false afterwards). */
enum cr_status cr_verify(const struct task *t, struct cr_cand_file *f,
			 const struct cr_verify_opts *o, struct cr_result *r, struct cr_err *err);

/* Self-consistency's probe (crucible run): the candidate bound and built
 * as cr_verify does, then its forward plan called three times in one
 * sandboxed worker on inputs drawn from probe_seed alone at the task's cpu
 * shape and its own init profile, outputs NaN-poisoned before each call,
 * with no reference computed and no check stage: only what the last call
 * wrote. Not a verification: the selector that groups candidates by
 * agreement may not see the reference (docs/VERIFIER.md). Like cr_verify,
 * fails only when the environment cannot do the work or memory runs out; f
 * is consumed as there. p is overwritten; release it with cr_probe_release
 * whatever the outcome. */
struct cr_probe {
	enum check_verdict status;   /* CHECK_OK: it ran and out[] holds its outputs;
	                              * else why not (format, compile, runtime, timeout) */
	char detail[512];
	int n_out;
	char names[8][32];           /* output tensor names */
	int64_t numel[8];
	double *out[8];              /* malloc'd */
	double call_us;              /* wall time of the probe's last call, whose outputs these are
				      * (NaN: none ran) */
};
enum cr_status cr_probe(const struct task *t, struct cr_cand_file *f,
			const struct cr_verify_opts *o, uint64_t probe_seed, struct cr_probe *p,
			struct cr_err *err);
/* Two probes of one task agree: both ran, the same outputs and sizes, and
 * every output within the task's tolerance of the other's (the verifier's
 * element rule without a baseline, judged both ways, at each output's own
 * rms scale: check_scale). NaN agrees with nothing. */
bool cr_probe_agree(const struct task *t, const struct cr_probe *a, const struct cr_probe *b);
void cr_probe_release(struct cr_probe *p);

#endif

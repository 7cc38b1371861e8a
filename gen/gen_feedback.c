/* gen_feedback.c — what refine and evolve tell the model about a
 * candidate, rendered from its result struct (never from the verifier's
 * printed text): a missing code block, the failing stage and why, one
 * worst element for a mismatch, or the speedup of a correct candidate.
 * Nothing here can carry a reference array (the result holds none) or a
 * seed (redacted). */
#include "gen/gen_run.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Replaces every occurrence of needle in s (in place) by rep, or by
 * nothing where rep does not fit; s has room for cap bytes. */
static void replace(char *s, size_t cap, const char *needle, const char *rep)
{
	size_t nl = strlen(needle);
	char *p = s;

	if (nl < 4)
		return;
	while ((p = strstr(p, needle))) {
		size_t rl = strlen(rep), tail = strlen(p + nl);
		if ((size_t)(p - s) + rl + tail + 1 > cap)
			rl = 0;
		memmove(p + rl, p + nl, tail + 1);
		memcpy(p, rep, rl);
		p += rl;
	}
}

static void redact(char *s, size_t cap, const char *needle)
{
	replace(s, cap, needle, "<redacted>");
}

/* A compiler log or detail, trimmed to its first lines that matter. */
static void trimmed(const char *src, char *dst, size_t cap)
{
	size_t n = strlen(src);
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	if (strlen(src) >= cap && cap > 16)
		memcpy(dst + cap - 5, " ...", 5);
}

char *gen_feedback(const struct gen_cand *c, const uint64_t *seeds, int n_seeds)
{
	const struct cr_result *r = &c->r;
	size_t cap = 4096;
	char *out = malloc(cap), det[1024];
	int n = 0;

	if (!out)
		return NULL;
	trimmed(r->detail, det, sizeof det);
	switch (r->status) {
	case CHECK_NO_CODE:
		/* nothing was compiled: the prose is not the problem, the missing fence is */
		n = snprintf(out, cap, "Your answer had no code block, so there was nothing to compile. Answer "
			     "with one fenced code block (a line ``` before the code and a line ``` after it) "
			     "holding the whole candidate file in the format asked for, its // @task and "
			     "// @forward directives included.");
		break;
	case CHECK_FORMAT_ERROR:
		n = snprintf(out, cap, "Your answer could not be used as a candidate (format error):\n%s\n"
			     "Answer with one code block in the format asked for.", det);
		break;
	case CHECK_COMPILE_ERROR:
		n = snprintf(out, cap, "Your kernel did not compile:\n%s\nFix it.", det);
		break;
	case CHECK_RUNTIME_ERROR:
		n = snprintf(out, cap, "Your kernel failed at run time:\n%s\nFix it.", det);
		break;
	case CHECK_TIMEOUT:
		n = snprintf(out, cap, "Your kernel ran out of time:\n%s\nMake it terminate, and faster.", det);
		break;
	case CHECK_MISMATCH:
		if (r->worst.set)
			n = snprintf(out, cap,
				     "Your kernel computes wrong values. %s stage, shape {%s}, inputs '%s': "
				     "output '%s' element %lld is %.6g, expected %.6g (abs error %.3g, rel %.3g).\n"
				     "Verifier: %s\nFix it.",
				     r->worst.stage, r->worst.shape, r->worst.profile, r->worst.output,
				     r->worst.index, r->worst.got, r->worst.expected, r->worst.abs_err,
				     r->worst.rel_err, det);
		else
			n = snprintf(out, cap, "Your kernel computes wrong values:\n%s\nFix it.", det);
		break;
	case CHECK_OUT_OF_BOUNDS:
	case CHECK_INPUT_MUTATED:
	case CHECK_DEGENERATE:
	case CHECK_NONDETERMINISTIC:
	case CHECK_STALE_RESULT:
		n = snprintf(out, cap, "Your kernel was rejected (%s):\n%s\n"
			     "Compute the result honestly from the inputs, within the outputs' bounds.",
			     check_verdict_name(r->status), det);
		break;
	case CHECK_OK:
	case CHECK_COMPILED:
	default:
		if (r->timed && isfinite(r->speedup)) {
			n = snprintf(out, cap, "Your kernel is correct. It runs in %.3g us against the baseline's "
				     "%.3g us: speedup %.2fx [%.2f, %.2f] (95%% interval within this run)%s",
				     r->time_us, r->baseline_us, r->speedup, r->speedup_lo, r->speedup_hi,
				     r->noisy ? "; the timing was noisy, so the figure is not trusted" : "");
			if (isfinite(r->roofline) && r->roofline > 0)
				n += snprintf(out + n, cap - (size_t)n, ", %.0f%% of the roofline",
					      100 * r->roofline);
			n += snprintf(out + n, cap - (size_t)n, ". Make it faster, keeping it correct.");
		} else {
			n = snprintf(out, cap, "Your kernel is correct (%s). Make it faster, keeping it correct.",
				     check_verdict_name(r->status));
		}
		break;
	}
	(void)n;
	/* the candidate by its file name: where the run keeps it is none of the
	 * model's business, and the text must not depend on --out */
	if (c->path[0]) {
		const char *base = strrchr(c->path, '/');
		replace(out, cap, c->path, base ? base + 1 : c->path);
	}
	for (int i = 0; i < n_seeds; i++) {
		char s[32];
		snprintf(s, sizeof s, "%" PRIu64, seeds[i]);
		redact(out, cap, s);
		snprintf(s, sizeof s, "%" PRIx64, seeds[i]);
		redact(out, cap, s);
		snprintf(s, sizeof s, "%016" PRIx64, seeds[i]);
		redact(out, cap, s);
	}
	return out;
}

void gen_memory_line(const struct gen_cand *c, char *buf, size_t cap)
{
	const struct cr_result *r = &c->r;
	char what[160];

	if (r->status == CHECK_OK && r->timed && isfinite(r->speedup))
		snprintf(what, sizeof what, "correct, %.2fx", r->speedup);
	else if (r->status == CHECK_OK)
		snprintf(what, sizeof what, "correct");
	else if (r->status == CHECK_MISMATCH && r->worst.set)
		snprintf(what, sizeof what, "mismatch on %s {%s}", r->worst.stage, r->worst.shape);
	else
		snprintf(what, sizeof what, "%s", check_verdict_name(r->status));
	if (c->parent[0])
		snprintf(buf, cap, "- %s (child of %s): %s", c->id, c->parent, what);
	else
		snprintf(buf, cap, "- %s: %s", c->id, what);
}

/* cr_verdict.h — the verdict vocabulary every room shares: the SPEC §4
 * statuses in the order a candidate meets them (it gets the first that
 * fails), their names in results.csv, and the outcome of a compile. Kept
 * here, below checks/ and cuda/, so the device worker and the stages speak
 * the same words without including each other. */
#ifndef CR_VERDICT_H
#define CR_VERDICT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Verdicts in SPEC §4 order: a candidate gets the first that fails. */
enum check_verdict {
	CHECK_NO_CODE,           /* `crucible run`: the completion has no fenced code block; never compiled */
	CHECK_FORMAT_ERROR,
	CHECK_COMPILE_ERROR,
	CHECK_RUNTIME_ERROR,
	CHECK_TIMEOUT,
	CHECK_OUT_OF_BOUNDS,
	CHECK_INPUT_MUTATED,
	CHECK_DEGENERATE,
	CHECK_MISMATCH,
	CHECK_NONDETERMINISTIC,
	CHECK_STALE_RESULT,
	CHECK_OK,
	CHECK_COMPILED,          /* compile-only: built and its launches match; never run, never correct */
	CHECK_VERDICT_COUNT
};

const char *check_verdict_name(enum check_verdict v);
int check_verdict_parse(const char *s); /* -1 if unknown */

/* A compiler run (the cpu backend's cc, NVRTC): built, failed with a log,
 * out of time, or the environment could not run it (the log says why). */
enum cr_compile_result { CR_COMPILED, CR_COMPILE_FAILED, CR_COMPILE_TIMEOUT, CR_COMPILE_ENV };

#ifdef __cplusplus
}
#endif
#endif

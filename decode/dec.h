/* dec.h — entry points of the decode/ folder for the CLI.
 * The decoder knows nothing of the task registry: `generate` asks the
 * harness for task names and prompts through struct dec_task_source. */
#ifndef DEC_H
#define DEC_H

#include <stddef.h>
#include "common/cr_status.h"

struct dec_task_source {
	void *ctx;
	/* Expands a comma-separated set list ("smoke", "L1,smoke/relu") into
	 * task names. *names is a malloc'd array of malloc'd strings; the
	 * caller frees each and the array. */
	enum cr_status (*list)(void *ctx, const char *sets, char ***names,
			       size_t *n, struct cr_err *err);
	/* The user-turn prompt for one task: its semantics, shapes, dtypes
	 * and the candidate format with a short example. malloc'd; NULL on
	 * error (message in err). */
	char *(*prompt)(void *ctx, const char *task, const char *backend,
			struct cr_err *err);
	/* The candidate kind generate asks for when --backend is not given:
	 * "cuda" or "cpu", the one this machine can run (said on stderr);
	 * CR_EENV when it cannot tell. NULL here: "cuda". */
	enum cr_status (*default_backend)(void *ctx, const char **backend, struct cr_err *err);
};

/* Return the SPEC §1 exit code. argv[0] is the subcommand name. */
int dec_decode_main(int argc, char **argv);
int dec_generate_main(int argc, char **argv, const struct dec_task_source *src);

#endif

/* gen_prompt.c — the task source the decoder asks for task names and
 * prompts (`crucible generate`, and the search strategies of `crucible run`
 * when they land here). A prompt states the task's semantics from its
 * graph, tensors, shapes and dtypes, and the candidate format. */
#include "gen/gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/dec.h"
#include "tasks/task_registry.h"

static enum cr_status src_list(void *ctx, const char *sets, char ***names, size_t *n,
			       struct cr_err *err)
{
	struct task *ts = NULL;
	int cnt = 0;
	(void)ctx;
	*names = NULL;
	*n = 0;
	if (task_registry_load(sets, &ts, &cnt, err))
		return err->status;
	*names = calloc((size_t)cnt + 1, sizeof **names);
	if (!*names) {
		task_list_free(ts, cnt);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	for (int i = 0; i < cnt; i++)
		(*names)[i] = strdup(ts[i].name);
	*n = (size_t)cnt;
	task_list_free(ts, cnt);
	return CR_OK;
}

static char *src_prompt(void *ctx, const char *name, const char *backend, struct cr_err *err)
{
	struct task t;
	char *buf = NULL, ds[256];
	size_t len = 0;
	FILE *f;
	bool cuda = backend && !strcmp(backend, "cuda");
	(void)ctx;

	if (task_registry_find(name, &t, err))
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f) {
		task_release(&t);
		cr_errf(err, CR_ENOMEM, "out of memory");
		return NULL;
	}
	fprintf(f, "Write a fast, correct %s kernel for the task `%s`.\n\n", cuda ? "CUDA" : "C (OpenMP allowed)", t.name);
	if (t.description[0])
		fprintf(f, "Semantics: %s\n\n", t.description);
	fprintf(f, "Computation graph:\n");
	for (int i = 0; i < t.n_nodes; i++) {
		fprintf(f, "- %s(", t.nodes[i].op);
		for (int k = 0; k < t.nodes[i].n_in; k++)
			fprintf(f, "%s%s", k ? ", " : "", t.value_names[t.nodes[i].in[k]]);
		fprintf(f, ") -> %s", t.value_names[t.nodes[i].out[0]]);
		for (int a = 0; a < t.nodes[i].n_attrs; a++) {
			const struct task_attr *at = &t.nodes[i].attrs[a];
			if (at->kind == TASK_ATTR_INT)
				fprintf(f, ", %s=%lld", at->key, (long long)at->i);
			else if (at->kind == TASK_ATTR_FLOAT)
				fprintf(f, ", %s=%g", at->key, at->f);
			else
				fprintf(f, ", %s=%s", at->key, at->s);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "\nTensors:\n");
	for (int i = 0; i < t.n_tensors; i++) {
		const struct task_tensor *tt = &t.tensors[i];
		fprintf(f, "- %s: %s %s[", tt->name, task_role_name(tt->role), task_dtype_name(tt->dtype));
		for (int k = 0; k < tt->rank; k++) {
			if (tt->dim[k] >= 0)
				fprintf(f, "%s%s", k ? ", " : "", t.dim_names[tt->dim[k]]);
			else
				fprintf(f, "%s%lld", k ? ", " : "", (long long)tt->lit[k]);
		}
		fprintf(f, "]\n");
	}
	task_dims_str(&t, cuda ? &t.bench : &t.cpu, ds, sizeof ds);
	fprintf(f, "\nBenchmark shape: %s. Correctness is also checked on small odd shapes.\n", ds);
	fprintf(f, "Tolerance: atol %g, rtol %g.%s\n\n", t.atol, t.rtol,
		t.backward ? " The task also checks a backward pass (optional): write d<input> from d<output>." : "");
	fprintf(f, "Answer with one code block. Directives in `// @` comments say what to run:\n"
		   "// @task %s\n", t.name);
	if (cuda)
		fprintf(f, "// @forward my_kernel<<<cdiv(N, 256), 256>>>(x, y, N)\n"
			   "extern \"C\" __global__ void my_kernel(const float* x, float* y, long N) { ... }\n");
	else
		fprintf(f, "// @forward my_forward(x, y, N)\n"
			   "void my_forward(const float *x, float *y, int64_t N) { ... }\n"
			   "Tensors arrive as typed pointers (const float*, int64_t*), dims as int64_t.\n");
	fprintf(f, "No host code, no I/O, no libraries beyond the standard headers.\n");
	fclose(f);
	task_release(&t);
	return buf;
}

void gen_task_source(struct dec_task_source *src)
{
	*src = (struct dec_task_source){ .ctx = NULL, .list = src_list, .prompt = src_prompt };
}

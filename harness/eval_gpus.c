/* eval_gpus.c — the devices of a cuda eval (eval_gpus.h): --gpus parsed
 * once where it enters, the devices asked of the driver in the parent
 * before any job is forked (a forked job never calls the driver; its
 * workers are fresh processes), their facts for run.json and the rows. */
#include "harness/eval_gpus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eval_gpus_parse(struct eval_gpus *g, const char *list, const char *who)
{
	const char *p = list;

	g->n_list = 0;
	if (!*p) {
		fprintf(stderr, "%s: --gpus: give device ordinals, e.g. --gpus 0,1\n", who);
		return 2;
	}
	while (*p) {
		char *end = (char *)p;
		long v = -1;
		errno = 0;
		if (*p >= '0' && *p <= '9')
			v = strtol(p, &end, 10);
		if (v < 0 || errno || v >= EVAL_MAX_GPUS || (*end && *end != ',') ||
		    (*end == ',' && !end[1])) {
			fprintf(stderr, "%s: --gpus: '%s' is not a list of device ordinals in [0, %d) "
				"separated by commas\n", who, list, EVAL_MAX_GPUS);
			return 2;
		}
		for (int i = 0; i < g->n_list; i++)
			if (g->list[i] == (int)v) {
				fprintf(stderr, "%s: --gpus: device %ld is listed twice in '%s'\n", who, v,
					list);
				return 2;
			}
		g->list[g->n_list++] = (int)v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int eval_gpus_open(struct eval_gpus *g, const char *who)
{
	struct cr_err e;
	int visible = 0;

	cr_err_init(&e);
	g->n = 0;
	g->mixed = false;
	if (cr_cuda_dev_count(&visible, &e)) {
		fprintf(stderr, "%s: --backend cuda: %s\n", who, e.msg);
		return 3;
	}
	if (visible <= 0) {
		fprintf(stderr, "%s: --backend cuda: no CUDA device visible\n", who);
		return 3;
	}
	for (int i = 0; i < g->n_list; i++)
		if (g->list[i] >= visible) {
			fprintf(stderr, "%s: --gpus: no CUDA device %d (%d visible: 0 to %d)\n", who,
				g->list[i], visible, visible - 1);
			return 2;
		}
	for (int i = 0; i < (g->n_list ? g->n_list : visible) && i < EVAL_MAX_GPUS; i++) {
		int ord = g->n_list ? g->list[i] : i;
		if (cr_cuda_dev_get(ord, &g->dev[g->n], &e)) {
			fprintf(stderr, "%s: --backend cuda: device %d: %s\n", who, ord, e.msg);
			return 3;
		}
		g->mixed |= strcmp(g->dev[g->n].name, g->dev[0].name) != 0 ||
			    strcmp(g->dev[g->n].arch, g->dev[0].arch) != 0;
		g->n++;
	}
	if (g->mixed && !g->n_list) {
		fprintf(stderr, "%s: the visible GPUs are of different models:", who);
		for (int i = 0; i < g->n; i++)
			fprintf(stderr, "%s %d %s", i ? "," : "", g->dev[i].ordinal, g->dev[i].name);
		fprintf(stderr, "; a candidate's speedup depends on the model, so pick the devices "
			"with --gpus (listing different models times each row on its job's device, "
			"and the rows' gpu column says which)\n");
		return 2;
	}
	if (g->mixed)
		fprintf(stderr, "%s: --gpus lists different models: each row is timed on one device "
			"(columns device, gpu, gpu_uuid); compare rows of one model only\n", who);
	return 0;
}

const struct cr_gpu *eval_gpus_for(const struct eval_gpus *g, int slot)
{
	return g->n ? &g->dev[(slot < 0 ? 0 : slot) % g->n] : NULL;
}

const struct cr_gpu *eval_gpus_find(const struct eval_gpus *g, int ordinal)
{
	for (int i = 0; i < g->n; i++)
		if (g->dev[i].ordinal == ordinal)
			return &g->dev[i];
	return NULL;
}

void eval_gpus_verify_opts(const struct cr_gpu *d, struct cr_verify_opts *vo)
{
	vo->gpu = d->ordinal;
	vo->gpu_uuid = d->uuid;
	vo->gpu_bus_id = d->bus_id;
	vo->arch = d->arch;
	vo->peak_tflops = d->peak_tflops;
	vo->peak_tbps = d->peak_tbps;
}

json_t *eval_gpus_json(const struct eval_gpus *g)
{
	json_t *a = json_array();

	for (int i = 0; a && i < g->n; i++) {
		const struct cr_gpu *d = &g->dev[i];
		char clk[400];
		cr_cuda_clocks_line(d->bus_id, clk, sizeof clk);
		json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:i, s:i, s:i, "
						   "s:s}",
			"ordinal", d->ordinal, "name", d->name, "arch", d->arch, "description", d->desc,
			"uuid", d->uuid, "pci_bus_id", d->bus_id, "memory_bytes", (json_int_t)d->total_mem,
			"sm_count", d->sm_count, "clock_khz", d->clock_khz,
			"memory_clock_khz", d->mem_clock_khz, "clocks", clk));
	}
	return a;
}

void eval_gpus_str(const struct eval_gpus *g, char *buf, size_t cap)
{
	size_t w = 0;

	buf[0] = '\0';
	for (int i = 0; i < g->n && w < cap; i++)
		w += (size_t)snprintf(buf + w, cap - w, "%s%d", i ? "," : "", g->dev[i].ordinal);
}

int eval_gpus_lock(struct eval_gpus *g, const char *who)
{
	struct cr_err e;

	for (int i = 0; i < g->n; i++) {
		cr_err_init(&e);
		/* a run whose requested lock failed is not comparable: refuse it */
		if (cr_cuda_dev_lock_clocks(g->dev[i].bus_id, true, &e)) {
			fprintf(stderr, "%s: --lock-clocks: device %d: %s; not run (locking needs root, or "
				"lock them beforehand with nvidia-smi -lgc and drop --lock-clocks)\n",
				who, g->dev[i].ordinal, e.msg);
			eval_gpus_unlock(g, who);
			return 3;
		}
		g->locked[i] = true;
	}
	fprintf(stderr, "%s: --lock-clocks: SM clock locked at its maximum for this run on %d "
		"device(s)\n", who, g->n);
	return 0;
}

void eval_gpus_unlock(struct eval_gpus *g, const char *who)
{
	struct cr_err e;

	for (int i = 0; i < g->n; i++) {
		if (!g->locked[i])
			continue;
		cr_err_init(&e);
		if (cr_cuda_dev_lock_clocks(g->dev[i].bus_id, false, &e))
			fprintf(stderr, "%s: --lock-clocks: device %d: could not release the lock: %s\n",
				who, g->dev[i].ordinal, e.msg);
		g->locked[i] = false;
	}
}

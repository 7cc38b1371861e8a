/* gen_replay.c — completions on disk: the replay generator (--replay DIR)
 * and the loader `--resume` uses for its own run directory. A completion
 * is DIR/cand/<task>/<id>.txt; its sidecar <id>.json, when present, gives
 * its token counts (completion, usage, lost), finish reason and, for
 * --resume, how its count was made; a replay's count source is "sidecar",
 * or "estimate" (four bytes a token) without one. */
#include "gen/gen_gen.h"
#include "gen/gen_impl.h"
#include "common/cr_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPLAY_MAX_BYTES (64u << 20)

static int jint(json_t *o, const char *k, int dflt)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

enum cr_status gen_completion_load(const char *dir, const char *task, const char *id,
				   struct gen_completion *out, bool *found, struct cr_err *err)
{
	char rel[1400];
	size_t len = 0;
	json_t *j;
	json_error_t je;
	char *buf;

	memset(out, 0, sizeof *out);
	*found = false;
	/* A run directory is untrusted (a published one, a replayed one): every
	 * file is opened beneath dir with no link followed on the way, a FIFO
	 * never waited on, nothing but a regular file read (cr_open_data). */
	snprintf(rel, sizeof rel, "cand/%s/%s.txt", task, id);
	out->text = cr_read_data(dir, rel, REPLAY_MAX_BYTES, CR_DATA_OPTIONAL, &len, err);
	if (!out->text)
		return errno == ENOENT ? CR_OK : err->status ? err->status : CR_EINPUT;
	out->len = len;
	out->prompt_tokens = out->reasoning_tokens = out->prefill_tokens = -1;
	out->completion_tokens = out->usage_tokens = -1;
	snprintf(out->finish, sizeof out->finish, "replay");
	snprintf(rel, sizeof rel, "cand/%s/%s.json", task, id);
	if ((buf = cr_read_data(dir, rel, CR_DATA_MAX_JSON, CR_DATA_OPTIONAL, &len, err))) {
		j = json_loadb(buf, len, 0, &je);
		free(buf);
		if (!j || !json_is_object(j)) {
			char esc[1500];
			json_decref(j);
			gen_completion_release(out);
			cr_text_escape_inplace(je.text, sizeof je.text);
			snprintf(esc, sizeof esc, "%s/%s", dir, rel);
			cr_text_escape_inplace(esc, sizeof esc);
			return cr_errf(err, CR_EINPUT, "%s:%d: %s", esc, j ? 1 : je.line,
				       j ? "expected a JSON object" : je.text);
		}
		out->prompt_tokens = jint(j, "prompt_tokens", -1);
		out->completion_tokens = jint(j, "completion_tokens", -1);
		out->reasoning_tokens = jint(j, "reasoning_tokens", -1);
		out->prefill_tokens = jint(j, "prefill_tokens", -1);
		out->usage_tokens = jint(j, "usage_tokens", -1);
		/* tokens the recorded run lost to failed tries: it spent them */
		out->lost_tokens = jint(j, "lost_tokens", 0) > 0 ? jint(j, "lost_tokens", 0) : 0;
		json_t *f = json_object_get(j, "finish_reason");
		if (json_is_string(f))
			snprintf(out->finish, sizeof out->finish, "%s", json_string_value(f));
		/* --resume keeps how its own run counted */
		json_t *src = json_object_get(j, "count_src");
		if (out->completion_tokens >= 0)
			snprintf(out->count_src, sizeof out->count_src, "%s",
				 json_is_string(src) ? json_string_value(src) : "sidecar");
		json_t *g = json_object_get(j, "gen_s");
		if (json_is_number(g))
			out->gen_s = json_number_value(g);
		json_decref(j);
	} else if (errno != ENOENT) {
		gen_completion_release(out);
		return err->status ? err->status : CR_EINPUT;
	}
	*found = true;
	return CR_OK;
}

struct replay {
	char *dir;
};

static enum cr_status replay_complete(void *ctx, const struct gen_req *rq, struct gen_completion *out,
				      struct cr_err *err)
{
	struct replay *r = ctx;

	for (int k = 0; k < rq->n; k++) {
		bool found;
		enum cr_status st = gen_completion_load(r->dir, rq->task, rq->ids[k], &out[k], &found, err);
		if (!st && !found)
			st = cr_errf(err, CR_EINPUT, "--replay %s: no completion cand/%s/%s.txt", r->dir,
				     rq->task, rq->ids[k]);
		if (st) {
			for (int i = 0; i < k; i++)
				gen_completion_release(&out[i]);
			return st;
		}
		out[k].prefill_tokens = 0; /* nothing computed here */
		/* the sidecar's count, or four bytes a token */
		snprintf(out[k].count_src, sizeof out[k].count_src, "%s",
			 out[k].completion_tokens >= 0 ? "sidecar" : "estimate");
	}
	return CR_OK;
}

static json_t *replay_describe(void *ctx)
{
	struct replay *r = ctx;
	return json_pack("{s:s, s:s}", "kind", "replay", "dir", r->dir);
}

static void replay_release(void *ctx)
{
	struct replay *r = ctx;
	if (r) {
		free(r->dir);
		free(r);
	}
}

enum cr_status gen_replay_open(const char *dir, struct gen_generator *g, struct cr_err *err)
{
	struct replay *r;
	char path[1100];
	struct stat sb;

	snprintf(path, sizeof path, "%s/cand", dir);
	if (!lstat(path, &sb) && S_ISLNK(sb.st_mode))   /* DIR is the user's; cand/ in it is not */
		return cr_errf(err, CR_EINPUT, "--replay %s: cand is a symbolic link (not followed)", dir);
	if (stat(path, &sb) || !S_ISDIR(sb.st_mode))
		return cr_errf(err, CR_EUSAGE, "--replay %s: no cand/ folder there (a run directory "
			       "or DIR/cand/<task>/<id>.txt files)", dir);
	r = calloc(1, sizeof *r);
	if (!r || !(r->dir = strdup(dir))) {
		free(r);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	*g = (struct gen_generator){ .kind = "replay", .ctx = r, .max_inflight = 1,
				     .complete = replay_complete, .describe = replay_describe,
				     .release = replay_release };
	return CR_OK;
}

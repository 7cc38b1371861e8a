/* cmd_serve_model.c — `crucible serve --model M.gguf`: the model server
 * (serve/srv_model.c) on the HTTP layer the leaderboard uses. This file
 * reads the options, opens the model and wires the pieces; cmd_serve.c
 * hands over any `serve` command line that names --model. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/cr_cli.h"
#include "common/cr_status.h"
#include "decode/dec_run.h"
#include "decode/engine/dec_engine.h"
#include "harness/cli.h"
#include "serve/srv_http.h"
#include "serve/srv_model.h"

#define CMD "serve"

static const char usage[] =
	"usage: crucible serve --model M.gguf [--listen HOST:PORT | --host H --port P] [options]\n"
	"An OpenAI-compatible server on crucible's decoder (docs/SERVE.md, \"The model\n"
	"server\"): POST /v1/chat/completions and /v1/completions (n, temperature, top_p,\n"
	"top_k, min_p, seed, max_tokens, stop, logprobs, top_logprobs, stream), GET\n"
	"/v1/models, POST /tokenize and /detokenize, GET /health and /metrics. Requests\n"
	"from every client share the engine's batches, prefix cache and KV pool. Choice i\n"
	"of a request with seed S is sample i of `crucible generate --seed S` on the same\n"
	"prompt (a request's \"task\" names the task whose stream it draws from).\n"
	"\n"
	"OPTIONS\n"
	"  --listen HOST:PORT   where to listen (default 127.0.0.1:8000; PORT 0: any free)\n"
	"  --host H, --port P   the same, apart\n"
	"  --name NAME          the model's id in requests and /v1/models (default: the\n"
	"                       file's name without .gguf; the path given is accepted too)\n"
	"  --batch B            sequences decoded together (default 16)\n"
	"  --max-queue N        samples waiting beyond the batch (default 256); a request\n"
	"                       that does not fit is 429 with Retry-After\n"
	"  --max-n N            the largest n of one request (default 64)\n"
	"  --chat-template NAME chatml, llama3, deepseek-r1, phi3 or gemma over the detected one\n"
	"  --no-think           Qwen3's thinking switch off in chat prompts\n"
	"  --log FILE           the server's log (default stderr): one line per request\n"
	"  --ready-file FILE    written with the server's URL once it listens\n"
	"  --max-body BYTES     the largest request (default 4M; K, M, G suffixes; larger: 413)\n"
	"  --max-conns N        connections at once (default 512)\n"
	"  --max-conns-per-ip N connections at once from one address (default: a quarter of\n"
	"                       --max-conns)\n"
	"  --drain S            on SIGINT/SIGTERM, the running requests' time to finish\n"
	"                       (default 10); then they are cancelled (503, or an error event)\n"
	"  -h, --help           this page\n"
	"The engine's options:\n"
	"  --model FILE         GGUF model (llama, qwen2, qwen3, qwen3moe, phi3, gemma3)\n"
	"  --threads N          worker threads (default: online CPUs, at most 16)\n"
	"  --ctx N              context length (default: the model's)\n"
	"  --device D           cpu, cuda or auto (default auto: cuda when a GPU is usable)\n"
	"  --kv-mem BYTES       KV cache size, e.g. 512M or 2G (default: every sequence's whole\n"
	"                       context, at most a quarter of the available memory); a full\n"
	"                       cache preempts the newest sequence, recomputed later\n"
	"  --max-batch-tokens N tokens per engine step, decode and prefill chunks (default 256)\n"
	"  --draft ngram, --draft-model D.gguf, --draft-tokens K   speculative decoding, as\n"
	"                       `crucible generate --help` says\n"
	"Sampling is per request (OpenAI's defaults: temperature 1, top_p 1).\n"
	"SIGINT or SIGTERM stops it: new requests are 503, the running ones get --drain\n"
	"seconds to finish, then are cancelled; every answer is sent before it exits.\n";

static void help_page(void)
{
	fputs(usage, stdout);
	cr_cli_help_tail(stdout,
			 "  0  stopped on a signal\n"
			 "  2  bad usage or bad input (a model file that does not load names it)\n"
			 "  3  the environment (the address is taken, no GPU for --device cuda, out of\n"
			 "     memory)\n",
			 CR_ENV_CUDA | CR_ENV_DECODER);
}

struct mcfg {
	struct dec_opts o;
	const char *listen, *host, *port, *name, *log, *ready, *chat_template;
	int no_think;
	uint64_t batch, max_queue, max_n, max_body, max_conns, per_ip;
	double drain_s;
};

enum {
	O_LISTEN = DEC_OPT_OWN, O_HOST, O_PORT, O_NAME, O_BATCH, O_MAXQ, O_MAXN, O_TEMPLATE, O_NOTHINK, O_LOG,
	O_READY, O_MAXBODY, O_MAXCONNS, O_PERIP, O_DRAIN
};

/* The engine's shared options only: sampling is the request's. */
static const struct option opts[] = {
	{ "model", required_argument, NULL, DEC_OPT_MODEL },
	{ "threads", required_argument, NULL, DEC_OPT_THREADS },
	{ "ctx", required_argument, NULL, DEC_OPT_CTX },
	{ "device", required_argument, NULL, DEC_OPT_DEVICE },
	{ "kv-mem", required_argument, NULL, DEC_OPT_KV_MEM },
	{ "max-batch-tokens", required_argument, NULL, DEC_OPT_MAX_BATCH_TOKENS },
	{ "draft", required_argument, NULL, DEC_OPT_DRAFT },
	{ "draft-tokens", required_argument, NULL, DEC_OPT_DRAFT_TOKENS },
	{ "draft-model", required_argument, NULL, DEC_OPT_DRAFT_MODEL },
	{ "help", no_argument, NULL, DEC_OPT_HELP },
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "host", required_argument, NULL, O_HOST },
	{ "port", required_argument, NULL, O_PORT },
	{ "name", required_argument, NULL, O_NAME },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "max-queue", required_argument, NULL, O_MAXQ },
	{ "max-n", required_argument, NULL, O_MAXN },
	{ "chat-template", required_argument, NULL, O_TEMPLATE },
	{ "no-think", no_argument, NULL, O_NOTHINK },
	{ "log", required_argument, NULL, O_LOG },
	{ "ready-file", required_argument, NULL, O_READY },
	{ "max-body", required_argument, NULL, O_MAXBODY },
	{ "max-conns", required_argument, NULL, O_MAXCONNS },
	{ "max-conns-per-ip", required_argument, NULL, O_PERIP },
	{ "drain", required_argument, NULL, O_DRAIN },
	{ NULL, 0, NULL, 0 }
};

static enum cr_status own_opt(void *ctx, int code, const char *v, struct cr_err *err)
{
	struct mcfg *c = ctx;

	switch (code) {
	case O_LISTEN: c->listen = v; return CR_OK;
	case O_HOST: c->host = v; return CR_OK;
	case O_PORT: c->port = v; return CR_OK;
	case O_NAME:
		if (!*v)
			return cr_errf(err, CR_EUSAGE, "--name: the model's id may not be empty");
		c->name = v;
		return CR_OK;
	case O_TEMPLATE: c->chat_template = v; return CR_OK;
	case O_NOTHINK: c->no_think = 1; return CR_OK;
	case O_LOG: c->log = v; return CR_OK;
	case O_READY: c->ready = v; return CR_OK;
	case O_BATCH: return dec_opt_int("--batch", v, 1, 256, &c->batch, err);
	case O_MAXQ: return dec_opt_int("--max-queue", v, 0, 1 << 20, &c->max_queue, err);
	case O_MAXN: return dec_opt_int("--max-n", v, 1, 1024, &c->max_n, err);
	case O_MAXBODY: return dec_opt_bytes("--max-body", v, 1024, 1ull << 30, &c->max_body, err);
	case O_MAXCONNS: return dec_opt_int("--max-conns", v, 1, 65536, &c->max_conns, err);
	case O_PERIP: return dec_opt_int("--max-conns-per-ip", v, 1, 65536, &c->per_ip, err);
	case O_DRAIN: return dec_opt_real("--drain", v, 0, 3600, &c->drain_s, err);
	}
	return cr_errf(err, CR_EINTERNAL, "serve: option code %d has no case", code);
}

/* Where to listen: --listen, or --host and --port (either alone keeps the
 * other's default). */
static enum cr_status listen_on(const struct mcfg *c, char *host, size_t cap, int *port, struct cr_err *err)
{
	if (c->listen && (c->host || c->port))
		return cr_errf(err, CR_EUSAGE, "--listen and --host/--port: give one or the other");
	if (c->listen) {
		if (srv_parse_listen(c->listen, host, cap, port, err))
			return cr_errf(err, CR_EUSAGE, "--listen: %s", err->msg);
		return CR_OK;
	}
	if (c->host && (!*c->host || strlen(c->host) >= cap))
		return cr_errf(err, CR_EUSAGE, "--host: expected an address");
	snprintf(host, cap, "%s", c->host ? c->host : "127.0.0.1");
	*port = 8000;
	if (c->port) {
		uint64_t p;
		if (dec_opt_int("--port", c->port, 0, 65535, &p, err))
			return CR_EUSAGE;
		*port = (int)p;
	}
	return CR_OK;
}

int cr_cmd_serve_model(int argc, char **argv)
{
	struct mcfg c = { .batch = 16, .max_queue = 256, .max_n = 64, .max_body = 4u << 20, .max_conns = 512,
			  .drain_s = 10 };
	struct cr_err err;
	struct dec_model *m = NULL, *dm = NULL;
	struct dec_tok *tok = NULL;
	struct srv_model *sm = NULL;
	struct srv_http *http = NULL;
	FILE *log = stderr;
	char host[256];
	int port = 0, help = 0, rc = 0;
	enum cr_status st;

	cr_err_init(&err);
	if ((st = dec_opts_getopt(&c.o, argc, argv, opts, own_opt, &c, &help, &err))) {
		dec_usage_say(CMD, &err);
		return cr_status_exit_code(st);
	}
	if (help) {
		help_page();
		return 0;
	}
	if (!c.o.model)
		return cr_cli_usage(CMD, "--model: a GGUF file is required");
	if ((st = listen_on(&c, host, sizeof host, &port, &err))) {
		dec_usage_say(CMD, &err);
		return cr_status_exit_code(st);
	}
	if ((st = dec_model_open(c.o.model, &m, &err)) || (st = dec_vocab_tokenizer(m->gguf, &tok, &err)) ||
	    (c.chat_template && (st = dec_chat_set_template(tok, c.chat_template, &err))) ||
	    (c.no_think && (st = dec_chat_set_no_think(tok, &err))) ||
	    (c.o.draft_model && (st = dec_open_draft(c.o.draft_model, c.o.model, tok, &dm, &err)))) {
		rc = cr_cli_status(CMD, &err);
		goto out;
	}
	if (c.log && !(log = fopen(c.log, "ae"))) {
		cr_cli_error(CMD, "--log %s: %s", c.log, strerror(errno));
		log = stderr;
		rc = CR_EXIT_ENV;
		goto out;
	}
	int ctx = c.o.ctx ? c.o.ctx : m->cfg.ctx_len;
	if (ctx > m->cfg.ctx_len) {
		rc = cr_cli_usage(CMD, "--ctx %d: the model's context is %d tokens", ctx, m->cfg.ctx_len);
		goto out;
	}
	if (ctx < 2)
		ctx = 2;
	struct srv_model_opts mo = { .m = m, .tok = tok, .name = c.name, .path = c.o.model,
				     .max_queue = (int)c.max_queue, .max_n = (int)c.max_n, .log = log };
	dec_opts_engine_cfg(&c.o, ctx, (int)c.batch, dm, &mo.cfg);
	/* every thread started below inherits the blocked stop signals */
	sigset_t set = cr_serve_stop_signals();
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (srv_model_new(&mo, &sm, &err)) {
		rc = cr_cli_status(CMD, &err);
		goto out;
	}
	struct srv_http_opts ho = {
		.host = host,
		.port = port,
		.max_body = (size_t)c.max_body,
		.max_conns = (unsigned)c.max_conns,
		.per_ip_conns = (unsigned)c.per_ip,
		.conn_timeout_s = 600, /* a long generation streams nothing for a while: not idle */
		.fn = srv_model_handle,
		.ctx = sm,
		.log = log,
	};
	if (srv_http_start(&ho, &http, &err)) {
		rc = cr_cli_status(CMD, &err);
		fprintf(stderr, "  choose another --listen HOST:PORT (PORT 0 picks a free one)\n");
		goto out;
	}
	char url[320];
	snprintf(url, sizeof url, strchr(host, ':') ? "http://[%s]:%d/" : "http://%s:%d/", host, srv_http_port(http));
	srv_log(log, "crucible serve: ", "serving %s (%s, %d layers, template %s) as '%s' on %s: device %s%s%s, "
		"context %d, batch %d, queue %d", c.o.model, m->cfg.arch_name, m->cfg.n_layers,
		dec_chat_template_name(tok), srv_model_name(sm), url, srv_model_device(sm),
		srv_model_device_note(sm)[0] ? "; " : "", srv_model_device_note(sm), ctx, (int)mo.cfg.max_seqs,
		(int)c.max_queue);
	if (log != stderr)
		fprintf(stderr, "crucible serve: listening on %s (log: %s)\n", url, c.log);
	if (c.ready) {
		/* whole or not at all: written beside, then renamed */
		char tmp[PATH_MAX];
		snprintf(tmp, sizeof tmp, "%s.%ld.tmp", c.ready, (long)getpid());
		FILE *f = fopen(tmp, "we");
		if (!f || fprintf(f, "%s\n", url) < 0 || fclose(f) || rename(tmp, c.ready)) {
			cr_cli_error(CMD, "--ready-file %s: %s", c.ready, strerror(errno));
			unlink(tmp);
			rc = CR_EXIT_ENV;
			goto out;
		}
	}
	int sig = 0;
	sigwait(&set, &sig);
	srv_log(log, "crucible serve: ", "%s: stopping (new requests 503, running ones %g s to finish)",
		strsignal(sig), c.drain_s);
out:
	/* new requests 503; the running ones 10 s to finish, then cancelled;
	 * then every answer sent (or 5 s) before the connections are cut */
	srv_model_stop(sm, (int)(c.drain_s * 1000));
	srv_http_drain(http, 5000);
	srv_http_stop(http);
	srv_model_free(sm);
	dec_model_free(dm);
	dec_tok_free(tok);
	dec_model_free(m);
	if (log != stderr)
		fclose(log);
	return rc;
}

/* dec_chat.c — chat templates: which family a model uses (from markers in
 * tokenizer.chat_template, else the architecture, else the vocabulary) and
 * the rendering of one system + one user message with the assistant turn
 * opened. No Jinja: the three families are written out here, byte for byte
 * what their templates produce for that conversation with
 * add_generation_prompt. Templates that write BOS as text (llama3,
 * deepseek-r1) take its spelling from the vocabulary; encode the result with
 * parse_special = 1 and add_bos = 0. */
#include "decode/tok/dec_tok_impl.h"

#include <stdlib.h>
#include <string.h>

#define DS_USER "<\xef\xbd\x9c" "User\xef\xbd\x9c>"           /* <｜User｜> */
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>" /* <｜Assistant｜> */
#define DS_BOS "<\xef\xbd\x9c" "begin\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>"

static int has_token(const struct dec_tok *t, const char *s)
{
	return dec_tok_map_get(&t->vocab, s, strlen(s)) >= 0;
}

enum chat_kind dec_chat_detect(const struct dec_tok *t, const char *arch)
{
	const char *tpl = t->chat_template;

	if (tpl) {
		if (strstr(tpl, DS_USER) || strstr(tpl, DS_ASSISTANT))
			return CHAT_DEEPSEEK_R1;
		if (strstr(tpl, "<|start_header_id|>"))
			return CHAT_LLAMA3;
		if (strstr(tpl, "<|im_start|>"))
			return CHAT_CHATML;
	}
	if (arch) {
		if (strncmp(arch, "qwen2", 5) == 0 || strncmp(arch, "qwen3", 5) == 0)
			return CHAT_CHATML;
		if (strcmp(arch, "llama") == 0)
			return CHAT_LLAMA3;
	}
	if (has_token(t, "<|im_start|>"))
		return CHAT_CHATML;
	if (has_token(t, "<|start_header_id|>"))
		return CHAT_LLAMA3;
	return CHAT_NONE;
}

const char *dec_chat_template_name(const struct dec_tok *t)
{
	switch (t->chat) {
	case CHAT_CHATML: return "chatml";
	case CHAT_LLAMA3: return "llama3";
	case CHAT_DEEPSEEK_R1: return "deepseek-r1";
	case CHAT_NONE: break;
	}
	return "none";
}

struct sb {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_add(struct sb *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *q;
		while (cap < b->n + n + 1)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void sb_str(struct sb *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* Jinja's |trim (Python str.strip) on ASCII whitespace. */
static void sb_trimmed(struct sb *b, const char *s)
{
	size_t n = strlen(s), i = 0;

	while (i < n && strchr(" \t\n\r\v\f", s[i]))
		i++;
	while (n > i && strchr(" \t\n\r\v\f", s[n - 1]))
		n--;
	sb_add(b, s + i, n - i);
}

static void sb_bos(struct sb *b, const struct dec_tok *t, const char *fallback)
{
	if (t->bos >= 0 && t->len[t->bos])
		sb_add(b, tok_text(t, t->bos), t->len[t->bos]);
	else
		sb_str(b, fallback);
}

/* A literal run in the template text after `marker`, up to a quote, a
 * backslash or a newline; "" when absent. Written into buf[cap]. */
static const char *template_literal(const char *tpl, const char *marker, char *buf, size_t cap)
{
	const char *p = tpl ? strstr(tpl, marker) : NULL;
	size_t n = 0;

	buf[0] = '\0';
	if (!p)
		return buf;
	p += strlen(marker);
	while (p[n] && !strchr("\"'\\\n", p[n]) && n + 1 < cap)
		n++;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/* Qwen2/2.5 templates write a default system message when none is given:
 * '<|im_start|>system\nYou are ...<|im_end|>\n' as one literal. Qwen3's
 * concatenates the message instead and has no default. */
static int chatml_default_system(const char *tpl, const char **s, size_t *n)
{
	static const char mark[] = "<|im_start|>system";
	const char *p = tpl;

	while (p && (p = strstr(p, mark)) != NULL) {
		const char *q = p + sizeof mark - 1, *end;
		if (q[0] == '\\' && q[1] == 'n')
			q += 2;
		else if (q[0] == '\n')
			q += 1;
		else {
			p = q;
			continue;
		}
		end = strstr(q, "<|im_end|>");
		if (end && end > q && !memchr(q, '\'', (size_t)(end - q)) &&
		    !memchr(q, '"', (size_t)(end - q)) && !memchr(q, '{', (size_t)(end - q)) &&
		    !memchr(q, '+', (size_t)(end - q))) {
			*s = q;
			*n = (size_t)(end - q);
			return 1;
		}
		p = q;
	}
	return 0;
}

static void render_chatml(struct sb *b, const struct dec_tok *t, const char *system, const char *user)
{
	const char *ds;
	size_t dn;

	if (system) {
		sb_str(b, "<|im_start|>system\n");
		sb_str(b, system);
		sb_str(b, "<|im_end|>\n");
	} else if (chatml_default_system(t->chat_template, &ds, &dn)) {
		sb_str(b, "<|im_start|>system\n");
		sb_add(b, ds, dn);
		sb_str(b, "<|im_end|>\n");
	}
	sb_str(b, "<|im_start|>user\n");
	sb_str(b, user);
	sb_str(b, "<|im_end|>\n<|im_start|>assistant\n");
}

/* Llama 3.0 writes a system turn only for a system message; 3.1+ always
 * writes one, opening with the knowledge cutoff and a date. The date is the
 * template's own default ("26 Jul 2024"), not today's, so prompts are
 * reproducible. */
static void render_llama3(struct sb *b, const struct dec_tok *t, const char *system, const char *user)
{
	const char *tpl = t->chat_template;
	int dated = tpl && strstr(tpl, "Cutting Knowledge Date:");
	char cutoff[64], date[64];

	sb_bos(b, t, "<|begin_of_text|>");
	if (system || dated) {
		sb_str(b, "<|start_header_id|>system<|end_header_id|>\n\n");
		if (dated) {
			template_literal(tpl, "Cutting Knowledge Date: ", cutoff, sizeof cutoff);
			template_literal(tpl, "set date_string = \"", date, sizeof date);
			sb_str(b, "Cutting Knowledge Date: ");
			sb_str(b, cutoff[0] ? cutoff : "December 2023");
			sb_str(b, "\nToday Date: ");
			sb_str(b, date[0] ? date : "26 Jul 2024");
			sb_str(b, "\n\n");
		}
		if (system)
			sb_trimmed(b, system);
		sb_str(b, "<|eot_id|>");
	}
	sb_str(b, "<|start_header_id|>user<|end_header_id|>\n\n");
	sb_trimmed(b, user);
	sb_str(b, "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* DeepSeek-R1 (and its Qwen/Llama distills): BOS, the system text bare,
 * <｜User｜>, <｜Assistant｜>; the later template revisions also open the
 * reasoning with "<think>\n". */
static void render_deepseek(struct sb *b, const struct dec_tok *t, const char *system, const char *user)
{
	const char *tpl = t->chat_template;

	sb_bos(b, t, DS_BOS);
	if (system)
		sb_str(b, system);
	sb_str(b, DS_USER);
	sb_str(b, user);
	sb_str(b, DS_ASSISTANT);
	if (tpl && strstr(tpl, DS_ASSISTANT "<think>"))
		sb_str(b, "<think>\n");
}

enum cr_status dec_chat_format(const struct dec_tok *t, const char *system,
			       const char *user, char **out, struct cr_err *err)
{
	struct sb b = { 0 };

	*out = NULL;
	if (!user)
		return cr_errf(err, CR_EUSAGE, "chat: no user message");
	switch (t->chat) {
	case CHAT_CHATML: render_chatml(&b, t, system, user); break;
	case CHAT_LLAMA3: render_llama3(&b, t, system, user); break;
	case CHAT_DEEPSEEK_R1: render_deepseek(&b, t, system, user); break;
	case CHAT_NONE:
		return cr_errf(err, CR_EINPUT,
			       "chat: no known chat template (chat_template markers, arch and vocabulary "
			       "match none of chatml, llama3, deepseek-r1)");
	}
	if (b.oom) {
		free(b.p);
		return cr_errf(err, CR_ENOMEM, "chat: out of memory");
	}
	*out = b.p;
	return CR_OK;
}

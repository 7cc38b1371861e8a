/* dec_chat.c — chat templates: which family a model uses (from markers in
 * tokenizer.chat_template, else the architecture, else the vocabulary) and
 * the rendering of a conversation (an optional system message, then user and
 * assistant turns, ending with a user turn) with the assistant turn opened.
 * No Jinja: the five families are written out here, byte for byte what
 * their templates produce for that conversation with add_generation_prompt.
 * Templates that write BOS as text (llama3, deepseek-r1) take its spelling
 * from the vocabulary; encode the result with parse_special = 1 and
 * add_bos = 0. */
#include "decode/tok/dec_tok_impl.h"

#include <stdlib.h>
#include <string.h>

#define DS_USER "<\xef\xbd\x9c" "User\xef\xbd\x9c>"           /* <｜User｜> */
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>" /* <｜Assistant｜> */
#define DS_BOS "<\xef\xbd\x9c" "begin\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>"
#define DS_EOS "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>"

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
		if (strstr(tpl, "<|user|>") && strstr(tpl, "<|end|>"))
			return CHAT_PHI3;
		if (strstr(tpl, "<start_of_turn>"))
			return CHAT_GEMMA;
	}
	if (arch) {
		if (strncmp(arch, "qwen2", 5) == 0 || strncmp(arch, "qwen3", 5) == 0)
			return CHAT_CHATML;
		if (strcmp(arch, "llama") == 0)
			return CHAT_LLAMA3;
		if (strcmp(arch, "phi3") == 0)
			return CHAT_PHI3;
		if (strncmp(arch, "gemma", 5) == 0)
			return CHAT_GEMMA;
	}
	if (has_token(t, "<|im_start|>"))
		return CHAT_CHATML;
	if (has_token(t, "<|start_header_id|>"))
		return CHAT_LLAMA3;
	if (has_token(t, "<|user|>") && has_token(t, "<|end|>"))
		return CHAT_PHI3;
	if (has_token(t, "<start_of_turn>"))
		return CHAT_GEMMA;
	return CHAT_NONE;
}

static const char *const chat_names[] = { "none", "chatml", "llama3", "deepseek-r1", "phi3", "gemma" };

const char *dec_chat_template_name(const struct dec_tok *t)
{
	return (unsigned)t->chat < sizeof chat_names / sizeof chat_names[0] ? chat_names[t->chat] : "none";
}

enum cr_status dec_chat_set_template(struct dec_tok *t, const char *name, struct cr_err *err)
{
	for (size_t i = 1; i < sizeof chat_names / sizeof chat_names[0]; i++)
		if (!strcmp(name, chat_names[i])) {
			t->chat = (enum chat_kind)i;
			return CR_OK;
		}
	return cr_errf(err, CR_EUSAGE,
		       "--chat-template: '%s' is not a built-in template (chatml, llama3, deepseek-r1, phi3, gemma)",
		       name);
}

enum cr_status dec_chat_set_no_think(struct dec_tok *t, struct cr_err *err)
{
	if (t->chat != CHAT_CHATML || !t->chat_template || !strstr(t->chat_template, "</think>"))
		return cr_errf(err, CR_EUSAGE,
			       "--no-think: the '%s' template has no thinking switch (Qwen3's chatml "
			       "templates do)", dec_chat_template_name(t));
	t->no_think = 1;
	return CR_OK;
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

/* The content of an earlier assistant turn as templates that drop its
 * reasoning write it: the text after the last </think>; with lstrip_nl,
 * without the newlines that open it (Qwen3 / QwQ: split('</think>')[-1]
 * .lstrip('\n'); DeepSeek-R1: split('</think>')[-1]). Unchanged when it has
 * no </think>. */
static void sb_answer(struct sb *b, const char *s, int lstrip_nl)
{
	const char *p = s, *q;

	while ((q = strstr(p, "</think>")) != NULL)
		p = q + 8;
	if (p != s && lstrip_nl)
		while (*p == '\n')
			p++;
	sb_str(b, p);
}

/* ChatML. An assistant turn is written whole (Qwen2.5), or without its
 * reasoning when the template mentions </think> (Qwen3, QwQ). */
static void render_chatml(struct sb *b, const struct dec_tok *t, const struct dec_chat_msg *m,
			  int n)
{
	int strip = t->chat_template && strstr(t->chat_template, "</think>");
	const char *ds;
	size_t dn;
	int i = 0;

	if (n && !strcmp(m[0].role, "system")) {
		sb_str(b, "<|im_start|>system\n");
		sb_str(b, m[0].content);
		sb_str(b, "<|im_end|>\n");
		i = 1;
	} else if (chatml_default_system(t->chat_template, &ds, &dn)) {
		sb_str(b, "<|im_start|>system\n");
		sb_add(b, ds, dn);
		sb_str(b, "<|im_end|>\n");
	}
	for (; i < n; i++) {
		sb_str(b, "<|im_start|>");
		sb_str(b, m[i].role);
		sb_str(b, "\n");
		if (!strcmp(m[i].role, "assistant") && strip)
			sb_answer(b, m[i].content, 1);
		else
			sb_str(b, m[i].content);
		sb_str(b, "<|im_end|>\n");
	}
	sb_str(b, "<|im_start|>assistant\n");
	if (t->no_think)
		sb_str(b, "<think>\n\n</think>\n\n");
}

/* Phi-3: <|system|>, <|user|>, <|assistant|> turns, each "\n{content}<|end|>\n",
 * BOS first when the template writes bos_token; then "<|assistant|>\n". */
static void render_phi3(struct sb *b, const struct dec_tok *t, const struct dec_chat_msg *m, int n)
{
	if (t->chat_template && strstr(t->chat_template, "bos_token"))
		sb_bos(b, t, "<s>");
	for (int i = 0; i < n; i++) {
		sb_str(b, "<|");
		sb_str(b, m[i].role);
		sb_str(b, "|>\n");
		sb_str(b, m[i].content);
		sb_str(b, "<|end|>\n");
	}
	sb_str(b, "<|assistant|>\n");
}

/* Gemma (2, 3): BOS, then "<start_of_turn>{user|model}\n{content}<end_of_turn>\n"
 * per turn, the system message (as it is) and a blank line written at the
 * head of the first turn after it (Gemma has no system role); then
 * "<start_of_turn>model\n". Turn contents trimmed, as the template's |trim. */
static void render_gemma(struct sb *b, const struct dec_tok *t, const struct dec_chat_msg *m, int n)
{
	int i = 0;
	const char *sys = NULL;

	sb_bos(b, t, "<bos>");
	if (n && !strcmp(m[0].role, "system")) {
		sys = m[0].content;
		i = 1;
	}
	for (; i < n; i++) {
		int user = !strcmp(m[i].role, "user");

		sb_str(b, user ? "<start_of_turn>user\n" : "<start_of_turn>model\n");
		if (sys) { /* the template's first_user_prefix: untrimmed */
			sb_str(b, sys);
			sb_str(b, "\n\n");
			sys = NULL;
		}
		sb_trimmed(b, m[i].content);
		sb_str(b, "<end_of_turn>\n");
	}
	sb_str(b, "<start_of_turn>model\n");
}

/* Llama 3.0 writes a system turn only for a system message; 3.1+ always
 * writes one, opening with the knowledge cutoff and a date. The date is the
 * template's own default ("26 Jul 2024"), not today's, so prompts are
 * reproducible. Every turn is trimmed; an assistant turn is written whole. */
static void render_llama3(struct sb *b, const struct dec_tok *t, const struct dec_chat_msg *m,
			  int n)
{
	const char *tpl = t->chat_template;
	int dated = tpl && strstr(tpl, "Cutting Knowledge Date:");
	int sys = n && !strcmp(m[0].role, "system");
	char cutoff[64], date[64];

	sb_bos(b, t, "<|begin_of_text|>");
	if (sys || dated) {
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
		if (sys)
			sb_trimmed(b, m[0].content);
		sb_str(b, "<|eot_id|>");
	}
	for (int i = sys; i < n; i++) {
		sb_str(b, "<|start_header_id|>");
		sb_str(b, m[i].role);
		sb_str(b, "<|end_header_id|>\n\n");
		sb_trimmed(b, m[i].content);
		sb_str(b, "<|eot_id|>");
	}
	sb_str(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* DeepSeek-R1 (and its Qwen/Llama distills): BOS, the system text bare,
 * <｜User｜>{user}, <｜Assistant｜>{answer}<｜end▁of▁sentence｜> for an
 * earlier assistant turn (its reasoning dropped: the text after the last
 * </think>), then <｜Assistant｜>; the later template revisions also open the
 * reasoning with "<think>\n". */
static void render_deepseek(struct sb *b, const struct dec_tok *t, const struct dec_chat_msg *m,
			    int n)
{
	const char *tpl = t->chat_template;
	int i = 0;

	sb_bos(b, t, DS_BOS);
	if (n && !strcmp(m[0].role, "system")) {
		sb_str(b, m[0].content);
		i = 1;
	}
	for (; i < n; i++) {
		if (!strcmp(m[i].role, "user")) {
			sb_str(b, DS_USER);
			sb_str(b, m[i].content);
		} else {
			sb_str(b, DS_ASSISTANT);
			sb_answer(b, m[i].content, 0);
			sb_str(b, DS_EOS);
		}
	}
	sb_str(b, DS_ASSISTANT);
	if (tpl && strstr(tpl, DS_ASSISTANT "<think>"))
		sb_str(b, "<think>\n");
}

/* A conversation the templates render: roles system (first only), user and
 * assistant, every content present, ending with a user turn. */
static enum cr_status check_msgs(const struct dec_chat_msg *m, int n, struct cr_err *err)
{
	if (!m || n < 1)
		return cr_errf(err, CR_EUSAGE, "chat: no messages");
	for (int i = 0; i < n; i++) {
		const char *r = m[i].role;

		if (!r || (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant")))
			return cr_errf(err, CR_EUSAGE, "chat: message %d: role '%s' (expected "
				       "system, user or assistant)", i, r ? r : "(null)");
		if (!m[i].content)
			return cr_errf(err, CR_EUSAGE, "chat: message %d (%s): no content", i, r);
		if (i > 0 && !strcmp(r, "system"))
			return cr_errf(err, CR_EUSAGE,
				       "chat: message %d: a system message must come first", i);
	}
	if (strcmp(m[n - 1].role, "user"))
		return cr_errf(err, CR_EUSAGE, "chat: the last message is %s, expected user",
			       m[n - 1].role);
	return CR_OK;
}

enum cr_status dec_chat_format_msgs(const struct dec_tok *t, const struct dec_chat_msg *msgs,
				    int n, char **out, struct cr_err *err)
{
	struct sb b = { 0 };
	enum cr_status st;

	*out = NULL;
	if ((st = check_msgs(msgs, n, err)))
		return st;
	switch (t->chat) {
	case CHAT_CHATML: render_chatml(&b, t, msgs, n); break;
	case CHAT_LLAMA3: render_llama3(&b, t, msgs, n); break;
	case CHAT_DEEPSEEK_R1: render_deepseek(&b, t, msgs, n); break;
	case CHAT_PHI3: render_phi3(&b, t, msgs, n); break;
	case CHAT_GEMMA: render_gemma(&b, t, msgs, n); break;
	case CHAT_NONE:
		return cr_errf(err, CR_EINPUT,
			       "chat: no known chat template (chat_template markers, arch and vocabulary "
			       "match none of chatml, llama3, deepseek-r1, phi3, gemma; --chat-template names one)");
	}
	if (b.oom) {
		free(b.p);
		return cr_errf(err, CR_ENOMEM, "chat: out of memory");
	}
	*out = b.p;
	return CR_OK;
}

enum cr_status dec_chat_format(const struct dec_tok *t, const char *system,
			       const char *user, char **out, struct cr_err *err)
{
	struct dec_chat_msg m[2] = { { "system", system }, { "user", user } };

	*out = NULL;
	if (!user)
		return cr_errf(err, CR_EUSAGE, "chat: no user message");
	return system ? dec_chat_format_msgs(t, m, 2, out, err)
		      : dec_chat_format_msgs(t, m + 1, 1, out, err);
}

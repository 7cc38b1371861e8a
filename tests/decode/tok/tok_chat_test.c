/* tok_chat_test.c — chat templates rendered byte for byte: ChatML (Qwen2.5
 * with its default system message, Qwen3 without), Llama 3.0 and 3.1 (BOS
 * from the vocabulary, trimmed content, the dated system turn), DeepSeek-R1
 * (with and without the opening <think>); detection from template markers,
 * then arch, then vocabulary; encoding a rendered prompt gives one BOS.
 * Conversations (dec_chat_format_msgs): every family's multi-turn rendering
 * byte for byte, earlier reasoning dropped where the template drops it,
 * dec_chat_format identical to the two-message form, malformed
 * conversations refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tok_fixture.h"

#define DS_BOS "<\xef\xbd\x9c" "begin\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>"
#define DS_USER "<\xef\xbd\x9c" "User\xef\xbd\x9c>"
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"

/* Excerpts of the real templates: what detection and the defaults read. */
static const char qwen25_tpl[] =
	"{%- if messages[0]['role'] == 'system' %}\n"
	"    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
	"{%- else %}\n"
	"    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n"
	"{%- endif %}\n"
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}\n";
static const char qwen3_tpl[] =
	"{%- if messages[0].role == 'system' %}\n"
	"    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
	"{%- endif %}\n"
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}\n";
static const char llama30_tpl[] =
	"{% set loop_messages = messages %}{% for message in loop_messages %}"
	"{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
	"+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
	"{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}";
static const char llama31_tpl[] =
	"{%- if not date_string is defined %}\n"
	"    {%- set date_string = \"26 Jul 2024\" %}\n"
	"{%- endif %}\n"
	"{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n"
	"{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n"
	"{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n";
static const char ds_tpl[] =
	"{{bos_token}}{{ns.system_prompt}}{%- for message in messages %}"
	"{%- if message['role'] == 'user' %}{{'" DS_USER "' + message['content']}}{%- endif %}"
	"{%- endfor %}{% if add_generation_prompt %}{{'" DS_ASSISTANT "<think>\\n'}}{% endif %}";
static const char ds_old_tpl[] =
	"{{bos_token}}{{ns.system_prompt}}{%- for message in messages %}"
	"{%- if message['role'] == 'user' %}{{'" DS_USER "' + message['content']}}{%- endif %}"
	"{%- endfor %}{% if add_generation_prompt %}{{'" DS_ASSISTANT "'}}{% endif %}";

/* Qwen3's assistant branch: it splits an earlier turn at </think>. */
static const char qwen3_think_tpl[] =
	"{%- if messages[0].role == 'system' %}\n"
	"    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
	"{%- endif %}\n"
	"{%- elif message.role == \"assistant\" %}\n"
	"    {%- if '</think>' in content %}\n"
	"        {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
	"    {%- endif %}\n"
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}\n";

#define DS_EOS "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>"

enum { IM_START = 256, IM_END, BOT, SHI, EHI, EOT, DSBOS, DSU, DSA, THINK };

static struct dec_tok *make(struct vb *b, const char *tpl, const char *arch, int32_t bos, int chat_tokens)
{
	vb_init(b, "gpt2", "llama-bpe");
	vb_bytes(b);
	if (chat_tokens) {
		vb_tok(b, "<|im_start|>", 3, 0);
		vb_tok(b, "<|im_end|>", 3, 0);
		vb_tok(b, "<|begin_of_text|>", 3, 0);
		vb_tok(b, "<|start_header_id|>", 3, 0);
		vb_tok(b, "<|end_header_id|>", 3, 0);
		vb_tok(b, "<|eot_id|>", 3, 0);
		vb_tok(b, DS_BOS, 3, 0);
		vb_tok(b, DS_USER, 4, 0);
		vb_tok(b, DS_ASSISTANT, 4, 0);
		vb_tok(b, "<think>", 4, 0);
	}
	vb_merge(b, "a", "b");
	b->v.chat_template = tpl;
	b->v.arch = arch;
	b->v.bos_id = bos;
	return vb_build(b);
}

static void expect_chat(const struct dec_tok *t, const char *sys, const char *user, const char *want)
{
	char *out = NULL;
	struct cr_err e;

	cr_err_init(&e);
	if (dec_chat_format(t, sys, user, &out, &e) != CR_OK)
		fail_msg("dec_chat_format: %s", e.msg);
	if (strcmp(out, want) != 0) {
		fprintf(stderr, "got:\n%s\nwant:\n%s\n", out, want);
		free(out);
		fail_msg("chat prompt differs (%s)", dec_chat_template_name(t));
	}
	free(out);
}

static void tok_chat_chatml(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, qwen25_tpl, "qwen2", -1, 1);

	(void)state;
	assert_string_equal(dec_chat_template_name(t), "chatml");
	expect_chat(t, NULL, "Write a kernel.",
		    "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
		    "<|im_start|>user\nWrite a kernel.<|im_end|>\n<|im_start|>assistant\n");
	expect_chat(t, "Be terse.", " Write\na kernel. ",
		    "<|im_start|>system\nBe terse.<|im_end|>\n"
		    "<|im_start|>user\n Write\na kernel. <|im_end|>\n<|im_start|>assistant\n");
	dec_tok_free(t);
	vb_release(&b);

	t = make(&b, qwen3_tpl, "qwen3", -1, 1);
	assert_string_equal(dec_chat_template_name(t), "chatml");
	expect_chat(t, NULL, "Hi", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
	{
		char *p = NULL;
		int32_t *ids = NULL;
		size_t n = 0;
		struct cr_err e;
		cr_err_init(&e);
		assert_int_equal(dec_chat_format(t, NULL, "Hi", &p, &e), CR_OK);
		assert_int_equal(dec_tok_encode(t, p, strlen(p), 1, 0, &ids, &n, &e), CR_OK);
		assert_true(n > 4);
		assert_int_equal(ids[0], IM_START);
		assert_int_equal(ids[n - 11], IM_START); /* then "assistant\n" in bytes */
		assert_int_equal(ids[n - 1], '\n');
		free(ids);
		free(p);
	}
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_chat_llama3(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, llama30_tpl, "llama", BOT, 1);
	char *p = NULL;
	int32_t *ids = NULL;
	size_t n = 0, bos_count = 0;
	struct cr_err e;

	(void)state;
	assert_string_equal(dec_chat_template_name(t), "llama3");
	expect_chat(t, "  Be terse.\n", "Hi\n",
		    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe terse.<|eot_id|>"
		    "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
		    "<|start_header_id|>assistant<|end_header_id|>\n\n");
	expect_chat(t, NULL, "Hi",
		    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
		    "<|start_header_id|>assistant<|end_header_id|>\n\n");
	/* the template holds BOS: encode with parse_special=1, add_bos=0 */
	cr_err_init(&e);
	assert_int_equal(dec_chat_format(t, NULL, "Hi", &p, &e), CR_OK);
	assert_int_equal(dec_tok_encode(t, p, strlen(p), 1, 0, &ids, &n, &e), CR_OK);
	for (size_t i = 0; i < n; i++)
		bos_count += ids[i] == BOT;
	assert_int_equal(bos_count, 1);
	assert_int_equal(ids[0], BOT);
	assert_int_equal(ids[1], SHI);
	assert_int_equal(ids[n - 3], EHI); /* ...<|end_header_id|> \n\n */
	free(ids);
	free(p);
	dec_tok_free(t);
	vb_release(&b);

	t = make(&b, llama31_tpl, "llama", BOT, 1);
	expect_chat(t, NULL, "Hi",
		    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
		    "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
		    "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
		    "<|start_header_id|>assistant<|end_header_id|>\n\n");
	expect_chat(t, "Be terse.", "Hi",
		    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
		    "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nBe terse.<|eot_id|>"
		    "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
		    "<|start_header_id|>assistant<|end_header_id|>\n\n");
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_chat_deepseek(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, ds_tpl, "qwen2", DSBOS, 1);

	(void)state;
	assert_string_equal(dec_chat_template_name(t), "deepseek-r1");
	expect_chat(t, "Be terse.", "Write a kernel.",
		    DS_BOS "Be terse." DS_USER "Write a kernel." DS_ASSISTANT "<think>\n");
	expect_chat(t, NULL, "Hi", DS_BOS DS_USER "Hi" DS_ASSISTANT "<think>\n");
	dec_tok_free(t);
	vb_release(&b);

	t = make(&b, ds_old_tpl, "llama", -1, 1); /* no BOS id: the usual spelling */
	assert_string_equal(dec_chat_template_name(t), "deepseek-r1");
	expect_chat(t, NULL, "Hi", DS_BOS DS_USER "Hi" DS_ASSISTANT);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_chat_detect(void **state)
{
	struct vb b;
	struct dec_tok *t;
	char *out = (char *)1;
	struct cr_err e;
	static const struct {
		const char *tpl, *arch;
		int chat_tokens;
		const char *want;
	} cases[] = {
		{ NULL, "qwen2", 0, "chatml" }, { NULL, "qwen3", 0, "chatml" },
		{ NULL, "llama", 0, "llama3" }, { NULL, NULL, 1, "chatml" },
		{ NULL, "mamba", 0, "none" }, { qwen3_tpl, "llama", 1, "chatml" },
		{ llama30_tpl, "qwen2", 1, "llama3" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		t = make(&b, cases[i].tpl, cases[i].arch, -1, cases[i].chat_tokens);
		assert_string_equal(dec_chat_template_name(t), cases[i].want);
		dec_tok_free(t);
		vb_release(&b);
	}
	t = make(&b, NULL, "mamba", -1, 0);
	cr_err_init(&e);
	assert_int_equal(dec_chat_format(t, NULL, "Hi", &out, &e), CR_EINPUT);
	assert_null(out);
	assert_non_null(strstr(e.msg, "chat template"));
	cr_err_init(&e);
	assert_int_equal(dec_chat_format(t, NULL, NULL, &out, &e), CR_EUSAGE);
	dec_tok_free(t);
	vb_release(&b);
}

typedef struct dec_chat_msg msg;

static void expect_msgs(const struct dec_tok *t, const msg *m, int n, const char *want)
{
	char *out = NULL;
	struct cr_err e;

	cr_err_init(&e);
	if (dec_chat_format_msgs(t, m, n, &out, &e) != CR_OK)
		fail_msg("dec_chat_format_msgs: %s", e.msg);
	if (strcmp(out, want) != 0) {
		fprintf(stderr, "got:\n%s\nwant:\n%s\n", out, want);
		free(out);
		fail_msg("conversation differs (%s)", dec_chat_template_name(t));
	}
	free(out);
}

static const msg conv4[] = {
	{ "system", " Be terse.\n" },
	{ "user", "Write a kernel." },
	{ "assistant", "<think>\nplan it\n</think>\n\nHere it is. " },
	{ "user", "Faster." },
};

static void tok_chat_turns_chatml(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, qwen25_tpl, "qwen2", -1, 1);

	(void)state;
	/* Qwen2.5: the default system turn, the assistant turn kept whole */
	expect_msgs(t, conv4 + 1, 3,
		    "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
		    "<|im_start|>user\nWrite a kernel.<|im_end|>\n"
		    "<|im_start|>assistant\n<think>\nplan it\n</think>\n\nHere it is. <|im_end|>\n"
		    "<|im_start|>user\nFaster.<|im_end|>\n<|im_start|>assistant\n");
	expect_msgs(t, conv4, 4,
		    "<|im_start|>system\n Be terse.\n<|im_end|>\n"
		    "<|im_start|>user\nWrite a kernel.<|im_end|>\n"
		    "<|im_start|>assistant\n<think>\nplan it\n</think>\n\nHere it is. <|im_end|>\n"
		    "<|im_start|>user\nFaster.<|im_end|>\n<|im_start|>assistant\n");
	dec_tok_free(t);
	vb_release(&b);

	/* Qwen3: the reasoning of an earlier turn dropped, then its leading newlines */
	t = make(&b, qwen3_think_tpl, "qwen3", -1, 1);
	expect_msgs(t, conv4, 4,
		    "<|im_start|>system\n Be terse.\n<|im_end|>\n"
		    "<|im_start|>user\nWrite a kernel.<|im_end|>\n"
		    "<|im_start|>assistant\nHere it is. <|im_end|>\n"
		    "<|im_start|>user\nFaster.<|im_end|>\n<|im_start|>assistant\n");
	{
		/* the prompt opened the block (no <think>); two blocks: after the last */
		const msg m[] = { { "user", "A" }, { "assistant", "r1\n</think>\nB" }, { "user", "C" },
				  { "assistant", "x</think>y</think>\n\n\nz\n" }, { "user", "D" },
				  { "assistant", "no reasoning\n" }, { "user", "E" } };

		expect_msgs(t, m, 7,
			    "<|im_start|>user\nA<|im_end|>\n<|im_start|>assistant\nB<|im_end|>\n"
			    "<|im_start|>user\nC<|im_end|>\n<|im_start|>assistant\nz\n<|im_end|>\n"
			    "<|im_start|>user\nD<|im_end|>\n<|im_start|>assistant\nno reasoning\n<|im_end|>\n"
			    "<|im_start|>user\nE<|im_end|>\n<|im_start|>assistant\n");
	}
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_chat_turns_llama3(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, llama30_tpl, "llama", BOT, 1);

	(void)state;
	/* every turn trimmed, the assistant's kept whole (reasoning included) */
	expect_msgs(t, conv4, 4,
		    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe terse.<|eot_id|>"
		    "<|start_header_id|>user<|end_header_id|>\n\nWrite a kernel.<|eot_id|>"
		    "<|start_header_id|>assistant<|end_header_id|>\n\n<think>\nplan it\n</think>\n\nHere it is.<|eot_id|>"
		    "<|start_header_id|>user<|end_header_id|>\n\nFaster.<|eot_id|>"
		    "<|start_header_id|>assistant<|end_header_id|>\n\n");
	dec_tok_free(t);
	vb_release(&b);

	t = make(&b, llama31_tpl, "llama", BOT, 1);
	expect_msgs(t, conv4 + 1, 3,
		    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
		    "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
		    "<|start_header_id|>user<|end_header_id|>\n\nWrite a kernel.<|eot_id|>"
		    "<|start_header_id|>assistant<|end_header_id|>\n\n<think>\nplan it\n</think>\n\nHere it is.<|eot_id|>"
		    "<|start_header_id|>user<|end_header_id|>\n\nFaster.<|eot_id|>"
		    "<|start_header_id|>assistant<|end_header_id|>\n\n");
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_chat_turns_deepseek(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, ds_tpl, "qwen2", DSBOS, 1);

	(void)state;
	/* split('</think>')[-1]: the newlines after it stay; <｜end▁of▁sentence｜> closes the turn */
	expect_msgs(t, conv4, 4,
		    DS_BOS " Be terse.\n" DS_USER "Write a kernel." DS_ASSISTANT "\n\nHere it is. " DS_EOS
		    DS_USER "Faster." DS_ASSISTANT "<think>\n");
	{
		const msg m[] = { { "user", "A" }, { "assistant", "r</think>B" }, { "user", "C" },
				  { "assistant", "plain" }, { "user", "D" } };

		expect_msgs(t, m, 5,
			    DS_BOS DS_USER "A" DS_ASSISTANT "B" DS_EOS DS_USER "C" DS_ASSISTANT "plain" DS_EOS
			    DS_USER "D" DS_ASSISTANT "<think>\n");
	}
	dec_tok_free(t);
	vb_release(&b);

	t = make(&b, ds_old_tpl, "llama", -1, 1);
	expect_msgs(t, conv4 + 1, 3,
		    DS_BOS DS_USER "Write a kernel." DS_ASSISTANT "\n\nHere it is. " DS_EOS DS_USER "Faster."
		    DS_ASSISTANT);
	dec_tok_free(t);
	vb_release(&b);
}

/* dec_chat_format(system, user) == the {system, user} conversation, for
 * every template and system/user shapes (none, empty, padded). */
static void tok_chat_turns_same_as_format(void **state)
{
	static const struct {
		const char *tpl, *arch;
		int32_t bos;
	} fam[] = {
		{ qwen25_tpl, "qwen2", -1 }, { qwen3_tpl, "qwen3", -1 }, { qwen3_think_tpl, "qwen3", -1 },
		{ llama30_tpl, "llama", BOT }, { llama31_tpl, "llama", BOT }, { ds_tpl, "qwen2", DSBOS },
		{ ds_old_tpl, "llama", -1 }, { NULL, "qwen2", -1 }, { NULL, "llama", BOT },
	};
	static const char *sys[] = { NULL, "", "Be terse.", "  padded\n", "has </think> in it" };
	static const char *user[] = { "Hi", "", " Write\na kernel. ", "<think>x</think>y" };
	int checked = 0;

	(void)state;
	for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
		struct vb b;
		struct dec_tok *t = make(&b, fam[f].tpl, fam[f].arch, fam[f].bos, 1);

		for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++)
			for (size_t j = 0; j < sizeof user / sizeof user[0]; j++) {
				msg m[2] = { { "system", sys[i] }, { "user", user[j] } };
				char *a = NULL, *c = NULL;
				struct cr_err e;

				cr_err_init(&e);
				assert_int_equal(dec_chat_format(t, sys[i], user[j], &a, &e), CR_OK);
				assert_int_equal(dec_chat_format_msgs(t, sys[i] ? m : m + 1, sys[i] ? 2 : 1,
								      &c, &e), CR_OK);
				assert_string_equal(a, c);
				assert_non_null(strstr(a, user[j][0] == ' ' ? "Write\na kernel." : user[j]));
				free(a);
				free(c);
				checked++;
			}
		dec_tok_free(t);
		vb_release(&b);
	}
	assert_int_equal(checked, 9 * 5 * 4);
}

static const char phi3_tpl[] =
	"{{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' + '\n' + "
	"message['content'] + '<|end|>\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}"
	"{% else %}{{ eos_token }}{% endif %}";
static const char gemma3_tpl[] =
	"{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- set first_user_prefix = "
	"messages[0]['content'] + '\n\n' -%}{%- endif -%}{{ '<start_of_turn>' + role + '\n' + "
	"(first_user_prefix if loop.first else \"\") }}{{ message['content'] | trim }}"
	"{{ '<end_of_turn>\n' }}{%- if add_generation_prompt -%}{{'<start_of_turn>model\n'}}{%- endif -%}";

/* Phi-3 and Gemma: detected from their markers (else the arch), a
 * conversation byte for byte; --chat-template overrides detection and
 * refuses an unknown name; --no-think only where the template has the
 * switch (Qwen3's), which opens the answer with an empty think block. */
static void tok_chat_phi3_gemma_switches(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, phi3_tpl, "phi3", -1, 1);
	struct cr_err e;

	(void)state;
	cr_err_init(&e);
	assert_string_equal(dec_chat_template_name(t), "phi3");
	expect_msgs(t, conv4, 4,
		    "<s><|system|>\n Be terse.\n<|end|>\n<|user|>\nWrite a kernel.<|end|>\n"
		    "<|assistant|>\n<think>\nplan it\n</think>\n\nHere it is. <|end|>\n"
		    "<|user|>\nFaster.<|end|>\n<|assistant|>\n");
	assert_int_equal(dec_chat_set_no_think(t, &e), CR_EUSAGE);
	assert_non_null(strstr(e.msg, "phi3"));
	dec_tok_free(t);
	vb_release(&b);

	t = make(&b, gemma3_tpl, "gemma3", -1, 1);
	assert_string_equal(dec_chat_template_name(t), "gemma");
	expect_msgs(t, conv4, 4,
		    "<bos><start_of_turn>user\n Be terse.\n\n\nWrite a kernel.<end_of_turn>\n"
		    "<start_of_turn>model\n<think>\nplan it\n</think>\n\nHere it is.<end_of_turn>\n"
		    "<start_of_turn>user\nFaster.<end_of_turn>\n<start_of_turn>model\n");
	/* no template text: the arch decides */
	dec_tok_free(t);
	vb_release(&b);
	t = make(&b, NULL, "phi3", -1, 1);
	assert_string_equal(dec_chat_template_name(t), "phi3");
	/* --chat-template */
	cr_err_init(&e);
	assert_int_equal(dec_chat_set_template(t, "gemma", &e), CR_OK);
	assert_string_equal(dec_chat_template_name(t), "gemma");
	assert_int_equal(dec_chat_set_template(t, "jinja", &e), CR_EUSAGE);
	assert_non_null(strstr(e.msg, "'jinja'"));
	dec_tok_free(t);
	vb_release(&b);

	/* --no-think: Qwen3's switch; Qwen2.5 has none */
	t = make(&b, qwen3_think_tpl, "qwen3", -1, 1);
	cr_err_init(&e);
	assert_int_equal(dec_chat_set_no_think(t, &e), CR_OK);
	expect_chat(t, NULL, "Write a kernel.",
		    "<|im_start|>user\nWrite a kernel.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
	dec_tok_free(t);
	vb_release(&b);
	t = make(&b, qwen25_tpl, "qwen2", -1, 1);
	assert_int_equal(dec_chat_set_no_think(t, &e), CR_EUSAGE);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_chat_turns_errors(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, qwen3_think_tpl, "qwen3", -1, 1);
	static const msg ends_assistant[] = { { "user", "A" }, { "assistant", "B" } };
	static const msg late_system[] = { { "user", "A" }, { "system", "S" }, { "user", "B" } };
	static const msg bad_role[] = { { "user", "A" }, { "tool", "B" }, { "user", "C" } };
	static const msg no_content[] = { { "user", "A" }, { "assistant", NULL }, { "user", "C" } };
	static const msg only_system[] = { { "system", "S" } };
	static const struct {
		const msg *m;
		int n;
		const char *needle;
	} cases[] = {
		{ ends_assistant, 2, "last message is assistant" }, { late_system, 3, "message 1" },
		{ bad_role, 3, "role 'tool'" }, { no_content, 3, "no content" },
		{ only_system, 1, "last message is system" }, { ends_assistant, 0, "no messages" },
		{ NULL, 1, "no messages" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out = (char *)1;
		struct cr_err e;

		cr_err_init(&e);
		assert_int_equal(dec_chat_format_msgs(t, cases[i].m, cases[i].n, &out, &e), CR_EUSAGE);
		assert_null(out);
		if (!strstr(e.msg, cases[i].needle))
			fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].needle);
	}
	dec_tok_free(t);
	vb_release(&b);
	t = make(&b, NULL, "mamba", -1, 0);
	{
		char *out = (char *)1;
		struct cr_err e;

		cr_err_init(&e);
		assert_int_equal(dec_chat_format_msgs(t, conv4, 4, &out, &e), CR_EINPUT);
		assert_null(out);
	}
	dec_tok_free(t);
	vb_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tok_chat_chatml),
		cmocka_unit_test(tok_chat_llama3),
		cmocka_unit_test(tok_chat_deepseek),
		cmocka_unit_test(tok_chat_detect),
		cmocka_unit_test(tok_chat_turns_chatml),
		cmocka_unit_test(tok_chat_turns_llama3),
		cmocka_unit_test(tok_chat_turns_deepseek),
		cmocka_unit_test(tok_chat_turns_same_as_format),
		cmocka_unit_test(tok_chat_turns_errors),
		cmocka_unit_test(tok_chat_phi3_gemma_switches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

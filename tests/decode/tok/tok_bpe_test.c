/* tok_bpe_test.c — byte-level BPE: the GPT-2 byte mapping both ways, merges
 * applied lowest rank first (leftmost on ties) with hand-computed ids,
 * llama3's whole-word lookup, symbols left unmerged, round trips of tricky
 * text, pieces of partial UTF-8, and the load time of a 150k vocabulary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tok_fixture.h"

/* ids: 0..255 bytes, then the tokens below in order. */
enum { LL = 256, ELL, HE, HELL, AA, AAAA, GT, GTHE, GXYZ };

static struct dec_tok *make(struct vb *b, const char *pre)
{
	vb_init(b, "gpt2", pre);
	vb_bytes(b);
	assert_int_equal(vb_tok(b, "ll", 1, 0), LL);
	assert_int_equal(vb_tok(b, "ell", 1, 0), ELL);
	assert_int_equal(vb_tok(b, "he", 1, 0), HE);
	assert_int_equal(vb_tok(b, "hell", 1, 0), HELL);
	assert_int_equal(vb_tok(b, "aa", 1, 0), AA);
	assert_int_equal(vb_tok(b, "aaaa", 1, 0), AAAA);
	assert_int_equal(vb_tok(b, vb_bl(" t"), 1, 0), GT);
	assert_int_equal(vb_tok(b, vb_bl(" the"), 1, 0), GTHE);
	assert_int_equal(vb_tok(b, vb_bl(" xyz"), 1, 0), GXYZ);
	vb_merge(b, "l", "l");     /* r0 */
	vb_merge(b, "e", "ll");    /* r1 */
	vb_merge(b, "h", "e");     /* r2 */
	vb_merge(b, "he", "ll");   /* r3: never reached for "hello" */
	vb_merge(b, "a", "a");     /* r4 */
	vb_merge(b, "aa", "aa");   /* r5 */
	vb_merge(b, "\xc4\xa0", "t"); /* r6 "Ġ t" */
	vb_merge(b, "\xc4\xa0t", "he"); /* r7 */
	vb_merge(b, "x", "y");     /* r8: "xy" is no token */
	return vb_build(b);
}

static void tok_bpe_byte_map(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "qwen2");

	(void)state;
	/* GPT-2's table at a few known points */
	assert_string_equal(vb_bl(" "), "\xc4\xa0");    /* Ġ */
	assert_string_equal(vb_bl("\n"), "\xc4\x8a");   /* Ċ */
	assert_string_equal(vb_bl("\x7f"), "\xc4\xa1"); /* ġ */
	assert_string_equal(vb_bl("\xad"), "\xc5\x83"); /* Ń */
	assert_string_equal(vb_bl("\x01"), "\xc4\x81"); /* ā */
	assert_string_equal(vb_bl("A~\xa1\xff"), "A~\xc2\xa1\xc3\xbf");
	for (int c = 0; c < 256; c++) {
		char raw = (char)c, out[4];
		const int32_t want = c;
		assert_int_equal(dec_tok_piece(t, c, out, sizeof out), 1);
		assert_int_equal((unsigned char)out[0], c);
		expect_ids(t, &raw, 1, 0, 0, &want, 1);
	}
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_bpe_merge_order(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "qwen2");

	(void)state;
	/* l l (r0) -> e ll (r1) beats h e (r2): h|ell|o, not hell|o */
	EXPECT_IDS(t, "hello", 0, 0, 'h', ELL, 'o');
	/* equal ranks: leftmost pair first */
	EXPECT_IDS(t, "aaa", 0, 0, AA, 'a');
	EXPECT_IDS(t, "aaaa", 0, 0, AAAA);
	EXPECT_IDS(t, "aaaaa", 0, 0, AAAA, 'a');
	/* the byte-level space merges within its pre-token */
	EXPECT_IDS(t, "the the", 0, 0, 't', HE, GTHE);
	/* "x y" merges to a symbol with no token: back to its characters */
	EXPECT_IDS(t, "xy", 0, 0, 'x', 'y');
	/* no merge crosses a pre-token boundary: "l" and "l" in different words */
	EXPECT_IDS(t, "l l", 0, 0, 'l', ' ', 'l');
	/* one pre-token of 65536 letters: the heap keeps it n log n, and the
	 * leftmost rule pairs it up exactly */
	{
		size_t n = 65536;
		char *a = malloc(n);
		int32_t *want = malloc(n / 4 * sizeof *want);
		assert_non_null(a);
		assert_non_null(want);
		memset(a, 'a', n);
		for (size_t i = 0; i < n / 4; i++)
			want[i] = AAAA;
		expect_ids(t, a, n, 0, 0, want, n / 4);
		want[n / 4 - 1] = 'a'; /* 65533 = 4 * 16383 + 1 */
		expect_ids(t, a, n - 3, 0, 0, want, n / 4);
		free(a);
		free(want);
	}
	/* qwen2 adds no BOS; there is none anyway */
	assert_int_equal(dec_tok_add_bos(t), 0);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_bpe_empty(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "qwen2");
	int32_t *ids = (int32_t *)1;
	size_t n = 7;
	struct cr_err e;

	(void)state;
	cr_err_init(&e);
	assert_int_equal(dec_tok_encode(t, "", 0, 1, 0, &ids, &n, &e), CR_OK);
	assert_int_equal(n, 0);
	assert_non_null(ids);
	free(ids);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_bpe_ignore_merges(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "qwen2");

	(void)state;
	EXPECT_IDS(t, " xyz", 0, 0, ' ', 'x', 'y', 'z');
	dec_tok_free(t);
	vb_release(&b);
	t = make(&b, "llama-bpe");
	EXPECT_IDS(t, " xyz", 0, 0, GXYZ); /* llama3 takes a whole pre-token found in the vocab */
	EXPECT_IDS(t, "hello", 0, 0, 'h', ELL, 'o');
	dec_tok_free(t);
	vb_release(&b);
}

static const char *const tricky[] = {
	"hello world",
	"  multiple   spaces  ",
	"tabs\t\tand\nnewlines\r\n\r\n",
	"emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇫🇷",
	"CJK 你好，世界！ 日本語のテキスト 한국어",
	"combining e\xcc\x81 a\xcc\x8a\xcc\x81 Zalgo z\xcd\x91\xcd\x8b",
	"Ελληνικά Русский العربية עברית हिन्दी",
	"'s 're 'LL don't I'M",
	"1234567890 3.14159 1e-9 ١٢٣",
	"    def f(x):\n\treturn x**2  # comment\n",
	"<|im_start|>user\nnot special here<|im_end|>",
	"\x01\x02\x7f\x1b[0m",
	" leading and trailing ",
	"\n",
	" ",
};

static void round_trips(const char *pre)
{
	struct vb b;
	struct dec_tok *t = make(&b, pre);
	static const char invalid[] = "bad \xff\xfe utf8 \xc3 \xe2\x82 \xf0\x9f\x98 \x80 end";

	for (size_t i = 0; i < sizeof tricky / sizeof tricky[0]; i++)
		expect_round_trip(t, tricky[i], strlen(tricky[i]));
	expect_round_trip(t, invalid, sizeof invalid - 1);
	expect_round_trip(t, "nul\0inside", 10);
	{
		uint64_t seed = 42;
		char buf[300];
		for (int i = 0; i < 300; i++) {
			size_t n = random_text(&seed, buf, 10 + (size_t)i % 290, 1);
			expect_round_trip(t, buf, n);
		}
	}
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_bpe_round_trip(void **state)
{
	(void)state;
	round_trips("llama-bpe");
	round_trips("qwen2");
	round_trips("gpt-2");
	round_trips("smollm");
	round_trips("default");
}

static void tok_bpe_piece(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "qwen2");
	char buf[8] = "xxxxxxx";
	int32_t *ids = NULL;
	size_t n = 0;
	struct cr_err e;

	(void)state;
	/* the three bytes of € come out one byte each: partial UTF-8 */
	EXPECT_IDS(t, "\xe2\x82\xac", 0, 0, 0xE2, 0x82, 0xAC);
	assert_int_equal(dec_tok_piece(t, 0xE2, buf, sizeof buf), 1);
	assert_int_equal((unsigned char)buf[0], 0xE2);
	/* streaming: pieces of a 4-byte emoji, each partial, add up to it */
	{
		char acc[16];
		size_t k = 0;
		EXPECT_IDS(t, "\xf0\x9f\x98\x80", 0, 0, 0xF0, 0x9F, 0x98, 0x80);
		k += dec_tok_piece(t, 0xF0, acc + k, sizeof acc - k);
		k += dec_tok_piece(t, 0x9F, acc + k, sizeof acc - k);
		k += dec_tok_piece(t, 0x98, acc + k, sizeof acc - k);
		k += dec_tok_piece(t, 0x80, acc + k, sizeof acc - k);
		assert_int_equal(k, 4);
		assert_memory_equal(acc, "\xf0\x9f\x98\x80", 4);
	}
	/* short buffer: full length returned, only cap bytes written */
	memcpy(buf, "xxxxxxx", 8);
	assert_int_equal(dec_tok_piece(t, GTHE, buf, 2), 4);
	assert_memory_equal(buf, " txxxxx", 8);
	assert_int_equal(dec_tok_piece(t, GTHE, NULL, 0), 4);
	assert_int_equal(dec_tok_piece(t, -1, buf, sizeof buf), 0);
	assert_int_equal(dec_tok_piece(t, 100000, buf, sizeof buf), 0);
	/* decode rejects ids outside the vocabulary */
	cr_err_init(&e);
	{
		const int32_t bad[] = { 'a', 9999 };
		char *text = NULL;
		size_t len = 0;
		assert_int_equal(dec_tok_decode(t, bad, 2, 1, &text, &len, &e), CR_EINPUT);
		assert_non_null(strstr(e.msg, "9999"));
		assert_null(text);
	}
	(void)ids;
	(void)n;
	dec_tok_free(t);
	vb_release(&b);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A 150k vocabulary with 150k merges loads in well under a second, and a
 * 200 kB text encodes in well under a second too. */
static void tok_bpe_big_vocab(void **state)
{
	struct vb b;
	struct dec_tok *t;
	double t0, dt_load, dt_enc;
	char s[32], l[16], r[16];
	char *text;
	size_t tl = 200000;
	int32_t *ids = NULL;
	size_t n = 0;
	struct cr_err e;

	(void)state;
	vb_init(&b, "gpt2", "qwen2");
	vb_bytes(&b);
	for (unsigned i = 0; b.n < 150000; i++) {
		snprintf(l, sizeof l, "%c%u", 'a' + i % 26, i / 26);
		snprintf(s, sizeof s, "w%s", l);
		vb_tok(&b, s, 1, 0);
		snprintf(r, sizeof r, "%s", l);
		vb_merge(&b, "w", r);
	}
	t0 = now_s();
	t = vb_build(&b);
	dt_load = now_s() - t0;
	assert_int_equal(dec_tok_n_vocab(t), 150000);
	text = malloc(tl);
	assert_non_null(text);
	for (size_t i = 0; i < tl; i++)
		text[i] = "the quick brown fox jumps over 13 lazy dogs\n"[i % 44];
	cr_err_init(&e);
	t0 = now_s();
	assert_int_equal(dec_tok_encode(t, text, tl, 0, 0, &ids, &n, &e), CR_OK);
	dt_enc = now_s() - t0;
	fprintf(stderr, "150k vocab: load %.3f s, encode 200 kB %.3f s (%zu ids)\n", dt_load, dt_enc, n);
	assert_true(dt_load < 1.0);
	assert_true(dt_enc < 2.0);
	free(ids);
	free(text);
	dec_tok_free(t);
	vb_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tok_bpe_byte_map),
		cmocka_unit_test(tok_bpe_merge_order),
		cmocka_unit_test(tok_bpe_empty),
		cmocka_unit_test(tok_bpe_ignore_merges),
		cmocka_unit_test(tok_bpe_round_trip),
		cmocka_unit_test(tok_bpe_piece),
		cmocka_unit_test(tok_bpe_big_vocab),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

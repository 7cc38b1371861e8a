/* test_gguf.c — the GGUF reader: every metadata type, string arrays,
 * alignment and tensor offsets; clear errors for bad magic, version, unknown
 * types, overflowing counts, tensors past EOF; and a fuzz pass that truncates
 * a small file at every offset and corrupts every header byte (run it under
 * -Db_sanitize=address,undefined). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/quant/dec_quant.h"
#include "decode/dec_run.h"
#include "decode/model/gguf.h"
#include "dec_testutil.h"

static uint8_t *small_file(size_t *size, size_t *data_end)
{
	struct gw *w = gw_new();
	uint8_t u8 = 200;
	int8_t i8 = -5;
	uint16_t u16 = 60000;
	int16_t i16 = -3000;
	uint64_t u64 = 1ull << 40;
	int64_t i64 = -(1ll << 40);
	double f64 = 2.5;
	int32_t arr[3] = { 1, -2, 3 };
	const char *strs[3] = { "a", "", "hello" };
	float t0[64], t1[32];
	uint64_t ne0[2] = { 32, 2 }, ne1[1] = { 32 };
	uint8_t *p;

	for (int i = 0; i < 64; i++)
		t0[i] = (float)i;
	for (int i = 0; i < 32; i++)
		t1[i] = (float)-i;
	gw_kv_raw(w, "t.u8", DEC_GGUF_U8, &u8, 1);
	gw_kv_raw(w, "t.i8", DEC_GGUF_I8, &i8, 1);
	gw_kv_raw(w, "t.u16", DEC_GGUF_U16, &u16, 2);
	gw_kv_raw(w, "t.i16", DEC_GGUF_I16, &i16, 2);
	gw_kv_u32(w, "t.u32", 4000000000u);
	gw_kv_i32(w, "t.i32", -7);
	gw_kv_f32(w, "t.f32", 0.125f);
	gw_kv_bool(w, "t.bool", 1);
	gw_kv_str(w, "t.str", "value");
	gw_kv_raw(w, "t.u64", DEC_GGUF_U64, &u64, 8);
	gw_kv_raw(w, "t.i64", DEC_GGUF_I64, &i64, 8);
	gw_kv_raw(w, "t.f64", DEC_GGUF_F64, &f64, 8);
	gw_kv_arr(w, "t.arr", DEC_GGUF_I32, arr, 3);
	gw_kv_arr_str(w, "t.strs", strs, 3);
	gw_kv_u32(w, "general.alignment", 32);
	gw_tensor(w, "w0", 2, ne0, DEC_T_F32, t0, sizeof t0);
	gw_tensor(w, "w1", 1, ne1, DEC_T_F32, t1, sizeof t1);
	p = gw_finish(w, size);
	gw_free(w);
	*data_end = *size; /* the last tensor fills its 32-byte slot exactly */
	return p;
}

static void test_parse(void **st)
{
	size_t n, end;
	uint8_t *p = small_file(&n, &end);
	struct dec_gguf *g;
	struct cr_err e;
	int64_t v;
	double f;
	char *s;
	const struct dec_gguf_kv *kv;
	const struct dec_gguf_tensor *t;

	(void)st;
	cr_err_init(&e);
	assert_int_equal(dec_gguf_from_buffer(p, n, "small.gguf", &g, &e), CR_OK);
	assert_int_equal(g->n_kv, 15);
	assert_int_equal(g->n_tensors, 2);
	assert_true(dec_gguf_get_int(g, "t.u8", &v) && v == 200);
	assert_true(dec_gguf_get_int(g, "t.i8", &v) && v == -5);
	assert_true(dec_gguf_get_int(g, "t.u16", &v) && v == 60000);
	assert_true(dec_gguf_get_int(g, "t.i16", &v) && v == -3000);
	assert_true(dec_gguf_get_int(g, "t.u32", &v) && v == 4000000000ll);
	assert_true(dec_gguf_get_int(g, "t.i32", &v) && v == -7);
	assert_true(dec_gguf_get_int(g, "t.u64", &v) && v == 1ll << 40);
	assert_true(dec_gguf_get_int(g, "t.i64", &v) && v == -(1ll << 40));
	assert_true(dec_gguf_get_float(g, "t.f32", &f) && f == 0.125);
	assert_true(dec_gguf_get_float(g, "t.f64", &f) && f == 2.5);
	assert_false(dec_gguf_get_int(g, "t.f32", &v)); /* a float is not an int */
	assert_false(dec_gguf_get_int(g, "missing", &v));
	assert_true(dec_gguf_get_bool(g, "t.bool", (int *)&v) && (int)v == 1);
	s = dec_gguf_get_strdup(g, "t.str");
	assert_string_equal(s, "value");
	free(s);
	kv = dec_gguf_find(g, "t.arr");
	assert_non_null(kv);
	assert_int_equal(kv->n, 3);
	assert_int_equal(dec_gguf_arr_int(kv, 1), -2);
	kv = dec_gguf_find(g, "t.strs");
	assert_int_equal(kv->arr_type, DEC_GGUF_STRING);
	assert_int_equal(kv->strs[2].len, 5);
	assert_memory_equal(kv->strs[2].ptr, "hello", 5);
	assert_int_equal(kv->strs[1].len, 0);
	t = dec_gguf_tensor(g, "w0");
	assert_non_null(t);
	assert_int_equal(t->ne[0], 32);
	assert_int_equal(t->ne[1], 2);
	assert_int_equal(t->nbytes, 256);
	assert_true(((const float *)t->data)[63] == 63.0f);
	t = dec_gguf_tensor(g, "w1");
	assert_int_equal(t->offset, 256);
	assert_true(((const float *)t->data)[5] == -5.0f);
	assert_int_equal((t->data - (const void *)p) % 32, 0);
	dec_gguf_free(g);
	free(p);
}

static enum cr_status parse_buf(const uint8_t *p, size_t n, struct cr_err *e)
{
	uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan catches overreads */
	struct dec_gguf *g = NULL;
	enum cr_status st;

	memcpy(copy, p, n);
	cr_err_init(e);
	st = dec_gguf_from_buffer(copy, n, "fuzz.gguf", &g, e);
	if (st == CR_OK) {
		/* a file that parses must be self-consistent */
		for (uint64_t i = 0; i < g->n_tensors; i++)
			assert_true((const uint8_t *)g->tensors[i].data + g->tensors[i].nbytes <= copy + n);
	} else {
		assert_null(g);
		assert_true(strstr(e->msg, "fuzz.gguf") != NULL);
	}
	dec_gguf_free(g);
	free(copy);
	return st;
}

static void test_truncate_every_offset(void **st)
{
	size_t n, end;
	uint8_t *p = small_file(&n, &end);
	struct cr_err e;

	(void)st;
	for (size_t cut = 0; cut < n; cut++)
		if (parse_buf(p, cut, &e) == CR_OK)
			fail_msg("truncated at %zu of %zu parsed", cut, n);
	assert_int_equal(parse_buf(p, n, &e), CR_OK);
	free(p);
}

static void test_corrupt_every_byte(void **st)
{
	size_t n, end, hdr;
	uint8_t *p = small_file(&n, &end);
	static const uint8_t vals[] = { 0x00, 0xff, 0x7f, 0x80, 0x01, 0x20 };
	struct cr_err e;

	(void)st;
	hdr = n - 256 - 128; /* everything before the tensor data */
	for (size_t i = 0; i < hdr; i++)
		for (size_t k = 0; k < sizeof vals; k++) {
			uint8_t old = p[i];

			p[i] = vals[k];
			parse_buf(p, n, &e);
			p[i] = old;
		}
	free(p);
}

static void expect_error(const uint8_t *p, size_t n, const char *needle)
{
	struct cr_err e;

	assert_int_equal(parse_buf(p, n, &e), CR_EINPUT);
	if (!strstr(e.msg, needle))
		fail_msg("error '%s' does not mention '%s'", e.msg, needle);
}

static void test_errors(void **st)
{
	size_t n, end;
	uint8_t *p = small_file(&n, &end), *q = malloc(n);
	uint32_t v2 = 2, bad = 99;
	uint64_t huge = UINT64_MAX / 2;
	size_t off;

	(void)st;
	memcpy(q, p, n);
	q[0] = 'X';
	expect_error(q, n, "bad magic");
	memcpy(q, p, n);
	memcpy(q + 4, &v2, 4);
	expect_error(q, n, "version 2");
	memcpy(q, p, n);
	memcpy(q + 16, &huge, 8); /* kv count */
	expect_error(q, n, "exceed");
	/* the first kv's type field: after magic, version, counts, key (8 + 4 bytes) */
	off = 24 + 8 + 4;
	memcpy(q, p, n);
	memcpy(q + off, &bad, 4);
	expect_error(q, n, "unknown value type 99");
	/* tensor past EOF: drop the last tensor's bytes */
	expect_error(p, n - 64, "past the end");
	free(p);
	free(q);
}

static void test_tensor_errors(void **st)
{
	struct gw *w = gw_new();
	float d[32] = { 0 };
	uint64_t ne[1] = { 32 }, ne_bad[1] = { 33 };
	size_t n;
	uint8_t *p;

	(void)st;
	gw_tensor(w, "odd", 1, ne_bad, DEC_T_Q8_0, d, 34);
	p = gw_finish(w, &n);
	expect_error(p, n, "not a multiple");
	free(p);
	gw_free(w);
	w = gw_new();
	gw_tensor(w, "weird", 1, ne, 77, d, sizeof d);
	p = gw_finish(w, &n);
	expect_error(p, n, "unknown ggml type 77");
	free(p);
	gw_free(w);
}

/* An SPM vocabulary read from GGUF honours tokenizer.ggml.add_space_prefix
 * (Gemma's is false: no U+2581 before the text); runs of spaces that are
 * user-defined tokens are matched in the raw text, as llama.cpp does. */
static void test_spm_space_prefix(void **st)
{
	static const char *const toks[] = { "<unk>", "<s>", "</s>", "\xe2\x96\x81x", "x", "\xe2\x96\x81", "  " };
	float scores[7] = { 0, 0, 0, -1, -2, -3, 0 };
	int32_t types[7] = { 2, 3, 3, 1, 1, 1, 4 };
	int32_t *ids;
	size_t n;

	(void)st;
	for (int v = -1; v <= 1; v++) {
		struct gw *w = gw_new();
		struct dec_gguf *g;
		struct dec_tok *t;
		struct cr_err e;
		uint8_t *p;
		size_t size;

		gw_kv_str(w, "general.architecture", "llama");
		gw_kv_str(w, "tokenizer.ggml.model", "llama");
		gw_kv_arr_str(w, "tokenizer.ggml.tokens", toks, 7);
		gw_kv_arr(w, "tokenizer.ggml.scores", DEC_GGUF_F32, scores, 7);
		gw_kv_arr(w, "tokenizer.ggml.token_type", DEC_GGUF_I32, types, 7);
		gw_kv_u32(w, "tokenizer.ggml.bos_token_id", 1);
		if (v >= 0)
			gw_kv_bool(w, "tokenizer.ggml.add_space_prefix", v);
		p = gw_finish(w, &size);
		gw_free(w);
		cr_err_init(&e);
		assert_int_equal(dec_gguf_from_buffer(p, size, "spm.gguf", &g, &e), CR_OK);
		if (dec_vocab_tokenizer(g, &t, &e))
			fail_msg("%s", e.msg);
		assert_int_equal(dec_tok_encode(t, "x  x", 4, 1, 0, &ids, &n, &e), CR_OK);
		/* the prefix (absent key: on, as llama.cpp has it for SPM), then
		 * "  " whole, then x after a matched token: prefixed only when on */
		assert_int_equal(n, 3);
		assert_int_equal(ids[0], v ? 3 : 4);
		assert_int_equal(ids[1], 6);
		assert_int_equal(ids[2], v ? 3 : 4);
		free(ids);
		dec_tok_free(t);
		dec_gguf_free(g);
		free(p);
	}
}

static void test_open_file(void **st)
{
	char path[256];
	struct dec_gguf *g;
	struct cr_err e;
	FILE *f;

	(void)st;
	cr_err_init(&e);
	assert_int_equal(dec_gguf_open("/nonexistent/x.gguf", &g, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "/nonexistent/x.gguf"));
	tiny_tmpname(path, sizeof path, ".gguf");
	f = fopen(path, "wb");
	fputs("GGUF\3\0\0\0", f);
	fclose(f);
	cr_err_init(&e);
	assert_int_equal(dec_gguf_open(path, &g, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "truncated"));
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_tensor_errors),
		cmocka_unit_test(test_truncate_every_offset),
		cmocka_unit_test(test_corrupt_every_byte),
		cmocka_unit_test(test_open_file),
		cmocka_unit_test(test_spm_space_prefix),
	};

	return cmocka_run_group_tests_name("decode_gguf", tests, NULL, NULL);
}

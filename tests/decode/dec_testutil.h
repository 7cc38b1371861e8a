/* dec_testutil.h — test helpers for decode/: a GGUF writer and a builder of
 * tiny random models (llama / qwen2 / qwen3, any supported weight type) with
 * a small byte-level BPE vocabulary (256 byte tokens, a few merges, ChatML
 * and think special tokens). */
#ifndef DEC_TESTUTIL_H
#define DEC_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

struct gw; /* GGUF writer */

struct gw *gw_new(void);
void gw_free(struct gw *w);
void gw_kv_str(struct gw *w, const char *key, const char *val);
void gw_kv_u32(struct gw *w, const char *key, uint32_t v);
void gw_kv_i32(struct gw *w, const char *key, int32_t v);
void gw_kv_f32(struct gw *w, const char *key, float v);
void gw_kv_bool(struct gw *w, const char *key, int v);
void gw_kv_raw(struct gw *w, const char *key, uint32_t type, const void *val, size_t n);
void gw_kv_arr(struct gw *w, const char *key, uint32_t etype, const void *vals, uint64_t n);
void gw_kv_arr_str(struct gw *w, const char *key, const char *const *vals, uint64_t n);
/* ne[0] is the row length; data is copied (nbytes must match the type). */
void gw_tensor(struct gw *w, const char *name, int n_dims, const uint64_t *ne, uint32_t type,
	       const void *data, size_t nbytes);
/* The whole file, malloc'd. */
uint8_t *gw_finish(struct gw *w, size_t *size);
int gw_write(struct gw *w, const char *path); /* 0 ok */
/* Mutations of a finished image, as a bad download would have them:
 * the value of u32 metadata `key`, the string length in front of `key`
 * (its u64), dimension `dim` of tensor `name`. Return 0, or -1 when the
 * key / tensor is not in the image (or key is not a u32). */
int gw_patch_u32(uint8_t *img, size_t size, const char *key, uint32_t v);
int gw_patch_key_len(uint8_t *img, size_t size, const char *key, uint64_t len);
int gw_patch_ne(uint8_t *img, size_t size, const char *name, int dim, uint64_t v);

struct tiny_spec {
	const char *arch;    /* "llama", "qwen2", "qwen3", "phi3" (fused attn_qkv and ffn_up),
	                        "qwen3moe" (experts of width hidden / 2, no dense feed-forward),
	                        "gemma3" (window 4 on even layers, post-norms, GELU) */
	uint32_t wtype;      /* type of every 2-D weight */
	int dim, n_layers, n_heads, n_kv_heads, head_dim, hidden;
	int tied;            /* omit output.weight */
	int rope_freqs;      /* llama: add rope_freqs.weight */
	uint32_t vtype;      /* if nonzero: type of attn_v and ffn_up (mixed files, like Q4_K_M) */
	float rope_linear;   /* if > 0: rope.scaling.type "linear" with this factor */
	int no_vocab;         /* omit the tokenizer metadata */
	int ctx_len;          /* context_length (0: 512) */
	int n_expert, n_expert_used; /* qwen3moe: experts and experts used (0: 4 and 2) */
	int embd_rows;        /* rows of token_embd and output (0: the vocabulary's size) */
	uint64_t seed;
};

struct dec_model;

/* Fills a spec with defaults that every weight type accepts (dim 256). */
void tiny_spec_default(struct tiny_spec *s, const char *arch, uint32_t wtype);
/* Builds the model as a GGUF image (malloc'd). Returns NULL on failure. */
uint8_t *tiny_model(const struct tiny_spec *s, size_t *size);
int tiny_model_write(const struct tiny_spec *s, const char *path); /* 0 ok */
/* Builds the model and loads it (the image in *img, which the model
 * borrows: free it after the model); exits the test with the error on
 * failure. */
struct dec_model *tiny_load(const struct tiny_spec *s, uint8_t **img);
int tiny_vocab_size(void);

/* Writes a temp file name into buf (a fresh file under $TMPDIR or /tmp). */
void tiny_tmpname(char *buf, size_t cap, const char *suffix);
/* Reads a whole file (malloc'd, NUL-terminated) or NULL. */
char *tiny_slurp(const char *path, size_t *len);

#endif

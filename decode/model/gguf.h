/* gguf.h — read-only GGUF v3 reader: the file is mmap'd (or a caller's
 * buffer is borrowed), every metadata key/value and tensor info is validated
 * up front, and the accessors below hand out pointers into the mapping.
 *
 * Layout (all little-endian): "GGUF" u32 version(=3) u64 n_tensors u64 n_kv;
 * n_kv × (string key, u32 type, value); n_tensors × (string name, u32 n_dims,
 * u64 ne[n_dims], u32 ggml type, u64 offset); padding to general.alignment
 * (default 32); tensor data. A string is u64 length + bytes (no NUL). */
#ifndef DEC_GGUF_H
#define DEC_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"

enum dec_gguf_vtype {
	DEC_GGUF_U8 = 0, DEC_GGUF_I8 = 1, DEC_GGUF_U16 = 2, DEC_GGUF_I16 = 3,
	DEC_GGUF_U32 = 4, DEC_GGUF_I32 = 5, DEC_GGUF_F32 = 6, DEC_GGUF_BOOL = 7,
	DEC_GGUF_STRING = 8, DEC_GGUF_ARRAY = 9, DEC_GGUF_U64 = 10,
	DEC_GGUF_I64 = 11, DEC_GGUF_F64 = 12,
	DEC_GGUF_NVTYPES
};

/* A string inside the mapping: not NUL-terminated. */
struct dec_gguf_str {
	const char *ptr;
	uint64_t len;
};

struct dec_gguf_kv {
	struct dec_gguf_str key;
	uint32_t type;            /* enum dec_gguf_vtype */
	uint32_t arr_type;        /* element type when type == ARRAY */
	uint64_t n;               /* element count (1 for scalars) */
	const uint8_t *data;      /* raw value bytes (scalars, numeric arrays) */
	struct dec_gguf_str *strs; /* [n] for STRING and ARRAY-of-STRING, else NULL */
};

#define DEC_GGUF_MAX_DIMS 4

struct dec_gguf_tensor {
	struct dec_gguf_str name;
	uint32_t n_dims;
	uint64_t ne[DEC_GGUF_MAX_DIMS]; /* ne[0] is the contiguous (row) dim; unused dims are 1 */
	uint32_t type;                  /* ggml type id (enum dec_type) */
	uint64_t offset;                /* from the start of the data section */
	uint64_t nbytes;
	const void *data;               /* into the mapping */
};

struct dec_gguf {
	char *path;                   /* for messages */
	const uint8_t *base;          /* mapping or borrowed buffer */
	size_t size;
	int mapped;                   /* 1: munmap on free */
	uint32_t version;
	uint64_t n_kv, n_tensors;
	struct dec_gguf_kv *kv;       /* [n_kv] */
	struct dec_gguf_tensor *tensors; /* [n_tensors] */
	uint64_t alignment;
	uint64_t data_off;            /* file offset of the data section */
};

/* Opens and validates path. On error *out is NULL and err names the file and
 * what is wrong (CR_EINPUT for a bad file, CR_EIO when it cannot be read). */
enum cr_status dec_gguf_open(const char *path, struct dec_gguf **out, struct cr_err *err);
/* Same on a caller-owned buffer, which must outlive the result. */
enum cr_status dec_gguf_from_buffer(const void *buf, size_t size, const char *name,
				    struct dec_gguf **out, struct cr_err *err);
void dec_gguf_free(struct dec_gguf *g); /* NULL is a no-op */

const struct dec_gguf_kv *dec_gguf_find(const struct dec_gguf *g, const char *key);
const struct dec_gguf_tensor *dec_gguf_tensor(const struct dec_gguf *g, const char *name);

/* Typed getters: return 1 and set *v when key exists with a compatible type
 * (any integer type for get_int, any float or integer for get_float), else 0. */
int dec_gguf_get_int(const struct dec_gguf *g, const char *key, int64_t *v);
int dec_gguf_get_float(const struct dec_gguf *g, const char *key, double *v);
int dec_gguf_get_bool(const struct dec_gguf *g, const char *key, int *v);
/* Returns a malloc'd NUL-terminated copy, or NULL when absent / not a string. */
char *dec_gguf_get_strdup(const struct dec_gguf *g, const char *key);
/* Element i of a numeric array as int64 / double (caller checks bounds). */
int64_t dec_gguf_arr_int(const struct dec_gguf_kv *kv, uint64_t i);
double dec_gguf_arr_float(const struct dec_gguf_kv *kv, uint64_t i);

size_t dec_gguf_vtype_size(uint32_t t); /* 0 for STRING/ARRAY/unknown */

#endif

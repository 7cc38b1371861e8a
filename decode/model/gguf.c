/* gguf.c — GGUF v3 parser: bounds-checked cursor over the mapping, metadata
 * and tensor-info validation, typed getters. Every read checks the remaining
 * length first, every count and size is checked for overflow, so a truncated
 * or corrupt file yields an error naming the file and the offset. */
#include "decode/model/gguf.h"
#include "decode/quant/dec_quant.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGN 32
#define MAX_ARRAY_DEPTH 1 /* arrays of arrays are rejected (no model uses them) */

struct cursor {
	const uint8_t *p;
	size_t size, off;
	const char *path;
	struct cr_err *err;
};

static enum cr_status need(struct cursor *c, uint64_t n, const char *what)
{
	if (n > c->size - c->off)
		return cr_errf(c->err, CR_EINPUT,
			       "%s: truncated at offset %zu: %s needs %llu bytes, %zu left",
			       c->path, c->off, what, (unsigned long long)n,
			       c->size - c->off);
	return CR_OK;
}

static enum cr_status rd(struct cursor *c, void *dst, size_t n, const char *what)
{
	enum cr_status st = need(c, n, what);

	if (st)
		return st;
	memcpy(dst, c->p + c->off, n);
	c->off += n;
	return CR_OK;
}

static enum cr_status rd_str(struct cursor *c, struct dec_gguf_str *s, const char *what)
{
	uint64_t len;
	enum cr_status st = rd(c, &len, 8, what);

	if (st)
		return st;
	st = need(c, len, what);
	if (st)
		return st;
	s->ptr = (const char *)c->p + c->off;
	s->len = len;
	c->off += len;
	return CR_OK;
}

size_t dec_gguf_vtype_size(uint32_t t)
{
	switch (t) {
	case DEC_GGUF_U8: case DEC_GGUF_I8: case DEC_GGUF_BOOL: return 1;
	case DEC_GGUF_U16: case DEC_GGUF_I16: return 2;
	case DEC_GGUF_U32: case DEC_GGUF_I32: case DEC_GGUF_F32: return 4;
	case DEC_GGUF_U64: case DEC_GGUF_I64: case DEC_GGUF_F64: return 8;
	default: return 0;
	}
}

/* Reads n strings into a malloc'd table pointing into the mapping. */
static enum cr_status rd_strs(struct cursor *c, uint64_t n, struct dec_gguf_str **out,
			      const char *key)
{
	struct dec_gguf_str *s;
	enum cr_status st = CR_OK;

	/* each string takes at least 8 bytes: bounds n before allocating */
	if (n > (c->size - c->off) / 8)
		return cr_errf(c->err, CR_EINPUT,
			       "%s: key '%s': array of %llu strings does not fit in the file",
			       c->path, key, (unsigned long long)n);
	s = malloc((n ? n : 1) * sizeof *s);
	if (!s)
		return cr_errf(c->err, CR_ENOMEM, "%s: out of memory", c->path);
	for (uint64_t i = 0; i < n && !st; i++)
		st = rd_str(c, &s[i], "string array element");
	if (st) {
		free(s);
		return st;
	}
	*out = s;
	return CR_OK;
}

static enum cr_status rd_kv(struct cursor *c, struct dec_gguf_kv *kv, char *keybuf, size_t cap)
{
	enum cr_status st = rd_str(c, &kv->key, "metadata key");
	size_t esz;

	if (st)
		return st;
	snprintf(keybuf, cap, "%.*s", (int)(kv->key.len < 200 ? kv->key.len : 200), kv->key.ptr);
	st = rd(c, &kv->type, 4, "metadata value type");
	if (st)
		return st;
	kv->n = 1;
	if (kv->type == DEC_GGUF_STRING)
		return rd_strs(c, 1, &kv->strs, keybuf);
	if (kv->type == DEC_GGUF_ARRAY) {
		st = rd(c, &kv->arr_type, 4, "array element type");
		if (!st)
			st = rd(c, &kv->n, 8, "array length");
		if (st)
			return st;
		if (kv->arr_type == DEC_GGUF_STRING)
			return rd_strs(c, kv->n, &kv->strs, keybuf);
		esz = dec_gguf_vtype_size(kv->arr_type);
		if (!esz)
			return cr_errf(c->err, CR_EINPUT,
				       "%s: key '%s': unsupported array element type %u at offset %zu",
				       c->path, keybuf, kv->arr_type, c->off - 12);
	} else {
		esz = dec_gguf_vtype_size(kv->type);
		if (!esz)
			return cr_errf(c->err, CR_EINPUT,
				       "%s: key '%s': unknown value type %u at offset %zu",
				       c->path, keybuf, kv->type, c->off - 4);
	}
	if (kv->n > (c->size - c->off) / esz)
		return cr_errf(c->err, CR_EINPUT,
			       "%s: key '%s': %llu values of %zu bytes run past the end of the file",
			       c->path, keybuf, (unsigned long long)kv->n, esz);
	kv->data = c->p + c->off;
	c->off += kv->n * esz;
	return CR_OK;
}

static enum cr_status rd_tensor(struct cursor *c, struct dec_gguf_tensor *t)
{
	enum cr_status st = rd_str(c, &t->name, "tensor name");
	char name[128];
	uint64_t nel = 1;
	size_t blck, tsize;

	if (!st)
		st = rd(c, &t->n_dims, 4, "tensor n_dims");
	if (st)
		return st;
	snprintf(name, sizeof name, "%.*s", (int)(t->name.len < 100 ? t->name.len : 100), t->name.ptr);
	if (t->n_dims < 1 || t->n_dims > DEC_GGUF_MAX_DIMS)
		return cr_errf(c->err, CR_EINPUT, "%s: tensor '%s': %u dimensions (1..%d allowed)",
			       c->path, name, t->n_dims, DEC_GGUF_MAX_DIMS);
	for (int i = 0; i < DEC_GGUF_MAX_DIMS; i++)
		t->ne[i] = 1;
	st = rd(c, t->ne, 8 * (size_t)t->n_dims, "tensor dims");
	if (!st)
		st = rd(c, &t->type, 4, "tensor type");
	if (!st)
		st = rd(c, &t->offset, 8, "tensor offset");
	if (st)
		return st;
	for (uint32_t i = 0; i < t->n_dims; i++) {
		if (t->ne[i] == 0 || t->ne[i] > ((uint64_t)1 << 40) || nel > (UINT64_MAX >> 1) / t->ne[i])
			return cr_errf(c->err, CR_EINPUT, "%s: tensor '%s': bad dimension ne[%u]=%llu",
				       c->path, name, i, (unsigned long long)t->ne[i]);
		nel *= t->ne[i];
	}
	if (!dec_type_info(t->type, &blck, &tsize))
		return cr_errf(c->err, CR_EINPUT, "%s: tensor '%s': unknown ggml type %u",
			       c->path, name, t->type);
	if (t->ne[0] % blck)
		return cr_errf(c->err, CR_EINPUT,
			       "%s: tensor '%s': row length %llu is not a multiple of the %s block size %zu",
			       c->path, name, (unsigned long long)t->ne[0], dec_type_name(t->type), blck);
	if (nel / blck > UINT64_MAX / tsize)
		return cr_errf(c->err, CR_EINPUT, "%s: tensor '%s': size overflows", c->path, name);
	t->nbytes = nel / blck * tsize;
	return CR_OK;
}

static int cmp_str(const struct dec_gguf_str *a, const struct dec_gguf_str *b)
{
	int c = memcmp(a->ptr, b->ptr, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int cmp_kv(const void *a, const void *b)
{
	return cmp_str(&(*(const struct dec_gguf_kv *const *)a)->key, &(*(const struct dec_gguf_kv *const *)b)->key);
}

static int cmp_tensor(const void *a, const void *b)
{
	return cmp_str(&(*(const struct dec_gguf_tensor *const *)a)->name,
		       &(*(const struct dec_gguf_tensor *const *)b)->name);
}

/* No key and no tensor name twice (llama.cpp refuses both): which of two
 * would a lookup take? Sorted pointers, O(n log n) for any count. */
static enum cr_status check_unique(struct dec_gguf *g, struct cr_err *err)
{
	uint64_t n = g->n_kv > g->n_tensors ? g->n_kv : g->n_tensors;
	const void **v = malloc((n ? n : 1) * sizeof *v);
	enum cr_status st = CR_OK;

	if (!v)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory", g->path);
	for (uint64_t i = 0; i < g->n_kv; i++)
		v[i] = &g->kv[i];
	qsort(v, g->n_kv, sizeof *v, cmp_kv);
	for (uint64_t i = 1; i < g->n_kv && !st; i++)
		if (!cmp_kv(&v[i - 1], &v[i])) {
			const struct dec_gguf_str *k = &((const struct dec_gguf_kv *)v[i])->key;
			st = cr_errf(err, CR_EINPUT, "%s: key '%.*s' is there twice", g->path,
				     (int)(k->len < 100 ? k->len : 100), k->ptr);
		}
	for (uint64_t i = 0; i < g->n_tensors && !st; i++)
		v[i] = &g->tensors[i];
	if (!st)
		qsort(v, g->n_tensors, sizeof *v, cmp_tensor);
	for (uint64_t i = 1; i < g->n_tensors && !st; i++)
		if (!cmp_tensor(&v[i - 1], &v[i])) {
			const struct dec_gguf_str *k = &((const struct dec_gguf_tensor *)v[i])->name;
			st = cr_errf(err, CR_EINPUT, "%s: tensor '%.*s' is there twice", g->path,
				     (int)(k->len < 100 ? k->len : 100), k->ptr);
		}
	free(v);
	return st;
}

#define NAME(t) (int)((t)->name.len < 100 ? (t)->name.len : 100), (t)->name.ptr

/* "[ne0, ne1] TYPE, N bytes" of a tensor, for messages. */
static const char *shape(const struct dec_gguf_tensor *t, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "[");

	for (uint32_t i = 0; i < t->n_dims && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? ", " : "", (unsigned long long)t->ne[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "] %s, %llu bytes", dec_type_name(t->type), (unsigned long long)t->nbytes);
	return buf;
}

static enum cr_status parse(struct dec_gguf *g, struct cr_err *err)
{
	struct cursor c = { g->base, g->size, 0, g->path, err };
	char magic[4], key[256];
	enum cr_status st;
	const struct dec_gguf_kv *al;
	uint64_t data_size, expect, end;
	char sh[160];
	const char *alsrc;

	st = rd(&c, magic, 4, "magic");
	if (st)
		return st;
	if (memcmp(magic, GGUF_MAGIC, 4))
		return cr_errf(err, CR_EINPUT, "%s: not a GGUF file (bad magic)", g->path);
	st = rd(&c, &g->version, 4, "version");
	if (st)
		return st;
	if (g->version != 3)
		return cr_errf(err, CR_EINPUT, "%s: GGUF version %u is not supported (only 3)",
			       g->path, g->version);
	st = rd(&c, &g->n_tensors, 8, "tensor count");
	if (!st)
		st = rd(&c, &g->n_kv, 8, "metadata count");
	if (st)
		return st;
	/* a kv takes >= 12 bytes, a tensor info >= 24: bound counts by the file size */
	if (g->n_kv > g->size / 12 || g->n_tensors > g->size / 24)
		return cr_errf(err, CR_EINPUT, "%s: counts (%llu keys, %llu tensors) exceed the file size",
			       g->path, (unsigned long long)g->n_kv, (unsigned long long)g->n_tensors);
	g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
	g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
	if (!g->kv || !g->tensors)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory", g->path);
	for (uint64_t i = 0; i < g->n_kv; i++) {
		st = rd_kv(&c, &g->kv[i], key, sizeof key);
		if (st)
			return st;
	}
	g->alignment = GGUF_DEFAULT_ALIGN;
	al = dec_gguf_find(g, "general.alignment");
	if (al) {
		int64_t a;

		if (!dec_gguf_get_int(g, "general.alignment", &a) || a <= 0 || a > 65536 || (a & (a - 1)))
			return cr_errf(err, CR_EINPUT, "%s: general.alignment must be a power of two integer",
				       g->path);
		g->alignment = (uint64_t)a;
	}
	for (uint64_t i = 0; i < g->n_tensors; i++) {
		st = rd_tensor(&c, &g->tensors[i]);
		if (st)
			return st;
	}
	if ((st = check_unique(g, err)))
		return st;
	g->data_off = (c.off + g->alignment - 1) / g->alignment * g->alignment;
	if (g->data_off > g->size && g->n_tensors)
		return cr_errf(err, CR_EINPUT, "%s: truncated before the tensor data", g->path);
	data_size = g->data_off <= g->size ? g->size - g->data_off : 0;
	expect = end = 0;
	alsrc = al ? "key 'general.alignment'" : "the default, no key 'general.alignment'";
	for (uint64_t i = 0; i < g->n_tensors; i++) {
		struct dec_gguf_tensor *t = &g->tensors[i];

		if (t->offset % g->alignment)
			return cr_errf(err, CR_EINPUT, "%s: tensor '%.*s': offset %llu is not aligned to %llu (%s)",
				       g->path, NAME(t), (unsigned long long)t->offset, (unsigned long long)g->alignment,
				       alsrc);
		if (t->offset > data_size || t->nbytes > data_size - t->offset)
			return cr_errf(err, CR_EINPUT,
				       "%s: tensor '%.*s': data [%llu, +%llu) runs past the end of the file",
				       g->path, (int)(t->name.len < 100 ? t->name.len : 100), t->name.ptr,
				       (unsigned long long)t->offset, (unsigned long long)t->nbytes);
		/* back to back in order, each padded to the alignment (as
		 * llama.cpp requires): a tensor count or a dim that disagrees
		 * with the data shows here, not as weights read from elsewhere */
		if (t->offset != expect)
			return i ? cr_errf(err, CR_EINPUT,
					   "%s: tensor '%.*s': offset %llu, expected %llu, where tensor '%.*s' (%s) "
					   "before it ends, padded to %llu (%s)", g->path, NAME(t),
					   (unsigned long long)t->offset, (unsigned long long)expect, NAME(t - 1),
					   shape(t - 1, sh, sizeof sh), (unsigned long long)g->alignment, alsrc)
				 : cr_errf(err, CR_EINPUT, "%s: tensor '%.*s': offset %llu, expected 0 (the first)",
					   g->path, NAME(t), (unsigned long long)t->offset);
		expect = t->offset + (t->nbytes + g->alignment - 1) / g->alignment * g->alignment;
		end = t->offset + t->nbytes;
		t->data = g->base + g->data_off + t->offset;
	}
	/* what follows the last tensor is its padding at most */
	if (g->n_tensors && data_size - end >= g->alignment)
		return cr_errf(err, CR_EINPUT,
			       "%s: %llu bytes after the data of the last tensor '%.*s' (%s): the tensor count "
			       "(%llu), the tensor infos or the alignment (%llu, %s) disagree with the data", g->path,
			       (unsigned long long)(data_size - end), NAME(&g->tensors[g->n_tensors - 1]),
			       shape(&g->tensors[g->n_tensors - 1], sh, sizeof sh), (unsigned long long)g->n_tensors,
			       (unsigned long long)g->alignment, alsrc);
	return CR_OK;
}

static enum cr_status make(const void *buf, size_t size, const char *name, int mapped,
			   struct dec_gguf **out, struct cr_err *err)
{
	struct dec_gguf *g = calloc(1, sizeof *g);
	enum cr_status st;

	*out = NULL;
	if (!g || !(g->path = strdup(name))) {
		free(g);
		if (mapped)
			munmap((void *)buf, size);
		return cr_errf(err, CR_ENOMEM, "%s: out of memory", name);
	}
	g->base = buf;
	g->size = size;
	g->mapped = mapped;
	st = parse(g, err);
	if (st) {
		dec_gguf_free(g);
		return st;
	}
	*out = g;
	return CR_OK;
}

enum cr_status dec_gguf_from_buffer(const void *buf, size_t size, const char *name,
				    struct dec_gguf **out, struct cr_err *err)
{
	return make(buf, size, name, 0, out, err);
}

enum cr_status dec_gguf_open(const char *path, struct dec_gguf **out, struct cr_err *err)
{
	struct stat sb;
	void *map;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cr_errf(err, CR_EINPUT, "%s: cannot open: %m", path);
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return cr_errf(err, CR_EINPUT, "%s: not a regular file", path);
	}
	if (sb.st_size < 24) {
		close(fd);
		return cr_errf(err, CR_EINPUT, "%s: truncated: %lld bytes is too short for a GGUF header",
			       path, (long long)sb.st_size);
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return cr_errf(err, CR_EIO, "%s: mmap failed: %m", path);
	return make(map, (size_t)sb.st_size, path, 1, out, err);
}

void dec_gguf_free(struct dec_gguf *g)
{
	if (!g)
		return;
	if (g->kv)
		for (uint64_t i = 0; i < g->n_kv; i++)
			free(g->kv[i].strs);
	free(g->kv);
	free(g->tensors);
	if (g->mapped)
		munmap((void *)g->base, g->size);
	free(g->path);
	free(g);
}

static int streq(struct dec_gguf_str s, const char *z)
{
	size_t n = strlen(z);

	return s.len == n && !memcmp(s.ptr, z, n);
}

const struct dec_gguf_kv *dec_gguf_find(const struct dec_gguf *g, const char *key)
{
	for (uint64_t i = 0; i < g->n_kv; i++)
		if (streq(g->kv[i].key, key))
			return &g->kv[i];
	return NULL;
}

const struct dec_gguf_tensor *dec_gguf_tensor(const struct dec_gguf *g, const char *name)
{
	for (uint64_t i = 0; i < g->n_tensors; i++)
		if (streq(g->tensors[i].name, name))
			return &g->tensors[i];
	return NULL;
}

static int64_t scalar_int(uint32_t type, const uint8_t *p)
{
	switch (type) {
	case DEC_GGUF_U8: case DEC_GGUF_BOOL: return *p;
	case DEC_GGUF_I8: return (int8_t)*p;
	case DEC_GGUF_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
	case DEC_GGUF_I16: { int16_t v; memcpy(&v, p, 2); return v; }
	case DEC_GGUF_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
	case DEC_GGUF_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case DEC_GGUF_U64: { uint64_t v; memcpy(&v, p, 8); return v > INT64_MAX ? INT64_MAX : (int64_t)v; }
	case DEC_GGUF_I64: { int64_t v; memcpy(&v, p, 8); return v; }
	case DEC_GGUF_F32: { float v; memcpy(&v, p, 4); return (int64_t)v; }
	case DEC_GGUF_F64: { double v; memcpy(&v, p, 8); return (int64_t)v; }
	}
	return 0;
}

static double scalar_float(uint32_t type, const uint8_t *p)
{
	if (type == DEC_GGUF_F32) {
		float v;

		memcpy(&v, p, 4);
		return v;
	}
	if (type == DEC_GGUF_F64) {
		double v;

		memcpy(&v, p, 8);
		return v;
	}
	return (double)scalar_int(type, p);
}

static int is_int_type(uint32_t t)
{
	return dec_gguf_vtype_size(t) && t != DEC_GGUF_F32 && t != DEC_GGUF_F64;
}

int dec_gguf_get_int(const struct dec_gguf *g, const char *key, int64_t *v)
{
	const struct dec_gguf_kv *kv = dec_gguf_find(g, key);

	if (!kv || !is_int_type(kv->type))
		return 0;
	*v = scalar_int(kv->type, kv->data);
	return 1;
}

int dec_gguf_get_float(const struct dec_gguf *g, const char *key, double *v)
{
	const struct dec_gguf_kv *kv = dec_gguf_find(g, key);

	if (!kv || !dec_gguf_vtype_size(kv->type))
		return 0;
	*v = scalar_float(kv->type, kv->data);
	return 1;
}

int dec_gguf_get_bool(const struct dec_gguf *g, const char *key, int *v)
{
	int64_t i;

	if (!dec_gguf_get_int(g, key, &i))
		return 0;
	*v = i != 0;
	return 1;
}

char *dec_gguf_get_strdup(const struct dec_gguf *g, const char *key)
{
	const struct dec_gguf_kv *kv = dec_gguf_find(g, key);

	if (!kv || kv->type != DEC_GGUF_STRING)
		return NULL;
	return strndup(kv->strs[0].ptr, kv->strs[0].len);
}

int64_t dec_gguf_arr_int(const struct dec_gguf_kv *kv, uint64_t i)
{
	return scalar_int(kv->arr_type, kv->data + i * dec_gguf_vtype_size(kv->arr_type));
}

double dec_gguf_arr_float(const struct dec_gguf_kv *kv, uint64_t i)
{
	return scalar_float(kv->arr_type, kv->data + i * dec_gguf_vtype_size(kv->arr_type));
}

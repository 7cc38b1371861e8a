/* malformed_tasks.c — issue 30's malformed-input replay for task files and
 * candidate directives: structured mutations of the registry's own files,
 * each run through crucible, checked for exit 2 (a task) or a verdict (a
 * candidate; a format_error names FILE:LINE, SPEC §4) with a message naming
 * the file and the field, and for no sanitizer report, no signal, no hang.
 *
 * usage: malformed_tasks CRUCIBLE [--full] [--kind tasks,cand] [--jobs N]
 *                        [--timeout S] [--keep DIR] [--report CSV]
 *                        [--count] [--asan]
 *
 * Without --full: a fixed sample that runs in seconds on a release build
 * (the test suite's `malformed_tasks`); --full: every mutation of a base
 * task per op of the registry (the issue's replay, meant for an ASan+UBSan
 * build, with --asan: no address-space limit). --keep DIR keeps the
 * generated files (DIR/data/tasks/m/NAME.json, DIR/cands/candN.c) for a
 * replay by hand; --report writes one CSV row per command run. Needs
 * CRUCIBLE_DATADIR (the registry). Exit 0 when every input passes.
 *
 * The files written are byte for byte those of the Python driver this
 * replaces (json.dumps' layout: ", " and ": ", \uXXXX escapes, floats as
 * repr), so the mutant names and counts of both agree. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/common/malformed_run.h"

/* ---- cases ----------------------------------------------------------------- */

struct result {
	const char *cmd; /* list, dump, check */
	int rc, hung;
	char *verdict;   /* NULL: right */
	char *out;
	size_t outn;
};

struct tcase {
	const char *kind; /* task, cand */
	char *name, *why;
	struct mr_strlist fields;
	int must_fail;
	struct result res[3];
	int nres;
};

/* NULL when the outcome is right, else what is wrong (heap) */
static char *judge(const struct tcase *c, int rc, int hung, const char *out, size_t n,
		   const char *fname, const int *want, int nwant, const int *ok, int nok)
{
	char *v = mr_judge_crash(rc, hung, out, n);
	int in = 0;

	if (v)
		return v;
	for (int i = 0; i < nok; i++)
		if (rc == ok[i] && !c->must_fail)
			return NULL;
	for (int i = 0; i < nwant; i++)
		in |= rc == want[i];
	if (!in)
		return mr_fmt("exit %d", rc);
	return mr_judge_names(out, n, fname, &c->fields, "/", -1);
}

/* ---- json.dumps ------------------------------------------------------------ */

/* a string holding BIG then digits stands for an integer past int64 (2^64,
 * 10^30), written bare */
#define BIG "\001BIG"

/* repr() of a float: the shortest digits that read back, positional
 * for 1e-4 <= |r| < 1e16, else d.ddde+XX */
static void py_float(struct mr_sbuf *b, double r)
{
	char t[64], dig[32];
	int nd = 0, e, p;

	if (isnan(r)) {
		mr_sb_adds(b, "NaN");
		return;
	}
	if (isinf(r)) {
		mr_sb_adds(b, r > 0 ? "Infinity" : "-Infinity");
		return;
	}
	for (p = 0; p < 17; p++) {
		snprintf(t, sizeof t, "%.*e", p, r);
		if (strtod(t, NULL) == r)
			break;
	}
	{
		const char *s = t;

		if (*s == '-') {
			mr_sb_adds(b, "-");
			s++;
		}
		for (; *s != 'e'; s++)
			if (*s != '.')
				dig[nd++] = *s;
		e = atoi(s + 1);
	}
	while (nd > 1 && dig[nd - 1] == '0')
		nd--;
	dig[nd] = 0;
	if (e < -4 || e >= 16) {
		mr_sb_addn(b, dig, 1);
		if (nd > 1) {
			mr_sb_adds(b, ".");
			mr_sb_adds(b, dig + 1);
		}
		mr_sb_addf(b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	} else if (e >= 0) {
		for (int i = 0; i <= e; i++)
			mr_sb_addn(b, i < nd ? dig + i : "0", 1);
		mr_sb_adds(b, ".");
		mr_sb_adds(b, nd > e + 1 ? dig + e + 1 : "0");
	} else {
		mr_sb_adds(b, "0.");
		for (int i = 0; i < -e - 1; i++)
			mr_sb_adds(b, "0");
		mr_sb_adds(b, dig);
	}
}

/* a JSON string with ensure_ascii's escapes */
static void py_str(struct mr_sbuf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	mr_sb_adds(b, "\"");
	for (size_t i = 0; i < n; ) {
		uint32_t cp = u[i];
		int k = cp < 0x80 ? 1 : cp < 0xe0 ? 2 : cp < 0xf0 ? 3 : 4;

		if (k > 1) {
			cp &= 0x3f >> (k - 1);
			for (int j = 1; j < k && i + (size_t)j < n; j++)
				cp = (cp << 6) | (u[i + (size_t)j] & 0x3f);
		}
		i += (size_t)k;
		switch (cp) {
		case '"': mr_sb_adds(b, "\\\""); continue;
		case '\\': mr_sb_adds(b, "\\\\"); continue;
		case '\n': mr_sb_adds(b, "\\n"); continue;
		case '\r': mr_sb_adds(b, "\\r"); continue;
		case '\t': mr_sb_adds(b, "\\t"); continue;
		case '\b': mr_sb_adds(b, "\\b"); continue;
		case '\f': mr_sb_adds(b, "\\f"); continue;
		}
		if (cp >= 0x20 && cp < 0x7f) {
			char c = (char)cp;

			mr_sb_addn(b, &c, 1);
		} else if (cp >= 0x10000) {
			cp -= 0x10000;
			mr_sb_addf(b, "\\u%04x\\u%04x", 0xd800 | (cp >> 10), 0xdc00 | (cp & 0x3ff));
		} else {
			mr_sb_addf(b, "\\u%04x", cp);
		}
	}
	mr_sb_adds(b, "\"");
}

/* json.dumps(v) */
static void py_dump(struct mr_sbuf *b, const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	int first = 1;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		mr_sb_adds(b, "{");
		json_object_foreach((json_t *)v, k, x) {
			if (!first)
				mr_sb_adds(b, ", ");
			first = 0;
			py_str(b, k, strlen(k));
			mr_sb_adds(b, ": ");
			py_dump(b, x);
		}
		mr_sb_adds(b, "}");
		break;
	case JSON_ARRAY:
		mr_sb_adds(b, "[");
		json_array_foreach(v, i, x) {
			if (i)
				mr_sb_adds(b, ", ");
			py_dump(b, x);
		}
		mr_sb_adds(b, "]");
		break;
	case JSON_STRING:
		if (!strncmp(json_string_value(v), BIG, strlen(BIG)))
			mr_sb_adds(b, json_string_value(v) + strlen(BIG));
		else
			py_str(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER: mr_sb_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
	case JSON_REAL: py_float(b, json_real_value(v)); break;
	case JSON_TRUE: mr_sb_adds(b, "true"); break;
	case JSON_FALSE: mr_sb_adds(b, "false"); break;
	case JSON_NULL: mr_sb_adds(b, "null"); break;
	}
}

static char *dumps(const json_t *v)
{
	struct mr_sbuf b = { 0 };

	py_dump(&b, v);
	return mr_sb_take(&b);
}

/* ---- the values a number is set to ------------------------------------------ */

enum { V_INT, V_BIG, V_REAL, V_STR, V_NULL, V_PAIR };

struct val {
	int k;
	long long i, i2; /* V_INT; V_PAIR: [i, i2] */
	double r;
	const char *s;   /* V_STR; V_BIG: the digits */
};

#define VI(x) { V_INT, (x), 0, 0, NULL }
static const struct val NUMS[] = { VI(0), VI(-1), VI(1), VI(1LL << 31), VI((1LL << 32) + 1),
	VI(1LL << 62), VI(INT64_MAX), VI(INT64_MIN), { V_BIG, 0, 0, 0, "18446744073709551616" },
	{ V_REAL, 0, 0, 1.5, NULL }, { V_STR, 0, 0, 0, "x" }, { V_NULL, 0, 0, 0, NULL } };
static const struct val NUMS_QUICK[] = { VI(0), VI(-1), VI((1LL << 32) + 1), VI(INT64_MAX),
	{ V_REAL, 0, 0, 1.5, NULL }, { V_NULL, 0, 0, 0, NULL } };
/* attributes an op may read, added to every op with these values */
static const struct val ATTR_VALS[] = { VI(0), VI(-1), VI(1LL << 40), VI(1LL << 62), VI(INT64_MIN),
	{ V_PAIR, 0, 0, 0, NULL }, { V_PAIR, -1, 1LL << 62, 0, NULL }, { V_STR, 0, 0, 0, "x" },
	{ V_REAL, 0, 0, 1.5, NULL } };
static const struct val ATTR_QUICK[] = { VI(0), VI(-1), VI(1LL << 62) };

static json_t *val_json(const struct val *v)
{
	switch (v->k) {
	case V_INT: return json_integer(v->i);
	case V_BIG: {
		char *s = mr_fmt("%s%s", BIG, v->s);
		json_t *j = json_string(s);

		free(s);
		return j;
	}
	case V_REAL: return json_real(v->r);
	case V_STR: return json_string(v->s);
	case V_PAIR: return json_pack("[II]", (json_int_t)v->i, (json_int_t)v->i2);
	default: return json_null();
	}
}

static char *val_dumps(const struct val *v)
{
	json_t *j = val_json(v);
	char *s = dumps(j);

	json_decref(j);
	return s;
}

/* Python's v == v0 */
static int val_eq(const struct val *v, const json_t *j)
{
	switch (v->k) {
	case V_NULL: return json_is_null(j);
	case V_STR: return json_is_string(j) && !strcmp(json_string_value(j), v->s);
	case V_REAL: return json_is_real(j) && json_real_value(j) == v->r;
	case V_BIG: return json_is_real(j) && json_real_value(j) == 18446744073709551616.0;
	case V_PAIR:
		return json_is_array(j) && json_array_size(j) == 2 &&
		       json_is_integer(json_array_get(j, 0)) && json_is_integer(json_array_get(j, 1)) &&
		       json_integer_value(json_array_get(j, 0)) == v->i &&
		       json_integer_value(json_array_get(j, 1)) == v->i2;
	default:
		if (json_is_integer(j))
			return json_integer_value(j) == v->i;
		if (json_is_boolean(j))
			return v->i == json_is_true(j);
		if (json_is_real(j)) {
			double r = json_real_value(j);

			return r == floor(r) && fabs(r) < 9.2e18 && (long long)r == v->i;
		}
		return 0;
	}
}

/* a Python int in [1, 2^34] */
static int small_pos_int(const struct val *v)
{
	return v->k == V_INT && v->i >= 1 && v->i <= (1LL << 34);
}

/* ---- task files ---------------------------------------------------------------- */

/* a path into a task: object keys and array indices */
struct pel {
	const char *key; /* NULL: idx */
	size_t idx;
};

struct leaf {
	struct pel p[4];
	int np;
	json_t *v0;
	char field[256];
};

static void leaf_push(struct leaf **l, int *n, const struct leaf *x)
{
	*l = mr_xrealloc(*l, sizeof **l * (size_t)(*n + 1));
	(*l)[(*n)++] = *x;
}

/* every number and shape entry of a task, and the field a message may use */
static struct leaf *leaves(json_t *doc, int *n)
{
	static const char *const dk[] = { "dims", "cpu_dims" };
	struct leaf *l = NULL, x;
	const char *k;
	json_t *v, *o;
	size_t i;

	*n = 0;
	for (int d = 0; d < 2; d++) {
		json_object_foreach(json_object_get(doc, dk[d]), k, v) {
			x = (struct leaf){ { { dk[d], 0 }, { k, 0 } }, 2, v, "" };
			snprintf(x.field, sizeof x.field, "%s", dk[d]);
			leaf_push(&l, n, &x);
		}
	}
	json_array_foreach(json_object_get(doc, "check_dims"), i, o) {
		if (i >= 2)
			break;
		json_object_foreach(o, k, v) {
			x = (struct leaf){ { { "check_dims", 0 }, { NULL, i }, { k, 0 } }, 3, v, "" };
			snprintf(x.field, sizeof x.field, "check_dims[%zu]", i);
			leaf_push(&l, n, &x);
		}
	}
	json_object_foreach(json_object_get(doc, "tensors"), k, o) {
		size_t j;

		json_array_foreach(json_object_get(o, "shape"), j, v) {
			x = (struct leaf){ { { "tensors", 0 }, { k, 0 }, { "shape", 0 }, { NULL, j } }, 4, v, "" };
			snprintf(x.field, sizeof x.field, "tensors.%s", k);
			leaf_push(&l, n, &x);
		}
	}
	json_array_foreach(json_object_get(doc, "graph"), i, o) {
		json_object_foreach(o, k, v) {
			if (!strcmp(k, "op") || !strcmp(k, "in") || !strcmp(k, "out"))
				continue;
			if (json_is_array(v)) {
				for (size_t j = 0; j < json_array_size(v); j++) {
					x = (struct leaf){ { { "graph", 0 }, { NULL, i }, { k, 0 }, { NULL, j } }, 4,
							   json_array_get(v, j), "" };
					snprintf(x.field, sizeof x.field, "graph[%zu]", i);
					leaf_push(&l, n, &x);
				}
			} else {
				x = (struct leaf){ { { "graph", 0 }, { NULL, i }, { k, 0 } }, 3, v, "" };
				snprintf(x.field, sizeof x.field, "graph[%zu]", i);
				leaf_push(&l, n, &x);
			}
		}
	}
	{
		static const char *const tk[] = { "atol", "rtol" };
		json_t *tol = json_object_get(doc, "tolerance");

		for (int t = 0; t < 2; t++) {
			if (!json_object_get(tol, tk[t]))
				continue;
			x = (struct leaf){ { { "tolerance", 0 }, { tk[t], 0 } }, 2, json_object_get(tol, tk[t]), "tolerance" };
			leaf_push(&l, n, &x);
		}
	}
	return l;
}

/* doc at path := v (stolen); or, with v NULL, del doc at path */
static void put(json_t *doc, const struct leaf *l, json_t *v)
{
	json_t *d = doc;

	for (int i = 0; i < l->np - 1; i++)
		d = l->p[i].key ? json_object_get(d, l->p[i].key) : json_array_get(d, l->p[i].idx);
	if (!v)
		json_object_del(d, l->p[l->np - 1].key);
	else if (l->p[l->np - 1].key)
		json_object_set_new(d, l->p[l->np - 1].key, v);
	else
		json_array_set_new(d, l->p[l->np - 1].idx, v);
}

static char *path_str(const struct leaf *l)
{
	struct mr_sbuf b = { 0 };

	for (int i = 0; i < l->np; i++) {
		if (i)
			mr_sb_adds(&b, ".");
		if (l->p[i].key)
			mr_sb_adds(&b, l->p[i].key);
		else
			mr_sb_addf(&b, "%zu", l->p[i].idx);
	}
	return mr_sb_take(&b);
}

/* where the mutants of one base go */
struct gen {
	const char *dir;   /* WORK/data/tasks/m */
	char stem[64];     /* the base's name, [^A-Za-z0-9_] as _, 40 at most */
	const char *base;  /* its file name */
	int i;             /* mutants of this base so far */
	struct tcase *cases;
	int ncases;
};

/* one mutant: doc (stolen) or text (stolen) into DIR/STEM__I.json */
static void emit(struct gen *g, const char *suffix, json_t *doc, char *text, const char *const *fields,
		 int nf, int must, const char *why)
{
	struct tcase *c;
	char *path;

	g->cases = mr_xrealloc(g->cases, sizeof *g->cases * (size_t)(g->ncases + 1));
	c = &g->cases[g->ncases++];
	memset(c, 0, sizeof *c);
	c->kind = "task";
	c->name = mr_fmt("%s__%d", g->stem, g->i++);
	c->why = mr_fmt("%s %s: %s", g->base, why, suffix);
	for (int k = 0; k < nf; k++)
		mr_sl_add(&c->fields, fields[k]);
	c->must_fail = must;
	if (doc) {
		text = dumps(doc);
		json_decref(doc);
	}
	path = mr_fmt("%s/%s.json", g->dir, c->name);
	mr_write_file(path, text, strlen(text));
	free(path);
	free(text);
}

#define F(...) (const char *const[]){ __VA_ARGS__ }, (int)(sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *))

static int in_idx(const size_t *v, int n, size_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* the ops the registry has and the attributes each reads */
struct reg {
	char **ops;    /* sorted */
	int nops;
	char **aop;    /* attrs of aop[i]: attr[i] */
	struct mr_strlist *attr;
	int naop;
};

static const struct mr_strlist *reg_attrs(const struct reg *r, const char *op)
{
	for (int i = 0; i < r->naop; i++)
		if (!strcmp(r->aop[i], op))
			return &r->attr[i];
	return NULL;
}

static void mut_leaves(struct gen *g, json_t *doc, const size_t *nodes, int nn, int full)
{
	const struct val *nums = full ? NUMS : NUMS_QUICK;
	int nnum = full ? (int)(sizeof NUMS / sizeof *NUMS) : (int)(sizeof NUMS_QUICK / sizeof *NUMS_QUICK);
	const char *t3[3];
	int nt3 = 0, nl;
	const char *k;
	json_t *v;
	struct leaf *l = leaves(doc, &nl);

	json_object_foreach(json_object_get(doc, "tensors"), k, v) {
		if (nt3 < 3)
			t3[nt3++] = k;
	}
	for (int li = 0; li < nl; li++) {
		const char *p0 = l[li].p[0].key;
		int is_graph = !strcmp(p0, "graph"), is_tens = !strcmp(p0, "tensors");
		int is_tol = !strcmp(p0, "tolerance");
		int is_dims = !strcmp(p0, "dims") || !strcmp(p0, "cpu_dims") || !strcmp(p0, "check_dims");

		if (is_graph && !in_idx(nodes, nn, l[li].p[1].idx))
			continue;
		if (is_tens) {
			int in = 0;

			for (int t = 0; t < nt3; t++)
				in |= !strcmp(t3[t], l[li].p[1].key);
			if (!in)
				continue;
		}
		for (int vi = 0; vi < nnum; vi++) {
			const struct val *nv = &nums[vi];
			const char *f[8];
			int nf = 0, must;
			json_t *d;
			char *ps, *vs, *suffix;

			if (val_eq(nv, l[li].v0))
				continue;
			d = json_deep_copy(doc);
			put(d, &l[li], val_json(nv));
			/* a dim that stays positive and small may be valid; a bad
			 * attribute value may be one the op ignores */
			must = !(small_pos_int(nv) && !is_graph) && !is_graph && !is_tol;
			if (is_tol)
				must = !((nv->k == V_INT || nv->k == V_BIG || nv->k == V_REAL) &&
					 (nv->k == V_REAL ? nv->r >= 0 && nv->r <= 1 : nv->k == V_INT && nv->i >= 0 && nv->i <= 1));
			if (is_tens && small_pos_int(nv))
				must = 0;
			f[nf++] = l[li].field;
			if (is_tens) {
				f[nf++] = "dims";
				f[nf++] = "cpu_dims";
				f[nf++] = "check_dims";
			}
			/* a dim value that breaks a shape rule is blamed on the op
			 * or the tensor that needs it */
			if (is_dims) {
				f[nf++] = "tensors.";
				f[nf++] = "graph[";
			}
			if (is_tens)
				f[nf++] = "graph[";
			if (is_graph) { /* a later op may be the one that cannot take it */
				f[0] = "graph[";
				nf = 1;
			}
			ps = path_str(&l[li]);
			vs = val_dumps(nv);
			suffix = mr_fmt("%s=%s", ps, vs);
			emit(g, suffix, d, NULL, f, nf, must, "set");
			free(ps);
			free(vs);
			free(suffix);
		}
	}
	free(l);
}

static void mut_shapes_missing(struct gen *g, json_t *doc, const size_t *nodes, int nn, int full)
{
	static const char *const sv_full[] = { "ZZ", "B*2", "", "N+1" };
	json_t *tens = json_object_get(doc, "tensors"), *t, *v;
	const char *tn, *k;
	int nt = 0;

	/* strings in shapes: undefined dims and expressions */
	json_object_foreach(tens, tn, t) {
		size_t ns = json_array_size(json_object_get(t, "shape"));
		char *fld = mr_fmt("tensors.%s", tn);

		for (size_t j = 0; j < ns; j++) {
			for (int s = 0; s < (full ? 4 : 2); s++) {
				json_t *d = json_deep_copy(doc), *sh;
				char *vs, *suffix;

				sh = json_object_get(json_object_get(json_object_get(d, "tensors"), tn), "shape");
				json_array_set_new(sh, j, json_string(sv_full[s]));
				if (json_object_get(json_object_get(d, "dims"), sv_full[s])) {
					json_decref(d);
					continue;
				}
				vs = dumps(json_array_get(sh, j));
				suffix = mr_fmt("tensors.%s.shape.%zu=%s", tn, j, vs);
				emit(g, suffix, d, NULL, F(fld), 1, "undefined dim");
				free(vs);
				free(suffix);
			}
		}
		free(fld);
		if (!full)
			break;
	}
	/* missing fields */
	json_object_foreach(doc, k, v) {
		static const char *const skip[] = { "description", "source", "notes", "repair", "flops",
			"bytes", "tolerance", "backward" };
		int sk = 0;
		char *suffix;
		json_t *d;

		for (size_t s = 0; s < sizeof skip / sizeof *skip; s++)
			sk |= !strcmp(k, skip[s]);
		if (sk)
			continue;
		d = json_deep_copy(doc);
		json_object_del(d, k);
		suffix = mr_fmt("-%s", k);
		emit(g, suffix, d, NULL, F(k), 1, "missing");
		free(suffix);
	}
	json_object_foreach(tens, tn, t) {
		char *fld = mr_fmt("tensors.%s", tn);
		const char *role = json_string_value(json_object_get(t, "role"));

		if (nt++ >= 3) {
			free(fld);
			break;
		}
		json_object_foreach(t, k, v) {
			json_t *d;
			char *suffix;

			if (!strcmp(k, "grad") || (!strcmp(k, "init") && role && !strcmp(role, "output")))
				continue;
			d = json_deep_copy(doc);
			json_object_del(json_object_get(json_object_get(d, "tensors"), tn), k);
			suffix = mr_fmt("-tensors.%s.%s", tn, k);
			emit(g, suffix, d, NULL, F(fld), 1, "missing");
			free(suffix);
		}
		free(fld);
	}
	for (int ni = 0; ni < nn; ni++) {
		json_object_foreach(json_array_get(json_object_get(doc, "graph"), nodes[ni]), k, v) {
			json_t *d = json_deep_copy(doc);
			char *suffix = mr_fmt("-graph.%zu.%s", nodes[ni], k);

			json_object_del(json_array_get(json_object_get(d, "graph"), nodes[ni]), k);
			emit(g, suffix, d, NULL, F("graph["), !strcmp(k, "op") || !strcmp(k, "in") ||
			     !strcmp(k, "out"), "missing");
			free(suffix);
		}
	}
	for (int c = 0; c < (full ? 2 : 1); c++) {
		const char *ck = c ? "check_dims" : "cpu_dims";
		json_t *dd = c ? json_array_get(json_object_get(doc, ck), 0) : json_object_get(doc, ck);
		void *it = json_object_iter(dd);

		if (it) {
			const char *dn = json_object_iter_key(it);
			json_t *d = json_deep_copy(doc);
			json_t *dd2 = c ? json_array_get(json_object_get(d, ck), 0) : json_object_get(d, ck);
			char *suffix = mr_fmt("-%s.%s", ck, dn);

			json_object_del(dd2, dn);
			emit(g, suffix, d, NULL, F(ck), 1, "missing dim");
			free(suffix);
		}
	}
}

static void mut_huge(struct gen *g, json_t *doc)
{
	json_t *d, *a, *graph = json_object_get(doc, "graph");
	const char *t0 = json_object_iter_key(json_object_iter(json_object_get(doc, "tensors")));
	size_t ng = json_array_size(graph);

	/* huge arrays and objects */
	d = json_deep_copy(doc);
	a = json_array();
	for (int i = 0; i < 100000; i++)
		json_array_append(a, json_array_get(json_object_get(d, "check_dims"), 0));
	json_object_set_new(d, "check_dims", a);
	emit(g, "check_dims*100000", d, NULL, F("check_dims"), 1, "huge array");
	for (int r = 0; r < 2; r++) {
		int n = r ? 100000 : 7;
		char *suffix = mr_fmt("tensors.%s.shape*%d", t0, n), *fld = mr_fmt("tensors.%s", t0);

		d = json_deep_copy(doc);
		a = json_array();
		for (int i = 0; i < n; i++)
			json_array_append_new(a, json_integer(1));
		json_object_set_new(json_object_get(json_object_get(d, "tensors"), t0), "shape", a);
		emit(g, suffix, d, NULL, F(fld), 1, "huge array");
		free(suffix);
		free(fld);
	}
	d = json_deep_copy(doc);
	a = json_array();
	for (size_t r = 0; r < 3000 / ng + 1; r++)
		for (size_t i = 0; i < ng; i++)
			json_array_append(a, json_array_get(json_object_get(d, "graph"), i));
	json_object_set_new(d, "graph", a);
	emit(g, "graph*3000", d, NULL, F("graph"), 1, "huge array");
	{
		json_t *n0, *in;

		d = json_deep_copy(doc);
		n0 = json_array_get(json_object_get(d, "graph"), 0);
		in = json_object_get(n0, "in");
		a = json_array();
		for (int r = 0; r < 1000; r++)
			for (size_t i = 0; i < json_array_size(in); i++)
				json_array_append(a, json_array_get(in, i));
		json_object_set_new(n0, "in", a);
		emit(g, "graph.0.in*1000", d, NULL, F("graph[0]"), 1, "huge array");
	}
	d = json_deep_copy(doc);
	for (int i = 0; i < 600; i++) {
		char k[32];

		snprintf(k, sizeof k, "extra%d", i);
		json_object_set_new(json_object_get(d, "tensors"), k,
				    json_pack("{s:s, s:s, s:[i], s:s}", "role", "input", "dtype", "f32", "shape", 1,
					      "init", "normal"));
	}
	emit(g, "tensors+600", d, NULL, F("tensors"), 1, "huge object");
	d = json_deep_copy(doc);
	for (int i = 0; i < 20; i++) {
		char k[32];

		snprintf(k, sizeof k, "X%d", i);
		json_object_set_new(json_object_get(d, "dims"), k, json_integer(2));
	}
	emit(g, "dims+20", d, NULL, F("dims"), 1, "huge object");
	d = json_deep_copy(doc);
	a = json_array();
	for (int i = 0; i < 100000; i++)
		json_array_append_new(a, json_integer(i));
	json_object_set_new(json_array_get(json_object_get(d, "graph"), 0), "attrs0", a);
	emit(g, "graph.0.list*100000", d, NULL, F("graph[0]"), 1, "huge array");
}

static void mut_rest(struct gen *g, json_t *doc, const size_t *nodes, int nn, const struct reg *reg, int full)
{
	static const char *const inits[] = { "indices[0,ZZ)", "kaiming(ZZ)", "kaiming(99999999999999999999)",
		"kaiming(0)", "kaiming(-1)", "normal(0,-1)", "uniform(1,0)", "normal(1e999,1)", "" };
	json_t *graph = json_object_get(doc, "graph"), *t, *d;
	const char *tn;

	/* inits naming dims that do not exist, and literal fan-ins out of range */
	json_object_foreach(json_object_get(doc, "tensors"), tn, t) {
		const char *role = json_string_value(json_object_get(t, "role"));
		json_t *dt = json_object_get(t, "dtype");
		const char *dtype = dt ? json_string_value(dt) : "f32";
		char *fld;

		if ((role && !strcmp(role, "output")) || !dtype ||
		    (strcmp(dtype, "f32") && strcmp(dtype, "f16") && strcmp(dtype, "bf16")))
			continue;
		fld = mr_fmt("tensors.%s", tn);
		for (size_t i = 0; i < sizeof inits / sizeof *inits; i++) {
			char *suffix = mr_fmt("tensors.%s.init=%s", tn, inits[i]);

			d = json_deep_copy(doc);
			json_object_set_new(json_object_get(json_object_get(d, "tensors"), tn), "init",
					    json_string(inits[i]));
			emit(g, suffix, d, NULL, F(fld), 1, "init");
			free(suffix);
		}
		free(fld);
		break;
	}
	/* attributes every op might read, on each distinct op of the graph */
	for (int ni = 0; ni < nn; ni++) {
		const char *op = json_string_value(json_object_get(json_array_get(graph, nodes[ni]), "op"));
		const struct mr_strlist *al = reg_attrs(reg, op);
		int na = al ? al->n : 0;

		for (int ai = 0; ai < na + 2; ai++) {
			const char *a = ai < na ? al->v[ai] : ai == na ? "stride" : "dim";
			const struct val *vals = full ? ATTR_VALS : ATTR_QUICK;
			int nv = full ? (int)(sizeof ATTR_VALS / sizeof *ATTR_VALS) : 3;

			for (int vi = 0; vi < nv; vi++) {
				char *vs = val_dumps(&vals[vi]), *suffix = mr_fmt("graph.%zu.%s=%s", nodes[ni], a, vs);

				d = json_deep_copy(doc);
				json_object_set_new(json_array_get(json_object_get(d, "graph"), nodes[ni]), a,
						    val_json(&vals[vi]));
				emit(g, suffix, d, NULL, F("graph["), 0, "attr");
				free(vs);
				free(suffix);
			}
		}
	}
	/* every op in place of each distinct op (shape rules on what they do
	 * not expect) */
	if (full) {
		for (int ni = 0; ni < nn; ni++) {
			const char *op = json_string_value(json_object_get(json_array_get(graph, nodes[ni]), "op"));

			for (int oi = 0; oi < reg->nops; oi++) {
				char *suffix;

				if (!strcmp(reg->ops[oi], op))
					continue;
				suffix = mr_fmt("graph.%zu.op=%s", nodes[ni], reg->ops[oi]);
				d = json_deep_copy(doc);
				json_object_set_new(json_array_get(json_object_get(d, "graph"), nodes[ni]), "op",
						    json_string(reg->ops[oi]));
				emit(g, suffix, d, NULL, F("graph["), 0, "op swap");
				free(suffix);
			}
		}
	}
	/* text that is not JSON, or not a task */
	{
		char *all = dumps(doc), *dims = dumps(json_object_get(doc, "dims")), *hit;
		struct mr_sbuf big = { 0 }, txt = { 0 };
		const char *k;
		json_t *v;
		int first = 1;

		emit(g, "truncated", NULL, strndup(all, strlen(all) / 2), F("json", ":"), 1, "truncated");
		emit(g, "array", NULL, mr_xstrdup("[]"), F("top level"), 1, "not an object");
		mr_sb_adds(&big, "{");
		json_object_foreach(json_object_get(doc, "dims"), k, v) {
			if (!first)
				mr_sb_adds(&big, ", ");
			first = 0;
			py_str(&big, k, strlen(k));
			mr_sb_adds(&big, ": 1000000000000000000000000000000");
		}
		mr_sb_adds(&big, "}");
		hit = strstr(all, dims);
		if (hit) {
			mr_sb_addn(&txt, all, (size_t)(hit - all));
			mr_sb_adds(&txt, big.p);
			mr_sb_adds(&txt, hit + strlen(dims));
		} else {
			mr_sb_adds(&txt, all);
		}
		emit(g, "bigint", NULL, mr_sb_take(&txt), F(":"), 1, "big integer");
		free(all);
		free(dims);
		free(big.p);
	}
}

static void task_mutations(struct gen *g, json_t *doc, const struct reg *reg, char **mine, int nmine, int full)
{
	json_t *graph = json_object_get(doc, "graph"), *node;
	size_t nodes[64], n;
	int nn = 0;
	const char *seen[64];
	int nseen = 0;

	/* the first node of each op this base stands for */
	json_array_foreach(graph, n, node) {
		const char *op = json_string_value(json_object_get(node, "op"));
		int m = 0, s = 0;

		for (int i = 0; i < nmine; i++)
			m |= op && !strcmp(mine[i], op);
		for (int i = 0; i < nseen; i++)
			s |= !strcmp(seen[i], op);
		if (m && !s && nn < 64) {
			seen[nseen++] = op;
			nodes[nn++] = n;
		}
	}
	mut_leaves(g, doc, nodes, nn, full);
	mut_shapes_missing(g, doc, nodes, nn, full);
	mut_huge(g, doc);
	mut_rest(g, doc, nodes, nn, reg, full);
}

/* one task per op of the registry (the smallest that has it), or a few
 * shape-heavy ops for the quick sample; bases[i] stands for mine[i] */
struct base {
	char *path;
	struct mr_strlist mine;
};

static size_t utf8_len(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

static int cmp_base(const void *a, const void *b)
{
	return strcmp(((const struct base *)a)->path, ((const struct base *)b)->path);
}

static struct base *base_tasks(const char *datadir, int full, struct reg *reg, int *nbase)
{
	static const char *const quick[] = { "conv", "conv_transpose", "maxpool", "matmul", "softmax" };
	char *td = mr_fmt("%s/tasks", datadir), **sets;
	int nsets;
	/* op -> (length, path) of the smallest task that has it */
	char **uop = NULL, **upath = NULL;
	size_t *ulen = NULL;
	int nu = 0;
	struct base *bases = NULL;

	*nbase = 0;
	sets = mr_list_dir(td, &nsets);
	for (int si = 0; si < nsets; si++) {
		char *sd = mr_fmt("%s/%s", td, sets[si]), **files;
		struct stat st;
		int nf;

		if (stat(sd, &st) || !S_ISDIR(st.st_mode)) {
			free(sd);
			continue;
		}
		files = mr_list_dir(sd, &nf);
		for (int fi = 0; fi < nf; fi++) {
			size_t len, gi;
			char *p, *txt;
			json_t *doc, *node;
			json_error_t err;

			if (strlen(files[fi]) < 5 || strcmp(files[fi] + strlen(files[fi]) - 5, ".json"))
				continue;
			p = mr_fmt("%s/%s", sd, files[fi]);
			txt = mr_read_file(p, &len);
			doc = json_loadb(txt, len, 0, &err);
			if (!doc)
				mr_die("%s: %s", p, err.text);
			len = utf8_len(txt, len);
			json_array_foreach(json_object_get(doc, "graph"), gi, node) {
				const char *op = json_string_value(json_object_get(node, "op")), *k;
				struct mr_strlist *al = NULL;
				json_t *v;
				int ui;

				for (int i = 0; i < reg->naop; i++)
					if (!strcmp(reg->aop[i], op))
						al = &reg->attr[i];
				if (!al) {
					reg->aop = mr_xrealloc(reg->aop, sizeof *reg->aop * (size_t)(reg->naop + 1));
					reg->attr = mr_xrealloc(reg->attr, sizeof *reg->attr * (size_t)(reg->naop + 1));
					reg->aop[reg->naop] = mr_xstrdup(op);
					reg->attr[reg->naop] = (struct mr_strlist){ 0 };
					al = &reg->attr[reg->naop++];
				}
				json_object_foreach(node, k, v) {
					int dup = 0;

					if (!strcmp(k, "op") || !strcmp(k, "in") || !strcmp(k, "out"))
						continue;
					for (int i = 0; i < al->n; i++)
						dup |= !strcmp(al->v[i], k);
					if (!dup)
						mr_sl_add(al, k);
				}
				for (ui = 0; ui < nu; ui++)
					if (!strcmp(uop[ui], op))
						break;
				if (ui == nu) {
					uop = mr_xrealloc(uop, sizeof *uop * (size_t)(nu + 1));
					upath = mr_xrealloc(upath, sizeof *upath * (size_t)(nu + 1));
					ulen = mr_xrealloc(ulen, sizeof *ulen * (size_t)(nu + 1));
					uop[nu] = mr_xstrdup(op);
					upath[nu] = NULL;
					nu++;
				}
				if (!upath[ui] || len < ulen[ui]) {
					free(upath[ui]);
					upath[ui] = mr_xstrdup(p);
					ulen[ui] = len;
				}
			}
			json_decref(doc);
			free(txt);
			free(p);
		}
		for (int fi = 0; fi < nf; fi++)
			free(files[fi]);
		free(files);
		free(sd);
	}
	/* every op, sorted */
	reg->ops = mr_xrealloc(NULL, sizeof *reg->ops * (size_t)nu);
	for (int i = 0; i < nu; i++)
		reg->ops[i] = mr_xstrdup(uop[i]);
	reg->nops = nu;
	qsort(reg->ops, (size_t)nu, sizeof *reg->ops, mr_cmp_str);
	for (int w = 0; w < (full ? nu : 5); w++) {
		const char *o = full ? reg->ops[w] : quick[w];
		int ui, bi;

		for (ui = 0; ui < nu && strcmp(uop[ui], o); ui++)
			;
		if (ui == nu)
			mr_die("the registry has no task with op %s", o);
		for (bi = 0; bi < *nbase && strcmp(bases[bi].path, upath[ui]); bi++)
			;
		if (bi == *nbase) {
			bases = mr_xrealloc(bases, sizeof *bases * (size_t)(*nbase + 1));
			bases[bi] = (struct base){ mr_xstrdup(upath[ui]), { 0 } };
			(*nbase)++;
		}
		mr_sl_add(&bases[bi].mine, o);
	}
	qsort(bases, (size_t)*nbase, sizeof *bases, cmp_base);
	for (int i = 0; i < nu; i++) {
		free(uop[i]);
		free(upath[i]);
	}
	free(uop);
	free(upath);
	free(ulen);
	for (int i = 0; i < nsets; i++)
		free(sets[i]);
	free(sets);
	free(td);
	return bases;
}

static struct tcase *task_cases(const char *datadir, const char *work, int full, int *ncases)
{
	struct reg reg = { 0 };
	struct base *bases;
	int nb;
	char *dir = mr_fmt("%s/data/tasks/m", work), *lnk = mr_fmt("%s/data/baselines", work);
	char *bl = mr_fmt("%s/baselines", datadir);
	struct gen g = { 0 };

	bases = base_tasks(datadir, full, &reg, &nb);
	mr_mkdir_p(dir);
	if (symlink(bl, lnk))
		mr_die("cannot link %s: %s", lnk, strerror(errno));
	g.dir = dir;
	for (int b = 0; b < nb; b++) {
		json_error_t err;
		json_t *doc = json_load_file(bases[b].path, 0, &err);
		const char *fn = strrchr(bases[b].path, '/') + 1;
		size_t k;

		if (!doc)
			mr_die("%s: %s", bases[b].path, err.text);
		for (k = 0; fn[k] && k < 40 && strcmp(fn + k, ".json"); k++)
			g.stem[k] = (fn[k] >= 'A' && fn[k] <= 'Z') || (fn[k] >= 'a' && fn[k] <= 'z') ||
				    (fn[k] >= '0' && fn[k] <= '9') || fn[k] == '_' ? fn[k] : '_';
		g.stem[k] = 0;
		g.base = fn;
		g.i = 0;
		task_mutations(&g, doc, &reg, bases[b].mine.v, bases[b].mine.n, full);
		json_decref(doc);
		free(bases[b].path);
		mr_sl_free(&bases[b].mine);
	}
	free(bases);
	for (int i = 0; i < reg.nops; i++)
		free(reg.ops[i]);
	for (int i = 0; i < reg.naop; i++) {
		free(reg.aop[i]);
		mr_sl_free(&reg.attr[i]);
	}
	free(reg.ops);
	free(reg.aop);
	free(reg.attr);
	free(dir);
	free(lnk);
	free(bl);
	*ncases = g.ncases;
	return g.cases;
}

/* ---- candidates ---------------------------------------------------------------- */

#define CAND_BASE "smoke/softmax_plain.c"

struct lines {
	char **v;
	int n;
};

/* src split on \n; join() puts them back */
static struct lines split_lines(const char *src)
{
	struct lines l = { 0 };
	const char *s = src;

	for (;;) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		l.v = mr_xrealloc(l.v, sizeof *l.v * (size_t)(l.n + 1));
		l.v[l.n++] = strndup(s, n);
		if (!e)
			break;
		s = e + 1;
	}
	return l;
}

/* lines with line i replaced (rep) or, with ins > 0, ins copies of each
 * of the lines in add[] inserted before line i, add[0] ending first */
static char *join_edit(const struct lines *l, int i, const char *rep, const char *const *add, int nadd)
{
	struct mr_sbuf b = { 0 };

	for (int k = 0; k < l->n; k++) {
		if (k == i && add)
			for (int a = 0; a < nadd; a++) {
				mr_sb_adds(&b, add[a]);
				mr_sb_adds(&b, "\n");
			}
		mr_sb_adds(&b, k == i && rep ? rep : l->v[k]);
		if (k + 1 < l->n)
			mr_sb_adds(&b, "\n");
	}
	if (add && i == l->n) {
		for (int a = 0; a < nadd; a++) {
			if (b.n)
				mr_sb_adds(&b, "\n");
			mr_sb_adds(&b, add[a]);
		}
	}
	return mr_sb_take(&b);
}

struct cgen {
	const char *dir; /* WORK/cands */
	struct tcase *cases;
	int n;
};

static void cemit(struct cgen *g, const char *suffix, char *text /*stolen*/)
{
	struct tcase *c;
	char *p, *fld;

	g->cases = mr_xrealloc(g->cases, sizeof *g->cases * (size_t)(g->n + 1));
	c = &g->cases[g->n];
	memset(c, 0, sizeof *c);
	c->kind = "cand";
	c->name = mr_fmt("cand%d", g->n++);
	c->why = mr_xstrdup(suffix);
	fld = mr_fmt("%s.c:", c->name);
	mr_sl_add(&c->fields, fld);
	c->must_fail = 1;
	p = mr_fmt("%s/%s.c", g->dir, c->name);
	mr_write_file(p, text, strlen(text));
	free(p);
	free(fld);
	free(text);
}

/* suffix: a prefix of s, at most n characters */
static char *pfx(const char *lead, const char *s, size_t n)
{
	return mr_fmt("%s%.*s", lead, (int)(strlen(s) < n ? strlen(s) : n), s);
}

static char *rep(const char *s, int n)
{
	struct mr_sbuf b = { 0 };

	for (int i = 0; i < n; i++)
		mr_sb_adds(&b, s);
	return mr_sb_take(&b);
}

static void cand_mutations(struct cgen *g, const char *src, int full)
{
	struct lines l = split_lines(src);
	int ti = -1, fi = -1;
	char *s, *t;

	for (int i = 0; i < l.n; i++) {
		if (ti < 0 && strstr(l.v[i], "@task"))
			ti = i;
		if (fi < 0 && strstr(l.v[i], "@forward"))
			fi = i;
	}
	if (ti < 0 || fi < 0)
		mr_die("%s has no @task or @forward", CAND_BASE);
#define WITH(i, new) join_edit(&l, (i), (new), NULL, 0)
#define ADD(new) join_edit(&l, fi + 1, NULL, (const char *const[]){ new }, 1)
	{
		char *a1000 = rep("a", 1000), *long_task = mr_fmt("smoke/%s", a1000);
		const char *tv[] = { "", "smoke/nope", "../etc/passwd", long_task, "smoke", "/x", "smoke/softmax extra" };

		for (size_t i = 0; i < sizeof tv / sizeof *tv; i++) {
			s = pfx("@task=", tv[i], 20);
			t = mr_fmt("// @task %s", tv[i]);
			cemit(g, s, WITH(ti, t));
			free(s);
			free(t);
		}
		free(a1000);
		free(long_task);
	}
	cemit(g, "-@task", WITH(ti, ""));
	cemit(g, "@task*2", ADD("// @task smoke/softmax"));
	cemit(g, "-@forward", WITH(fi, ""));
	{
		char *open = rep("(", 10000), *close = rep(")", 10000), *minus = rep("-", 10000);
		char *paren = mr_fmt("%sB%s", open, close), *neg = mr_fmt("%sB", minus);
		const char *exprs[] = { "B*B*B*B*B*B*B*B*B*B", "B/0", "B%0", "cdiv(B,0)",
			"(-9223372036854775807-1)/-1", "99999999999999999999", "-9223372036854775808",
			"9223372036854775807+B", "min(B)", "max(B,D,1)", paren, neg, "B*", "", "ZZ", "B D", "1.5",
			"0x10", "B-9223372036854775807-2", "4611686018427387904*2", "D*-1" };
		int ne = (int)(sizeof exprs / sizeof *exprs);

		for (int i = 0; i < ne; i++) {
			if (!full && i >= 12)
				break;
			if (!full && (i == 8 || i == 9))
				continue;
			s = pfx("@forward arg=", exprs[i], 24);
			t = mr_fmt("// @forward softmax_fwd(x, y, %s, D)", exprs[i]);
			cemit(g, s, WITH(fi, t));
			free(s);
			free(t);
			s = pfx("@scratch=", exprs[i], 24);
			t = mr_fmt("// @scratch s f32[%s]", exprs[i]);
			cemit(g, s, ADD(t));
			free(s);
			free(t);
		}
		free(open);
		free(close);
		free(minus);
		free(paren);
		free(neg);
	}
	{
		char *xs = NULL, *a100 = rep("a", 100), *a100x = mr_fmt("%s(x)", a100), *sp = rep(" ", 70000);
		char *spaced = mr_fmt("softmax_fwd(x, y, B, D)%s", sp);
		struct mr_sbuf b = { 0 };

		mr_sb_adds(&b, "softmax_fwd(");
		for (int i = 0; i < 1200; i++)
			mr_sb_adds(&b, i ? ", x" : "x");
		mr_sb_adds(&b, ")");
		xs = mr_sb_take(&b);
		const char *fv[] = { "softmax_fwd(x, y, B, D", "softmax_fwd x, y", "(x)", "softmax_fwd()", xs, a100x,
			spaced, "softmax_fwd<<<B, 0>>>(x, y, B, D)", "softmax_fwd<<<0, 1>>>(x, y, B, D)",
			"softmax_fwd<<<(1,1,1,1), 1>>>(x, y, B, D)", "softmax_fwd(zz, y, B, D)",
			"softmax_fwd(x, x, B, D)", "softmax_fwd(1e999, y, B, D)" };

		for (size_t i = 0; i < sizeof fv / sizeof *fv; i++) {
			s = pfx("@forward=", fv[i], 24);
			t = mr_fmt("// @forward %s", fv[i]);
			cemit(g, s, WITH(fi, t));
			free(s);
			free(t);
		}
		free(xs);
		free(a100);
		free(a100x);
		free(sp);
		free(spaced);
	}
	{
		char *s100 = rep("s", 100), *s100f = mr_fmt("%s f32[4]", s100);
		const char *sv[] = { "s f32[-1]", "s f32[0]", "s q8[4]", "s f32", "s f32[4611686018427387904]",
			"s f32[B*D*B*D]", "x f32[4]", "s f32[4] extra", s100f };

		for (size_t i = 0; i < sizeof sv / sizeof *sv; i++) {
			s = pfx("@scratch=", sv[i], 24);
			t = mr_fmt("// @scratch %s", sv[i]);
			cemit(g, s, ADD(t));
			free(s);
			free(t);
		}
		free(s100);
		free(s100f);
	}
	{
		/* inserted at fi+1 one after the other: the last one first */
		char *sc[70];

		for (int k = 0; k < 70; k++)
			sc[k] = mr_fmt("// @scratch s%d f32[4]", 69 - k);
		cemit(g, "@scratch*70", join_edit(&l, fi + 1, NULL, (const char *const *)sc, 70));
		for (int k = 0; k < 70; k++)
			free(sc[k]);
	}
	{
		const char **fw = mr_xrealloc(NULL, sizeof *fw * 2100);

		for (int k = 0; k < 2100; k++)
			fw[k] = "// @forward softmax_fwd(x, y, B, D)";
		cemit(g, "@forward*2100", join_edit(&l, fi + 1, NULL, fw, 2100));
		free(fw);
	}
	{
		const char *dv[] = { "@dims B=4", "@dims B=-1,D=99999999999999999999", "@backward", "@unknown x", "@" };

		for (size_t i = 0; i < sizeof dv / sizeof *dv; i++) {
			s = pfx("", dv[i], 24);
			t = mr_fmt("// %s", dv[i]);
			cemit(g, s, ADD(t));
			free(s);
			free(t);
		}
	}
#undef WITH
#undef ADD
	for (int i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
}

static struct tcase *cand_cases(const char *datadir, const char *work, int full, int *n)
{
	char *p = mr_fmt("%s/candidates/%s", datadir, CAND_BASE), *dir = mr_fmt("%s/cands", work);
	char *src = mr_read_file(p, NULL);
	struct cgen g = { dir, NULL, 0 };

	mr_mkdir_p(dir);
	cand_mutations(&g, src, full);
	free(src);
	free(p);
	free(dir);
	*n = g.n;
	return g.cases;
}

/* ---- checks ------------------------------------------------------------------- */

struct opts {
	const char *crucible, *work, *datadir;
	char **env, **cenv; /* tasks: the mutants' registry; candidates: the real one */
	double timeout;
	rlim_t rlimit;
	int full;
};

static void add_result(struct tcase *c, const char *cmd, int rc, int hung, char *verdict, char *out, size_t n)
{
	struct result *r = &c->res[c->nres++];

	r->cmd = cmd;
	r->rc = rc;
	r->hung = hung;
	r->verdict = verdict;
	r->out = out;
	r->outn = n;
}

/* list m/NAME: exit 2 naming the file and the field, or (a mutation that
 * may be valid) 0; then dump (the reference on it) and, for a broken task
 * of the full replay, check of a candidate that names it */
static void task_check(struct tcase *c, const struct opts *o)
{
	static const int two[] = { 2 }, zero[] = { 0 };
	char *fname = mr_fmt("%s.json", c->name), *tname = mr_fmt("m/%s", c->name);
	char *dd = mr_fmt("%s/dump/%s", o->work, c->name), *out, *v;
	size_t n;
	int rc, rc2, hung;

	{
		char *argv[] = { (char *)o->crucible, "list", tname, NULL };

		rc = mr_run(argv, o->env, o->timeout, o->rlimit, &out, &n, &hung);
		v = judge(c, rc, hung, out, n, fname, two, 1, zero, 1);
		add_result(c, "list", hung ? 0 : rc, hung, v, out, n);
	}
	if (v)
		goto out;
	{
		char *argv[] = { (char *)o->crucible, "dump", tname, "--out", dd, NULL };
		char *dumpdir = mr_fmt("%s/dump", o->work);

		mr_mkdir_p(dumpdir);
		free(dumpdir);
		rc2 = mr_run(argv, o->env, o->timeout, o->rlimit, &out, &n, &hung);
		v = judge(c, rc2, hung, out, n, fname, two, 1, zero, rc == 0 ? 1 : 0);
		add_result(c, "dump", hung ? 0 : rc2, hung, v, out, n);
		mr_rm_rf(dd);
	}
	if (rc == 2 && o->full && mr_crc32_str(c->name) % 8 == 0) {
		char *cand = mr_fmt("%s/cand/%s.c", o->work, c->name);
		char *src = mr_fmt("// @task m/%s\n// @forward f(x)\nvoid f(float *x) { (void)x; }\n", c->name);
		char *argv[] = { (char *)o->crucible, "check", cand, "--no-timing", NULL };
		int rc3;

		mr_write_file(cand, src, strlen(src));
		rc3 = mr_run(argv, o->env, o->timeout, o->rlimit, &out, &n, &hung);
		v = judge(c, rc3, hung, out, n, fname, two, 1, zero, 1);
		add_result(c, "check", hung ? 0 : rc3, hung, v, out, n);
		free(cand);
		free(src);
	}
out:
	free(fname);
	free(tname);
	free(dd);
}

/* check: a malformed header is a format_error naming the file and the
 * line (exit 1), or a bad task name an input error (exit 2); never a crash */
static void cand_check(struct tcase *c, const struct opts *o)
{
	static const int two[] = { 2 }, ok[] = { 0, 1, 2 };
	char *p = mr_fmt("%s/cands/%s.c", o->work, c->name), *fname = mr_fmt("%s.c", c->name), *out, *v;
	char *argv[] = { (char *)o->crucible, "check", p, "--no-timing", NULL };
	size_t n;
	int rc, hung;

	rc = mr_run(argv, o->cenv, o->timeout, o->rlimit, &out, &n, &hung);
	/* a header that parses may still be a wrong call (a literal that
	 * crashes the candidate, an alias): any verdict, but a format_error
	 * names the file and the line */
	c->must_fail = 0;
	v = judge(c, rc, hung, out, n, fname, two, 1, ok, 3);
	if (!v && rc != 0 && !mr_has(out, n, fname))
		v = mr_xstrdup("the message does not name the file");
	if (!v && mr_has(out, n, "format_error")) {
		/* NAME.c:DIGIT somewhere */
		const char *s = out, *e = out + n;
		size_t fl = strlen(fname);
		int found = 0;

		while (!found && (s = memmem(s, (size_t)(e - s), fname, fl))) {
			s += fl;
			found = s + 1 < e && *s == ':' && s[1] >= '0' && s[1] <= '9';
		}
		if (!found)
			v = mr_xstrdup("format_error without FILE:LINE");
	}
	add_result(c, "check", hung ? 0 : rc, hung, v, out, n);
	free(p);
	free(fname);
}

/* one case on a thread of the pool */
static void run_case(void *arg, void *item)
{
	struct tcase *c = item;

	if (!strcmp(c->kind, "task"))
		task_check(c, arg);
	else
		cand_check(c, arg);
}

static void usage(void)
{
	fprintf(stderr, "usage: malformed_tasks CRUCIBLE [--full] [--kind tasks,cand] [--jobs N] [--timeout S]\n"
			"                       [--keep DIR] [--report CSV] [--count] [--asan]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *crucible = NULL, *kind = "tasks,cand";
	struct mr_args ar = { .jobs = 2, .timeout = 30 };
	int nt = 0, nc = 0, ncases, bad = 0;
	char *work, *mdata, **env, **cenv;
	struct tcase *tc = NULL, *cc = NULL, *cases;
	struct opts o;

	mr_set_prog("malformed_tasks");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (mr_args_opt(&ar, argc, argv, &i, usage) || mr_opt(argc, argv, &i, "--kind", &kind, usage))
			continue;
		if (mr_bad_arg(a) || crucible)
			usage();
		crucible = a;
	}
	if (!crucible)
		usage();
	o.datadir = getenv("CRUCIBLE_DATADIR");
	if (!o.datadir || !*o.datadir)
		mr_die("CRUCIBLE_DATADIR is not set");
	work = mr_workdir(ar.keep, "crucible-malformed");
	{
		char *cd = mr_fmt("%s/cand", work);

		mr_mkdir_p(cd);
		free(cd);
	}
	mdata = mr_fmt("%s/data", work);
	{
		char **san = mr_san_env();

		cenv = mr_env_with(san, "CRUCIBLE_DATADIR", o.datadir, 0);
		env = mr_env_with(san, "CRUCIBLE_DATADIR", mdata, 0);
		mr_env_free(san);
	}
	if (mr_in_list(kind, "tasks"))
		tc = task_cases(o.datadir, work, ar.full, &nt);
	if (mr_in_list(kind, "cand"))
		cc = cand_cases(o.datadir, work, ar.full, &nc);
	ncases = nt + nc;
	cases = mr_xrealloc(NULL, sizeof *cases * (size_t)ncases);
	if (nt)
		memcpy(cases, tc, sizeof *cases * (size_t)nt);
	if (nc)
		memcpy(cases + nt, cc, sizeof *cases * (size_t)nc);
	free(tc);
	free(cc);
	if (ar.count) {
		printf("%d inputs\n", ncases);
		goto done;
	}
	o.crucible = crucible;
	o.work = work;
	o.env = env;
	o.cenv = cenv;
	o.timeout = ar.timeout;
	o.rlimit = mr_as_limit(ar.asan);
	o.full = ar.full;
	{
		struct mr_pool p;

		mr_pool_start(&p, ar.jobs, 2 * ar.jobs, run_case, &o);
		for (int i = 0; i < ncases; i++)
			mr_pool_put(&p, &cases[i]);
		mr_pool_finish(&p);
	}
	for (int i = 0; i < ncases; i++)
		for (int r = 0; r < cases[i].nres; r++) {
			struct result *x = &cases[i].res[r];
			char *msg;

			if (!x->verdict)
				continue;
			bad++;
			msg = mr_squash_tail(x->out, x->outn, 400);
			printf("FAIL %s %s [%s] %s: %s -- %s\n", cases[i].kind, cases[i].name, cases[i].why, x->cmd,
			       x->verdict, msg);
			free(msg);
		}
	if (ar.report) {
		FILE *f = mr_report_open(ar.report, "kind,name,mutation,command,rc,verdict,message\r\n");

		for (int i = 0; i < ncases; i++)
			for (int r = 0; r < cases[i].nres; r++) {
				const struct result *x = &cases[i].res[r];
				const char *id[3] = { cases[i].kind, cases[i].name, cases[i].why };

				mr_report_row(f, id, x->cmd, x->rc, x->hung, x->verdict, x->out, x->outn);
			}
		fclose(f);
	}
	for (int k = 0; k < 2; k++) {
		const char *kn = k ? "cand" : "task";
		int n = 0, failed = 0, valid = 0;

		for (int i = 0; i < ncases; i++) {
			int f = 0, ok = 0;

			if (strcmp(cases[i].kind, kn))
				continue;
			n++;
			for (int r = 0; r < cases[i].nres; r++) {
				f |= cases[i].res[r].verdict != NULL;
				ok |= !strcmp(cases[i].res[r].cmd, "list") && !cases[i].res[r].hung &&
				      cases[i].res[r].rc == 0;
			}
			failed += f;
			valid += ok;
		}
		if (n)
			printf("%s: %d inputs, %d failed, %d accepted as valid\n", kn, n, failed, valid);
	}
done:
	fflush(stdout);
	if (!ar.keep)
		mr_rm_rf(work);
	for (int i = 0; i < ncases; i++) {
		free(cases[i].name);
		free(cases[i].why);
		mr_sl_free(&cases[i].fields);
		for (int r = 0; r < cases[i].nres; r++) {
			free(cases[i].res[r].verdict);
			free(cases[i].res[r].out);
		}
	}
	free(cases);
	free(work);
	free(mdata);
	mr_env_free(env);
	mr_env_free(cenv);
	return bad ? 1 : 0;
}

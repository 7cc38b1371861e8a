/* task.c — loading and validating task JSON files (SPEC §2).
 * Every error names the file and the key path and says what was expected. */
#include "tasks/task.h"
#include "tasks/task_ops.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { st = cr_errf(err, CR_EINPUT, __VA_ARGS__); goto out; } while (0)

size_t task_dtype_size(enum task_dtype dt)
{
	switch (dt) {
	case TASK_F16: case TASK_BF16: return 2;
	case TASK_I64: return 8;
	default: return 4;
	}
}

const char *task_dtype_name(enum task_dtype dt)
{
	static const char *n[] = { "f32", "f16", "bf16", "i32", "i64" };
	return n[dt];
}

const char *task_dtype_ctype(enum task_dtype dt)
{
	static const char *n[] = { "float", "uint16_t", "uint16_t", "int32_t", "int64_t" };
	return n[dt];
}

bool task_dtype_is_float(enum task_dtype dt)
{
	return dt == TASK_F32 || dt == TASK_F16 || dt == TASK_BF16;
}

const char *task_role_name(enum task_role r)
{
	return r == TASK_INPUT ? "input" : r == TASK_PARAM ? "param" : "output";
}

static int parse_dtype(const char *s, enum task_dtype *dt)
{
	for (int i = 0; i <= TASK_I64; i++)
		if (!strcmp(s, task_dtype_name((enum task_dtype)i))) {
			*dt = (enum task_dtype)i;
			return 0;
		}
	return -1;
}

int task_find_dim(const struct task *t, const char *name, size_t len)
{
	for (int i = 0; i < t->n_dims; i++)
		if (strlen(t->dim_names[i]) == len && !memcmp(t->dim_names[i], name, len))
			return i;
	return -1;
}

int task_find_tensor(const struct task *t, const char *name)
{
	for (int i = 0; i < t->n_tensors; i++)
		if (!strcmp(t->tensors[i].name, name))
			return i;
	return -1;
}

static int find_value(const struct task *t, const char *name)
{
	for (int i = 0; i < t->n_values; i++)
		if (!strcmp(t->value_names[i], name))
			return i;
	return -1;
}

void task_tensor_shape(const struct task *t, int i, const struct task_dimset *d,
		       int64_t shape[TASK_MAX_RANK])
{
	const struct task_tensor *tt = &t->tensors[i];
	for (int k = 0; k < tt->rank; k++)
		shape[k] = tt->dim[k] >= 0 ? d->v[tt->dim[k]] : tt->lit[k];
}

bool task_shape_numel(const int64_t *shape, int rank, int64_t *n)
{
	int64_t c = 1;
	for (int k = 0; k < rank; k++)
		if (shape[k] < 1 || !task_mul(c, shape[k], &c) || c > TASK_MAX_NUMEL) {
			*n = INT64_MAX;
			return false;
		}
	*n = c;
	return true;
}

int64_t task_tensor_numel(const struct task *t, int i, const struct task_dimset *d)
{
	int64_t shape[TASK_MAX_RANK], n;
	task_tensor_shape(t, i, d, shape);
	task_shape_numel(shape, t->tensors[i].rank, &n);
	return n;
}

enum cr_status task_val_count(const struct task_node *nd, struct task_val *o,
			      struct cr_err *err)
{
	if (!task_shape_numel(o->shape, o->rank, &o->n))
		return cr_errf(err, CR_EINPUT,
			       "op %s: its output would hold more than %lld elements (or overflow)",
			       nd->op, (long long)TASK_MAX_NUMEL);
	return CR_OK;
}

enum cr_status task_infer(const struct task *t, const struct task_dimset *d, const char *which,
			  struct task_val *v, int64_t *total, struct cr_err *err)
{
	char ds[256];
	int64_t sum = 0;

	task_dims_str(t, d, ds, sizeof ds);
	for (int k = 0; k < t->n_dims; k++)
		if (d->v[k] < 1 || d->v[k] > TASK_MAX_NUMEL)
			return cr_errf(err, CR_EINPUT, "%s: %s.%s = %lld: a dim lies in [1, %lld]", t->path,
				       which, t->dim_names[k], (long long)d->v[k], (long long)TASK_MAX_NUMEL);
	for (int i = 0; i < t->n_tensors; i++) {
		v[i].d = NULL;
		v[i].rank = t->tensors[i].rank;
		task_tensor_shape(t, i, d, v[i].shape);
		if (!task_shape_numel(v[i].shape, v[i].rank, &v[i].n))
			return cr_errf(err, CR_EINPUT,
				       "%s: tensors.%s.shape: more than %lld elements (or an int64 overflow) on %s {%s}",
				       t->path, t->tensors[i].name, (long long)TASK_MAX_NUMEL, which, ds);
	}
	for (int n = 0; n < t->n_nodes; n++) {
		const struct task_node *nd = &t->nodes[n];
		struct task_val in[TASK_MAX_IN], out[TASK_MAX_OUT];
		struct cr_err e2;
		int64_t cnt;
		for (int k = 0; k < nd->n_in; k++)
			in[k] = v[nd->in[k]];
		memset(out, 0, sizeof out);
		cr_err_init(&e2);
		if (nd->def->infer(nd, in, nd->n_in, out, &e2))
			return cr_errf(err, CR_EINPUT, "%s: graph[%d] (%s) on %s {%s}: %s", t->path, n,
				       nd->op, which, ds, e2.msg);
		for (int k = 0; k < nd->n_out; k++) {
			int o = nd->out[k];
			/* an op that copies its input's count must still agree
			 * with its shape */
			if (!task_shape_numel(out[k].shape, out[k].rank, &cnt) || cnt != out[k].n)
				return cr_errf(err, CR_EINPUT,
					       "%s: graph[%d] (%s) on %s {%s}: output %d: more than %lld elements or a count that disagrees with its shape",
					       t->path, n, nd->op, which, ds, k, (long long)TASK_MAX_NUMEL);
			if (o >= t->n_tensors) {
				v[o] = out[k];
				continue;
			}
			if (v[o].rank != out[k].rank ||
			    memcmp(v[o].shape, out[k].shape, sizeof(int64_t) * (size_t)out[k].rank))
				return cr_errf(err, CR_EINPUT,
					       "%s: tensors.%s.shape: op %s (graph[%d]) produces a different shape on %s {%s}",
					       t->path, t->tensors[o].name, nd->op, n, which, ds);
		}
	}
	for (int i = 0; i < t->n_values; i++)
		if (!task_add(sum, v[i].n, &sum))
			sum = INT64_MAX;
	if (total)
		*total = sum;
	return CR_OK;
}

enum cr_status task_check_dims(const struct task *t, const struct task_dimset *d,
			       const char *which, bool ref, struct cr_err *err)
{
	struct task_val *v = calloc((size_t)t->n_values, sizeof *v);
	enum cr_status st;
	int64_t total = 0;

	if (!v)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory checking shapes", t->path);
	st = task_infer(t, d, which, v, &total, err);
	if (!st && ref && total > TASK_MAX_REF_NUMEL) {
		char ds[256];
		task_dims_str(t, d, ds, sizeof ds);
		st = cr_errf(err, CR_EINPUT,
			     "%s: %s {%s}: the graph's values hold %lld elements together, the reference's cap is %lld (%lld GiB as double)",
			     t->path, which, ds, (long long)total, (long long)TASK_MAX_REF_NUMEL,
			     (long long)(TASK_MAX_REF_NUMEL * 8 >> 30));
	}
	free(v);
	return st;
}

void task_dims_str(const struct task *t, const struct task_dimset *d, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < t->n_dims && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%s=%lld", i ? "," : "",
					 t->dim_names[i], (long long)d->v[i]);
}

const struct task_attr *task_node_attr(const struct task_node *n, const char *key)
{
	for (int i = 0; i < n->n_attrs; i++)
		if (!strcmp(n->attrs[i].key, key))
			return &n->attrs[i];
	return NULL;
}

int64_t task_node_int(const struct task_node *n, const char *key, int64_t dflt)
{
	const struct task_attr *a = task_node_attr(n, key);
	return a && a->kind == TASK_ATTR_INT ? a->i : dflt;
}

double task_node_float(const struct task_node *n, const char *key, double dflt)
{
	const struct task_attr *a = task_node_attr(n, key);
	if (!a)
		return dflt;
	return a->kind == TASK_ATTR_FLOAT ? a->f : a->kind == TASK_ATTR_INT ? (double)a->i : dflt;
}

int task_node_ints(const struct task_node *n, const char *key, int64_t *out, int max)
{
	const struct task_attr *a = task_node_attr(n, key);
	int k = 0;
	if (!a)
		return 0;
	if (a->kind == TASK_ATTR_INT) {
		if (max > 0)
			out[0] = a->i;
		return 1;
	}
	if (a->kind != TASK_ATTR_INTS)
		return 0;
	for (; k < a->n_ints && k < max; k++)
		out[k] = a->ints[k];
	return k;
}

const char *task_node_str(const struct task_node *n, const char *key, const char *dflt)
{
	const struct task_attr *a = task_node_attr(n, key);
	return a && a->kind == TASK_ATTR_STR ? a->s : dflt;
}

/* A dim set: an object mapping every declared dim to a positive integer. */
static enum cr_status parse_dimset(struct task *t, json_t *o, const char *key,
				   struct task_dimset *d, bool declare, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		FAIL("%s: %s: expected an object of dim name -> positive integer", t->path, key);
	if (!declare && (int)json_object_size(o) != t->n_dims)
		FAIL("%s: %s: has %d dims, \"dims\" declares %d", t->path, key,
		     (int)json_object_size(o), t->n_dims);
	json_object_foreach(o, k, v) {
		int i = task_find_dim(t, k, strlen(k));
		if (!json_is_integer(v) || json_integer_value(v) < 1)
			FAIL("%s: %s.%s: expected a positive integer", t->path, key, k);
		if (json_integer_value(v) > TASK_MAX_NUMEL)
			FAIL("%s: %s.%s: %lld is over the cap of %lld (SPEC §2)", t->path, key, k,
			     (long long)json_integer_value(v), (long long)TASK_MAX_NUMEL);
		if (declare) {
			if (t->n_dims == TASK_MAX_DIMS)
				FAIL("%s: %s: more than %d dims", t->path, key, TASK_MAX_DIMS);
			if (i >= 0)
				FAIL("%s: %s.%s: duplicate dim", t->path, key, k);
			if (strlen(k) >= TASK_NAME_MAX)
				FAIL("%s: %s.%s: dim name too long", t->path, key, k);
			i = t->n_dims++;
			snprintf(t->dim_names[i], TASK_NAME_MAX, "%s", k);
		} else if (i < 0) {
			FAIL("%s: %s.%s: not a dim declared in \"dims\"", t->path, key, k);
		}
		d->v[i] = json_integer_value(v);
	}
out:
	return st;
}

/* Both parameters of a distribution finite ("normal(1e999,1)" is inf). */
static bool finite2(double a, double b)
{
	return isfinite(a) && isfinite(b);
}

/* init: "normal", "normal(mean,std)", "uniform(lo,hi)", "positive",
 * "positive(lo,std)", "probabilities", "indices[0,C)", "kaiming", "kaiming(DIM)" (or a literal
 * fan_in, "kaiming(9)"), "kaiming_relu", "kaiming_linear", "ones", "zeros". */
static enum cr_status parse_init(struct task *t, const char *tn, const char *s,
				 struct task_init *in, struct cr_err *err)
{
	char dim[TASK_NAME_MAX];
	double a, b;
	int n = 0;

	memset(in, 0, sizeof *in);
	in->fan_dim = -1;
	if (!strcmp(s, "normal")) {
		in->kind = TASK_INIT_NORMAL; in->a = 0; in->b = 1;
	} else if (sscanf(s, "normal(%lf,%lf)%n", &a, &b, &n) == 2 && s[n] == '\0' && finite2(a, b) && b > 0) {
		in->kind = TASK_INIT_NORMAL; in->a = a; in->b = b;
	} else if (sscanf(s, "uniform(%lf,%lf)%n", &a, &b, &n) == 2 && s[n] == '\0' && finite2(a, b) &&
		   b > a && isfinite(b - a)) {
		in->kind = TASK_INIT_UNIFORM; in->a = a; in->b = b;
	} else if (!strcmp(s, "positive")) {
		in->kind = TASK_INIT_POSITIVE; in->a = 0.1; in->b = 1;
	} else if (sscanf(s, "positive(%lf,%lf)%n", &a, &b, &n) == 2 && s[n] == '\0' && finite2(a, b) &&
		   a > 0 && b > 0) {
		in->kind = TASK_INIT_POSITIVE; in->a = a; in->b = b;
	} else if (!strcmp(s, "probabilities")) {
		in->kind = TASK_INIT_PROBS;
	} else if (sscanf(s, "indices[0,%63[A-Za-z0-9_])%n", dim, &n) == 1 && s[n] == '\0') {
		in->kind = TASK_INIT_INDICES;
		in->bound_dim = task_find_dim(t, dim, strlen(dim));
		if (in->bound_dim < 0)
			return cr_errf(err, CR_EINPUT, "%s: tensors.%s.init: unknown dim '%s' in \"%s\"",
				       t->path, tn, dim, s);
	} else if (!strcmp(s, "kaiming")) {
		in->kind = TASK_INIT_KAIMING;
	} else if (!strcmp(s, "kaiming_relu")) {
		/* He: U(-sqrt(6 / fan_in), sqrt(6 / fan_in)), PyTorch's
		 * kaiming_uniform_(nonlinearity="relu"); keeps a deep ReLU
		 * stack's signal from vanishing */
		in->kind = TASK_INIT_KAIMING;
		in->a = sqrt(6.0);
	} else if (!strcmp(s, "kaiming_linear")) {
		/* U(-sqrt(3 / fan_in), sqrt(3 / fan_in)), PyTorch's
		 * kaiming_uniform_(nonlinearity="linear"): variance gain 1, so a
		 * deep stack of convs with no activation between keeps x's part */
		in->kind = TASK_INIT_KAIMING;
		in->a = sqrt(3.0);
	} else if (sscanf(s, "kaiming(%63[A-Za-z0-9_])%n", dim, &n) == 1 && s[n] == '\0') {
		in->kind = TASK_INIT_KAIMING;
		/* a literal fan_in: a depthwise conv's 1 x 3 x 3 (9) where the
		 * weight [G, M/G, 1, 3, 3] splits its channels in groups */
		if (dim[strspn(dim, "0123456789")] == '\0') {
			long long f = strtoll(dim, NULL, 10); /* LLONG_MAX when out of range */
			if (f < 1 || f > TASK_MAX_NUMEL)
				return cr_errf(err, CR_EINPUT, "%s: tensors.%s.init: unknown dim '%s' in \"%s\" "
					       "(a literal fan_in lies in [1, %lld])", t->path, tn, dim, s,
					       (long long)TASK_MAX_NUMEL);
			in->b = (double)f;
			return CR_OK;
		}
		in->fan_dim = task_find_dim(t, dim, strlen(dim));
		if (in->fan_dim < 0)
			return cr_errf(err, CR_EINPUT, "%s: tensors.%s.init: unknown dim '%s' in \"%s\"",
				       t->path, tn, dim, s);
	} else if (!strcmp(s, "ones")) {
		in->kind = TASK_INIT_ONES;
	} else if (!strcmp(s, "zeros")) {
		in->kind = TASK_INIT_ZEROS;
	} else {
		return cr_errf(err, CR_EINPUT,
			       "%s: tensors.%s.init: unknown init \"%s\" (expected normal, normal(mean,std), uniform(lo,hi), positive, positive(lo,std), probabilities, indices[0,DIM), kaiming, kaiming(DIM), kaiming(N), kaiming_relu, kaiming_linear, ones, zeros)",
			       t->path, tn, s);
	}
	return CR_OK;
}

static enum cr_status parse_tensor(struct task *t, const char *name, json_t *o,
				   struct cr_err *err)
{
	enum cr_status st = CR_OK;
	struct task_tensor *tt;
	json_t *role, *dtype, *shape, *init, *grad, *v;
	size_t i;

	if (strlen(name) >= TASK_NAME_MAX || !name[0])
		FAIL("%s: tensors.%s: bad tensor name", t->path, name);
	if (task_find_dim(t, name, strlen(name)) >= 0)
		FAIL("%s: tensors.%s: name clashes with a dim", t->path, name);
	if (!json_is_object(o))
		FAIL("%s: tensors.%s: expected an object", t->path, name);
	tt = &t->tensors[t->n_tensors];
	memset(tt, 0, sizeof *tt);
	snprintf(tt->name, sizeof tt->name, "%s", name);
	role = json_object_get(o, "role");
	if (!json_is_string(role))
		FAIL("%s: tensors.%s.role: expected \"input\", \"param\" or \"output\"", t->path, name);
	if (!strcmp(json_string_value(role), "input"))
		tt->role = TASK_INPUT;
	else if (!strcmp(json_string_value(role), "param"))
		tt->role = TASK_PARAM;
	else if (!strcmp(json_string_value(role), "output"))
		tt->role = TASK_OUTPUT;
	else
		FAIL("%s: tensors.%s.role: \"%s\" is not input, param or output", t->path, name,
		     json_string_value(role));
	dtype = json_object_get(o, "dtype");
	if (!json_is_string(dtype) || parse_dtype(json_string_value(dtype), &tt->dtype))
		FAIL("%s: tensors.%s.dtype: expected one of f32, f16, bf16, i32, i64", t->path, name);
	shape = json_object_get(o, "shape");
	if (!json_is_array(shape) || json_array_size(shape) < 1 ||
	    json_array_size(shape) > TASK_MAX_RANK)
		FAIL("%s: tensors.%s.shape: expected an array of 1 to %d dim names or integers",
		     t->path, name, TASK_MAX_RANK);
	json_array_foreach(shape, i, v) {
		if (json_is_string(v)) {
			const char *dn = json_string_value(v);
			tt->dim[i] = task_find_dim(t, dn, strlen(dn));
			if (tt->dim[i] < 0)
				FAIL("%s: tensors.%s.shape[%zu]: unknown dim '%s'", t->path, name, i, dn);
		} else if (json_is_integer(v) && json_integer_value(v) > 0 &&
			   json_integer_value(v) <= TASK_MAX_NUMEL) {
			tt->dim[i] = -1;
			tt->lit[i] = json_integer_value(v);
		} else {
			FAIL("%s: tensors.%s.shape[%zu]: expected a dim name or an integer in [1, %lld]",
			     t->path, name, i, (long long)TASK_MAX_NUMEL);
		}
	}
	tt->rank = (int)json_array_size(shape);
	init = json_object_get(o, "init");
	if (tt->role == TASK_OUTPUT) {
		if (init)
			FAIL("%s: tensors.%s.init: outputs take no init", t->path, name);
	} else {
		if (!json_is_string(init))
			FAIL("%s: tensors.%s.init: expected a string (e.g. \"normal\")", t->path, name);
		if ((st = parse_init(t, name, json_string_value(init), &tt->init, err)))
			goto out;
		if (tt->init.kind == TASK_INIT_INDICES && task_dtype_is_float(tt->dtype))
			FAIL("%s: tensors.%s.init: indices need an integer dtype", t->path, name);
		if (tt->init.kind != TASK_INIT_INDICES && !task_dtype_is_float(tt->dtype))
			FAIL("%s: tensors.%s.init: integer tensors take indices[0,DIM)", t->path, name);
	}
	grad = json_object_get(o, "grad");
	if (grad && !json_is_boolean(grad))
		FAIL("%s: tensors.%s.grad: expected true or false", t->path, name);
	tt->grad = tt->role != TASK_OUTPUT && task_dtype_is_float(tt->dtype) &&
		   (!grad || json_is_true(grad));
	if (grad && json_is_true(grad) && !task_dtype_is_float(tt->dtype))
		FAIL("%s: tensors.%s.grad: an integer tensor has no gradient", t->path, name);
	t->n_tensors++;
out:
	return st;
}

static enum cr_status parse_names(struct task *t, int ni, json_t *arr, const char *key,
				  int *idx, int *n, int max, bool define, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	size_t i;
	json_t *v;

	if (!json_is_array(arr) || json_array_size(arr) < 1 || (int)json_array_size(arr) > max)
		FAIL("%s: graph[%d].%s: expected an array of 1 to %d names", t->path, ni, key, max);
	json_array_foreach(arr, i, v) {
		const char *s = json_string_value(v);
		int k;
		if (!s || !s[0] || strlen(s) >= TASK_NAME_MAX)
			FAIL("%s: graph[%d].%s[%zu]: expected a name", t->path, ni, key, i);
		k = find_value(t, s);
		if (!define) {
			if (k < 0)
				FAIL("%s: graph[%d].%s[%zu]: '%s' is neither a tensor nor an earlier op's output",
				     t->path, ni, key, i, s);
			if (k < t->n_tensors && t->tensors[k].role == TASK_OUTPUT) {
				bool produced = false;
				for (int a = 0; a < ni; a++)
					for (int b = 0; b < t->nodes[a].n_out; b++)
						produced |= t->nodes[a].out[b] == k;
				if (!produced)
					FAIL("%s: graph[%d].%s[%zu]: output '%s' read before it is written",
					     t->path, ni, key, i, s);
			}
		} else {
			if (k >= 0 && (k >= t->n_tensors || t->tensors[k].role != TASK_OUTPUT))
				FAIL("%s: graph[%d].%s[%zu]: '%s' is already defined", t->path, ni, key, i, s);
			if (k >= 0)
				for (int a = 0; a < ni; a++)
					for (int b = 0; b < t->nodes[a].n_out; b++)
						if (t->nodes[a].out[b] == k)
							FAIL("%s: graph[%d].%s[%zu]: '%s' is written twice",
							     t->path, ni, key, i, s);
			if (k < 0) {
				/* value_names holds the tensors and every op's outputs
				 * (task_load counts them before any op is parsed) */
				k = t->n_values++;
				snprintf(t->value_names[k], TASK_NAME_MAX, "%s", s);
			}
		}
		idx[i] = k;
	}
	*n = (int)json_array_size(arr);
out:
	return st;
}

static enum cr_status parse_node(struct task *t, int ni, json_t *o, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	struct task_node *nd = &t->nodes[ni];
	const char *k;
	json_t *v, *op;

	memset(nd, 0, sizeof *nd);
	if (!json_is_object(o))
		FAIL("%s: graph[%d]: expected an object {\"op\", \"in\", \"out\", attrs...}", t->path, ni);
	op = json_object_get(o, "op");
	if (!json_is_string(op))
		FAIL("%s: graph[%d].op: expected a string", t->path, ni);
	nd->def = task_op_find(json_string_value(op));
	if (!nd->def)
		FAIL("%s: graph[%d].op: unknown op \"%s\"", t->path, ni, json_string_value(op));
	snprintf(nd->op, sizeof nd->op, "%s", nd->def->name);
	if ((st = parse_names(t, ni, json_object_get(o, "in"), "in", nd->in, &nd->n_in, TASK_MAX_IN, false, err)))
		goto out;
	if (nd->n_in < nd->def->min_in || nd->n_in > nd->def->max_in)
		FAIL("%s: graph[%d].in: op %s takes %d to %d inputs, got %d", t->path, ni, nd->op,
		     nd->def->min_in, nd->def->max_in, nd->n_in);
	if ((st = parse_names(t, ni, json_object_get(o, "out"), "out", nd->out, &nd->n_out, TASK_MAX_OUT, true, err)))
		goto out;
	if (nd->n_out != nd->def->n_out)
		FAIL("%s: graph[%d].out: op %s has %d outputs, got %d", t->path, ni, nd->op,
		     nd->def->n_out, nd->n_out);
	json_object_foreach(o, k, v) {
		struct task_attr *a;
		if (!strcmp(k, "op") || !strcmp(k, "in") || !strcmp(k, "out"))
			continue;
		if (nd->n_attrs == TASK_MAX_ATTRS || strlen(k) >= sizeof a->key)
			FAIL("%s: graph[%d].%s: too many or too long attributes", t->path, ni, k);
		a = &nd->attrs[nd->n_attrs++];
		snprintf(a->key, sizeof a->key, "%s", k);
		if (json_is_integer(v)) {
			a->kind = TASK_ATTR_INT;
			a->i = json_integer_value(v);
		} else if (json_is_real(v)) {
			a->kind = TASK_ATTR_FLOAT;
			a->f = json_real_value(v);
		} else if (json_is_string(v) && strlen(json_string_value(v)) < sizeof a->s) {
			a->kind = TASK_ATTR_STR;
			snprintf(a->s, sizeof a->s, "%s", json_string_value(v));
		} else if (json_is_array(v) && json_array_size(v) <= TASK_ATTR_MAX_INTS) {
			size_t q;
			json_t *e;
			a->kind = TASK_ATTR_INTS;
			json_array_foreach(v, q, e) {
				if (!json_is_integer(e))
					FAIL("%s: graph[%d].%s[%zu]: expected an integer", t->path, ni, k, q);
				a->ints[q] = json_integer_value(e);
			}
			a->n_ints = (int)json_array_size(v);
		} else {
			FAIL("%s: graph[%d].%s: expected an integer, number, short string or a list of up to %d integers",
			     t->path, ni, k, TASK_ATTR_MAX_INTS);
		}
	}
out:
	return st;
}

/* Sizes the arrays to the file: its tensors, its ops, and the values they
 * define (every tensor, every op output); refuses a file over the limits. */
static enum cr_status alloc_arrays(struct task *t, json_t *tensors, json_t *graph,
				   struct cr_err *err)
{
	enum cr_status st = CR_OK;
	size_t nt = json_object_size(tensors), nn = json_array_size(graph), nv = nt, i, sz;
	json_t *v;

	if (nt > TASK_MAX_TENSORS)
		FAIL("%s: tensors: %zu tensors, at most %d", t->path, nt, TASK_MAX_TENSORS);
	if (nn > TASK_MAX_NODES)
		FAIL("%s: graph: %zu ops, at most %d", t->path, nn, TASK_MAX_NODES);
	/* at most TASK_MAX_VALUES: an op defines at most TASK_MAX_OUT */
	json_array_foreach(graph, i, v) {
		size_t no = json_array_size(json_object_get(v, "out"));
		nv += no < TASK_MAX_OUT ? no : TASK_MAX_OUT;
	}
	sz = nt * sizeof *t->tensors + nn * sizeof *t->nodes + nv * sizeof *t->value_names;
	if (!(t->mem = calloc(1, sz ? sz : 1)))
		FAIL("%s: out of memory (%zu bytes for the task)", t->path, sz);
	t->tensors = t->mem;
	t->nodes = (struct task_node *)(t->tensors + nt);
	t->value_names = (char (*)[TASK_NAME_MAX])(t->nodes + nn);
out:
	return st;
}

void task_release(struct task *t)
{
	free(t->mem);
	t->mem = NULL;
	t->tensors = NULL;
	t->nodes = NULL;
	t->value_names = NULL;
	t->n_tensors = t->n_nodes = t->n_values = 0;
}

void task_list_free(struct task *ts, int n)
{
	for (int i = 0; ts && i < n; i++)
		task_release(&ts[i]);
	free(ts);
}

enum cr_status task_load(struct task *t, const char *path, const char *name,
			 struct cr_err *err)
{
	enum cr_status st = CR_OK;
	json_error_t je;
	json_t *root = NULL, *o, *v;
	const char *k;
	size_t i;

	memset(t, 0, sizeof *t);
	snprintf(t->path, sizeof t->path, "%s", path);
	snprintf(t->name, sizeof t->name, "%s", name);
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		FAIL("%s:%d:%d: %s", path, je.line, je.column, je.text);
	if (!json_is_object(root))
		FAIL("%s: expected a JSON object at the top level", path);
	json_object_foreach(root, k, v) {
		static const char *known[] = { "description", "source", "dims", "cpu_dims",
			"check_dims", "tensors", "graph", "tolerance", "backward", "flops",
			"bytes", "notes", "repair", NULL };
		bool ok = false;
		for (int q = 0; known[q]; q++)
			ok |= !strcmp(k, known[q]);
		if (!ok)
			FAIL("%s: unknown key \"%s\"", path, k);
	}
	if ((v = json_object_get(root, "description")) && json_is_string(v))
		snprintf(t->description, sizeof t->description, "%s", json_string_value(v));
	if ((v = json_object_get(root, "repair")) && json_is_string(v))
		snprintf(t->repair, sizeof t->repair, "%s", json_string_value(v));
	if ((v = json_object_get(root, "source")) && json_is_string(v))
		snprintf(t->source, sizeof t->source, "%s", json_string_value(v));
	if ((st = parse_dimset(t, json_object_get(root, "dims"), "dims", &t->bench, true, err)))
		goto out;
	if (t->n_dims == 0)
		FAIL("%s: dims: at least one dim is required", path);
	if ((st = parse_dimset(t, json_object_get(root, "cpu_dims"), "cpu_dims", &t->cpu, false, err)))
		goto out;
	o = json_object_get(root, "check_dims");
	if (!json_is_array(o) || json_array_size(o) < 3 || json_array_size(o) > TASK_MAX_CHECKS)
		FAIL("%s: check_dims: expected an array of 3 to %d dim sets", path, TASK_MAX_CHECKS);
	json_array_foreach(o, i, v) {
		char key[32];
		snprintf(key, sizeof key, "check_dims[%zu]", i);
		if ((st = parse_dimset(t, v, key, &t->checks[i], false, err)))
			goto out;
	}
	t->n_checks = (int)json_array_size(o);
	o = json_object_get(root, "tensors");
	if (!json_is_object(o) || json_object_size(o) == 0)
		FAIL("%s: tensors: expected an object of tensor name -> {role, dtype, shape, init}", path);
	v = json_object_get(root, "graph");
	if (!json_is_array(v) || json_array_size(v) == 0)
		FAIL("%s: graph: expected an array of 1 to %d ops", path, TASK_MAX_NODES);
	if ((st = alloc_arrays(t, o, v, err)))
		goto out;
	json_object_foreach(o, k, v)
		if ((st = parse_tensor(t, k, v, err)))
			goto out;
	t->n_values = t->n_tensors;
	for (int q = 0; q < t->n_tensors; q++)
		snprintf(t->value_names[q], TASK_NAME_MAX, "%s", t->tensors[q].name);
	o = json_object_get(root, "graph");
	json_array_foreach(o, i, v) {
		if ((st = parse_node(t, (int)i, v, err)))
			goto out;
		t->n_nodes++;
	}
	for (int q = 0; q < t->n_tensors; q++) {
		bool produced = false;
		if (t->tensors[q].role != TASK_OUTPUT)
			continue;
		for (int a = 0; a < t->n_nodes; a++)
			for (int b = 0; b < t->nodes[a].n_out; b++)
				produced |= t->nodes[a].out[b] == q;
		if (!produced)
			FAIL("%s: tensors.%s: output is not written by any op of the graph", path,
			     t->tensors[q].name);
	}
	t->atol = 1e-4;
	t->rtol = 1e-4;
	if ((o = json_object_get(root, "tolerance"))) {
		json_t *a = json_object_get(o, "atol"), *r = json_object_get(o, "rtol");
		if (!json_is_object(o) || (a && !json_is_number(a)) || (r && !json_is_number(r)))
			FAIL("%s: tolerance: expected {\"atol\": number, \"rtol\": number}", path);
		if (a)
			t->atol = json_number_value(a);
		if (r)
			t->rtol = json_number_value(r);
		if (t->atol < 0 || t->rtol < 0 || t->atol > 1 || t->rtol > 1)
			FAIL("%s: tolerance: atol and rtol must lie in [0, 1]", path);
	}
	v = json_object_get(root, "backward");
	if (v && !json_is_boolean(v))
		FAIL("%s: backward: expected true or false", path);
	t->backward = json_is_true(v);
	if (t->backward)
		for (int n = 0; n < t->n_nodes; n++)
			if (!t->nodes[n].def->bwd_d)
				FAIL("%s: backward: op %s (graph[%d]) has no backward", path,
				     t->nodes[n].op, n);
	if ((v = json_object_get(root, "flops")) && json_is_string(v))
		snprintf(t->flops, sizeof t->flops, "%s", json_string_value(v));
	if ((v = json_object_get(root, "bytes")) && json_is_string(v))
		snprintf(t->bytes, sizeof t->bytes, "%s", json_string_value(v));
	/* every shape is checked (counts, caps, the ops' rules) before any
	 * caller sizes a buffer from it */
	if ((st = task_check_dims(t, &t->bench, "dims", false, err)) ||
	    (st = task_check_dims(t, &t->cpu, "cpu_dims", true, err)))
		goto out;
	for (int q = 0; q < t->n_checks; q++) {
		char key[32];
		snprintf(key, sizeof key, "check_dims[%d]", q);
		if ((st = task_check_dims(t, &t->checks[q], key, true, err)))
			goto out;
	}
out:
	json_decref(root);
	if (st)
		task_release(t);
	return st;
}

/* task_ops_impl.h — op bodies, written once, included twice by task_ops.c:
 * with T=double (reference) and T=float (baseline). Expects the macros
 *   T     element type       ACC  accumulator type
 *   FN(x) name suffixer      GEMM cblas_dgemm or cblas_sgemm
 *   RELU(v) max(v, 0), written so the float build compiles it to maxss
 *           (no branch: random signs cost no mispredictions)
 * Every loop is plain C; the compiler vectorises what it can. */

/* Splits a shape around an axis: outer × len × inner. */
static void FN(split)(const struct task_val *v, int axis, int64_t *outer, int64_t *len,
		      int64_t *inner)
{
	int64_t o = 1, in = 1;
	for (int i = 0; i < axis; i++)
		o *= v->shape[i];
	for (int i = axis + 1; i < v->rank; i++)
		in *= v->shape[i];
	*outer = o;
	*len = v->shape[axis];
	*inner = in;
}

static void FN(relu_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out)
{
	const T *x = in[0].d;
	T *y = out[0].d;
	(void)nd;
	for (int64_t i = 0; i < in[0].n; i++)
		y[i] = RELU(x[i]);
}

static void FN(relu_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *out, const struct task_val *dout,
			 struct task_val *din)
{
	const T *x = in[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	(void)nd; (void)out;
	if (!dx)
		return;
	/* PyTorch's threshold_backward: gradient 0 at x == 0. */
	for (int64_t i = 0; i < in[0].n; i++)
		dx[i] += (T)(x[i] > 0) * dy[i];
}

static void FN(gelu_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out)
{
	const T *x = in[0].d;
	T *y = out[0].d;
	(void)nd;
	for (int64_t i = 0; i < in[0].n; i++) {
		ACC v = x[i];
		y[i] = (T)(0.5 * v * (1.0 + erf(v * M_SQRT1_2)));
	}
}

static void FN(gelu_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *out, const struct task_val *dout,
			 struct task_val *din)
{
	const T *x = in[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	(void)nd; (void)out;
	if (!dx)
		return;
	for (int64_t i = 0; i < in[0].n; i++) {
		ACC v = x[i];
		ACC cdf = 0.5 * (1.0 + erf(v * M_SQRT1_2));
		ACC pdf = exp(-0.5 * v * v) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
		dx[i] += (T)(dy[i] * (cdf + v * pdf));
	}
}

static void FN(sum_fwd)(const struct task_node *nd, const struct task_val *in,
			struct task_val *out)
{
	int axis = task_axis(task_node_int(nd, "dim", -1), in[0].rank);
	int64_t o, len, inner;
	const T *x = in[0].d;
	T *y = out[0].d;

	FN(split)(&in[0], axis, &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			ACC s = 0;
			for (int64_t k = 0; k < len; k++)
				s += x[(a * len + k) * inner + c];
			y[a * inner + c] = (T)s;
		}
}

static void FN(sum_bwd)(const struct task_node *nd, const struct task_val *in,
			const struct task_val *out, const struct task_val *dout,
			struct task_val *din)
{
	int axis = task_axis(task_node_int(nd, "dim", -1), in[0].rank);
	int64_t o, len, inner;
	const T *dy = dout[0].d;
	T *dx = din[0].d;
	(void)out;
	if (!dx)
		return;
	FN(split)(&in[0], axis, &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t k = 0; k < len; k++)
			for (int64_t c = 0; c < inner; c++)
				dx[(a * len + k) * inner + c] += dy[a * inner + c];
}

static void FN(softmax_fwd)(const struct task_node *nd, const struct task_val *in,
			    struct task_val *out)
{
	int axis = task_axis(task_node_int(nd, "dim", -1), in[0].rank);
	int64_t o, len, inner;
	const T *x = in[0].d;
	T *y = out[0].d;

	FN(split)(&in[0], axis, &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			const T *xr = x + a * len * inner + c;
			T *yr = y + a * len * inner + c;
			ACC m = xr[0], s = 0;
			for (int64_t k = 1; k < len; k++)
				if (xr[k * inner] > m)
					m = xr[k * inner];
			for (int64_t k = 0; k < len; k++)
				s += exp((ACC)xr[k * inner] - m);
			for (int64_t k = 0; k < len; k++)
				yr[k * inner] = (T)(exp((ACC)xr[k * inner] - m) / s);
		}
}

static void FN(softmax_bwd)(const struct task_node *nd, const struct task_val *in,
			    const struct task_val *out, const struct task_val *dout,
			    struct task_val *din)
{
	int axis = task_axis(task_node_int(nd, "dim", -1), in[0].rank);
	int64_t o, len, inner;
	const T *y = out[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	if (!dx)
		return;
	FN(split)(&in[0], axis, &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC dot = 0;
			for (int64_t k = 0; k < len; k++)
				dot += (ACC)y[base + k * inner] * dy[base + k * inner];
			for (int64_t k = 0; k < len; k++)
				dx[base + k * inner] += (T)(y[base + k * inner] *
							    (dy[base + k * inner] - dot));
		}
}

/* layer_norm over the last axis; inputs x, w, b (w and b of the last extent). */
static void FN(layernorm_fwd)(const struct task_node *nd, const struct task_val *in,
			      struct task_val *out)
{
	double eps = task_node_float(nd, "eps", 1e-5);
	int64_t d = in[0].shape[in[0].rank - 1], rows = in[0].n / d;
	const T *x = in[0].d, *w = in[1].d, *b = in[2].d;
	T *y = out[0].d;

	for (int64_t r = 0; r < rows; r++) {
		const T *xr = x + r * d;
		ACC mu = 0, var = 0;
		for (int64_t k = 0; k < d; k++)
			mu += xr[k];
		mu /= d;
		for (int64_t k = 0; k < d; k++)
			var += (xr[k] - mu) * (xr[k] - mu);
		var /= d;
		ACC rstd = 1.0 / sqrt(var + eps);
		for (int64_t k = 0; k < d; k++)
			y[r * d + k] = (T)((xr[k] - mu) * rstd * w[k] + b[k]);
	}
}

static void FN(layernorm_bwd)(const struct task_node *nd, const struct task_val *in,
			      const struct task_val *out, const struct task_val *dout,
			      struct task_val *din)
{
	double eps = task_node_float(nd, "eps", 1e-5);
	int64_t d = in[0].shape[in[0].rank - 1], rows = in[0].n / d;
	const T *x = in[0].d, *w = in[1].d, *dy = dout[0].d;
	T *dx = din[0].d, *dw = din[1].d, *db = din[2].d;
	(void)out;

	for (int64_t r = 0; r < rows; r++) {
		const T *xr = x + r * d, *dyr = dy + r * d;
		ACC mu = 0, var = 0, g = 0, gx = 0;
		for (int64_t k = 0; k < d; k++)
			mu += xr[k];
		mu /= d;
		for (int64_t k = 0; k < d; k++)
			var += (xr[k] - mu) * (xr[k] - mu);
		var /= d;
		ACC rstd = 1.0 / sqrt(var + eps);
		for (int64_t k = 0; k < d; k++) {
			ACC xh = (xr[k] - mu) * rstd, dxh = (ACC)dyr[k] * w[k];
			g += dxh;
			gx += dxh * xh;
			if (dw)
				dw[k] += (T)(dyr[k] * xh);
			if (db)
				db[k] += dyr[k];
		}
		g /= d;
		gx /= d;
		if (dx)
			for (int64_t k = 0; k < d; k++) {
				ACC xh = (xr[k] - mu) * rstd;
				dx[r * d + k] += (T)(rstd * ((ACC)dyr[k] * w[k] - g - xh * gx));
			}
	}
}

/* c[M,N] = a[M,K] · b[K,N] through BLAS (double: dgemm is the reference,
 * accumulating in double; float: sgemm is the baseline). */
static void FN(matmul_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	(void)nd;
	GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0,
	     in[0].d, (int)k, in[1].d, (int)n, 0.0, out[0].d, (int)n);
}

static void FN(matmul_bwd)(const struct task_node *nd, const struct task_val *in,
			   const struct task_val *out, const struct task_val *dout,
			   struct task_val *din)
{
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	(void)nd; (void)out;
	if (din[0].d) /* da[M,K] += dc[M,N] · b[K,N]^T */
		GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)k, (int)n, 1.0,
		     dout[0].d, (int)n, in[1].d, (int)n, 1.0, din[0].d, (int)k);
	if (din[1].d) /* db[K,N] += a[M,K]^T · dc[M,N] */
		GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)n, (int)m, 1.0,
		     in[0].d, (int)k, dout[0].d, (int)n, 1.0, din[1].d, (int)n);
}

/* loss[1] = mean_b( logsumexp(logits[b,:]) - logits[b, target[b]] ).
 * target holds class indices (stored as T here; exact below 2^24 in float). */
static void FN(xent_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out)
{
	int64_t b = in[0].shape[0], c = in[0].shape[1];
	const T *x = in[0].d, *tg = in[1].d;
	ACC total = 0;
	(void)nd;
	for (int64_t r = 0; r < b; r++) {
		const T *xr = x + r * c;
		ACC m = xr[0], s = 0;
		for (int64_t k = 1; k < c; k++)
			if (xr[k] > m)
				m = xr[k];
		for (int64_t k = 0; k < c; k++)
			s += exp((ACC)xr[k] - m);
		total += m + log(s) - xr[(int64_t)tg[r]];
	}
	((T *)out[0].d)[0] = (T)(total / b);
}

static void FN(xent_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *out, const struct task_val *dout,
			 struct task_val *din)
{
	int64_t b = in[0].shape[0], c = in[0].shape[1];
	const T *x = in[0].d, *tg = in[1].d;
	T *dx = din[0].d;
	ACC g = ((const T *)dout[0].d)[0] / (ACC)b;
	(void)nd; (void)out;
	if (!dx)
		return;
	for (int64_t r = 0; r < b; r++) {
		const T *xr = x + r * c;
		ACC m = xr[0], s = 0;
		for (int64_t k = 1; k < c; k++)
			if (xr[k] > m)
				m = xr[k];
		for (int64_t k = 0; k < c; k++)
			s += exp((ACC)xr[k] - m);
		for (int64_t k = 0; k < c; k++)
			dx[r * c + k] += (T)(g * (exp((ACC)xr[k] - m) / s -
						 (k == (int64_t)tg[r] ? 1.0 : 0.0)));
	}
}

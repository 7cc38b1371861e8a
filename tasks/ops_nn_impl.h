/* ops_nn_impl.h — bodies of the whole-network ops (tasks/ops_nn.c), written
 * once and included twice: T=double (reference, ACC double, dgemm) and
 * T=float (baseline, sgemm). Same macros as task_ops_impl.h: T, ACC, FN, GEMM.
 * Backward bodies ACCUMULATE into din; din[k].d == NULL: not needed. */

/* ---- layout copies (reshape, split_dim): the same elements in order ---- */

static void FN(copy_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out)
{
	(void)nd;
	memcpy(out[0].d, in[0].d, sizeof(T) * (size_t)in[0].n);
}

static void FN(copy_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *out, const struct task_val *dout,
			 struct task_val *din)
{
	T *dx = din[0].d;
	const T *dy = dout[0].d;
	(void)nd; (void)out;
	if (dx)
		for (int64_t e = 0; e < in[0].n; e++)
			dx[e] += dy[e];
}

/* ---- cat: inputs joined along "dim" ---- */

static void FN(cat_fwd)(const struct task_node *nd, const struct task_val *in,
			struct task_val *out)
{
	int axis = task_axis(task_node_int(nd, "dim", 0), out[0].rank);
	int64_t outer = 1, inner = 1, off = 0, olen = out[0].shape[axis];
	T *y = out[0].d;

	for (int i = 0; i < axis; i++)
		outer *= out[0].shape[i];
	for (int i = axis + 1; i < out[0].rank; i++)
		inner *= out[0].shape[i];
	for (int k = 0; k < nd->n_in; k++) {
		const T *x = in[k].d;
		int64_t len = in[k].shape[axis];
		for (int64_t a = 0; a < outer; a++)
			memcpy(y + (a * olen + off) * inner, x + a * len * inner,
			       sizeof(T) * (size_t)(len * inner));
		off += len;
	}
}

static void FN(cat_bwd)(const struct task_node *nd, const struct task_val *in,
			const struct task_val *out, const struct task_val *dout,
			struct task_val *din)
{
	int axis = task_axis(task_node_int(nd, "dim", 0), out[0].rank);
	int64_t outer = 1, inner = 1, off = 0, olen = out[0].shape[axis];
	const T *dy = dout[0].d;

	for (int i = 0; i < axis; i++)
		outer *= out[0].shape[i];
	for (int i = axis + 1; i < out[0].rank; i++)
		inner *= out[0].shape[i];
	for (int k = 0; k < nd->n_in; k++) {
		T *dx = din[k].d;
		int64_t len = in[k].shape[axis];
		if (dx)
			for (int64_t a = 0; a < outer; a++)
				for (int64_t e = 0; e < len * inner; e++)
					dx[a * len * inner + e] += dy[(a * olen + off) * inner + e];
		off += len;
	}
}

/* ---- permute / transpose: y[j...] = x[perm(j)...] ---- */

/* Strides of x seen in y's index order (perm[i]: the x axis of y axis i). */
static void FN(perm_strides)(const struct task_val *x, const int *perm, int64_t *st)
{
	int64_t s[TASK_MAX_RANK], acc = 1;
	for (int i = x->rank - 1; i >= 0; i--) {
		s[i] = acc;
		acc *= x->shape[i];
	}
	for (int i = 0; i < x->rank; i++)
		st[i] = s[perm[i]];
}

static void FN(permute_run)(const struct task_node *nd, const struct task_val *x,
			    const struct task_val *y, const T *src, T *dst, bool back)
{
	int perm[TASK_MAX_RANK];
	int64_t st[TASK_MAX_RANK], idx[TASK_MAX_RANK] = { 0 }, off = 0;

	task_op_perm(nd, x->rank, perm);
	FN(perm_strides)(x, perm, st);
	for (int64_t e = 0; e < y->n; e++) {
		if (back)
			dst[off] += src[e];
		else
			dst[e] = src[off];
		for (int i = y->rank - 1; i >= 0; i--) {
			off += st[i];
			if (++idx[i] < y->shape[i])
				break;
			off -= st[i] * y->shape[i];
			idx[i] = 0;
		}
	}
}

static void FN(permute_fwd)(const struct task_node *nd, const struct task_val *in,
			    struct task_val *out)
{
	FN(permute_run)(nd, &in[0], &out[0], in[0].d, out[0].d, false);
}

static void FN(permute_bwd)(const struct task_node *nd, const struct task_val *in,
			    const struct task_val *out, const struct task_val *dout,
			    struct task_val *din)
{
	if (din[0].d)
		FN(permute_run)(nd, &in[0], &out[0], dout[0].d, din[0].d, true);
}

/* ---- select: x.select(dim, index), the axis removed (x[:, -1, :]) ---- */

static void FN(select_run)(const struct task_node *nd, const struct task_val *x, T *xs,
			   T *ys, bool back)
{
	int axis = task_axis(task_node_int(nd, "dim", 0), x->rank);
	int64_t outer = 1, inner = 1, len = x->shape[axis], ix = task_node_int(nd, "index", 0);

	if (ix < 0)
		ix += len;
	for (int i = 0; i < axis; i++)
		outer *= x->shape[i];
	for (int i = axis + 1; i < x->rank; i++)
		inner *= x->shape[i];
	for (int64_t a = 0; a < outer; a++)
		for (int64_t e = 0; e < inner; e++) {
			if (back)
				xs[(a * len + ix) * inner + e] += ys[a * inner + e];
			else
				ys[a * inner + e] = xs[(a * len + ix) * inner + e];
		}
}

static void FN(select_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	FN(select_run)(nd, &in[0], in[0].d, out[0].d, false);
}

static void FN(select_bwd)(const struct task_node *nd, const struct task_val *in,
			   const struct task_val *out, const struct task_val *dout,
			   struct task_val *din)
{
	(void)out;
	if (din[0].d)
		FN(select_run)(nd, &in[0], din[0].d, dout[0].d, true);
}

/* ---- adaptive_avgpool: over the last len(output_size) axes, PyTorch's
 * windows [floor(i*L/O), ceil((i+1)*L/O)) ---- */

static void FN(adapool_run)(const struct task_node *nd, const struct task_val *x,
			    const struct task_val *y, T *xs, T *ys, bool back)
{
	int64_t os[3], planes = 1;
	int nsp = task_node_ints(nd, "output_size", os, 3), r = x->rank;
	int64_t L[3] = { 1, 1, 1 }, O[3] = { 1, 1, 1 }, xst, yst;

	for (int i = 0; i < nsp; i++) {
		L[3 - nsp + i] = x->shape[r - nsp + i];
		O[3 - nsp + i] = y->shape[r - nsp + i];
	}
	for (int i = 0; i < r - nsp; i++)
		planes *= x->shape[i];
	xst = L[0] * L[1] * L[2];
	yst = O[0] * O[1] * O[2];
	for (int64_t p = 0; p < planes; p++)
		for (int64_t a = 0; a < O[0]; a++)
			for (int64_t b = 0; b < O[1]; b++)
				for (int64_t c = 0; c < O[2]; c++) {
					int64_t a0 = a * L[0] / O[0], a1 = ((a + 1) * L[0] + O[0] - 1) / O[0];
					int64_t b0 = b * L[1] / O[1], b1 = ((b + 1) * L[1] + O[1] - 1) / O[1];
					int64_t c0 = c * L[2] / O[2], c1 = ((c + 1) * L[2] + O[2] - 1) / O[2];
					int64_t cnt = (a1 - a0) * (b1 - b0) * (c1 - c0);
					T *yo = ys + p * yst + (a * O[1] + b) * O[2] + c;
					ACC s = 0, g = back ? (ACC)*yo / (ACC)cnt : 0;
					for (int64_t i = a0; i < a1; i++)
						for (int64_t j = b0; j < b1; j++)
							for (int64_t k = c0; k < c1; k++) {
								T *xo = xs + p * xst + (i * L[1] + j) * L[2] + k;
								if (back)
									*xo += (T)g;
								else
									s += *xo;
							}
					if (!back)
						*yo = (T)(s / (ACC)cnt);
				}
}

static void FN(adapool_fwd)(const struct task_node *nd, const struct task_val *in,
			    struct task_val *out)
{
	FN(adapool_run)(nd, &in[0], &out[0], in[0].d, out[0].d, false);
}

static void FN(adapool_bwd)(const struct task_node *nd, const struct task_val *in,
			    const struct task_val *out, const struct task_val *dout,
			    struct task_val *din)
{
	if (din[0].d)
		FN(adapool_run)(nd, &in[0], &out[0], din[0].d, dout[0].d, true);
}

/* ---- normalize: F.normalize(x, p=2, dim, eps) = x / max(||x||_2, eps);
 * "dim" may list consecutive axes, normalised together (a flattened
 * [B, D*K] declared [B, D, K]) ---- */

static void FN(normalize_fwd)(const struct task_node *nd, const struct task_val *in,
			      struct task_val *out)
{
	double eps = task_node_float(nd, "eps", 1e-12);
	int64_t o, len, inner;
	const T *x = in[0].d;
	T *y = out[0].d;

	nn_axes(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC s = 0, nrm;
			for (int64_t k = 0; k < len; k++)
				s += (ACC)x[base + k * inner] * x[base + k * inner];
			nrm = sqrt(s);
			if (nrm < eps)
				nrm = eps;
			for (int64_t k = 0; k < len; k++)
				y[base + k * inner] = (T)(x[base + k * inner] / nrm);
		}
}

static void FN(normalize_bwd)(const struct task_node *nd, const struct task_val *in,
			      const struct task_val *out, const struct task_val *dout,
			      struct task_val *din)
{
	double eps = task_node_float(nd, "eps", 1e-12);
	int64_t o, len, inner;
	const T *x = in[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	(void)out;
	if (!dx)
		return;
	nn_axes(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC s = 0, dot = 0, nrm;
			for (int64_t k = 0; k < len; k++) {
				s += (ACC)x[base + k * inner] * x[base + k * inner];
				dot += (ACC)x[base + k * inner] * dy[base + k * inner];
			}
			nrm = sqrt(s);
			/* below eps the denominator is the constant eps (clamp_min's
			 * gradient is 0 there, as PyTorch's) */
			if (nrm < eps) {
				for (int64_t k = 0; k < len; k++)
					dx[base + k * inner] += (T)(dy[base + k * inner] / eps);
				continue;
			}
			for (int64_t k = 0; k < len; k++)
				dx[base + k * inner] += (T)(dy[base + k * inner] / nrm -
							    x[base + k * inner] * dot / (nrm * nrm * nrm));
		}
}

/* ---- recurrent layers: one layer, one direction ----
 * x [T,B,I...] (or [B,T,I...] with batch_first), h0/c0 [L*D,B,H] of which slice
 * "index" is this layer's, w_ih [G*H,I], w_hh [G*H,H], b_ih, b_hh [G*H];
 * y like x with H features, h_n (and c_n) [1,B,H]. "reverse" runs the time
 * axis backwards (the second direction of a bidirectional layer). */

struct FN(rnn_geo) {
	int64_t t, b, i, h, g;
	int64_t ix;       /* h0 slice offset */
	bool bf, rev;
};

static struct FN(rnn_geo) FN(rnn_geo)(const struct task_node *nd, const struct task_val *in,
				      int64_t gates)
{
	struct FN(rnn_geo) q;
	q.bf = task_node_int(nd, "batch_first", 0) != 0;
	q.rev = task_node_int(nd, "reverse", 0) != 0;
	q.t = in[0].shape[q.bf ? 1 : 0];
	q.b = in[0].shape[q.bf ? 0 : 1];
	q.i = in[0].n / (q.t * q.b);
	q.h = in[1].shape[2];
	q.g = gates;
	q.ix = task_node_int(nd, "index", 0) * q.b * q.h;
	return q;
}

/* Row of x (and y) for processing step s and batch element b. */
static inline int64_t FN(rnn_row)(const struct FN(rnn_geo) *q, int64_t s, int64_t b)
{
	int64_t tt = q->rev ? q->t - 1 - s : s;
	return q->bf ? b * q->t + tt : tt * q->b + b;
}

static inline ACC FN(sigm)(ACC v)
{
	return 1 / (1 + exp(-v));
}

/* LSTM (gates i, f, g, o). Fills, per x row r: act[r] the four activated
 * gates, cs[r] the new cell state, hp[r]/cp[r] the previous h and c (when
 * non-NULL); y, hn, cn as the op's outputs. */
static void FN(lstm_run)(const struct task_node *nd, const struct task_val *in, T *y, T *hn,
			 T *cn, T *act, T *cs, T *hp, T *cp)
{
	struct FN(rnn_geo) q = FN(rnn_geo)(nd, in, 4);
	int64_t rows = q.t * q.b, G = 4 * q.h, H = q.h;
	const T *w_ih = in[3].d, *w_hh = in[4].d, *b_ih = in[5].d, *b_hh = in[6].d;
	T *xw = malloc(sizeof(T) * (size_t)(rows * G)), *hw = malloc(sizeof(T) * (size_t)(q.b * G));
	T *h = malloc(sizeof(T) * (size_t)(q.b * H)), *c = malloc(sizeof(T) * (size_t)(q.b * H));

	if (!xw || !hw || !h || !c)
		abort();
	/* every step's input projection at once: xw = x · w_ih^T */
	GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)G, (int)q.i, 1.0, in[0].d,
	     (int)q.i, w_ih, (int)q.i, 0.0, xw, (int)G);
	memcpy(h, (const T *)in[1].d + q.ix, sizeof(T) * (size_t)(q.b * H));
	memcpy(c, (const T *)in[2].d + q.ix, sizeof(T) * (size_t)(q.b * H));
	for (int64_t s = 0; s < q.t; s++) {
		GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)q.b, (int)G, (int)H, 1.0, h,
		     (int)H, w_hh, (int)H, 0.0, hw, (int)G);
		for (int64_t b = 0; b < q.b; b++) {
			int64_t r = FN(rnn_row)(&q, s, b);
			const T *xr = xw + r * G, *hr = hw + b * G;
			if (hp)
				memcpy(hp + r * H, h + b * H, sizeof(T) * (size_t)H);
			if (cp)
				memcpy(cp + r * H, c + b * H, sizeof(T) * (size_t)H);
			for (int64_t k = 0; k < H; k++) {
				ACC gi = FN(sigm)((ACC)xr[k] + b_ih[k] + hr[k] + b_hh[k]);
				ACC gf = FN(sigm)((ACC)xr[H + k] + b_ih[H + k] + hr[H + k] + b_hh[H + k]);
				ACC gg = tanh((ACC)xr[2 * H + k] + b_ih[2 * H + k] + hr[2 * H + k] +
					      b_hh[2 * H + k]);
				ACC go = FN(sigm)((ACC)xr[3 * H + k] + b_ih[3 * H + k] + hr[3 * H + k] +
						  b_hh[3 * H + k]);
				ACC cv = gf * c[b * H + k] + gi * gg;
				c[b * H + k] = (T)cv;
				h[b * H + k] = (T)(go * tanh(cv));
				y[r * H + k] = h[b * H + k];
				if (act) {
					act[r * G + k] = (T)gi;
					act[r * G + H + k] = (T)gf;
					act[r * G + 2 * H + k] = (T)gg;
					act[r * G + 3 * H + k] = (T)go;
				}
				if (cs)
					cs[r * H + k] = (T)cv;
			}
		}
	}
	if (hn)
		memcpy(hn, h, sizeof(T) * (size_t)(q.b * H));
	if (cn)
		memcpy(cn, c, sizeof(T) * (size_t)(q.b * H));
	free(xw);
	free(hw);
	free(h);
	free(c);
}

static void FN(lstm_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out)
{
	FN(lstm_run)(nd, in, out[0].d, out[1].d, out[2].d, NULL, NULL, NULL, NULL);
}

/* Accumulates the weight, bias and input gradients from the gate
 * pre-activation gradients da [rows, G] (x-row order) and the previous
 * hidden states hp [rows, H]. */
static void FN(rnn_param_grads)(const struct FN(rnn_geo) *q, const struct task_val *in,
				struct task_val *din, const T *da, const T *dah, const T *hp)
{
	int64_t rows = q->t * q->b, G = q->g * q->h;
	if (din[0].d) /* dx += da · w_ih */
		GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)q->i, (int)G, 1.0,
		     da, (int)G, in[q->g == 4 ? 3 : 2].d, (int)q->i, 1.0, din[0].d, (int)q->i);
	int wi = q->g == 4 ? 3 : 2;
	if (din[wi].d) /* dw_ih += da^T · x */
		GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)G, (int)q->i, (int)rows, 1.0, da,
		     (int)G, in[0].d, (int)q->i, 1.0, din[wi].d, (int)q->i);
	if (din[wi + 1].d) /* dw_hh += dah^T · hp */
		GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)G, (int)q->h, (int)rows, 1.0, dah,
		     (int)G, hp, (int)q->h, 1.0, din[wi + 1].d, (int)q->h);
	for (int64_t r = 0; r < rows; r++)
		for (int64_t k = 0; k < G; k++) {
			if (din[wi + 2].d)
				((T *)din[wi + 2].d)[k] += da[r * G + k];
			if (din[wi + 3].d)
				((T *)din[wi + 3].d)[k] += dah[r * G + k];
		}
}

static void FN(lstm_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *out, const struct task_val *dout,
			 struct task_val *din)
{
	struct FN(rnn_geo) q = FN(rnn_geo)(nd, in, 4);
	int64_t rows = q.t * q.b, G = 4 * q.h, H = q.h, BH = q.b * H;
	size_t szr = sizeof(T) * (size_t)rows;
	T *act = malloc(szr * (size_t)G), *cs = malloc(szr * (size_t)H), *hp = malloc(szr * (size_t)H);
	T *cp = malloc(szr * (size_t)H), *da = calloc((size_t)(rows * G), sizeof(T));
	T *y = malloc(szr * (size_t)H), *dh = malloc(sizeof(T) * (size_t)BH);
	T *dc = malloc(sizeof(T) * (size_t)BH), *dst = malloc(sizeof(T) * (size_t)(q.b * G));
	const T *dy = dout[0].d, *w_hh = in[4].d;
	(void)out;

	if (!act || !cs || !hp || !cp || !da || !y || !dh || !dc || !dst)
		abort();
	FN(lstm_run)(nd, in, y, NULL, NULL, act, cs, hp, cp);
	memcpy(dh, dout[1].d, sizeof(T) * (size_t)BH);
	memcpy(dc, dout[2].d, sizeof(T) * (size_t)BH);
	for (int64_t s = q.t - 1; s >= 0; s--) {
		for (int64_t b = 0; b < q.b; b++) {
			int64_t r = FN(rnn_row)(&q, s, b);
			for (int64_t k = 0; k < H; k++) {
				const T *a = act + r * G;
				ACC gi = a[k], gf = a[H + k], gg = a[2 * H + k], go = a[3 * H + k];
				ACC tc = tanh((ACC)cs[r * H + k]);
				ACC dhv = (ACC)dh[b * H + k] + dy[r * H + k];
				ACC dcv = (ACC)dc[b * H + k] + dhv * go * (1 - tc * tc);
				T *d = dst + b * G;
				d[k] = (T)(dcv * gg * gi * (1 - gi));
				d[H + k] = (T)(dcv * cp[r * H + k] * gf * (1 - gf));
				d[2 * H + k] = (T)(dcv * gi * (1 - gg * gg));
				d[3 * H + k] = (T)(dhv * tc * go * (1 - go));
				dc[b * H + k] = (T)(dcv * gf);
			}
			memcpy(da + r * G, dst + b * G, sizeof(T) * (size_t)G);
		}
		/* dh_prev = da_step · w_hh */
		GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)q.b, (int)H, (int)G, 1.0, dst,
		     (int)G, w_hh, (int)H, 0.0, dh, (int)H);
	}
	if (din[1].d)
		for (int64_t e = 0; e < BH; e++)
			((T *)din[1].d)[q.ix + e] += dh[e];
	if (din[2].d)
		for (int64_t e = 0; e < BH; e++)
			((T *)din[2].d)[q.ix + e] += dc[e];
	FN(rnn_param_grads)(&q, in, din, da, da, hp);
	free(act); free(cs); free(hp); free(cp); free(da); free(y); free(dh); free(dc); free(dst);
}

/* GRU (gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
 * h = (1 - z) * n + z * h_prev). Inputs x, h0, w_ih, w_hh, b_ih, b_hh.
 * Fills per x row: act[r] = (r, z, n), hnp[r] = W_hn h + b_hn, hp[r]. */
static void FN(gru_run)(const struct task_node *nd, const struct task_val *in, T *y, T *hn,
			T *act, T *hnp, T *hp)
{
	struct FN(rnn_geo) q = FN(rnn_geo)(nd, in, 3);
	int64_t rows = q.t * q.b, G = 3 * q.h, H = q.h;
	const T *w_ih = in[2].d, *w_hh = in[3].d, *b_ih = in[4].d, *b_hh = in[5].d;
	T *xw = malloc(sizeof(T) * (size_t)(rows * G)), *hw = malloc(sizeof(T) * (size_t)(q.b * G));
	T *h = malloc(sizeof(T) * (size_t)(q.b * H));

	if (!xw || !hw || !h)
		abort();
	GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)G, (int)q.i, 1.0, in[0].d,
	     (int)q.i, w_ih, (int)q.i, 0.0, xw, (int)G);
	memcpy(h, (const T *)in[1].d + q.ix, sizeof(T) * (size_t)(q.b * H));
	for (int64_t s = 0; s < q.t; s++) {
		GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)q.b, (int)G, (int)H, 1.0, h,
		     (int)H, w_hh, (int)H, 0.0, hw, (int)G);
		for (int64_t b = 0; b < q.b; b++) {
			int64_t r = FN(rnn_row)(&q, s, b);
			const T *xr = xw + r * G, *hr = hw + b * G;
			if (hp)
				memcpy(hp + r * H, h + b * H, sizeof(T) * (size_t)H);
			for (int64_t k = 0; k < H; k++) {
				ACC gr = FN(sigm)((ACC)xr[k] + b_ih[k] + hr[k] + b_hh[k]);
				ACC gz = FN(sigm)((ACC)xr[H + k] + b_ih[H + k] + hr[H + k] + b_hh[H + k]);
				ACC hnv = (ACC)hr[2 * H + k] + b_hh[2 * H + k];
				ACC gn = tanh((ACC)xr[2 * H + k] + b_ih[2 * H + k] + gr * hnv);
				ACC hv = (1 - gz) * gn + gz * h[b * H + k];
				h[b * H + k] = (T)hv;
				y[r * H + k] = (T)hv;
				if (act) {
					act[r * G + k] = (T)gr;
					act[r * G + H + k] = (T)gz;
					act[r * G + 2 * H + k] = (T)gn;
					hnp[r * H + k] = (T)hnv;
				}
			}
		}
	}
	if (hn)
		memcpy(hn, h, sizeof(T) * (size_t)(q.b * H));
	free(xw);
	free(hw);
	free(h);
}

static void FN(gru_fwd)(const struct task_node *nd, const struct task_val *in,
			struct task_val *out)
{
	FN(gru_run)(nd, in, out[0].d, out[1].d, NULL, NULL, NULL);
}

static void FN(gru_bwd)(const struct task_node *nd, const struct task_val *in,
			const struct task_val *out, const struct task_val *dout,
			struct task_val *din)
{
	struct FN(rnn_geo) q = FN(rnn_geo)(nd, in, 3);
	int64_t rows = q.t * q.b, G = 3 * q.h, H = q.h, BH = q.b * H;
	size_t szr = sizeof(T) * (size_t)rows;
	T *act = malloc(szr * (size_t)G), *hnp = malloc(szr * (size_t)H), *hp = malloc(szr * (size_t)H);
	T *da = malloc(szr * (size_t)G), *dah = malloc(szr * (size_t)G), *y = malloc(szr * (size_t)H);
	T *dh = malloc(sizeof(T) * (size_t)BH), *dhn = malloc(sizeof(T) * (size_t)BH);
	T *dst = malloc(sizeof(T) * (size_t)(q.b * G));
	const T *dy = dout[0].d, *w_hh = in[3].d;
	(void)out;

	if (!act || !hnp || !hp || !da || !dah || !y || !dh || !dhn || !dst)
		abort();
	FN(gru_run)(nd, in, y, NULL, act, hnp, hp);
	memcpy(dh, dout[1].d, sizeof(T) * (size_t)BH);
	for (int64_t s = q.t - 1; s >= 0; s--) {
		for (int64_t b = 0; b < q.b; b++) {
			int64_t r = FN(rnn_row)(&q, s, b);
			const T *a = act + r * G;
			T *d = dst + b * G;
			for (int64_t k = 0; k < H; k++) {
				ACC gr = a[k], gz = a[H + k], gn = a[2 * H + k], hv = hnp[r * H + k];
				ACC dhv = (ACC)dh[b * H + k] + dy[r * H + k];
				ACC dan = dhv * (1 - gz) * (1 - gn * gn);
				ACC daz = dhv * ((ACC)hp[r * H + k] - gn) * gz * (1 - gz);
				ACC dar = dan * hv * gr * (1 - gr);
				da[r * G + k] = (T)dar;
				da[r * G + H + k] = (T)daz;
				da[r * G + 2 * H + k] = (T)dan;
				d[k] = (T)dar;
				d[H + k] = (T)daz;
				d[2 * H + k] = (T)(dan * gr);
				dhn[b * H + k] = (T)(dhv * gz);
			}
			memcpy(dah + r * G, d, sizeof(T) * (size_t)G);
		}
		/* dh_prev = z * dh + dah_step · w_hh */
		memcpy(dh, dhn, sizeof(T) * (size_t)BH);
		GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)q.b, (int)H, (int)G, 1.0, dst,
		     (int)G, w_hh, (int)H, 1.0, dh, (int)H);
	}
	if (din[1].d)
		for (int64_t e = 0; e < BH; e++)
			((T *)din[1].d)[q.ix + e] += dh[e];
	FN(rnn_param_grads)(&q, in, din, da, dah, hp);
	free(act); free(hnp); free(hp); free(da); free(dah); free(y); free(dh); free(dhn); free(dst);
}

/* ---- attn_scores: s[.., t, u] = q[.., t, :] . k[.., u, :] * scale, scale
 * 1/sqrt(D) (D q's last extent) unless given; "causal": u > t is -inf (the
 * masked_fill of a causal mask before softmax or ReLU) ---- */

static void FN(attn_geo)(const struct task_node *nd, const struct task_val *in, int64_t *nb,
			 int64_t *t, int64_t *u, int64_t *d, double *scale)
{
	int r = in[0].rank;
	*t = in[0].shape[r - 2];
	*d = in[0].shape[r - 1];
	*u = in[1].shape[r - 2];
	*nb = in[0].n / (*t * *d);
	*scale = task_node_float(nd, "scale", 1.0 / sqrt((double)*d));
}

static void FN(attn_scores_fwd)(const struct task_node *nd, const struct task_val *in,
				struct task_val *out)
{
	int64_t nb, t, u, d;
	double scale;
	bool causal = task_node_int(nd, "causal", 0) != 0;
	const T *q = in[0].d, *k = in[1].d;
	T *s = out[0].d;

	FN(attn_geo)(nd, in, &nb, &t, &u, &d, &scale);
	for (int64_t b = 0; b < nb; b++) {
		T *sb = s + b * t * u;
		GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)t, (int)u, (int)d, (T)scale,
		     q + b * t * d, (int)d, k + b * u * d, (int)d, 0.0, sb, (int)u);
		if (causal)
			for (int64_t i = 0; i < t; i++)
				for (int64_t j = i + 1; j < u; j++)
					sb[i * u + j] = (T)-INFINITY;
	}
}

static void FN(attn_scores_bwd)(const struct task_node *nd, const struct task_val *in,
				const struct task_val *out, const struct task_val *dout,
				struct task_val *din)
{
	int64_t nb, t, u, d;
	double scale;
	bool causal = task_node_int(nd, "causal", 0) != 0;
	const T *q = in[0].d, *k = in[1].d, *ds = dout[0].d;
	T *dq = din[0].d, *dk = din[1].d, *g;
	(void)out;

	FN(attn_geo)(nd, in, &nb, &t, &u, &d, &scale);
	g = malloc(sizeof(T) * (size_t)(t * u));
	if (!g)
		abort();
	for (int64_t b = 0; b < nb; b++) {
		/* the masked entries are constants: no gradient flows through them */
		memcpy(g, ds + b * t * u, sizeof(T) * (size_t)(t * u));
		if (causal)
			for (int64_t i = 0; i < t; i++)
				for (int64_t j = i + 1; j < u; j++)
					g[i * u + j] = 0;
		if (dq) /* dq += g . k * scale */
			GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)t, (int)d, (int)u, (T)scale,
			     g, (int)u, k + b * u * d, (int)d, 1.0, dq + b * t * d, (int)d);
		if (dk) /* dk += g^T . q * scale */
			GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)u, (int)d, (int)t, (T)scale,
			     g, (int)u, q + b * t * d, (int)d, 1.0, dk + b * u * d, (int)d);
	}
	free(g);
}

/* ---- pad / slice along one axis: outer x len x inner, the copied run of
 * len' elements at an offset on the longer side ---- */

/* Copies (or, back, accumulates) rows of `run` elements between a tensor
 * with `lx` entries on the axis and one with `ly`, at offsets ox and oy. */
static void FN(band_run)(const T *src, T *dst, int64_t outer, int64_t inner, int64_t ls,
			 int64_t os, int64_t ld, int64_t od, int64_t run, bool acc)
{
	for (int64_t a = 0; a < outer; a++) {
		const T *s = src + (a * ls + os) * inner;
		T *d = dst + (a * ld + od) * inner;
		if (acc)
			for (int64_t e = 0; e < run * inner; e++)
				d[e] += s[e];
		else
			memcpy(d, s, sizeof(T) * (size_t)(run * inner));
	}
}

static void FN(pad_fwd)(const struct task_node *nd, const struct task_val *in,
			struct task_val *out)
{
	int64_t outer, inner, before, len;
	nn_band(nd, &in[0], &out[0], &outer, &inner, &before, &len);
	memset(out[0].d, 0, sizeof(T) * (size_t)out[0].n);
	FN(band_run)(in[0].d, out[0].d, outer, inner, len, 0, out[0].n / (outer * inner), before,
		     len, false);
}

static void FN(pad_bwd)(const struct task_node *nd, const struct task_val *in,
			const struct task_val *out, const struct task_val *dout,
			struct task_val *din)
{
	int64_t outer, inner, before, len;
	if (!din[0].d)
		return;
	nn_band(nd, &in[0], &out[0], &outer, &inner, &before, &len);
	FN(band_run)(dout[0].d, din[0].d, outer, inner, out[0].n / (outer * inner), before, len,
		     0, len, true);
}

static void FN(slice_fwd)(const struct task_node *nd, const struct task_val *in,
			  struct task_val *out)
{
	int64_t outer, inner, start, len;
	nn_band(nd, &in[0], &out[0], &outer, &inner, &start, &len);
	FN(band_run)(in[0].d, out[0].d, outer, inner, in[0].n / (outer * inner), start, len, 0,
		     len, false);
}

static void FN(slice_bwd)(const struct task_node *nd, const struct task_val *in,
			  const struct task_val *out, const struct task_val *dout,
			  struct task_val *din)
{
	int64_t outer, inner, start, len;
	if (!din[0].d)
		return;
	nn_band(nd, &in[0], &out[0], &outer, &inner, &start, &len);
	FN(band_run)(dout[0].d, din[0].d, outer, inner, len, 0, in[0].n / (outer * inner), start,
		     len, true);
}

/* ---- segsum: x [.., T] -> y [.., T, T], y[i][j] = x[j+1] + .. + x[i] for
 * j <= i (0 on the diagonal), -inf above it: Mamba-2's stable segment sum,
 * the exact value of its naive cumsum[i] - cumsum[j] with the tril mask ---- */

static void FN(segsum_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	int64_t t = in[0].shape[in[0].rank - 1], rows = in[0].n / t;
	const T *x = in[0].d;
	T *y = out[0].d;
	(void)nd;
	for (int64_t r = 0; r < rows; r++) {
		const T *xr = x + r * t;
		T *yr = y + r * t * t;
		for (int64_t i = 0; i < t; i++) {
			ACC s = 0;
			yr[i * t + i] = 0;
			for (int64_t j = i - 1; j >= 0; j--) {
				s += xr[j + 1];
				yr[i * t + j] = (T)s;
			}
			for (int64_t j = i + 1; j < t; j++)
				yr[i * t + j] = (T)-INFINITY;
		}
	}
}

/* dx[k] = sum of dy[i][j] over j < k <= i: the entries whose segment holds
 * x[k]; the masked ones are constants (masked_fill), with no gradient. */
static void FN(segsum_bwd)(const struct task_node *nd, const struct task_val *in,
			   const struct task_val *out, const struct task_val *dout,
			   struct task_val *din)
{
	int64_t t = in[0].shape[in[0].rank - 1], rows = in[0].n / t;
	const T *dy = dout[0].d;
	T *dx = din[0].d;
	(void)nd; (void)out;
	if (!dx)
		return;
	for (int64_t r = 0; r < rows; r++) {
		const T *g = dy + r * t * t;
		T *dxr = dx + r * t;
		for (int64_t i = 1; i < t; i++) {
			ACC run = 0; /* dy[i][0] + .. + dy[i][k-1] */
			for (int64_t k = 1; k <= i; k++) {
				run += g[i * t + k - 1];
				dxr[k] += (T)run;
			}
		}
	}
}

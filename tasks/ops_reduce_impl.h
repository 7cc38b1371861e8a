/* ops_reduce_impl.h — reduction, softmax-family, scan, norm and loss op
 * bodies, written once and included twice by ops_reduce.c (T=double/
 * ACC=double: the reference; T=float/ACC=float: the cpu baseline). Expects
 * T, ACC, FN(x) and the math macros EXP, LOG, SQRT, FABS.
 *
 * Reductions see their input as outer × len × inner, len the product of the
 * reduced (consecutive) axes; see rd_split in ops_reduce.c. Gradients are
 * recomputed from the inputs, never read from the forward outputs. */

#define K(c) ((ACC)(c))

/* ---- sum / mean / prod / max / min / argmax / argmin ---- */

static void FN(sum_like_fwd)(const struct task_node *nd, const struct task_val *in,
			     struct task_val *out, bool mean)
{
	int64_t o, len, inner;
	const T *x = in[0].d;
	T *y = out[0].d;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++) {
		T *yr = y + a * inner;
		for (int64_t c = 0; c < inner; c++)
			yr[c] = 0;
		for (int64_t k = 0; k < len; k++) {
			const T *xr = x + (a * len + k) * inner;
			for (int64_t c = 0; c < inner; c++)
				yr[c] += xr[c];
		}
		if (mean)
			for (int64_t c = 0; c < inner; c++)
				yr[c] = (T)(yr[c] / (ACC)len);
	}
}

static void FN(sum_like_bwd)(const struct task_node *nd, const struct task_val *in,
			     const struct task_val *dout, struct task_val *din, bool mean)
{
	int64_t o, len, inner;
	const T *dy = dout[0].d;
	T *dx = din[0].d;
	if (!dx)
		return;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t k = 0; k < len; k++)
			for (int64_t c = 0; c < inner; c++)
				dx[(a * len + k) * inner + c] +=
					mean ? (T)(dy[a * inner + c] / (ACC)len) : dy[a * inner + c];
}

static void FN(reduce_sum_fwd)(const struct task_node *nd, const struct task_val *in,
			       struct task_val *out)
{
	FN(sum_like_fwd)(nd, in, out, false);
}

static void FN(reduce_sum_bwd)(const struct task_node *nd, const struct task_val *in,
			       const struct task_val *out, const struct task_val *dout,
			       struct task_val *din)
{
	(void)out;
	FN(sum_like_bwd)(nd, in, dout, din, false);
}

static void FN(mean_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out)
{
	FN(sum_like_fwd)(nd, in, out, true);
}

static void FN(mean_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *out, const struct task_val *dout,
			 struct task_val *din)
{
	(void)out;
	FN(sum_like_bwd)(nd, in, dout, din, true);
}

/* prod; backward without division (zero-safe): for the lane x_0..x_{L-1},
 * d/dx_j = prod_{i<j} x_i * prod_{i>j} x_i, from prefix and suffix products */
static void FN(prod_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out)
{
	int64_t o, len, inner;
	const T *x = in[0].d;
	T *y = out[0].d;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			ACC p = 1;
			for (int64_t k = 0; k < len; k++)
				p *= x[(a * len + k) * inner + c];
			y[a * inner + c] = (T)p;
		}
}

static void FN(prod_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *out, const struct task_val *dout,
			 struct task_val *din)
{
	int64_t o, len, inner;
	const T *x = in[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	ACC *suf;
	(void)out;
	if (!dx)
		return;
	rd_split(nd, &in[0], &o, &len, &inner);
	if (!(suf = malloc(sizeof *suf * (size_t)len))) {
		for (int64_t i = 0; i < in[0].n; i++)
			dx[i] = (T)NAN; /* visible, never silently wrong */
		return;
	}
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			const T *xl = x + a * len * inner + c;
			T *dl = dx + a * len * inner + c;
			ACC pre = 1, g = dy[a * inner + c];
			suf[len - 1] = 1;
			for (int64_t k = len - 1; k > 0; k--)
				suf[k - 1] = suf[k] * xl[k * inner];
			for (int64_t k = 0; k < len; k++) {
				dl[k * inner] += (T)(g * pre * suf[k]);
				pre *= xl[k * inner];
			}
		}
	free(suf);
}

/* max/min along one axis: torch.max(dim) values, the gradient goes to the
 * first index of the extreme value (the returned index). Over several axes
 * (amax/amin semantics) the gradient is split evenly among ties. */
static void FN(ext_fwd)(const struct task_node *nd, const struct task_val *in,
			struct task_val *out, int sgn, bool arg)
{
	int64_t o, len, inner;
	const T *x = in[0].d;
	T *y = out[0].d;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			const T *xl = x + a * len * inner + c;
			T best = xl[0];
			int64_t bi = 0;
			for (int64_t k = 1; k < len; k++) {
				T v = xl[k * inner];
				if (sgn > 0 ? v > best : v < best) {
					best = v;
					bi = k;
				}
			}
			y[a * inner + c] = arg ? (T)bi : best;
		}
}

static void FN(ext_bwd)(const struct task_node *nd, const struct task_val *in,
			const struct task_val *dout, struct task_val *din, int sgn)
{
	int64_t o, len, inner;
	const T *x = in[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	bool split = rd_naxes(nd, in[0].rank) > 1;
	if (!dx)
		return;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			const T *xl = x + a * len * inner + c;
			T *dl = dx + a * len * inner + c;
			T best = xl[0];
			int64_t bi = 0, ties = 0;
			for (int64_t k = 1; k < len; k++) {
				T v = xl[k * inner];
				if (sgn > 0 ? v > best : v < best) {
					best = v;
					bi = k;
				}
			}
			if (!split) {
				dl[bi * inner] += dy[a * inner + c];
				continue;
			}
			for (int64_t k = 0; k < len; k++)
				ties += xl[k * inner] == best;
			for (int64_t k = 0; k < len; k++)
				if (xl[k * inner] == best)
					dl[k * inner] += (T)(dy[a * inner + c] / (ACC)ties);
		}
}

static void FN(max_fwd)(const struct task_node *nd, const struct task_val *in,
			struct task_val *out)
{
	FN(ext_fwd)(nd, in, out, 1, false);
}

static void FN(max_bwd)(const struct task_node *nd, const struct task_val *in,
			const struct task_val *out, const struct task_val *dout,
			struct task_val *din)
{
	(void)out;
	FN(ext_bwd)(nd, in, dout, din, 1);
}

static void FN(min_fwd)(const struct task_node *nd, const struct task_val *in,
			struct task_val *out)
{
	FN(ext_fwd)(nd, in, out, -1, false);
}

static void FN(min_bwd)(const struct task_node *nd, const struct task_val *in,
			const struct task_val *out, const struct task_val *dout,
			struct task_val *din)
{
	(void)out;
	FN(ext_bwd)(nd, in, dout, din, -1);
}

static void FN(argmax_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	FN(ext_fwd)(nd, in, out, 1, true);
}

static void FN(argmin_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	FN(ext_fwd)(nd, in, out, -1, true);
}

/* ---- log_softmax, logsumexp (one axis "dim") ---- */

/* max and log(sum exp(x - max)) of one lane */
static void FN(lane_lse)(const T *xl, int64_t len, int64_t inner, ACC *m, ACC *lse)
{
	ACC mx = xl[0], s = 0;
	for (int64_t k = 1; k < len; k++)
		if (xl[k * inner] > mx)
			mx = xl[k * inner];
	if (isinf(mx)) {
		*m = mx;
		*lse = mx;
		return;
	}
	for (int64_t k = 0; k < len; k++)
		s += EXP((ACC)xl[k * inner] - mx);
	*m = mx;
	*lse = mx + LOG(s);
}

static void FN(log_softmax_fwd)(const struct task_node *nd, const struct task_val *in,
				struct task_val *out)
{
	int64_t o, len, inner;
	const T *x = in[0].d;
	T *y = out[0].d;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC m, lse;
			FN(lane_lse)(x + base, len, inner, &m, &lse);
			for (int64_t k = 0; k < len; k++)
				y[base + k * inner] = (T)((ACC)x[base + k * inner] - lse);
		}
}

static void FN(log_softmax_bwd)(const struct task_node *nd, const struct task_val *in,
				const struct task_val *out, const struct task_val *dout,
				struct task_val *din)
{
	int64_t o, len, inner;
	const T *x = in[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	(void)out;
	if (!dx)
		return;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC m, lse, s = 0;
			FN(lane_lse)(x + base, len, inner, &m, &lse);
			for (int64_t k = 0; k < len; k++)
				s += dy[base + k * inner];
			for (int64_t k = 0; k < len; k++)
				dx[base + k * inner] += (T)((ACC)dy[base + k * inner] -
							    EXP((ACC)x[base + k * inner] - lse) * s);
		}
}

static void FN(logsumexp_fwd)(const struct task_node *nd, const struct task_val *in,
			      struct task_val *out)
{
	int64_t o, len, inner;
	const T *x = in[0].d;
	T *y = out[0].d;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			ACC m, lse;
			FN(lane_lse)(x + a * len * inner + c, len, inner, &m, &lse);
			y[a * inner + c] = (T)lse;
		}
}

static void FN(logsumexp_bwd)(const struct task_node *nd, const struct task_val *in,
			      const struct task_val *out, const struct task_val *dout,
			      struct task_val *din)
{
	int64_t o, len, inner;
	const T *x = in[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	(void)out;
	if (!dx)
		return;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC m, lse, g = dy[a * inner + c];
			FN(lane_lse)(x + base, len, inner, &m, &lse);
			for (int64_t k = 0; k < len; k++)
				dx[base + k * inner] += (T)(g * EXP((ACC)x[base + k * inner] - lse));
		}
}

/* ---- scans: cumsum / cumprod along "dim", flags "reverse", "exclusive" ---- */

/* Lane position p (scan order) -> element offset. */
#define LANE(p) (base + (rev ? len - 1 - (p) : (p)) * inner)

static void FN(cumsum_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	int64_t o, len, inner;
	const bool rev = task_node_int(nd, "reverse", 0), exc = task_node_int(nd, "exclusive", 0);
	const T *x = in[0].d;
	T *y = out[0].d;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC s = 0;
			for (int64_t p = 0; p < len; p++) {
				if (exc) {
					y[LANE(p)] = (T)s;
					s += x[LANE(p)];
				} else {
					s += x[LANE(p)];
					y[LANE(p)] = (T)s;
				}
			}
		}
}

/* dx_j = sum over later outputs of dy: the scan of dy in the other direction */
static void FN(cumsum_bwd)(const struct task_node *nd, const struct task_val *in,
			   const struct task_val *out, const struct task_val *dout,
			   struct task_val *din)
{
	int64_t o, len, inner;
	const bool rev = !task_node_int(nd, "reverse", 0), exc = task_node_int(nd, "exclusive", 0);
	const T *dy = dout[0].d;
	T *dx = din[0].d;
	(void)out;
	if (!dx)
		return;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC s = 0;
			for (int64_t p = 0; p < len; p++) {
				if (exc) {
					dx[LANE(p)] += (T)s;
					s += dy[LANE(p)];
				} else {
					s += dy[LANE(p)];
					dx[LANE(p)] += (T)s;
				}
			}
		}
}

static void FN(cumprod_fwd)(const struct task_node *nd, const struct task_val *in,
			    struct task_val *out)
{
	int64_t o, len, inner;
	const bool rev = task_node_int(nd, "reverse", 0), exc = task_node_int(nd, "exclusive", 0);
	const T *x = in[0].d;
	T *y = out[0].d;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC s = 1;
			for (int64_t p = 0; p < len; p++) {
				if (exc) {
					y[LANE(p)] = (T)s;
					s *= x[LANE(p)];
				} else {
					s *= x[LANE(p)];
					y[LANE(p)] = (T)s;
				}
			}
		}
}

/* Zero-safe, division-free: in scan order with P_j = prod_{i<j} x_i,
 * inclusive: dx_j = P_j * S_j, S_j = dy_j + x_{j+1} S_{j+1};
 * exclusive: dx_j = P_j * R_j, R_j = dy_{j+1} + x_{j+1} R_{j+1}. */
static void FN(cumprod_bwd)(const struct task_node *nd, const struct task_val *in,
			    const struct task_val *out, const struct task_val *dout,
			    struct task_val *din)
{
	int64_t o, len, inner;
	const bool rev = task_node_int(nd, "reverse", 0), exc = task_node_int(nd, "exclusive", 0);
	const T *x = in[0].d, *dy = dout[0].d;
	T *dx = din[0].d;
	ACC *sv;
	(void)out;
	if (!dx)
		return;
	rd_split(nd, &in[0], &o, &len, &inner);
	if (!(sv = malloc(sizeof *sv * (size_t)len))) {
		for (int64_t i = 0; i < in[0].n; i++)
			dx[i] = (T)NAN; /* visible, never silently wrong */
		return;
	}
	for (int64_t a = 0; a < o; a++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = a * len * inner + c;
			ACC s = 0, pre = 1;
			for (int64_t p = len - 1; p >= 0; p--) {
				if (exc)
					s = p + 1 < len ? (ACC)dy[LANE(p + 1)] + (ACC)x[LANE(p + 1)] * s : 0;
				else
					s = (ACC)dy[LANE(p)] + (p + 1 < len ? (ACC)x[LANE(p + 1)] * s : 0);
				sv[p] = s;
			}
			for (int64_t p = 0; p < len; p++) {
				dx[LANE(p)] += (T)(pre * sv[p]);
				pre *= x[LANE(p)];
			}
		}
	free(sv);
}

#undef LANE

/* ---- batch / instance / group norm over x[N, C, S...] ---- */

/* Mean and 1/sqrt(biased var + eps) per statistics group (see nm_stat).
 * st holds 2*nstat ACCs: mean then rstd. */
static void FN(norm_stats)(int mode, const T *x, int64_t n, int64_t ch, int64_t sp, int64_t g,
			   double eps, ACC *st)
{
	int64_t ns = nm_nstat(mode, n, ch, g), cnt = n * ch * sp / ns;
	ACC *mu = st, *rs = st + ns;
	for (int64_t i = 0; i < 2 * ns; i++)
		st[i] = 0;
	for (int64_t a = 0; a < n; a++)
		for (int64_t c = 0; c < ch; c++) {
			const T *xr = x + (a * ch + c) * sp;
			ACC s = 0;
			for (int64_t k = 0; k < sp; k++)
				s += xr[k];
			mu[nm_stat(mode, a, c, ch, g)] += s;
		}
	for (int64_t i = 0; i < ns; i++)
		mu[i] /= (ACC)cnt;
	for (int64_t a = 0; a < n; a++)
		for (int64_t c = 0; c < ch; c++) {
			const T *xr = x + (a * ch + c) * sp;
			int64_t q = nm_stat(mode, a, c, ch, g);
			ACC s = 0, m = mu[q];
			for (int64_t k = 0; k < sp; k++)
				s += ((ACC)xr[k] - m) * ((ACC)xr[k] - m);
			rs[q] += s;
		}
	for (int64_t i = 0; i < ns; i++)
		rs[i] = K(1) / SQRT(rs[i] / (ACC)cnt + (ACC)eps);
}

static void FN(norm_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out, int mode)
{
	int64_t n, ch, sp, g = nm_groups(nd, mode);
	const T *x = in[0].d, *w = nd->n_in > 1 ? in[1].d : NULL, *b = nd->n_in > 2 ? in[2].d : NULL;
	T *y = out[0].d;
	ACC *st;
	nm_split(&in[0], &n, &ch, &sp);
	if (!(st = malloc(sizeof *st * 2 * (size_t)nm_nstat(mode, n, ch, g)))) {
		for (int64_t i = 0; i < in[0].n; i++)
			y[i] = (T)NAN;
		return;
	}
	FN(norm_stats)(mode, x, n, ch, sp, g, task_node_float(nd, "eps", 1e-5), st);
	for (int64_t a = 0; a < n; a++)
		for (int64_t c = 0; c < ch; c++) {
			int64_t q = nm_stat(mode, a, c, ch, g), off = (a * ch + c) * sp;
			ACC m = st[q], r = st[nm_nstat(mode, n, ch, g) + q];
			ACC sw = w ? (ACC)w[c] : K(1), sb = b ? (ACC)b[c] : K(0);
			for (int64_t k = 0; k < sp; k++)
				y[off + k] = (T)(((ACC)x[off + k] - m) * r * sw + sb);
		}
	free(st);
}

/* With batch statistics (training mode): dx = rstd * (dxh - mean(dxh) -
 * xh * mean(dxh * xh)) over each statistics group, dxh = dy * w. */
static void FN(norm_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *dout, struct task_val *din, int mode)
{
	int64_t n, ch, sp, g = nm_groups(nd, mode), ns;
	const T *x = in[0].d, *w = nd->n_in > 1 ? in[1].d : NULL, *dy = dout[0].d;
	T *dx = din[0].d, *dw = nd->n_in > 1 ? din[1].d : NULL, *db = nd->n_in > 2 ? din[2].d : NULL;
	ACC *st;
	nm_split(&in[0], &n, &ch, &sp);
	ns = nm_nstat(mode, n, ch, g);
	if (!(st = malloc(sizeof *st * 4 * (size_t)ns))) {
		if (dx)
			for (int64_t i = 0; i < in[0].n; i++)
				dx[i] = (T)NAN;
		return;
	}
	FN(norm_stats)(mode, x, n, ch, sp, g, task_node_float(nd, "eps", 1e-5), st);
	ACC *s1 = st + 2 * ns, *s2 = st + 3 * ns, cnt = (ACC)(n * ch * sp / ns);
	for (int64_t i = 0; i < ns; i++)
		s1[i] = s2[i] = 0;
	for (int64_t a = 0; a < n; a++)
		for (int64_t c = 0; c < ch; c++) {
			int64_t q = nm_stat(mode, a, c, ch, g), off = (a * ch + c) * sp;
			ACC m = st[q], r = st[ns + q], sw = w ? (ACC)w[c] : K(1);
			ACC gsum = 0, gx = 0;
			for (int64_t k = 0; k < sp; k++) {
				ACC xh = ((ACC)x[off + k] - m) * r, d = dy[off + k];
				gsum += d;
				gx += d * xh;
			}
			if (dw)
				dw[c] += (T)gx;
			if (db)
				db[c] += (T)gsum;
			s1[q] += gsum * sw;
			s2[q] += gx * sw;
		}
	if (dx)
		for (int64_t a = 0; a < n; a++)
			for (int64_t c = 0; c < ch; c++) {
				int64_t q = nm_stat(mode, a, c, ch, g), off = (a * ch + c) * sp;
				ACC m = st[q], r = st[ns + q], sw = w ? (ACC)w[c] : K(1);
				ACC m1 = s1[q] / cnt, m2 = s2[q] / cnt;
				for (int64_t k = 0; k < sp; k++) {
					ACC xh = ((ACC)x[off + k] - m) * r;
					dx[off + k] += (T)(r * ((ACC)dy[off + k] * sw - m1 - xh * m2));
				}
			}
	free(st);
}

#define NORM_OP(nm, mode)                                                                 \
	static void FN(nm##_fwd)(const struct task_node *nd, const struct task_val *in,      \
				 struct task_val *out)                                      \
	{                                                                                 \
		FN(norm_fwd)(nd, in, out, mode);                                          \
	}                                                                                 \
	static void FN(nm##_bwd)(const struct task_node *nd, const struct task_val *in,      \
				 const struct task_val *out, const struct task_val *dout,    \
				 struct task_val *din)                                      \
	{                                                                                 \
		(void)out;                                                                \
		FN(norm_bwd)(nd, in, dout, din, mode);                                    \
	}
NORM_OP(batchnorm, NM_BATCH)
NORM_OP(instancenorm, NM_INSTANCE)
NORM_OP(groupnorm, NM_GROUP)
#undef NORM_OP

/* layer_norm over the trailing "ndim" axes (nn.LayerNorm(normalized_shape)),
 * weight and bias of the normalized shape. */
static void FN(layer_norm_fwd)(const struct task_node *nd, const struct task_val *in,
			       struct task_val *out)
{
	int64_t d = ln_len(nd, &in[0]), rows = in[0].n / d;
	double eps = task_node_float(nd, "eps", 1e-5);
	const T *x = in[0].d, *w = in[1].d, *b = in[2].d;
	T *y = out[0].d;
	for (int64_t r = 0; r < rows; r++) {
		const T *xr = x + r * d;
		ACC mu = 0, var = 0, rs;
		for (int64_t k = 0; k < d; k++)
			mu += xr[k];
		mu /= (ACC)d;
		for (int64_t k = 0; k < d; k++)
			var += ((ACC)xr[k] - mu) * ((ACC)xr[k] - mu);
		rs = K(1) / SQRT(var / (ACC)d + (ACC)eps);
		for (int64_t k = 0; k < d; k++)
			y[r * d + k] = (T)(((ACC)xr[k] - mu) * rs * w[k] + b[k]);
	}
}

static void FN(layer_norm_bwd)(const struct task_node *nd, const struct task_val *in,
			       const struct task_val *out, const struct task_val *dout,
			       struct task_val *din)
{
	int64_t d = ln_len(nd, &in[0]), rows = in[0].n / d;
	double eps = task_node_float(nd, "eps", 1e-5);
	const T *x = in[0].d, *w = in[1].d, *dy = dout[0].d;
	T *dx = din[0].d, *dw = din[1].d, *db = din[2].d;
	(void)out;
	for (int64_t r = 0; r < rows; r++) {
		const T *xr = x + r * d, *dyr = dy + r * d;
		ACC mu = 0, var = 0, rs, g = 0, gx = 0;
		for (int64_t k = 0; k < d; k++)
			mu += xr[k];
		mu /= (ACC)d;
		for (int64_t k = 0; k < d; k++)
			var += ((ACC)xr[k] - mu) * ((ACC)xr[k] - mu);
		rs = K(1) / SQRT(var / (ACC)d + (ACC)eps);
		for (int64_t k = 0; k < d; k++) {
			ACC xh = ((ACC)xr[k] - mu) * rs, dh = (ACC)dyr[k] * w[k];
			g += dh;
			gx += dh * xh;
			if (dw)
				dw[k] += (T)(dyr[k] * xh);
			if (db)
				db[k] += dyr[k];
		}
		g /= (ACC)d;
		gx /= (ACC)d;
		if (dx)
			for (int64_t k = 0; k < d; k++) {
				ACC xh = ((ACC)xr[k] - mu) * rs;
				dx[r * d + k] += (T)(rs * ((ACC)dyr[k] * w[k] - g - xh * gx));
			}
	}
}

/* ---- losses (scalar output [1], mean reduction unless said) ---- */

/* F.smooth_l1_loss(p, t, beta): |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta */
static void FN(smooth_l1_loss_fwd)(const struct task_node *nd, const struct task_val *in,
				   struct task_val *out)
{
	const ACC be = (ACC)task_node_float(nd, "beta", 1.0);
	const T *p = in[0].d, *t = in[1].d;
	ACC s = 0;
	for (int64_t i = 0; i < in[0].n; i++) {
		ACC d = (ACC)p[i] - t[i], ad = FABS(d);
		s += ad < be ? K(0.5) * d * d / be : ad - K(0.5) * be;
	}
	((T *)out[0].d)[0] = (T)(s / (ACC)in[0].n);
}

static void FN(smooth_l1_loss_bwd)(const struct task_node *nd, const struct task_val *in,
				   const struct task_val *out, const struct task_val *dout,
				   struct task_val *din)
{
	const ACC be = (ACC)task_node_float(nd, "beta", 1.0);
	const T *p = in[0].d, *t = in[1].d;
	T *dp = din[0].d, *dt = din[1].d;
	ACC g = ((const T *)dout[0].d)[0] / (ACC)in[0].n;
	(void)out;
	for (int64_t i = 0; i < in[0].n; i++) {
		ACC d = (ACC)p[i] - t[i], ad = FABS(d);
		ACC v = ad < be ? d / be : d > 0 ? K(1) : d < 0 ? K(-1) : K(0);
		if (dp)
			dp[i] += (T)(g * v);
		if (dt)
			dt[i] -= (T)(g * v);
	}
}

/* F.kl_div(input, target) (input holds log-probabilities, log_target
 * False): sum of xlogy(t, t) - t * input, divided per "reduction":
 * batchmean (by the first extent; the default), sum, mean. */
static void FN(kl_div_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	const T *x = in[0].d, *t = in[1].d;
	ACC s = 0;
	for (int64_t i = 0; i < in[0].n; i++)
		s += (t[i] > 0 ? (ACC)t[i] * LOG((ACC)t[i]) : K(0)) - (ACC)t[i] * x[i];
	((T *)out[0].d)[0] = (T)(s / (ACC)kl_div_den(nd, &in[0]));
}

static void FN(kl_div_bwd)(const struct task_node *nd, const struct task_val *in,
			   const struct task_val *out, const struct task_val *dout,
			   struct task_val *din)
{
	const T *t = in[1].d;
	T *dx = din[0].d;
	ACC g = ((const T *)dout[0].d)[0] / (ACC)kl_div_den(nd, &in[0]);
	(void)out;
	if (!dx)
		return;
	for (int64_t i = 0; i < in[0].n; i++)
		dx[i] -= (T)(g * t[i]);
}

/* nn.TripletMarginLoss(margin, p=2, eps=1e-6, swap=False), mean over rows:
 * d(x, y) = ||x - y + eps||_2 over the last axis;
 * loss = mean(max(d(a,p) - d(a,n) + margin, 0)); the clamp passes the
 * gradient where its argument is >= 0 (ATen clamp_min). */
static void FN(triplet_rows)(const struct task_node *nd, const struct task_val *in,
			     const struct task_val *dout, struct task_val *din, T *out)
{
	const ACC mg = (ACC)task_node_float(nd, "margin", 1.0);
	const ACC eps = (ACC)task_node_float(nd, "eps", 1e-6);
	int64_t d = in[0].shape[in[0].rank - 1], rows = in[0].n / d;
	const T *a = in[0].d, *p = in[1].d, *q = in[2].d;
	ACC s = 0, g = dout ? ((const T *)dout[0].d)[0] / (ACC)rows : K(0);
	for (int64_t r = 0; r < rows; r++) {
		ACC dp = 0, dn = 0, l;
		for (int64_t k = 0; k < d; k++) {
			ACC u = (ACC)a[r * d + k] - p[r * d + k] + eps;
			ACC v = (ACC)a[r * d + k] - q[r * d + k] + eps;
			dp += u * u;
			dn += v * v;
		}
		dp = SQRT(dp);
		dn = SQRT(dn);
		l = dp - dn + mg;
		if (!dout) {
			s += l > 0 ? l : K(0);
			continue;
		}
		if (l < 0)
			continue;
		for (int64_t k = 0; k < d; k++) {
			ACC u = ((ACC)a[r * d + k] - p[r * d + k] + eps) / dp;
			ACC v = ((ACC)a[r * d + k] - q[r * d + k] + eps) / dn;
			if (din[0].d)
				((T *)din[0].d)[r * d + k] += (T)(g * (u - v));
			if (din[1].d)
				((T *)din[1].d)[r * d + k] -= (T)(g * u);
			if (din[2].d)
				((T *)din[2].d)[r * d + k] += (T)(g * v);
		}
	}
	if (out)
		out[0] = (T)(s / (ACC)rows);
}

static void FN(triplet_margin_loss_fwd)(const struct task_node *nd, const struct task_val *in,
					struct task_val *out)
{
	FN(triplet_rows)(nd, in, NULL, NULL, out[0].d);
}

static void FN(triplet_margin_loss_bwd)(const struct task_node *nd, const struct task_val *in,
					const struct task_val *out, const struct task_val *dout,
					struct task_val *din)
{
	(void)out;
	FN(triplet_rows)(nd, in, dout, din, NULL);
}

/* F.cosine_similarity(x1, x2, dim, eps=1e-8): dot / (max(|x1|, eps) *
 * max(|x2|, eps)) along one axis; the clamped norms carry no gradient. */
static void FN(cos_lanes)(const struct task_node *nd, const struct task_val *in,
			  const struct task_val *dout, struct task_val *din, T *y)
{
	int64_t o, len, inner;
	const ACC eps = (ACC)task_node_float(nd, "eps", 1e-8);
	const T *a = in[0].d, *b = in[1].d, *dy = dout ? dout[0].d : NULL;
	T *da = din ? din[0].d : NULL, *db = din ? din[1].d : NULL;
	rd_split(nd, &in[0], &o, &len, &inner);
	for (int64_t q = 0; q < o; q++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = q * len * inner + c;
			ACC ab = 0, aa = 0, bb = 0, na, nb, cs, g;
			for (int64_t k = 0; k < len; k++) {
				ACC u = a[base + k * inner], v = b[base + k * inner];
				ab += u * v;
				aa += u * u;
				bb += v * v;
			}
			na = SQRT(aa);
			nb = SQRT(bb);
			na = na > eps ? na : eps;
			nb = nb > eps ? nb : eps;
			cs = ab / (na * nb);
			if (y) {
				y[q * inner + c] = (T)cs;
				continue;
			}
			g = dy[q * inner + c];
			for (int64_t k = 0; k < len; k++) {
				ACC u = a[base + k * inner], v = b[base + k * inner];
				if (da)
					da[base + k * inner] += (T)(g * (v / (na * nb) -
									 (aa > eps * eps ? cs * u / (na * na) : K(0))));
				if (db)
					db[base + k * inner] += (T)(g * (u / (na * nb) -
									 (bb > eps * eps ? cs * v / (nb * nb) : K(0))));
			}
		}
}

static void FN(cosine_similarity_fwd)(const struct task_node *nd, const struct task_val *in,
				      struct task_val *out)
{
	FN(cos_lanes)(nd, in, NULL, NULL, out[0].d);
}

static void FN(cosine_similarity_bwd)(const struct task_node *nd, const struct task_val *in,
				      const struct task_val *out, const struct task_val *dout,
				      struct task_val *din)
{
	(void)out;
	FN(cos_lanes)(nd, in, dout, din, NULL);
}

#undef K

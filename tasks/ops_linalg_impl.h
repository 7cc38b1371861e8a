/* ops_linalg_impl.h — bodies of the linear-algebra, convolution and pooling
 * ops, written once and included twice by ops_linalg.c: T=double (the
 * reference) and T=float (the cpu baseline). Expects
 *   T     element type       ACC  accumulator type
 *   FN(x) name suffixer      GEMM cblas_dgemm or cblas_sgemm
 * and, from ops_linalg.c, the geometry helpers (struct mm, struct cgeom,
 * struct pgeom and their fill functions), which do not depend on T.
 *
 * Conventions (PyTorch's): row-major, channels first (N, C, spatial...);
 * conv weight [Cout, Cin/g, k...]; conv_transpose weight [Cin, Cout/g, k...].
 * Backward bodies ACCUMULATE into din; din[i].d == NULL means not needed. */

/* ---- matrix products ---------------------------------------------------- */

/* c = alpha · op(a) · op(b) (+ beta · c), batched over the leading dims. */
static void FN(bgemm)(const struct mm *g, const T *a, const T *b, T *c, double beta)
{
	int lda = g->ta ? (int)g->m : (int)g->k, ldb = g->tb ? (int)g->k : (int)g->n;
	for (int64_t q = 0; q < g->batch; q++)
		GEMM(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
		     g->tb ? CblasTrans : CblasNoTrans, (int)g->m, (int)g->n, (int)g->k,
		     (T)g->alpha, a + q * g->m * g->k, lda, b + q * g->k * g->n, ldb, (T)beta,
		     c + q * g->m * g->n, (int)g->n);
}

static void FN(mm_fwd)(const struct task_node *nd, const struct task_val *in,
		       struct task_val *out)
{
	struct mm g;
	mm_fill(nd, in, &g);
	FN(bgemm)(&g, in[0].d, in[1].d, out[0].d, 0.0);
}

/* C = α·op(A)·op(B). With op(A) [M,K], op(B) [K,N]:
 *   d op(A) = α·dC·op(B)^T,  d op(B) = α·op(A)^T·dC,
 * and a transposed operand receives the transpose of its gradient. */
static void FN(mm_bwd)(const struct task_node *nd, const struct task_val *in,
		       const struct task_val *out, const struct task_val *dout,
		       struct task_val *din)
{
	struct mm g;
	const T *a = in[0].d, *b = in[1].d, *dc = dout[0].d;
	T *da = din[0].d, *db = din[1].d;
	int M, N, K, lda, ldb;
	(void)out;
	mm_fill(nd, in, &g);
	M = (int)g.m; N = (int)g.n; K = (int)g.k;
	lda = g.ta ? M : K;
	ldb = g.tb ? K : N;
	for (int64_t q = 0; q < g.batch; q++) {
		const T *aq = a + q * g.m * g.k, *bq = b + q * g.k * g.n, *cq = dc + q * g.m * g.n;
		if (da && !g.ta) /* dA[M,K] += α dC·op(B)^T */
			GEMM(CblasRowMajor, CblasNoTrans, g.tb ? CblasNoTrans : CblasTrans, M, K, N,
			     (T)g.alpha, cq, N, bq, ldb, 1, da + q * g.m * g.k, K);
		if (da && g.ta) /* dA[K,M] += α op(B)·dC^T */
			GEMM(CblasRowMajor, g.tb ? CblasTrans : CblasNoTrans, CblasTrans, K, M, N,
			     (T)g.alpha, bq, ldb, cq, N, 1, da + q * g.m * g.k, M);
		if (db && !g.tb) /* dB[K,N] += α op(A)^T·dC */
			GEMM(CblasRowMajor, g.ta ? CblasNoTrans : CblasTrans, CblasNoTrans, K, N, M,
			     (T)g.alpha, aq, lda, cq, N, 1, db + q * g.k * g.n, N);
		if (db && g.tb) /* dB[N,K] += α dC^T·op(A) */
			GEMM(CblasRowMajor, CblasTrans, g.ta ? CblasTrans : CblasNoTrans, N, K, M,
			     (T)g.alpha, cq, N, aq, lda, 1, db + q * g.k * g.n, K);
	}
}

/* y[..., N] = x[..., K] · w[N, K]^T (+ b[N]): nn.Linear. */
static void FN(linear_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	int64_t k = in[1].shape[1], n = in[1].shape[0], m = in[0].n / k;
	T *y = out[0].d;
	GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1, in[0].d,
	     (int)k, in[1].d, (int)k, 0, y, (int)n);
	if (nd->n_in > 2)
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++)
				y[i * n + j] += ((const T *)in[2].d)[j];
}

static void FN(linear_bwd)(const struct task_node *nd, const struct task_val *in,
			   const struct task_val *out, const struct task_val *dout,
			   struct task_val *din)
{
	int64_t k = in[1].shape[1], n = in[1].shape[0], m = in[0].n / k;
	const T *dy = dout[0].d;
	(void)out;
	if (din[0].d) /* dx[M,K] += dy[M,N] · w[N,K] */
		GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)k, (int)n, 1, dy,
		     (int)n, in[1].d, (int)k, 1, din[0].d, (int)k);
	if (din[1].d) /* dw[N,K] += dy^T · x */
		GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)k, (int)m, 1, dy,
		     (int)n, in[0].d, (int)k, 1, din[1].d, (int)k);
	if (nd->n_in > 2 && din[2].d)
		for (int64_t j = 0; j < n; j++) {
			ACC s = 0;
			for (int64_t i = 0; i < m; i++)
				s += dy[i * n + j];
			((T *)din[2].d)[j] += (T)s;
		}
}

/* c[i,j] = a[i] · b[i,j]  (diag(a) · b, KernelBench's a.unsqueeze(1) * b). */
static void FN(diagmm_fwd)(const struct task_node *nd, const struct task_val *in,
			   struct task_val *out)
{
	int64_t n = in[1].shape[0], m = in[1].shape[1];
	const T *a = in[0].d, *b = in[1].d;
	T *c = out[0].d;
	(void)nd;
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < m; j++)
			c[i * m + j] = a[i] * b[i * m + j];
}

static void FN(diagmm_bwd)(const struct task_node *nd, const struct task_val *in,
			   const struct task_val *out, const struct task_val *dout,
			   struct task_val *din)
{
	int64_t n = in[1].shape[0], m = in[1].shape[1];
	const T *a = in[0].d, *b = in[1].d, *dc = dout[0].d;
	T *da = din[0].d, *db = din[1].d;
	(void)nd; (void)out;
	for (int64_t i = 0; i < n; i++) {
		ACC s = 0;
		for (int64_t j = 0; j < m; j++) {
			s += (ACC)dc[i * m + j] * b[i * m + j];
			if (db)
				db[i * m + j] += a[i] * dc[i * m + j];
		}
		if (da)
			da[i] += (T)s;
	}
}

/* Triangular products. upper: c = triu(triu(a) · triu(b)), i.e.
 * c[i,j] = Σ_{i≤k≤j} a[i,k] b[k,j] for i ≤ j, else 0; lower mirrors it.
 * Entries outside the triangle of a and b are never read. */
static void FN(trimm_fwd)(const struct task_node *nd, const struct task_val *in,
			  struct task_val *out)
{
	int64_t n = in[0].shape[0];
	bool up = !strcmp(nd->op, "triu_matmul");
	const T *a = in[0].d, *b = in[1].d;
	T *c = out[0].d;
	memset(c, 0, sizeof(T) * (size_t)(n * n));
	for (int64_t i = 0; i < n; i++)
		for (int64_t k = up ? i : 0; k < (up ? n : i + 1); k++) {
			T av = a[i * n + k];
			const T *br = b + k * n;
			T *cr = c + i * n;
			if (up)
				for (int64_t j = k; j < n; j++)
					cr[j] += av * br[j];
			else
				for (int64_t j = 0; j <= k; j++)
					cr[j] += av * br[j];
		}
}

static void FN(trimm_bwd)(const struct task_node *nd, const struct task_val *in,
			  const struct task_val *out, const struct task_val *dout,
			  struct task_val *din)
{
	int64_t n = in[0].shape[0];
	bool up = !strcmp(nd->op, "triu_matmul");
	const T *a = in[0].d, *b = in[1].d, *dc = dout[0].d;
	T *da = din[0].d, *db = din[1].d;
	(void)out;
	for (int64_t i = 0; i < n; i++)
		for (int64_t k = up ? i : 0; k < (up ? n : i + 1); k++) {
			int64_t j0 = up ? k : 0, j1 = up ? n : k + 1;
			const T *dcr = dc + i * n;
			if (da) { /* da[i,k] = Σ_j dc[i,j] b[k,j] over the triangle */
				ACC s = 0;
				for (int64_t j = j0; j < j1; j++)
					s += (ACC)dcr[j] * b[k * n + j];
				da[i * n + k] += (T)s;
			}
			if (db) { /* db[k,j] += a[i,k] dc[i,j] */
				T av = a[i * n + k];
				for (int64_t j = j0; j < j1; j++)
					db[k * n + j] += av * dcr[j];
			}
		}
}

/* y = (x + x^T) / 2 for a square x: makes KernelBench's symmetric inputs. */
static void FN(sym_fwd)(const struct task_node *nd, const struct task_val *in,
			struct task_val *out)
{
	int64_t n = in[0].shape[0];
	const T *x = in[0].d;
	T *y = out[0].d;
	(void)nd;
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < n; j++)
			y[i * n + j] = (T)(((ACC)x[i * n + j] + x[j * n + i]) / 2);
}

static void FN(sym_bwd)(const struct task_node *nd, const struct task_val *in,
			const struct task_val *out, const struct task_val *dout,
			struct task_val *din)
{
	int64_t n = in[0].shape[0];
	const T *dy = dout[0].d;
	T *dx = din[0].d;
	(void)nd; (void)out;
	if (dx)
		for (int64_t i = 0; i < n; i++)
			for (int64_t j = 0; j < n; j++)
				dx[i * n + j] += (T)(((ACC)dy[i * n + j] + dy[j * n + i]) / 2);
}

/* ---- convolution -------------------------------------------------------- */

/* One output row of conv_nest at unit stride. */
static void FN(nest_row)(int mode, T wv, T *restrict xr, T *restrict yr, int64_t lo, int64_t hi,
			 ACC *acc)
{
	ACC a = 0;
	if (mode == CONV_FWD)
		for (int64_t ow = lo; ow < hi; ow++)
			yr[ow] += xr[ow] * wv;
	else if (mode == CONV_DGRAD)
		for (int64_t ow = lo; ow < hi; ow++)
			xr[ow] += wv * yr[ow];
	else
		for (int64_t ow = lo; ow < hi; ow++)
			a += (ACC)xr[ow] * yr[ow];
	*acc += a;
}

/* The one loop nest behind conv and conv_transpose, forward and backward,
 * over a convolution whose input is x [N, CI, in...], output y [N, CO,
 * out...] and weight w [CO, CI/G, k...] (3 spatial dims, unit-padded):
 *   FWD:   y[n,co,o]  += Σ x[n,ci,o·s−p+k·d] w[co,ci',k]
 *   DGRAD: x[n,ci,i]  += Σ w[co,ci',k] y[n,co,o]          (x, y as dx, dy)
 *   WGRAD: w[co,ci',k] += Σ x[n,ci,o·s−p+k·d] y[n,co,o]    (w as dw, y as dy)
 * Output positions whose tap falls in the padding are skipped: the
 * innermost loop runs over the ow range whose input column is in bounds. */
static void FN(conv_nest)(const struct cgeom *g, int mode, T *x, T *w, T *y)
{
	int64_t cig = g->ci / g->g, cog = g->co / g->g;
	int64_t isz = g->in[0] * g->in[1] * g->in[2], osz = g->out[0] * g->out[1] * g->out[2];
	int64_t ksz = g->k[0] * g->k[1] * g->k[2];

	for (int64_t n = 0; n < g->n; n++)
		for (int64_t co = 0; co < g->co; co++)
			for (int64_t cl = 0; cl < cig; cl++) {
				int64_t ci = (co / cog) * cig + cl;
				T *xc = x + (n * g->ci + ci) * isz, *yc = y + (n * g->co + co) * osz;
				T *wc = w + (co * cig + cl) * ksz;
				for (int64_t kd = 0; kd < g->k[0]; kd++)
				for (int64_t kh = 0; kh < g->k[1]; kh++)
				for (int64_t kw = 0; kw < g->k[2]; kw++) {
					T *wp = wc + (kd * g->k[1] + kh) * g->k[2] + kw;
					int64_t lo, hi, off = kw * g->d[2] - g->p[2];
					ACC acc = 0;
					tap_range(off, g->s[2], g->in[2], g->out[2], &lo, &hi);
					for (int64_t od = 0; od < g->out[0]; od++) {
						int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0];
						if (id < 0 || id >= g->in[0])
							continue;
						for (int64_t oh = 0; oh < g->out[1]; oh++) {
							int64_t ih = oh * g->s[1] - g->p[1] + kh * g->d[1];
							T *xr, *yr;
							if (ih < 0 || ih >= g->in[1])
								continue;
							xr = xc + (id * g->in[1] + ih) * g->in[2] + off;
							yr = yc + (od * g->out[1] + oh) * g->out[2];
							if (g->s[2] == 1) /* contiguous: vectorises */
								FN(nest_row)(mode, *wp, xr, yr, lo, hi, &acc);
							else if (mode == CONV_FWD)
								for (int64_t ow = lo; ow < hi; ow++)
									yr[ow] += xr[ow * g->s[2]] * *wp;
							else if (mode == CONV_DGRAD)
								for (int64_t ow = lo; ow < hi; ow++)
									xr[ow * g->s[2]] += *wp * yr[ow];
							else
								for (int64_t ow = lo; ow < hi; ow++)
									acc += (ACC)xr[ow * g->s[2]] * yr[ow];
						}
					}
					if (mode == CONV_WGRAD)
						*wp += (T)acc;
				}
			}
}

/* im2col for one sample and group: col[(cl, kd, kh, kw), o] is the input
 * tap of output o (0 in the padding); x points at the group's first
 * channel. */
static void FN(im2col)(const struct cgeom *g, const T *x, T *col)
{
	int64_t cig = g->ci / g->g, isz = g->in[0] * g->in[1] * g->in[2];
	int64_t osz = g->out[0] * g->out[1] * g->out[2];
	for (int64_t cl = 0; cl < cig; cl++)
	for (int64_t kd = 0; kd < g->k[0]; kd++)
	for (int64_t kh = 0; kh < g->k[1]; kh++)
	for (int64_t kw = 0; kw < g->k[2]; kw++) {
		T *row = col + (((cl * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw) * osz;
		int64_t lo, hi, off = kw * g->d[2] - g->p[2];
		tap_range(off, g->s[2], g->in[2], g->out[2], &lo, &hi);
		for (int64_t od = 0; od < g->out[0]; od++) {
			int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0];
			for (int64_t oh = 0; oh < g->out[1]; oh++) {
				int64_t ih = oh * g->s[1] - g->p[1] + kh * g->d[1];
				T *r = row + (od * g->out[1] + oh) * g->out[2];
				const T *xr;
				if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
					memset(r, 0, sizeof(T) * (size_t)g->out[2]);
					continue;
				}
				xr = x + cl * isz + (id * g->in[1] + ih) * g->in[2] + off;
				for (int64_t ow = 0; ow < lo; ow++)
					r[ow] = 0;
				for (int64_t ow = lo; ow < hi; ow++)
					r[ow] = xr[ow * g->s[2]];
				for (int64_t ow = hi; ow < g->out[2]; ow++)
					r[ow] = 0;
			}
		}
	}
}

/* The adjoint of im2col: x[tap(o)] += col[(cl, k), o]. */
static void FN(col2im)(const struct cgeom *g, const T *col, T *x)
{
	int64_t cig = g->ci / g->g, isz = g->in[0] * g->in[1] * g->in[2];
	int64_t osz = g->out[0] * g->out[1] * g->out[2];
	for (int64_t cl = 0; cl < cig; cl++)
	for (int64_t kd = 0; kd < g->k[0]; kd++)
	for (int64_t kh = 0; kh < g->k[1]; kh++)
	for (int64_t kw = 0; kw < g->k[2]; kw++) {
		const T *row = col + (((cl * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw) * osz;
		int64_t lo, hi, off = kw * g->d[2] - g->p[2];
		tap_range(off, g->s[2], g->in[2], g->out[2], &lo, &hi);
		for (int64_t od = 0; od < g->out[0]; od++) {
			int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0];
			if (id < 0 || id >= g->in[0])
				continue;
			for (int64_t oh = 0; oh < g->out[1]; oh++) {
				int64_t ih = oh * g->s[1] - g->p[1] + kh * g->d[1];
				const T *r = row + (od * g->out[1] + oh) * g->out[2];
				T *xr;
				if (ih < 0 || ih >= g->in[1])
					continue;
				xr = x + cl * isz + (id * g->in[1] + ih) * g->in[2] + off;
				for (int64_t ow = lo; ow < hi; ow++)
					xr[ow * g->s[2]] += r[ow];
			}
		}
	}
}

/* conv_nest's three modes through BLAS, per sample and group, with W_g the
 * [cog, cig·ksz] weight block and col the im2col matrix [cig·ksz, osz]:
 *   FWD: y_g += W_g · col;  DGRAD: x += col2im(W_g^T · dy_g);
 *   WGRAD: dW_g += dy_g · col^T.
 * Depthwise-like groups (one channel in, one out) and sizes past BLAS's int
 * range or a failed allocation take the direct nest. */
static void FN(conv_run)(const struct cgeom *g, int mode, T *x, T *w, T *y)
{
	int64_t cig = g->ci / g->g, cog = g->co / g->g;
	int64_t isz = g->in[0] * g->in[1] * g->in[2], osz = g->out[0] * g->out[1] * g->out[2];
	int64_t ksz = g->k[0] * g->k[1] * g->k[2], rows = cig * ksz;
	T *col;

	if ((cig == 1 && cog == 1) || rows * osz > ((int64_t)1 << 28) || osz > INT32_MAX ||
	    rows > INT32_MAX || !(col = malloc(sizeof(T) * (size_t)(rows * osz)))) {
		FN(conv_nest)(g, mode, x, w, y);
		return;
	}
	for (int64_t n = 0; n < g->n; n++)
		for (int64_t q = 0; q < g->g; q++) {
			T *xg = x + (n * g->ci + q * cig) * isz, *yg = y + (n * g->co + q * cog) * osz;
			T *wg = w + q * cog * rows;
			if (mode == CONV_FWD) {
				FN(im2col)(g, xg, col);
				GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)cog, (int)osz,
				     (int)rows, 1, wg, (int)rows, col, (int)osz, 1, yg, (int)osz);
			} else if (mode == CONV_DGRAD) {
				GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, (int)osz,
				     (int)cog, 1, wg, (int)rows, yg, (int)osz, 0, col, (int)osz);
				FN(col2im)(g, col, xg);
			} else {
				FN(im2col)(g, xg, col);
				GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)cog, (int)rows,
				     (int)osz, 1, yg, (int)osz, col, (int)osz, 1, wg, (int)rows);
			}
		}
	free(col);
}

/* Adds b[c] to every element of channel c (y [N, C, spatial]). */
static void FN(bias_add)(T *y, const T *b, int64_t n, int64_t c, int64_t sp)
{
	for (int64_t q = 0; q < n; q++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t i = 0; i < sp; i++)
				y[(q * c + ch) * sp + i] += b[ch];
}

/* db[c] += Σ dy over batch and space. */
static void FN(bias_grad)(T *db, const T *dy, int64_t n, int64_t c, int64_t sp)
{
	for (int64_t ch = 0; ch < c; ch++) {
		ACC s = 0;
		for (int64_t q = 0; q < n; q++)
			for (int64_t i = 0; i < sp; i++)
				s += dy[(q * c + ch) * sp + i];
		db[ch] += (T)s;
	}
}

/* conv: x is the nest's input, out[0] its output. */
static void FN(conv_fwd)(const struct task_node *nd, const struct task_val *in,
			 struct task_val *out)
{
	struct cgeom g;
	cgeom_fill(nd, in, &g);
	memset(out[0].d, 0, sizeof(T) * (size_t)out[0].n);
	FN(conv_run)(&g, CONV_FWD, in[0].d, in[1].d, out[0].d);
	if (nd->n_in > 2)
		FN(bias_add)(out[0].d, in[2].d, g.n, g.co, out[0].n / (g.n * g.co));
}

static void FN(conv_bwd)(const struct task_node *nd, const struct task_val *in,
			 const struct task_val *out, const struct task_val *dout,
			 struct task_val *din)
{
	struct cgeom g;
	cgeom_fill(nd, in, &g);
	if (din[0].d)
		FN(conv_run)(&g, CONV_DGRAD, din[0].d, in[1].d, dout[0].d);
	if (din[1].d)
		FN(conv_run)(&g, CONV_WGRAD, in[0].d, din[1].d, dout[0].d);
	if (nd->n_in > 2 && din[2].d)
		FN(bias_grad)(din[2].d, dout[0].d, g.n, g.co, out[0].n / (g.n * g.co));
}

/* conv_transpose is the data gradient of the conv whose input is the
 * transposed conv's output: the nest runs with x = out[0], y = in[0]. */
static void FN(convt_fwd)(const struct task_node *nd, const struct task_val *in,
			  struct task_val *out)
{
	struct cgeom g;
	cgeom_fill(nd, in, &g);
	memset(out[0].d, 0, sizeof(T) * (size_t)out[0].n);
	FN(conv_run)(&g, CONV_DGRAD, out[0].d, in[1].d, in[0].d);
	if (nd->n_in > 2)
		FN(bias_add)(out[0].d, in[2].d, g.n, g.ci, out[0].n / (g.n * g.ci));
}

static void FN(convt_bwd)(const struct task_node *nd, const struct task_val *in,
			  const struct task_val *out, const struct task_val *dout,
			  struct task_val *din)
{
	struct cgeom g;
	cgeom_fill(nd, in, &g);
	if (din[0].d) /* dx = conv(dy, w) */
		FN(conv_run)(&g, CONV_FWD, dout[0].d, in[1].d, din[0].d);
	if (din[1].d)
		FN(conv_run)(&g, CONV_WGRAD, dout[0].d, din[1].d, in[0].d);
	if (nd->n_in > 2 && din[2].d)
		FN(bias_grad)(din[2].d, dout[0].d, g.n, g.ci, out[0].n / (g.n * g.ci));
}

/* ---- pooling ------------------------------------------------------------ */

/* Index of the window maximum, as PyTorch picks it: the index starts at
 * the first in-bounds tap and the value at -inf, and a tap replaces them
 * when `val > max || isnan(val)`, so ties go to the first in scan order
 * and padding never wins; -1 for a window wholly in the padding. The
 * update is written branch-free (selects), since random data makes the
 * comparison unpredictable. */
static int64_t FN(pool_argmax)(const struct pgeom *g, const T *x, const int64_t st[3])
{
	int64_t best, lo[3], hi[3];
	T m = -INFINITY;
	for (int q = 0; q < 3; q++)
		kernel_range(st[q], g->d[q], g->k[q], g->in[q], &lo[q], &hi[q]);
	if (lo[0] >= hi[0] || lo[1] >= hi[1] || lo[2] >= hi[2])
		return -1;
	best = ((st[0] + lo[0] * g->d[0]) * g->in[1] + st[1] + lo[1] * g->d[1]) * g->in[2] +
	       st[2] + lo[2] * g->d[2];
	for (int64_t a = lo[0]; a < hi[0]; a++)
		for (int64_t b = lo[1]; b < hi[1]; b++) {
			int64_t row = ((st[0] + a * g->d[0]) * g->in[1] + st[1] + b * g->d[1]) * g->in[2] +
				      st[2];
			for (int64_t c = lo[2]; c < hi[2]; c++) {
				int64_t idx = row + c * g->d[2];
				T v = x[idx];
				bool take = (v > m) | (v != v);
				m = take ? v : m;
				best = take ? idx : best;
			}
		}
	return best;
}

static void FN(maxpool_fwd)(const struct task_node *nd, const struct task_val *in,
			    struct task_val *out)
{
	struct pgeom g;
	pgeom_fill(nd, in, &g);
	for (int64_t pl = 0; pl < g.planes; pl++) {
		const T *x = (const T *)in[0].d + pl * g.isz;
		T *y = (T *)out[0].d + pl * g.osz;
		POOL_FOR_EACH(&g, o, st, en, {
			int64_t b = FN(pool_argmax)(&g, x, st);
			y[o] = b >= 0 ? x[b] : (T)-INFINITY;
		})
	}
}

static void FN(maxpool_bwd)(const struct task_node *nd, const struct task_val *in,
			    const struct task_val *out, const struct task_val *dout,
			    struct task_val *din)
{
	struct pgeom g;
	(void)out;
	if (!din[0].d)
		return;
	pgeom_fill(nd, in, &g);
	for (int64_t pl = 0; pl < g.planes; pl++) {
		const T *x = (const T *)in[0].d + pl * g.isz, *dy = (const T *)dout[0].d + pl * g.osz;
		T *dx = (T *)din[0].d + pl * g.isz;
		POOL_FOR_EACH(&g, o, st, en, {
			int64_t b = FN(pool_argmax)(&g, x, st);
			if (b >= 0)
				dx[b] += dy[o];
		})
	}
}

static void FN(avgpool_fwd)(const struct task_node *nd, const struct task_val *in,
			    struct task_val *out)
{
	struct pgeom g;
	pgeom_fill(nd, in, &g);
	for (int64_t pl = 0; pl < g.planes; pl++) {
		const T *x = (const T *)in[0].d + pl * g.isz;
		T *y = (T *)out[0].d + pl * g.osz;
		POOL_FOR_EACH(&g, o, st, en, {
			int64_t div = avg_window(&g, st, en);
			ACC s = 0;
			for (int64_t a = st[0]; a < en[0]; a++)
				for (int64_t b = st[1]; b < en[1]; b++)
					for (int64_t c = st[2]; c < en[2]; c++)
						s += x[(a * g.in[1] + b) * g.in[2] + c];
			y[o] = div ? (T)(s / (ACC)div) : 0;
		})
	}
}

static void FN(avgpool_bwd)(const struct task_node *nd, const struct task_val *in,
			    const struct task_val *out, const struct task_val *dout,
			    struct task_val *din)
{
	struct pgeom g;
	(void)out;
	if (!din[0].d)
		return;
	pgeom_fill(nd, in, &g);
	for (int64_t pl = 0; pl < g.planes; pl++) {
		const T *dy = (const T *)dout[0].d + pl * g.osz;
		T *dx = (T *)din[0].d + pl * g.isz;
		POOL_FOR_EACH(&g, o, st, en, {
			int64_t div = avg_window(&g, st, en);
			T v = div ? (T)(dy[o] / (ACC)div) : 0;
			for (int64_t a = st[0]; a < en[0]; a++)
				for (int64_t b = st[1]; b < en[1]; b++)
					for (int64_t c = st[2]; c < en[2]; c++)
						dx[(a * g.in[1] + b) * g.in[2] + c] += v;
		})
	}
}

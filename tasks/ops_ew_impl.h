/* ops_ew_impl.h — element-wise op bodies, written once and included twice by
 * ops_ew.c: T=double/ACC=double (the reference) and T=float/ACC=float (the
 * cpu baseline). Expects T, ACC, FN(x) and the math macros EXP, LOG, LOG1P,
 * TANH, SQRT, FABS set for the instantiation.
 *
 * Every formula is PyTorch's (ATen's CPU kernels), including its choice of
 * derivative at kinks: the comment on each op says which. Derivatives are
 * computed from the op's input x, never from its output, so the backward
 * does not depend on how the forward output was rounded. */

/* ---- unary ops: y = f(x), dx += dy * f'(x) ---- */

#define EW_UNARY(nm, SETUP, FWD, DER)                                                  \
	static void FN(nm##_fwd)(const struct task_node *nd, const struct task_val *in,   \
				 struct task_val *out)                                   \
	{                                                                              \
		const T *x = in[0].d;                                                  \
		T *y = out[0].d;                                                       \
		SETUP;                                                                 \
		for (int64_t i = 0; i < in[0].n; i++) {                                \
			const ACC v = x[i];                                            \
			y[i] = (T)(FWD);                                               \
		}                                                                      \
	}                                                                              \
	static void FN(nm##_bwd)(const struct task_node *nd, const struct task_val *in,   \
				 const struct task_val *out, const struct task_val *dout, \
				 struct task_val *din)                                   \
	{                                                                              \
		const T *x = in[0].d, *dy = dout[0].d;                                 \
		T *dx = din[0].d;                                                      \
		SETUP;                                                                 \
		(void)out;                                                             \
		if (!dx)                                                               \
			return;                                                        \
		for (int64_t i = 0; i < in[0].n; i++) {                                \
			const ACC v = x[i];                                            \
			(void)v;                                                       \
			dx[i] += (T)((ACC)dy[i] * (DER));                              \
		}                                                                      \
	}

#define NOPAR (void)nd
#define K(c) ((ACC)(c))

static inline ACC FN(sigm)(ACC v)
{
	return K(1) / (K(1) + EXP(-v));
}

/* log(1 + exp(v)) without overflow for large v */
static inline ACC FN(softplus1)(ACC v)
{
	return v > K(0) ? v + LOG1P(EXP(-v)) : LOG1P(EXP(v));
}

EW_UNARY(sigmoid, NOPAR, FN(sigm)(v), FN(sigm)(v) * (K(1) - FN(sigm)(v)))
EW_UNARY(tanh, NOPAR, TANH(v), K(1) - TANH(v) * TANH(v))
/* hardtanh(min,max); ATen hardtanh_backward: gradient only strictly inside */
EW_UNARY(hardtanh,
	 const ACC lo = (ACC)task_node_float(nd, "min", -1.0);
	 const ACC hi = (ACC)task_node_float(nd, "max", 1.0),
	 v < lo ? lo : v > hi ? hi : v, (v > lo && v < hi) ? K(1) : K(0))
EW_UNARY(relu6, NOPAR, v < K(0) ? K(0) : v > K(6) ? K(6) : v,
	 (v > K(0) && v < K(6)) ? K(1) : K(0))
/* torch.clamp(min, max) with scalar bounds: gradient only strictly inside
 * (measured on PyTorch 2.15: 0 at x == min and x == max); an absent bound is
 * no bound. min > max gives max everywhere, as in ATen. */
EW_UNARY(clamp,
	 const ACC lo = (ACC)task_node_float(nd, "min", -INFINITY);
	 const ACC hi = (ACC)task_node_float(nd, "max", INFINITY),
	 (v < lo ? lo : v) > hi ? hi : (v < lo ? lo : v), (v > lo && v < hi) ? K(1) : K(0))
/* leaky_relu: ATen leaky_relu_backward uses x > 0 ? 1 : slope */
EW_UNARY(leaky_relu, const ACC sl = (ACC)task_node_float(nd, "slope", 0.01),
	 v > K(0) ? v : v * sl, v > K(0) ? K(1) : sl)
/* elu(alpha): x <= 0 branch owns 0 (derivative alpha there) */
EW_UNARY(elu, const ACC al = (ACC)task_node_float(nd, "alpha", 1.0),
	 v > K(0) ? v : al * (EXP(v) - K(1)), v > K(0) ? K(1) : al * EXP(v))
EW_UNARY(selu, NOPAR,
	 v > K(0) ? K(1.0507009873554804934193349852946) * v
		  : K(1.0507009873554804934193349852946) * K(1.6732632423543772848170429916717) *
			    (EXP(v) - K(1)),
	 v > K(0) ? K(1.0507009873554804934193349852946)
		  : K(1.0507009873554804934193349852946) * K(1.6732632423543772848170429916717) *
			    EXP(v))
/* celu(alpha) = max(0,x) + min(0, alpha*(exp(x/alpha)-1)) */
EW_UNARY(celu, const ACC al = (ACC)task_node_float(nd, "alpha", 1.0),
	 v > K(0) ? v : al * (EXP(v / al) - K(1)), v > K(0) ? K(1) : EXP(v / al))
/* tanh-approximated GELU (F.gelu(approximate='tanh'), minGPT NewGELU) */
EW_UNARY(gelu_tanh, NOPAR,
	 K(0.5) * v * (K(1) + TANH(K(0.7978845608028654) * (v + K(0.044715) * v * v * v))),
	 K(0.5) * (K(1) + TANH(K(0.7978845608028654) * (v + K(0.044715) * v * v * v))) +
		 K(0.5) * v *
			 (K(1) - TANH(K(0.7978845608028654) * (v + K(0.044715) * v * v * v)) *
					 TANH(K(0.7978845608028654) * (v + K(0.044715) * v * v * v))) *
			 K(0.7978845608028654) * (K(1) + K(3) * K(0.044715) * v * v))
/* softplus(beta, threshold): linear where beta*x > threshold (ATen) */
EW_UNARY(softplus,
	 const ACC be = (ACC)task_node_float(nd, "beta", 1.0);
	 const ACC th = (ACC)task_node_float(nd, "threshold", 20.0),
	 v * be > th ? v : FN(softplus1)(v * be) / be, v * be > th ? K(1) : FN(sigm)(v * be))
EW_UNARY(softsign, NOPAR, v / (K(1) + FABS(v)), K(1) / ((K(1) + FABS(v)) * (K(1) + FABS(v))))
EW_UNARY(silu, NOPAR, v * FN(sigm)(v), FN(sigm)(v) * (K(1) + v * (K(1) - FN(sigm)(v))))
/* mish = x * tanh(softplus(x)) (no threshold, as ATen) */
EW_UNARY(mish, NOPAR, v * TANH(FN(softplus1)(v)),
	 TANH(FN(softplus1)(v)) +
		 v * FN(sigm)(v) * (K(1) - TANH(FN(softplus1)(v)) * TANH(FN(softplus1)(v))))
/* hardsigmoid: ATen backward passes only for -3 < x < 3 */
EW_UNARY(hardsigmoid, NOPAR, v <= K(-3) ? K(0) : v >= K(3) ? K(1) : v / K(6) + K(0.5),
	 (v > K(-3) && v < K(3)) ? K(1) / K(6) : K(0))
/* hardswish: ATen backward x < -3: 0; x <= 3: x/3 + 1/2; else 1 */
EW_UNARY(hardswish, NOPAR, v <= K(-3) ? K(0) : v >= K(3) ? v : v * (v + K(3)) / K(6),
	 v < K(-3) ? K(0) : v <= K(3) ? v / K(3) + K(0.5) : K(1))
EW_UNARY(log_sigmoid, NOPAR, (v < K(0) ? v : K(0)) - LOG1P(EXP(-FABS(v))), FN(sigm)(-v))
EW_UNARY(exp, NOPAR, EXP(v), EXP(v))
EW_UNARY(log, NOPAR, LOG(v), K(1) / v)
/* abs: derivative sgn(x), 0 at 0 (ATen) */
EW_UNARY(abs, NOPAR, FABS(v), v > K(0) ? K(1) : v < K(0) ? K(-1) : K(0))
EW_UNARY(erf, NOPAR, ERF(v), K(1.1283791670955126) * EXP(-v * v))
/* identity; dropout is registered as identity too: training-mode dropout is
 * stochastic, so the registry runs it with p = 0 (census §1) */
EW_UNARY(identity, NOPAR, v, K(1))
EW_UNARY(sqrt, NOPAR, SQRT(v), K(0.5) / SQRT(v))
EW_UNARY(square, NOPAR, v * v, K(2) * v)
EW_UNARY(neg, NOPAR, -v, K(-1))
EW_UNARY(reciprocal, NOPAR, K(1) / v, K(-1) / (v * v))
/* sign: zero gradient everywhere (ATen) */
EW_UNARY(sign, NOPAR, v > K(0) ? K(1) : v < K(0) ? K(-1) : K(0), K(0))

/* scalar ops with attribute "value" */
#define VAL const ACC c = (ACC)task_node_float(nd, "value", 0.0); (void)c
EW_UNARY(add_scalar, VAL, v + c, K(1))
EW_UNARY(sub_scalar, VAL, v - c, K(1))
EW_UNARY(rsub_scalar, VAL, c - v, K(-1))
EW_UNARY(mul_scalar, VAL, v * c, c)
EW_UNARY(div_scalar, VAL, v / c, K(1) / c)
/* torch.maximum/minimum against a constant: ties split the gradient */
EW_UNARY(max_scalar, VAL, v > c ? v : c, v > c ? K(1) : v == c ? K(0.5) : K(0))
EW_UNARY(min_scalar, VAL, v < c ? v : c, v < c ? K(1) : v == c ? K(0.5) : K(0))
#undef VAL

/* ---- binary ops with NumPy broadcasting ---- */

/* Walks the output in row-major order, keeping the offsets of both inputs
 * (bc_strides gives 0 strides on broadcast axes). */
#define BC_LOOP(...)                                                                \
	do {                                                                         \
		int64_t idx[TASK_MAX_RANK] = { 0 }, ia = 0, ib = 0;                  \
		const int r = o->rank;                                               \
		const int64_t last = o->shape[r - 1], la = sa[r - 1], lb = sb[r - 1]; \
		for (int64_t i = 0; i < o->n; i += last) {                           \
			for (int64_t j = 0; j < last; j++) {                         \
				const int64_t pa = ia + j * la, pb = ib + j * lb;    \
				const int64_t po = i + j;                            \
				__VA_ARGS__;                                         \
			}                                                            \
			for (int d = r - 2; d >= 0; d--) {                           \
				idx[d]++;                                            \
				ia += sa[d];                                         \
				ib += sb[d];                                         \
				if (idx[d] < o->shape[d])                            \
					break;                                       \
				ia -= sa[d] * o->shape[d];                           \
				ib -= sb[d] * o->shape[d];                           \
				idx[d] = 0;                                          \
			}                                                            \
		}                                                                    \
	} while (0)

#define EW_BINARY(nm, FWD, DA, DB)                                                       \
	static void FN(nm##_fwd)(const struct task_node *nd, const struct task_val *in,     \
				 struct task_val *out)                                     \
	{                                                                                \
		const T *a = in[0].d, *b = in[1].d;                                      \
		T *y = out[0].d;                                                         \
		const struct task_val *o = &out[0];                                      \
		int64_t sa[TASK_MAX_RANK], sb[TASK_MAX_RANK];                            \
		(void)nd;                                                                \
		bc_strides(&in[0], o, sa);                                               \
		bc_strides(&in[1], o, sb);                                               \
		BC_LOOP({                                                                \
			const ACC p = a[pa], q = b[pb];                                  \
			y[po] = (T)(FWD);                                                \
		});                                                                      \
	}                                                                                \
	static void FN(nm##_bwd)(const struct task_node *nd, const struct task_val *in,     \
				 const struct task_val *out, const struct task_val *dout,   \
				 struct task_val *din)                                     \
	{                                                                                \
		const T *a = in[0].d, *b = in[1].d, *dy = dout[0].d;                     \
		T *da = din[0].d, *db = din[1].d;                                        \
		const struct task_val *o = &out[0];                                      \
		int64_t sa[TASK_MAX_RANK], sb[TASK_MAX_RANK];                            \
		(void)nd;                                                                \
		bc_strides(&in[0], o, sa);                                               \
		bc_strides(&in[1], o, sb);                                               \
		BC_LOOP({                                                                \
			const ACC p = a[pa], q = b[pb], g = dy[po];                      \
			(void)p; (void)q;                                                \
			if (da)                                                          \
				da[pa] += (T)(g * (DA));                                 \
			if (db)                                                          \
				db[pb] += (T)(g * (DB));                                 \
		});                                                                      \
	}

EW_BINARY(add, p + q, K(1), K(1))
EW_BINARY(sub, p - q, K(1), K(-1))
EW_BINARY(mul, p * q, q, p)
EW_BINARY(div, p / q, K(1) / q, -p / (q * q))
/* torch.maximum/minimum: ties split the gradient evenly */
EW_BINARY(maximum, p > q ? p : q, p > q ? K(1) : p == q ? K(0.5) : K(0),
	  q > p ? K(1) : p == q ? K(0.5) : K(0))
EW_BINARY(minimum, p < q ? p : q, p < q ? K(1) : p == q ? K(0.5) : K(0),
	  q < p ? K(1) : p == q ? K(0.5) : K(0))

/* unsqueeze/squeeze/flatten: the same elements under another shape */
static void FN(unsqueeze_fwd)(const struct task_node *nd, const struct task_val *in,
			      struct task_val *out)
{
	const T *x = in[0].d;
	T *y = out[0].d;
	(void)nd;
	for (int64_t i = 0; i < in[0].n; i++)
		y[i] = x[i];
}

static void FN(unsqueeze_bwd)(const struct task_node *nd, const struct task_val *in,
			      const struct task_val *out, const struct task_val *dout,
			      struct task_val *din)
{
	const T *dy = dout[0].d;
	T *dx = din[0].d;
	(void)nd; (void)out;
	if (!dx)
		return;
	for (int64_t i = 0; i < in[0].n; i++)
		dx[i] += dy[i];
}

#undef K
#undef NOPAR

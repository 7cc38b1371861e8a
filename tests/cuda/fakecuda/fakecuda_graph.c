/* fakecuda_graph.c — the fake CUDA driver's stream capture and graphs (see
 * fakecuda.c), for the decoder's CUDA backend: a launch or an asynchronous
 * copy issued on a capturing stream is recorded instead of run; the graph
 * cuStreamEndCapture returns holds those records, an instantiated graph a
 * copy of them, and cuGraphLaunch runs them in order, as the real driver
 * runs a graph's nodes in stream order. Synchronising a capturing stream
 * invalidates the capture (cuStreamEndCapture then fails), as on a GPU.
 * Also cuMemGetInfo: free = FAKECUDA_MEM (bytes, else the device's total)
 * minus what is allocated, so a test can make a model not fit. */
#include "fakecuda_impl.h"

#include <stdlib.h>
#include <string.h>

struct node {
	int kind;                  /* 0 kernel, 1 copy */
	emu_launch_fn launch;
	void *sym;
	unsigned g[3], b[3], smem;
	int64_t a[EMU_MAX_ARGS];
	void *dst;
	const void *src;
	size_t n;
};

struct graph {
	struct graph *next;
	int exec;                  /* an instantiated copy */
	struct node *nodes;
	int n, cap;
};

struct capture {
	struct capture *next;
	CUstream s;
	int invalid;               /* a synchronising call ran during the capture */
	struct graph *g;           /* the nodes so far (not in the graph list yet) */
};

static struct {
	struct capture *caps;
	struct graph *graphs;      /* graphs and instantiated graphs */
} fg;

static struct capture *find_capture(CUstream s)
{
	for (struct capture *c = fg.caps; c; c = c->next)
		if (c->s == s)
			return c;
	return NULL;
}

static struct graph *find_graph(void *h, int exec)
{
	for (struct graph *g = fg.graphs; g; g = g->next)
		if ((void *)g == h && g->exec == exec)
			return g;
	return NULL;
}

static void graph_free(struct graph *g)
{
	if (g) {
		free(g->nodes);
		free(g);
	}
}

static int add_node(struct graph *g, const struct node *n)
{
	if (g->n == g->cap) {
		int cap = g->cap ? 2 * g->cap : 64;
		struct node *p = realloc(g->nodes, (size_t)cap * sizeof *p);
		if (!p)
			return -1;
		g->nodes = p;
		g->cap = cap;
	}
	g->nodes[g->n++] = *n;
	return 0;
}

int fk_capturing(CUstream s)
{
	int r;
	LOCK();
	r = find_capture(s) != NULL;
	UNLOCK();
	return r;
}

void fk_capture_invalidate(CUstream s)
{
	struct capture *c;
	LOCK();
	if ((c = find_capture(s)))
		c->invalid = 1;
	UNLOCK();
}

int fk_capture_launch(CUstream s, emu_launch_fn launch, void *sym, const unsigned g[3], const unsigned b[3],
		      unsigned smem, const int64_t a[EMU_MAX_ARGS], CUresult *r)
{
	struct capture *c;
	struct node n = { .kind = 0, .launch = launch, .sym = sym, .smem = smem };
	memcpy(n.g, g, sizeof n.g);
	memcpy(n.b, b, sizeof n.b);
	memcpy(n.a, a, sizeof n.a);
	LOCK();
	if ((c = find_capture(s)))
		*r = add_node(c->g, &n) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
	UNLOCK();
	return c != NULL;
}

int fk_capture_copy(CUstream s, void *dst, const void *src, size_t n, CUresult *r)
{
	struct capture *c;
	struct node x = { .kind = 1, .dst = dst, .src = src, .n = n };
	LOCK();
	if ((c = find_capture(s)))
		*r = add_node(c->g, &x) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
	UNLOCK();
	return c != NULL;
}

CUresult fk_stream_begin_capture(CUstream s, CUstreamCaptureMode mode)
{
	CUresult r = fk_ready();
	struct capture *c;
	if (r || (r = fk_check_stream(s)))
		return r;
	if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	/* the legacy default stream cannot be captured */
	if (!s || s == CU_STREAM_LEGACY)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (!(c = calloc(1, sizeof *c)) || !(c->g = calloc(1, sizeof *c->g))) {
		free(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->s = s;
	LOCK();
	if (find_capture(s)) {
		UNLOCK();
		free(c->g);
		free(c);
		return CUDA_ERROR_ILLEGAL_STATE;
	}
	c->next = fg.caps;
	fg.caps = c;
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult fk_stream_end_capture(CUstream s, CUgraph *out)
{
	CUresult r = fk_ready();
	struct capture *c = NULL;
	if (r)
		return r;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = NULL;
	LOCK();
	for (struct capture **p = &fg.caps; *p; p = &(*p)->next)
		if ((*p)->s == s) {
			c = *p;
			*p = c->next;
			break;
		}
	if (c && !c->invalid) {
		c->g->next = fg.graphs;
		fg.graphs = c->g;
		*out = (CUgraph)(void *)c->g;
	}
	UNLOCK();
	if (!c)
		return CUDA_ERROR_ILLEGAL_STATE;
	r = c->invalid ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
	if (c->invalid)
		graph_free(c->g);
	free(c);
	return r;
}

CUresult fk_graph_instantiate(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
	CUresult r = fk_ready();
	struct graph *src, *x;
	if (r)
		return r;
	if (!e || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(x = calloc(1, sizeof *x)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	if (!(src = find_graph((void *)g, 0))) {
		UNLOCK();
		free(x);
		return CUDA_ERROR_INVALID_VALUE;
	}
	x->exec = 1;
	if (src->n && !(x->nodes = malloc((size_t)src->n * sizeof *x->nodes))) {
		UNLOCK();
		free(x);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (src->n)
		memcpy(x->nodes, src->nodes, (size_t)src->n * sizeof *x->nodes);
	x->n = x->cap = src->n;
	x->next = fg.graphs;
	fg.graphs = x;
	UNLOCK();
	*e = (CUgraphExec)(void *)x;
	return CUDA_SUCCESS;
}

/* Runs the nodes in order in the calling thread (launches are synchronous
 * here, as everywhere in the fake). */
CUresult fk_graph_launch(CUgraphExec e, CUstream s)
{
	CUresult r = fk_ready();
	struct graph *x;
	if (r || (r = fk_check_stream(s)))
		return r;
	if (fk_capturing(s))
		return CUDA_ERROR_NOT_SUPPORTED; /* a graph node of a graph: not emulated */
	LOCK();
	x = find_graph((void *)e, 1);
	UNLOCK();
	if (!x)
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < x->n; i++) {
		const struct node *n = &x->nodes[i];
		if (n->kind == 0)
			n->launch(n->sym, n->g, n->b, n->smem, n->a);
		else
			memmove(n->dst, n->src, n->n);
	}
	return CUDA_SUCCESS;
}

static CUresult destroy(void *h, int exec)
{
	CUresult r = fk_ready();
	struct graph *x = NULL;
	if (r)
		return r;
	LOCK();
	for (struct graph **p = &fg.graphs; *p; p = &(*p)->next)
		if ((void *)*p == h && (*p)->exec == exec) {
			x = *p;
			*p = x->next;
			break;
		}
	UNLOCK();
	graph_free(x);
	return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult fk_graph_destroy(CUgraph g)
{
	return destroy((void *)g, 0);
}

CUresult fk_graph_exec_destroy(CUgraphExec e)
{
	return destroy((void *)e, 1);
}

/* With the lock held: what the primary context's last release frees. */
void fk_graphs_free_all_locked(void)
{
	while (fg.caps) {
		struct capture *c = fg.caps;
		fg.caps = c->next;
		graph_free(c->g);
		free(c);
	}
	while (fg.graphs) {
		struct graph *g = fg.graphs;
		fg.graphs = g->next;
		graph_free(g);
	}
}

CUresult fk_mem_get_info(size_t *free_b, size_t *total_b)
{
	CUresult r = fk_ready();
	const char *env = getenv("FAKECUDA_MEM");
	size_t total = TOTAL_MEM, used = 0;
	if (r)
		return r;
	if (!free_b || !total_b)
		return CUDA_ERROR_INVALID_VALUE;
	if (env && *env)
		total = (size_t)strtoull(env, NULL, 10);
	LOCK();
	for (const struct alloc *a = fk.allocs; a; a = a->next)
		used += a->size;
	UNLOCK();
	*total_b = total;
	*free_b = used < total ? total - used : 0;
	return CUDA_SUCCESS;
}

/* fakecuda_module.c — the fake CUDA driver's modules, functions and
 * launches (see fakecuda.c): a module is a real cubin (cr_cubin_parse:
 * kernel names, parameter sizes, registers) plus the emulated kernels
 * dlopened from <directory of libfakecuda.so>/fakecuda-kernels.so; a launch
 * is checked as the hardware checks it and runs to completion through the
 * emulation's emu_launch. */
#include "fakecuda_impl.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct module *find_module(CUmodule m)
{
	for (struct module *x = fk.mods; x; x = x->next)
		if ((void *)x == (void *)m)
			return x;
	return NULL;
}

static struct func *find_func(CUfunction f)
{
	for (struct module *x = fk.mods; x; x = x->next)
		if ((void *)f >= (void *)x->fn && (void *)f < (void *)(x->fn + CR_CUBIN_MAX_KERNELS) &&
		    ((struct func *)(void *)f)->k)
			return (struct func *)(void *)f;
	return NULL;
}

/* The JIT log buffers a caller passed, filled as the driver fills them:
 * the message (truncated to the size given) and the size used written back. */
static void jit_log(unsigned n, CUjit_option *opts, void **vals, CUjit_option buf_opt,
		    CUjit_option size_opt, const char *fmt, ...)
{
	char *buf = NULL;
	int size_i = -1;
	size_t cap = 0;
	va_list ap;
	for (unsigned i = 0; i < n; i++) {
		if (opts[i] == buf_opt)
			buf = vals[i];
		else if (opts[i] == size_opt) {
			cap = (size_t)(uintptr_t)vals[i];
			size_i = (int)i;
		}
	}
	if (!buf || !cap || size_i < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	vals[size_i] = (void *)(uintptr_t)(strlen(buf) + 1);
}

#define ERRLOG(...) jit_log(n, opts, vals, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, __VA_ARGS__)
#define INFOLOG(...) jit_log(n, opts, vals, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, __VA_ARGS__)

/* The emulated kernels file as it was when its loaded copy was opened: a
 * dlopen of the same path while that copy is still loaded returns the old
 * code, so a replaced file is refused rather than silently ignored. */
static struct {
	void *so;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
} kfile;

static int same_file(const struct stat *a)
{
	return a->st_dev == kfile.dev && a->st_ino == kfile.ino && a->st_mtim.tv_sec == kfile.mtime.tv_sec &&
	       a->st_mtim.tv_nsec == kfile.mtime.tv_nsec;
}

/* <directory of this library>/fakecuda-kernels.so */
static int kernels_path(char *out, size_t cap)
{
	Dl_info di;
	const char *slash;
	if (!dladdr((void *)(uintptr_t)&cuDriverGetVersion, &di) || !di.dli_fname ||
	    !(slash = strrchr(di.dli_fname, '/')))
		return snprintf(out, cap, "./%s", KERNELS_FILE) >= (int)cap ? -1 : 0;
	return snprintf(out, cap, "%.*s/%s", (int)(slash - di.dli_fname), di.dli_fname, KERNELS_FILE) >= (int)cap
		       ? -1 : 0;
}

/* With the lock held (a failed load has not set kfile.so to its copy
 * unless the copy was already loaded, which the NOLOAD probe sees). */
void fk_module_free(struct module *x)
{
	char path[4096];
	void *still = NULL;
	if (x->so) {
		dlclose(x->so);
		/* really unloaded: a later copy may load at the same address */
		if (x->so == kfile.so && !kernels_path(path, sizeof path)) {
			if ((still = dlopen(path, RTLD_NOW | RTLD_NOLOAD)))
				dlclose(still);
			else
				kfile.so = NULL;
		}
	}
	free(x);
}

CUresult fk_module_load_data_ex(CUmodule *m, const void *image, unsigned int n, CUjit_option *opts,
				    void **vals)
{
	CUresult r = fk_ready();
	struct module *x = NULL;
	char path[4096];
	const unsigned char *img = image;
	size_t len;

	if (r)
		return r;
	if (!m || !image || (n && (!opts || !vals)))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < n; i++)
		if ((unsigned)opts[i] >= CU_JIT_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
	/* a cubin is an ELF with its size in the header: the section table ends
	 * it (e_shoff + e_shnum * e_shentsize); the driver gets no length */
	if (memcmp(img, "\177ELF\2\1", 6)) {
		ERRLOG("fakecuda: the image is not a 64-bit ELF cubin (PTX and fatbins are not emulated)");
		return CUDA_ERROR_INVALID_IMAGE;
	}
	{
		uint64_t shoff, phoff;
		uint16_t shnum, shentsize, phnum, phentsize, machine;
		memcpy(&machine, img + 18, 2);
		memcpy(&phoff, img + 32, 8);
		memcpy(&shoff, img + 40, 8);
		memcpy(&phentsize, img + 54, 2);
		memcpy(&phnum, img + 56, 2);
		memcpy(&shentsize, img + 58, 2);
		memcpy(&shnum, img + 60, 2);
		len = (size_t)shoff + (size_t)shnum * shentsize;
		if (phoff + (uint64_t)phnum * phentsize > len)
			len = (size_t)(phoff + (uint64_t)phnum * phentsize);
		if (machine != 190 /* EM_CUDA */ || shoff > (1u << 30) || len > (1u << 30)) {
			ERRLOG("fakecuda: the image is not a CUDA ELF (e_machine %u)", machine);
			return CUDA_ERROR_INVALID_IMAGE;
		}
	}
	if (!(x = calloc(1, sizeof *x)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!cr_cubin_parse(image, len, &x->info)) {
		ERRLOG("fakecuda: the cubin could not be read (no symbol table)");
		r = CUDA_ERROR_INVALID_IMAGE;
		goto fail;
	}
	if (kernels_path(path, sizeof path)) {
		r = CUDA_ERROR_FILE_NOT_FOUND;
		goto fail;
	}
	struct stat sb;
	if (stat(path, &sb)) {
		ERRLOG("fakecuda: no emulated kernels at %s", path);
		r = CUDA_ERROR_FILE_NOT_FOUND;
		goto fail;
	}
	LOCK();
	x->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (x->so && x->so == kfile.so && !same_file(&sb)) {
		UNLOCK();
		ERRLOG("fakecuda: %s was replaced while an earlier copy is still loaded (unload every module first)",
		       path);
		r = CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
		goto fail;
	}
	if (x->so && x->so != kfile.so) {
		kfile.so = x->so;
		kfile.dev = sb.st_dev;
		kfile.ino = sb.st_ino;
		kfile.mtime = sb.st_mtim;
	}
	UNLOCK();
	if (!x->so) {
		const char *e = dlerror();
		ERRLOG("fakecuda: cannot load the emulated kernels: %s", e ? e : path);
		r = CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
		goto fail;
	}
	if (!(x->launch = (emu_launch_fn)(uintptr_t)dlsym(x->so, "emu_launch"))) {
		ERRLOG("fakecuda: %s has no emu_launch (not built with cuda_emu.hpp)", path);
		r = CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
		goto fail;
	}
	INFOLOG("fakecuda: %d kernels, emulated by %s", x->info.n_kernels, path);
	LOCK();
	x->next = fk.mods;
	fk.mods = x;
	UNLOCK();
	*m = (CUmodule)(void *)x;
	return CUDA_SUCCESS;
fail:
	LOCK();
	fk_module_free(x);
	UNLOCK();
	return r;
}

CUresult fk_module_unload(CUmodule m)
{
	CUresult r = fk.init ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_NOT_INITIALIZED;
	LOCK();
	for (struct module **x = &fk.mods; *x; x = &(*x)->next)
		if ((void *)*x == (void *)m) {
			struct module *d = *x;
			*x = d->next;
			fk_module_free(d);
			r = CUDA_SUCCESS;
			break;
		}
	UNLOCK();
	return r;
}

CUresult fk_module_get_function(CUfunction *f, CUmodule m, const char *name)
{
	CUresult r = fk_ready();
	struct module *x;
	const struct cr_cubin_kernel *k;
	char sig_name[CR_CUBIN_NAME + 16];
	if (r)
		return r;
	if (!f || !name)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (!(x = find_module(m))) {
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	/* in the cubin (what the GPU would run) and in the emulation */
	k = cr_cubin_find(&x->info, name);
	r = CUDA_ERROR_NOT_FOUND;
	if (!k)
		goto out;
	struct func *fn = &x->fn[k - x->info.k];
	if (!fn->k) {
		if (!(fn->sym = dlsym(x->so, name)))
			goto out;
		/* the kernels file may be a stub whose dependencies hold the
		 * kernels (one library per candidate, tests/cuda/eval_fake.sh):
		 * a kernel runs under the emu_launch of its own library, the one
		 * whose thread indices it reads */
		Dl_info di;
		void *own;
		fn->launch = NULL;
		if (dladdr(fn->sym, &di) && di.dli_fname &&
		    (own = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD))) {
			fn->launch = (emu_launch_fn)(uintptr_t)dlsym(own, "emu_launch");
			dlclose(own);
		}
		snprintf(sig_name, sizeof sig_name, "fakecuda_sig_%s", name);
		const char *const *sig = dlsym(x->so, sig_name);
		fn->sig = sig ? *sig : NULL;
		fn->mod = x;
		fn->max_dyn_smem = SMEM_DEFAULT;
		fn->carveout = -1;
		fn->k = k;
	}
	*f = (CUfunction)(void *)fn;
	r = CUDA_SUCCESS;
out:
	UNLOCK();
	return r;
}

CUresult fk_func_get_attribute(int *v, CUfunction_attribute a, CUfunction f)
{
	CUresult r = fk_ready();
	struct func *fn;
	if (r)
		return r;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (!(fn = find_func(f))) {
		UNLOCK();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = 0; break;       /* not in our cubin records */
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = fn->k->frame > 0 ? fn->k->frame : 0; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = fn->k->regs >= 0 ? fn->k->regs : 0; break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = 90; break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *v = 0; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = fn->max_dyn_smem; break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *v = fn->carveout; break;
	default: r = CUDA_ERROR_INVALID_VALUE; break;
	}
	UNLOCK();
	return r;
}

CUresult fk_func_set_attribute(CUfunction f, CUfunction_attribute a, int v)
{
	CUresult r = fk_ready();
	struct func *fn;
	if (r)
		return r;
	LOCK();
	if (!(fn = find_func(f)))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && v >= 0 && v <= SMEM_OPTIN)
		fn->max_dyn_smem = v;
	else if (a == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && v >= -1 && v <= 100)
		fn->carveout = v;
	else
		r = CUDA_ERROR_INVALID_VALUE;
	UNLOCK();
	return r;
}

CUresult fk_func_get_param_info(CUfunction f, size_t i, size_t *off, size_t *size)
{
	CUresult r = fk_ready();
	struct func *fn;
	if (r)
		return r;
	if (!off)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (!(fn = find_func(f)))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (fn->k->n_params < 0 || i >= (size_t)fn->k->n_params || i >= CR_CUBIN_MAX_PARAMS)
		r = CUDA_ERROR_INVALID_VALUE;
	else {
		*off = (size_t)fn->k->param_offset[i];
		if (size)
			*size = (size_t)fn->k->param_size[i];
	}
	UNLOCK();
	return r;
}

/* ---- launch ---- */

/* Checks as the hardware does, then runs the emulated kernel to completion. */
CUresult fk_launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			      unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
	CUresult r = fk_ready();
	struct func *fn;
	int64_t a[EMU_MAX_ARGS] = { 0 };
	unsigned g[3] = { gx, gy, gz }, b[3] = { bx, by, bz };
	emu_launch_fn launch = NULL;
	const struct cr_cubin_kernel *k = NULL;
	const char *sig = NULL;
	void *sym = NULL;
	int n = 0, max_smem = 0, regs = 0;

	if (r || (r = fk_check_stream(s)))
		return r;
	LOCK();
	fn = find_func(f);
	if (fn) {
		k = fn->k;
		sig = fn->sig;
		n = k->n_params;
		regs = k->regs;
		max_smem = fn->max_dyn_smem;
		launch = fn->launch ? fn->launch : fn->mod->launch;
		sym = fn->sym;
	}
	UNLOCK();
	if (!fn)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!gx || !gy || !gz || !bx || !by || !bz || gx > 2147483647u || gy > 65535 || gz > 65535 ||
	    bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024 || smem > (unsigned)max_smem)
		return CUDA_ERROR_INVALID_VALUE;
	/* registers are allocated per warp, in units of 8 per thread */
	if (regs > 0 && (uint64_t)((regs + 7) & ~7) * ((bx * by * bz + 31) & ~31u) > REGS_PER_BLOCK)
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	if (extra)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (n < 0 || n > EMU_MAX_ARGS)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (n > 0 && !params)
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < n; i++) {
		/* the emulated build's signature, where it recorded one: p
		 * pointer, i int, l 64-bit integer; anything else cannot travel
		 * through emu_launch's integer registers */
		char kind = sig && (int)strlen(sig) == n ? sig[i] : sig ? '?' : 'i';
		if (!params[i])
			return CUDA_ERROR_INVALID_VALUE;
		if (kind != 'p' && kind != 'i' && kind != 'l')
			return CUDA_ERROR_NOT_SUPPORTED;
		if (k->param_size[i] == 4) {
			int32_t v;
			memcpy(&v, params[i], 4);
			a[i] = v;
		} else if (k->param_size[i] == 8) {
			memcpy(&a[i], params[i], 8);
		} else {
			return CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	if (fk_capture_launch(s, launch, sym, g, b, smem, a, &r))
		return r;   /* recorded for a graph (fakecuda_graph.c) */
	launch(sym, g, b, smem, a);
	return CUDA_SUCCESS;
}


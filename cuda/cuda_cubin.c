/* cuda_cubin.c — kernel entry points, registers and parameter sizes read
 * from a cubin's ELF sections (see cuda_cubin.h for the record format). */
#include "cuda/cuda_cubin.h"

#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STO_CUDA_ENTRY 0x10
#define EIFMT_SVAL 0x04           /* a record with a payload of `size` bytes */
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_REGCOUNT 0x2f

/* A bounds-checked view of the file. */
struct elf {
	const unsigned char *b;
	size_t len;
	const Elf64_Shdr *sh;      /* not aligned: read through memcpy */
	unsigned n_sh;
	Elf64_Shdr shstr;
};

static bool in_file(const struct elf *e, uint64_t off, uint64_t n)
{
	return off <= e->len && n <= e->len - off;
}

static bool section(const struct elf *e, unsigned i, Elf64_Shdr *out)
{
	if (i >= e->n_sh)
		return false;
	memcpy(out, (const unsigned char *)e->sh + (size_t)i * sizeof *out, sizeof *out);
	return out->sh_type == SHT_NOBITS || in_file(e, out->sh_offset, out->sh_size);
}

/* A NUL-terminated string at off inside string-table section s, or NULL. */
static const char *str_at(const struct elf *e, const Elf64_Shdr *s, uint64_t off)
{
	if (s->sh_type == SHT_NOBITS || off >= s->sh_size)
		return NULL;
	const char *p = (const char *)e->b + s->sh_offset + off;
	if (!memchr(p, '\0', (size_t)(s->sh_size - off)))
		return NULL;
	return p;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* Calls fn for every EIATTR record with a payload in section s. */
static void each_record(const struct elf *e, const Elf64_Shdr *s,
			void (*fn)(void *ctx, int attr, const unsigned char *p, size_t n), void *ctx)
{
	const unsigned char *b = e->b + s->sh_offset;
	size_t pos = 0, end = (size_t)s->sh_size;

	while (pos + 4 <= end) {
		int fmt = b[pos], attr = b[pos + 1];
		size_t n = rd16(b + pos + 2);
		pos += 4;
		if (fmt != EIFMT_SVAL)
			continue;       /* the value sits in the size field */
		if (n > end - pos)
			return;
		fn(ctx, attr, b + pos, n);
		pos += n;
	}
}

struct global_ctx {
	struct cr_cubin_info *info;
	const uint32_t *sym_of;    /* [n_kernels] symbol index of each kernel */
};

static void global_record(void *ctx, int attr, const unsigned char *p, size_t n)
{
	struct global_ctx *g = ctx;
	if (n != 8 || (attr != EIATTR_REGCOUNT && attr != EIATTR_FRAME_SIZE))
		return;
	for (int k = 0; k < g->info->n_kernels; k++)
		if (g->sym_of[k] == rd32(p)) {
			int v = (int)rd32(p + 4);
			if (attr == EIATTR_REGCOUNT)
				g->info->k[k].regs = v;
			else
				g->info->k[k].frame = v;
		}
}

static void kernel_record(void *ctx, int attr, const unsigned char *p, size_t n)
{
	struct cr_cubin_kernel *k = ctx;
	if (attr != EIATTR_KPARAM_INFO || n != 12)
		return;
	unsigned ord = rd16(p + 4), off = rd16(p + 6);
	uint32_t flags = rd32(p + 8);
	if (ord >= CR_CUBIN_MAX_PARAMS)
		return;
	k->param_size[ord] = (int16_t)((flags >> 18) & 0x3fff);
	k->param_offset[ord] = off > INT16_MAX ? -1 : (int16_t)off;
	if ((int)ord + 1 > k->n_params)
		k->n_params = (int)ord + 1;
}

static void kernel_init(struct cr_cubin_kernel *k, const char *name)
{
	memset(k, 0, sizeof *k);
	snprintf(k->name, sizeof k->name, "%s", name);
	k->regs = k->frame = k->spill_stores = k->spill_loads = -1;
	k->n_params = -1;          /* until its .nv.info.<name> section is read */
	for (int i = 0; i < CR_CUBIN_MAX_PARAMS; i++)
		k->param_size[i] = k->param_offset[i] = -1;
}

bool cr_cubin_parse(const void *cubin, size_t len, struct cr_cubin_info *out)
{
	struct elf e = { .b = cubin, .len = len };
	Elf64_Ehdr eh;
	Elf64_Shdr symtab, strtab, s;
	uint32_t sym_of[CR_CUBIN_MAX_KERNELS];
	bool have_sym = false;

	memset(out, 0, sizeof *out);
	if (!cubin || len < sizeof eh)
		return false;
	memcpy(&eh, cubin, sizeof eh);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(&e, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
		return false;
	e.sh = (const Elf64_Shdr *)(e.b + eh.e_shoff);
	e.n_sh = eh.e_shnum;
	if (!section(&e, eh.e_shstrndx, &e.shstr))
		return false;
	for (unsigned i = 0; i < e.n_sh && !have_sym; i++)
		if (section(&e, i, &symtab) && symtab.sh_type == SHT_SYMTAB &&
		    symtab.sh_entsize == sizeof(Elf64_Sym) && section(&e, symtab.sh_link, &strtab))
			have_sym = true;
	if (!have_sym)
		return false;
	/* entry points */
	for (uint64_t i = 0; i < symtab.sh_size / sizeof(Elf64_Sym); i++) {
		Elf64_Sym sym;
		const char *nm;
		memcpy(&sym, e.b + symtab.sh_offset + i * sizeof sym, sizeof sym);
		if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || ELF64_ST_BIND(sym.st_info) != STB_GLOBAL ||
		    !(sym.st_other & STO_CUDA_ENTRY))
			continue;
		nm = str_at(&e, &strtab, sym.st_name);
		if (!nm || strlen(nm) >= CR_CUBIN_NAME || out->n_kernels == CR_CUBIN_MAX_KERNELS) {
			out->n_skipped++;
			continue;
		}
		sym_of[out->n_kernels] = (uint32_t)i;
		kernel_init(&out->k[out->n_kernels++], nm);
	}
	/* .nv.info (registers, frames, by symbol index) and .nv.info.<kernel> */
	for (unsigned i = 0; i < e.n_sh; i++) {
		const char *nm;
		if (!section(&e, i, &s) || s.sh_type == SHT_NOBITS ||
		    !(nm = str_at(&e, &e.shstr, s.sh_name)))
			continue;
		if (!strcmp(nm, ".nv.info")) {
			struct global_ctx g = { out, sym_of };
			each_record(&e, &s, global_record, &g);
		} else if (!strncmp(nm, ".nv.info.", 9)) {
			for (int k = 0; k < out->n_kernels; k++)
				if (!strcmp(nm + 9, out->k[k].name)) {
					out->k[k].n_params = 0;
					each_record(&e, &s, kernel_record, &out->k[k]);
				}
		}
	}
	/* a kernel with no .nv.info.<name> section: parameters unknown */
	for (int k = 0; k < out->n_kernels; k++)
		for (int p = 0; p < out->k[k].n_params; p++)
			if (out->k[k].param_size[p] < 0)
				out->k[k].n_params = -1;
	return true;
}

void cr_cubin_add_ptxas_log(struct cr_cubin_info *info, const char *log)
{
	static const char tag[] = "Function properties for ";
	const char *p = log;

	while (p && (p = strstr(p, tag))) {
		char name[CR_CUBIN_NAME];
		const char *nm = p + sizeof tag - 1, *eol = strchr(nm, '\n');
		size_t n = strcspn(nm, " \r\n");
		int stores, loads;
		struct cr_cubin_kernel *k = NULL;
		p = eol;
		if (!eol || n >= sizeof name)
			continue;
		memcpy(name, nm, n);
		name[n] = '\0';
		for (int i = 0; i < info->n_kernels; i++)
			if (!strcmp(info->k[i].name, name))
				k = &info->k[i];
		const char *sp = strstr(eol + 1, "bytes spill stores");
		const char *next = strchr(eol + 1, '\n');
		if (!k || !sp || (next && sp > next))
			continue;
		/* "... N bytes stack frame, S bytes spill stores, L bytes spill loads" */
		const char *c = sp;
		while (c > eol + 1 && c[-1] != ',')
			c--;
		if (sscanf(c, " %d bytes spill stores, %d bytes spill loads", &stores, &loads) == 2) {
			k->spill_stores = stores;
			k->spill_loads = loads;
		}
	}
}

const struct cr_cubin_kernel *cr_cubin_find(const struct cr_cubin_info *info, const char *name)
{
	for (int i = 0; i < info->n_kernels; i++)
		if (!strcmp(info->k[i].name, name))
			return &info->k[i];
	return NULL;
}

const struct cr_cubin_kernel *cr_cubin_find_mangled(const struct cr_cubin_info *info,
						    const char *name)
{
	char want[CR_CUBIN_NAME + 16];
	/* Itanium mangling of a free function: _Z<len><name><params>; in a
	 * namespace: _ZN...<len><name>E<params> */
	snprintf(want, sizeof want, "%zu%s", strlen(name), name);
	for (int i = 0; i < info->n_kernels; i++)
		if (!strncmp(info->k[i].name, "_Z", 2) && strstr(info->k[i].name, want))
			return &info->k[i];
	return NULL;
}

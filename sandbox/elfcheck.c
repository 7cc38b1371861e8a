/* elfcheck.c — a built candidate may run code only in its launches
 * (elfcheck.h). Reads the whole file (it is at most SO_CAP bytes, root's
 * copy) and walks its program headers, dynamic section, relocations and
 * symbol tables with every offset bounds-checked. */
#include "sandbox/elfcheck.h"

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELF_CAP (64u << 20)

/* The libraries a candidate may name: what cc -fopenmp ... -lm links, and
 * what the worker has loaded before its sandbox closed (worker.c). */
static const char *const allowed_needed[] = { "libc.so.6", "libm.so.6", "libmvec.so.1", "libgomp.so.1",
					      "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", NULL };

struct img {
	const uint8_t *p;
	size_t n;
	const Elf64_Phdr *ph;
	int phnum;
};

static const void *at(const struct img *m, uint64_t off, uint64_t len)
{
	if (off > m->n || len > m->n - off)
		return NULL;
	return m->p + off;
}

/* A virtual address inside a PT_LOAD segment's file bytes, as a file offset. */
static int vaddr_off(const struct img *m, uint64_t va, uint64_t *off)
{
	for (int i = 0; i < m->phnum; i++) {
		const Elf64_Phdr *p = &m->ph[i];

		if (p->p_type == PT_LOAD && va >= p->p_vaddr && va - p->p_vaddr < p->p_filesz) {
			*off = p->p_offset + (va - p->p_vaddr);
			return 0;
		}
	}
	return -1;
}

/* Whether [va, va + len) lies in one PT_LOAD segment's memory with flags
 * `want` (all of them) set. */
static bool in_load(const struct img *m, uint64_t va, uint64_t len, uint32_t want)
{
	for (int i = 0; i < m->phnum; i++) {
		const Elf64_Phdr *p = &m->ph[i];

		if (p->p_type == PT_LOAD && (p->p_flags & want) == want && va >= p->p_vaddr &&
		    va - p->p_vaddr <= p->p_memsz && len <= p->p_memsz - (va - p->p_vaddr))
			return true;
	}
	return false;
}

/* Every relocation: no ifunc, and a target the loader may write without
 * changing what it reads next: inside a writable segment and outside the
 * dynamic section (a relocation into it rewrote DT_INIT_ARRAYSZ from 0 to 8
 * after this check, and ld.so then ran a constructor: round 3's attack). */
static int check_relocs(const struct img *m, uint64_t va, uint64_t size, uint32_t irel, const char *what,
			uint64_t dyn_va, uint64_t dyn_sz, char *why, size_t cap)
{
	uint64_t off;
	const Elf64_Rela *r;

	if (!size)
		return 0;
	if (vaddr_off(m, va, &off) || !(r = at(m, off, size)) || size % sizeof *r) {
		snprintf(why, cap, "its %s relocations lie outside the file", what);
		return -1;
	}
	if (in_load(m, va, size, PF_W)) {
		snprintf(why, cap, "its %s relocations lie in a writable segment", what);
		return -1;
	}
	for (uint64_t i = 0; i < size / sizeof *r; i++) {
		uint64_t t = r[i].r_offset;

		if (ELF64_R_TYPE(r[i].r_info) == irel) {
			snprintf(why, cap, "it has an ifunc relocation (IRELATIVE in %s): a resolver runs at load time",
				 what);
			return -1;
		}
		if (!in_load(m, t, 8, PF_W) || (t + 8 > dyn_va && t < dyn_va + dyn_sz)) {
			snprintf(why, cap, "a relocation in %s writes at %#llx, %s", what, (unsigned long long)t,
				 in_load(m, t, 8, PF_W) ? "inside the dynamic section the loader reads"
							: "outside the writable data");
			return -1;
		}
	}
	return 0;
}

/* The section headers, bounds-checked; NULL when there are none or they
 * lie outside the file. */
static const Elf64_Shdr *shdrs(const struct img *m, const Elf64_Ehdr *eh)
{
	if (!eh->e_shoff || !eh->e_shnum || eh->e_shentsize != sizeof(Elf64_Shdr))
		return NULL;
	return at(m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr));
}

static int check_symbols(const struct img *m, const Elf64_Ehdr *eh, char *why, size_t cap)
{
	const Elf64_Shdr *sh = shdrs(m, eh);

	if (!sh) {
		/* dynsym_at has required them already */
		snprintf(why, cap, "its section headers are missing or lie outside the file");
		return -1;
	}
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *s;
		uint64_t n;

		if (sh[i].sh_type != SHT_DYNSYM && sh[i].sh_type != SHT_SYMTAB)
			continue;
		if (sh[i].sh_entsize != sizeof *s || !(s = at(m, sh[i].sh_offset, sh[i].sh_size))) {
			snprintf(why, cap, "its symbol table lies outside the file");
			return -1;
		}
		n = sh[i].sh_size / sizeof *s;
		for (uint64_t k = 0; k < n; k++)
			if (ELF64_ST_TYPE(s[k].st_info) == STT_GNU_IFUNC && s[k].st_shndx != SHN_UNDEF) {
				snprintf(why, cap, "it defines an ifunc symbol: its resolver would run when the "
					 "symbol is looked up");
				return -1;
			}
	}
	return 0;
}

/* 0 when symtab and strtab are the addresses of the SHT_DYNSYM section and
 * the string section it links to. */
static int dynsym_at(const struct img *m, const Elf64_Ehdr *eh, uint64_t symtab, uint64_t strtab)
{
	const Elf64_Shdr *sh = shdrs(m, eh);

	if (!sh)
		return -1;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_DYNSYM)
			return sh[i].sh_addr == symtab && sh[i].sh_link < eh->e_shnum &&
			       sh[sh[i].sh_link].sh_addr == strtab ? 0 : -1;
	return -1;
}

static int check_image(const struct img *m0, char *why, size_t cap)
{
	struct img m = *m0;
	const Elf64_Ehdr *eh = at(&m, 0, sizeof *eh);
	const Elf64_Dyn *dyn = NULL;
	uint64_t ndyn = 0, strtab = 0, strsz = 0, rela = 0, relasz = 0, jmprel = 0, pltrelsz = 0, stroff = 0;
	uint64_t dyn_va = 0, dyn_sz = 0, dyn_off, symtab = 0;
	int n_symtab = 0, n_strtab = 0;
	uint32_t irel;
	const char *str = NULL;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_type != ET_DYN) {
		snprintf(why, cap, "it is not a 64-bit little-endian ELF shared object");
		return -1;
	}
	if (eh->e_machine == EM_X86_64)
		irel = R_X86_64_IRELATIVE;
	else if (eh->e_machine == EM_AARCH64)
		irel = R_AARCH64_IRELATIVE;
	else {
		snprintf(why, cap, "its machine (%u) is not one crucible inspects", eh->e_machine);
		return -1;
	}
	if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !(m.ph = at(&m, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))) {
		snprintf(why, cap, "its program headers lie outside the file");
		return -1;
	}
	m.phnum = eh->e_phnum;
	/* the dynamic section where the loader finds it: by its address */
	for (int i = 0; i < m.phnum; i++)
		if (m.ph[i].p_type == PT_DYNAMIC) {
			if (dyn) {
				snprintf(why, cap, "it has two dynamic segments");
				return -1;
			}
			dyn_va = m.ph[i].p_vaddr;
			dyn_sz = m.ph[i].p_memsz;
			if (vaddr_off(&m, dyn_va, &dyn_off) || !(dyn = at(&m, dyn_off, m.ph[i].p_filesz)) ||
			    dyn_off != m.ph[i].p_offset) {
				snprintf(why, cap, "its dynamic section lies outside the file");
				return -1;
			}
			ndyn = m.ph[i].p_filesz / sizeof *dyn;
		}
	for (uint64_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		const Elf64_Dyn *d = &dyn[i];

		switch (d->d_tag) {
		case DT_INIT: case DT_FINI: case DT_PREINIT_ARRAY: case DT_INIT_ARRAY: case DT_FINI_ARRAY:
		case DT_INIT_ARRAYSZ: case DT_FINI_ARRAYSZ: case DT_PREINIT_ARRAYSZ:
			/* refused whatever its value: a size of 0 here can be 8 once
			 * the loader has relocated */
			snprintf(why, cap, "it has %s (dynamic tag %lld: a constructor or destructor, "
				 "__attribute__((constructor)) or an .init_array/.fini_array section)",
				 d->d_tag == DT_FINI || d->d_tag == DT_FINI_ARRAY || d->d_tag == DT_FINI_ARRAYSZ
					 ? "destructors" : "constructors", (long long)d->d_tag);
			return -1;
		case DT_TEXTREL:
			snprintf(why, cap, "it relocates its own code (DT_TEXTREL)");
			return -1;
		case DT_FILTER: case DT_AUXILIARY: case DT_AUDIT: case DT_DEPAUDIT:
			snprintf(why, cap, "it names another library to load (dynamic tag %#llx)",
				 (unsigned long long)d->d_tag);
			return -1;
		case DT_REL: case DT_RELR:
			snprintf(why, cap, "it has relocation tables crucible does not inspect (dynamic tag %lld)",
				 (long long)d->d_tag);
			return -1;
		case DT_STRTAB: strtab = d->d_un.d_ptr; n_strtab++; break;
		case DT_SYMTAB: symtab = d->d_un.d_ptr; n_symtab++; break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_RELA: rela = d->d_un.d_ptr; break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		case DT_JMPREL: jmprel = d->d_un.d_ptr; break;
		case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
		default: break;
		}
	}
	/* the tables the loader reads are the ones this check reads: one of
	 * each, at the dynamic symbol and string sections (a hand-made
	 * `.dynamic` input section could name others, ending early with its
	 * own DT_NULL, and hide an ifunc from the section headers' view) */
	if (n_symtab != 1 || n_strtab != 1) {
		snprintf(why, cap, "its dynamic section names %d symbol and %d string tables", n_symtab, n_strtab);
		return -1;
	}
	if (dynsym_at(&m, eh, symtab, strtab)) {
		snprintf(why, cap, "its dynamic section names symbol or string tables other than its "
			 ".dynsym and .dynstr");
		return -1;
	}
	if (strsz && (vaddr_off(&m, strtab, &stroff) || !(str = at(&m, stroff, strsz)))) {
		snprintf(why, cap, "its dynamic string table lies outside the file");
		return -1;
	}
	for (uint64_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		const char *name;
		int ok = 0;

		if (dyn[i].d_tag != DT_NEEDED)
			continue;
		if (!str || dyn[i].d_un.d_val >= strsz || !memchr(str + dyn[i].d_un.d_val, 0, strsz - dyn[i].d_un.d_val)) {
			snprintf(why, cap, "it names a library outside its string table");
			return -1;
		}
		name = str + dyn[i].d_un.d_val;
		for (int k = 0; allowed_needed[k]; k++)
			ok |= !strcmp(name, allowed_needed[k]);
		if (!ok) {
			snprintf(why, cap, "it needs the library '%.64s', which candidates may not load", name);
			return -1;
		}
	}
	if (check_relocs(&m, rela, relasz, irel, "DT_RELA", dyn_va, dyn_sz, why, cap) ||
	    check_relocs(&m, jmprel, pltrelsz, irel, "DT_JMPREL", dyn_va, dyn_sz, why, cap))
		return -1;
	/* what the loader reads (symbols, strings) must not be writable either */
	if (strsz && in_load(&m, strtab, strsz, PF_W)) {
		snprintf(why, cap, "its dynamic string table lies in a writable segment");
		return -1;
	}
	return check_symbols(&m, eh, why, cap);
}

int cr_elf_check_so(int fd, char *why, size_t cap)
{
	struct stat sb;
	struct img m = { 0 };
	uint8_t *buf;
	size_t got = 0;
	int rc;

	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size <= 0 || (uint64_t)sb.st_size > ELF_CAP) {
		snprintf(why, cap, "it is not a regular file of at most %u bytes", ELF_CAP);
		return -1;
	}
	if (!(buf = malloc((size_t)sb.st_size))) {
		snprintf(why, cap, "out of memory reading it");
		return -1;
	}
	while (got < (size_t)sb.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)sb.st_size - got, (off_t)got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got != (size_t)sb.st_size) {
		free(buf);
		snprintf(why, cap, "cannot read it");
		return -1;
	}
	m.p = buf;
	m.n = got;
	rc = check_image(&m, why, cap);
	free(buf);
	return rc;
}

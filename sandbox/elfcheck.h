/* elfcheck.h — what the orchestrator requires of a built candidate before
 * any worker loads it: no code that runs outside its launches. A shared
 * object runs code at load time through its constructors (DT_INIT,
 * DT_INIT_ARRAY, DT_PREINIT_ARRAY), through GNU ifunc resolvers (an
 * R_*_IRELATIVE relocation, or an STT_GNU_IFUNC symbol that dlsym would
 * resolve) and through the libraries it names (DT_NEEDED, filters). With
 * none of these, nothing of the candidate's runs before the worker's
 * sandbox is whole and READY is sent, so every word the worker says
 * before its first call is crucible's own (docs/VERIFIER.md). */
#ifndef CR_ELFCHECK_H
#define CR_ELFCHECK_H

#include <stddef.h>

/* Checks the ELF shared object open at fd (root's own copy). 0 when it
 * has none of the above; -1 with the reason in why (naming the entry). */
int cr_elf_check_so(int fd, char *why, size_t cap);

#endif

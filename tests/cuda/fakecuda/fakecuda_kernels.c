/* fakecuda_kernels.c — the emulated build of a candidate for the fake CUDA
 * driver (see fakecuda_kernels.h). */
#include "fakecuda_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

int fakecuda_kernels_path(const char *lib, char *out, size_t cap)
{
	const char *slash = strrchr(lib, '/');
	int n = slash ? snprintf(out, cap, "%.*s/fakecuda-kernels.so", (int)(slash - lib), lib)
		      : snprintf(out, cap, "./fakecuda-kernels.so");
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int c_identifier(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

/* The wrapper: the candidate, then a signature per extern "C" kernel. */
static int write_wrapper(const char *path, const char *cu_path, const struct cr_cubin_info *info)
{
	FILE *f = fopen(path, "w");
	int ok;
	if (!f)
		return -1;
	fprintf(f, "#include \"%s\"\n", cu_path);
	for (int i = 0; i < info->n_kernels; i++)
		if (strncmp(info->k[i].name, "_Z", 2) && c_identifier(info->k[i].name))
			fprintf(f, "FAKECUDA_SIG(%s)\n", info->k[i].name);
	ok = !ferror(f);
	return fclose(f) == 0 && ok ? 0 : -1;
}

int fakecuda_build_kernels(const char *src_root, const char *cu_path, const struct cr_cubin_info *info,
			   const char *dest, char *why, size_t cap)
{
	char wrap[4200], tmp[4200], log[4200], emu_h[4200], sig_h[4200];
	const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "c++";
	int status = 0, fd, rc = -1;
	pid_t pid;

	snprintf(wrap, sizeof wrap, "%s.%d.cpp", dest, (int)getpid());
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", dest, (int)getpid());
	snprintf(log, sizeof log, "%s.log", dest);
	snprintf(emu_h, sizeof emu_h, "%s/tests/cuda/emu/cuda_emu.hpp", src_root);
	snprintf(sig_h, sizeof sig_h, "%s/tests/cuda/fakecuda/fakecuda_sig.hpp", src_root);
	if (write_wrapper(wrap, cu_path, info)) {
		snprintf(why, cap, "cannot write %s", wrap);
		return -1;
	}
	if ((fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0) {
		snprintf(why, cap, "cannot write %s", log);
		goto out;
	}
	char *argv[] = { (char *)cxx, "-std=c++20", "-O1", "-fno-delete-null-pointer-checks", "-fPIC", "-shared", "-pthread", "-fno-gnu-unique",
			 "-include", emu_h, "-include", sig_h, "-x", "c++", wrap, "-o", tmp, NULL };
	fflush(NULL);
	if ((pid = fork()) == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(why, cap, "%s: the C++ build of %s failed (exit %d; see %s)", cxx, cu_path,
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1, log);
		goto out;
	}
	if (rename(tmp, dest)) {
		snprintf(why, cap, "cannot rename %s to %s", tmp, dest);
		goto out;
	}
	unlink(log);
	rc = 0;
out:
	unlink(wrap);
	unlink(tmp);
	return rc;
}

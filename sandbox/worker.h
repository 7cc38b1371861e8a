/* worker.h — the isolated worker process (`crucible __worker MODE`).
 * MODE "cand": sandboxes itself (jail.h: namespaces, empty root, Landlock;
 * sandbox.h: seccomp stage 1), loads the compiled candidate, seals itself
 * (Landlock, seccomp stage 2), runs launches on request. Its READY reply's
 * msg is the sandbox level reached (cr_sandbox_level); "base" reports its
 * own (jail and Landlock, no seccomp). MODE "base": runs the task's baseline (our own code) the same
 * way, in a separate process so a candidate can never touch it.
 * MODE "cuda": loads a CUDA candidate's cubin and launches its kernels
 * through the driver (cuda/cuda_worker.c); the candidate has no host code.
 * fds: 3 command pipe (read), 4 reply pipe (write), 5 shared memory. */
#ifndef CR_WORKER_H
#define CR_WORKER_H

#include <stddef.h>

/* The device worker's entry (cuda/cuda_dev.h: cr_cuda_worker_entry), given
 * by the caller so that this room does not depend on cuda/. */
typedef int (*cr_worker_cuda_fn)(char *shm, size_t size);
int cr_worker_main(int argc, char **argv, cr_worker_cuda_fn cuda_main);

#endif

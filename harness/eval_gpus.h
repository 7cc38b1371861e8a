/* eval_gpus.h — `crucible eval --gpus 0,1,...` (docs/SCALE.md, docs/CUDA.md):
 * the devices of a cuda run. Each is named by the driver's ordinal
 * (cuDeviceGet: what the device worker opens), identified by its UUID (the
 * worker checks it) and found in NVML by its PCI bus id (NVML's indices are
 * not the driver's ordinals). Every job of the run is bound to one device,
 * round-robin in the list's order; a device times one candidate at a time
 * (eval_jobs.c's per-device lock). Devices of different models are refused
 * unless --gpus lists them. */
#ifndef CR_EVAL_GPUS_H
#define CR_EVAL_GPUS_H

#include <stdbool.h>
#include <jansson.h>

#include "checks/result.h"
#include "cuda/cuda_dev.h"

#define EVAL_MAX_GPUS 64

struct eval_gpus {
	int n_list;                        /* --gpus as given: ordinals, in order (0: not given) */
	int list[EVAL_MAX_GPUS];
	int n;                             /* the run's devices, in --gpus order */
	struct cr_gpu dev[EVAL_MAX_GPUS];
	bool mixed;                        /* their models differ (only when --gpus lists them) */
	bool locked[EVAL_MAX_GPUS];        /* --lock-clocks locked dev[i] */
};

/* --gpus LIST: comma-separated distinct ordinals in [0, EVAL_MAX_GPUS). 0,
 * or 2 with the message (naming the value) on stderr. */
int eval_gpus_parse(struct eval_gpus *g, const char *list, const char *who);
/* The run's devices: the listed ones, else every visible one. 0; 2 for an
 * ordinal with no device or models that differ without --gpus naming them;
 * 3 when there is no usable device (the message on stderr). */
int eval_gpus_open(struct eval_gpus *g, const char *who);
/* The device of job slot `slot` (round-robin over the list). */
const struct cr_gpu *eval_gpus_for(const struct eval_gpus *g, int slot);
/* The device whose ordinal is `ordinal`, or NULL. */
const struct cr_gpu *eval_gpus_find(const struct eval_gpus *g, int ordinal);
/* vo's device fields (ordinal, UUID, bus id, arch, peaks) for device d. */
void eval_gpus_verify_opts(const struct cr_gpu *d, struct cr_verify_opts *vo);
/* run.json "gpus": one object per device (ordinal, name, arch, uuid,
 * pci_bus_id, memory, SMs, clocks, NVML's clocks line). New reference. */
json_t *eval_gpus_json(const struct eval_gpus *g);
/* "0,1" (the ordinals of the run). */
void eval_gpus_str(const struct eval_gpus *g, char *buf, size_t cap);
/* --lock-clocks on every device: 0, or 3 (message said) when one could not
 * be locked (those locked are released). */
int eval_gpus_lock(struct eval_gpus *g, const char *who);
void eval_gpus_unlock(struct eval_gpus *g, const char *who);

#endif

/* ops_linalg.c — op family table (see task_ops.h). */
#include "tasks/task_ops.h"

const struct task_opdef task_ops_linalg[] = {
	{ .name = NULL },
};

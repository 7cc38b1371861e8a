/* report_stub.c — placeholder: replaced by the reports implementation. */
#include <stdio.h>
#include "reports/report.h"
int report_main(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "crucible report: not built yet\n"); return 3; }
int report_gate_main(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "crucible gate: not built yet\n"); return 3; }

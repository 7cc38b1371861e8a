/* main.c — placeholder dispatch; the spine replaces it. */
#include <stdio.h>
#include <string.h>
#include "reports/report.h"
#include "decode/dec.h"
int main(int argc, char **argv)
{
	if (argc < 2) { fprintf(stderr, "usage: crucible COMMAND\n"); return 2; }
	if (!strcmp(argv[1], "report")) return report_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gate")) return report_gate_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "decode")) return dec_decode_main(argc - 1, argv + 1);
	fprintf(stderr, "crucible: unknown command '%s'\n", argv[1]);
	return 2;
}

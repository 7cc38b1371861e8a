/* report_cli_main.c — a stand-alone driver for the reports commands, so they
 * can be run and tried without the whole `crucible` executable:
 *   crucible-reports report RESULTS.csv... | crucible-reports gate ... */
#include <stdio.h>
#include <string.h>

#include "reports/report.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "gate"))
		return report_gate_main(argc - 1, argv + 1);
	if (argc >= 3 && !strcmp(argv[1], "summary"))
		return report_print_summary(argv[2], stdout);
	fprintf(stderr, "usage: crucible-reports report|gate ... | summary RESULTS.csv\n");
	return 2;
}

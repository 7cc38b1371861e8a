/* report.h — entry points of the reports/ folder for the CLI.
 * Each takes the subcommand's argv (argv[0] is the subcommand name) and
 * returns the process exit code of SPEC §1 (0 ok, 1 gate failed, 2 bad usage
 * or input, 3 environment). */
#ifndef REPORT_H
#define REPORT_H

#include <stdio.h>

int report_main(int argc, char **argv);      /* crucible report */
int report_gate_main(int argc, char **argv); /* crucible gate */

/* Prints a short markdown summary of one results.csv (status counts, Fast_p
 * best-of-n, geometric-mean speedup) to out, for the end of `crucible eval`.
 * Returns an exit code like the commands (0 ok, 2 bad input file, with the
 * message on stderr). */
int report_print_summary(const char *csv_path, FILE *out);

#endif

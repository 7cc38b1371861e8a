/* report.h — entry points of the reports/ folder for the CLI.
 * Each takes the subcommand's argv (argv[0] is the subcommand name) and
 * returns the process exit code of SPEC §1 (0 ok, 1 gate failed, 2 bad usage
 * or input, 3 environment). */
#ifndef REPORT_H
#define REPORT_H

int report_main(int argc, char **argv);      /* crucible report */
int report_gate_main(int argc, char **argv); /* crucible gate */

#endif

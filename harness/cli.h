/* cli.h — subcommand entry points of the crucible executable (harness/).
 * Each returns a SPEC §1 exit code. argv[0] is the subcommand name. */
#ifndef CR_CLI_H
#define CR_CLI_H

#include <stdint.h>

int cr_cmd_list(int argc, char **argv);
int cr_cmd_check(int argc, char **argv);
int cr_cmd_eval(int argc, char **argv);
int cr_cmd_dump(int argc, char **argv);
int cr_cmd_lint(int argc, char **argv);
int cr_cmd_generate(int argc, char **argv);

/* The seed of this process: --seed mixed with CRUCIBLE_SEED (read once at
 * start-up and scrubbed from the environment). */
uint64_t cr_seed(uint64_t flag_seed);
int cr_seed_is_secret(void);

#endif

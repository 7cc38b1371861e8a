/* cli.h — subcommand entry points of the crucible executable (harness/).
 * Each returns a SPEC §1 exit code. argv[0] is the subcommand name. */
#ifndef CR_CLI_H
#define CR_CLI_H

#include <signal.h>

int cr_cmd_list(int argc, char **argv);
int cr_cmd_check(int argc, char **argv);
int cr_cmd_eval(int argc, char **argv);
int cr_cmd_dump(int argc, char **argv);
int cr_cmd_lint(int argc, char **argv);
int cr_cmd_generate(int argc, char **argv);
int cr_cmd_run(int argc, char **argv);
int cr_cmd_merge(int argc, char **argv);
int cr_cmd_serve(int argc, char **argv);
int cr_cmd_serve_model(int argc, char **argv); /* serve --model */
/* The signals that stop a server (SIGINT, SIGTERM, SIGHUP), to block and sigwait. */
sigset_t cr_serve_stop_signals(void);
int cr_cmd_submit(int argc, char **argv);

#endif

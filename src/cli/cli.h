/* cli.h: the typellm command-line tool. One file per subcommand
 * (src/cli/cmd_NAME.c defines tl_cmd_NAME); main.c dispatches. Each command
 * returns the process exit status: 0 ok, 1 runtime error, 2 usage error. */
#ifndef TL_CLI_CLI_H
#define TL_CLI_CLI_H

#include <stdbool.h>

/* Numeric option values (args.c): false after printing "typellm CMD: FLAG: ..." */
bool tl_cli_long(const char *cmd, const char *flag, const char *s, long *out);
bool tl_cli_double(const char *cmd, const char *flag, const char *s, double *out);

int tl_cmd_inspect(int argc, char **argv);
int tl_cmd_tokenize(int argc, char **argv);
int tl_cmd_detokenize(int argc, char **argv);
int tl_cmd_logits(int argc, char **argv);
int tl_cmd_generate(int argc, char **argv);
int tl_cmd_bench(int argc, char **argv);
int tl_cmd_quantize(int argc, char **argv);
int tl_cmd_decide(int argc, char **argv);
int tl_cmd_serve(int argc, char **argv);
int tl_cmd_synth(int argc, char **argv);
int tl_cmd_oracle(int argc, char **argv);
int tl_cmd_template(int argc, char **argv);

#endif

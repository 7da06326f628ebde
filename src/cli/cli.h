/* cli.h: the typellm command-line tool. One file per subcommand
 * (src/cli/cmd_NAME.c defines tl_cmd_NAME); main.c dispatches. Each command
 * returns the process exit status: 0 ok, 1 runtime error, 2 usage error. */
#ifndef TL_CLI_CLI_H
#define TL_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Options: one grammar for every command (opt.h). */
#include "cli/opt.h"
#include "typellm/typellm.h"

/* The model path: arg when given, else $TYPELLM_MODEL, else NULL. */
const char *tl_cli_model(const char *arg);
/* -c/--ctx-size N onto session params: 0 keeps the model's context; above the
 * trained context it extends it (RoPE extrapolation) with a warning. */
void tl_cli_ctx(const char *cmd, const tl_model *m, long n_ctx, tl_session_params *sp);
/* Loads the model (mapped, or read into memory with no_mmap); on failure
 * prints the error and returns its status. */
tl_status tl_cli_model_load(const char *cmd, const char *path, bool no_mmap, tl_model **m);
/* Parses --ids "1 2, 3" (spaces, commas, tabs, newlines between int32 ids)
 * into a malloc'd array; false after printing the column of the bad id. */
bool tl_cli_parse_ids(const char *cmd, const char *s, int32_t **ids, size_t *n);
/* "typellm CMD: msg" on stderr, without a repeated "CMD: " prefix. */
void tl_cli_error(const char *cmd, const char *msg);
/* --chat-template NAME|FILE.jinja: a value with a '/' or ending in .jinja
 * is read as a template file into *jinja (malloc'd), else it names a
 * built-in family in *name (checked where it is used). */
#define TL_CLI_MAX_TEMPLATE_BYTES ((size_t)16 << 20)
tl_status tl_cli_chat_template(const char *arg, const char **name, char **jinja, tl_error *err);
/* --var NAME=JSON (TL_OPT_CALL; dest is a jansson object the value joins). */
#define TL_CLI_MAX_VARS 64
bool tl_cli_var(const char *value, void *dest, const char **why);
/* --cache-type-k / --cache-type-v T (TL_OPT_CALL; dest is a tl_cache_type). */
bool tl_cli_cache_type(const char *value, void *dest, const char **why);
/* Both entries, over tl_cache_type *k and *v, with llama.cpp's names and -ctk / -ctv spellings. */
#define TL_OPT_CACHE_TYPES(k, v)                                                                             \
    {0, "cache-type-k", TL_OPT_CALL, (k), .call = tl_cli_cache_type, .dash_name = "ctk", .metavar = "T",     \
     .help = "element type of the cached keys: " TL_CACHE_TYPE_NAMES " (default f32)"},                      \
    {0, "cache-type-v", TL_OPT_CALL, (v), .call = tl_cli_cache_type, .dash_name = "ctv", .metavar = "T",     \
     .help = "element type of the cached values: " TL_CACHE_TYPE_NAMES " (default f32)"}

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
int tl_cmd_batch(int argc, char **argv);

#endif

/* opt.h: the one command-line grammar of typellm. Every subcommand describes
 * its options in a table and hands argv to tl_opt_parse, so all commands
 * accept the same forms and give the same errors:
 *
 *   --name VALUE   --name=VALUE   -x VALUE   (-x: the option's short name)
 *   --flag         (a flag takes no value; --flag=... is an error)
 *   --             everything after it is positional
 *   -h, --help     prints the usage generated from the table, exit 0
 *
 * A value is checked when it is parsed: an integer or number that does not
 * parse, or lies outside the option's range, is a usage error that names the
 * option as typed and says why ("typellm generate: -n: -5 is out of range
 * it must be from 0 to 1073741824"); exit status 2.
 *
 * Adding a subcommand (say src/cli/cmd_template.c):
 *
 *     int tl_cmd_template(int argc, char **argv) {
 *         const char *model = NULL, *file = NULL;
 *         bool json = false;
 *         long n = 4;
 *         const tl_opt opts[] = {
 *             TL_OPT_MODEL(&model),
 *             {'f', "file", TL_OPT_STR, &file, .metavar = "F", .help = "read the template from F"},
 *             {'n', "count", TL_OPT_LONG, &n, .min = 1, .max = 100, .metavar = "N", .help = "how many (default 4)"},
 *             {0, "json", TL_OPT_FLAG, &json, .help = "print JSON"},
 *             {0},
 *         };
 *         const tl_opt_cmd cmd = {"template", "--model M [-f F] [-n N] [--json] [NAME]",
 *                                 "render a chat template", opts, .max_positional = 1};
 *         const char *pos[1];
 *         int n_pos, rc = tl_opt_parse(&cmd, argc, argv, pos, &n_pos);
 *         if (rc != TL_OPT_OK)
 *             return tl_opt_exit(rc); // 0 after --help, 2 after a usage error
 *         ...
 *     }
 *
 * and one line in main.c's command table. `typellm help template` then prints
 * the same usage as `typellm template --help`.
 *
 * Conventions shared with llama.cpp where the meaning is the same: -m/--model,
 * -t/--threads, -c/--ctx-size, -n, -p/--prompt, -f/--file, --host, --port.
 * A model path defaults to $TYPELLM_MODEL (tl_cli_model). */
#ifndef TL_CLI_OPT_H
#define TL_CLI_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum tl_opt_kind {
    TL_OPT_FLAG,   /* bool *: set to true */
    TL_OPT_STR,    /* const char **: the value as given */
    TL_OPT_LONG,   /* long *: an integer in [min, max] */
    TL_OPT_DOUBLE, /* double *: a finite number in [min, max] (or (min, max] with TL_OPT_GT_MIN) */
    TL_OPT_U64,    /* uint64_t *: an unsigned integer (seeds) */
    TL_OPT_CALL,   /* call(value, dest, why): custom checks; false with *why set rejects the value */
} tl_opt_kind;

enum {
    TL_OPT_GT_MIN = 1 << 0, /* DOUBLE: the value must be above min, not equal to it */
    TL_OPT_HIDDEN = 1 << 1, /* accepted, not listed by --help (old spellings) */
};

typedef struct tl_opt {
    char short_name;   /* 'm' for -m; 0: none */
    const char *name;  /* "model" for --model; NULL ends the table */
    tl_opt_kind kind;
    void *dest;
    double min, max;   /* LONG / DOUBLE range, inclusive; both 0: no range check */
    const char *metavar; /* shown in --help: "--model PATH" */
    const char *help;    /* one line for --help; NULL: not listed */
    const char *alias;   /* a second long name accepted for the same option (older spelling) */
    const char *dash_name; /* a long name taken after one dash, as llama.cpp spells some ("ctk" for -ctk) */
    bool (*call)(const char *value, void *dest, const char **why);
    unsigned flags;
} tl_opt;

typedef struct tl_opt_cmd {
    const char *name;     /* "generate" */
    const char *synopsis; /* after "usage: typellm NAME " */
    const char *summary;  /* one line under the synopsis; may be NULL */
    const tl_opt *opts;
    int max_positional;   /* positional arguments accepted (written to pos[]) */
    const char *epilog;   /* printed after the option list; may be NULL */
} tl_opt_cmd;

#define TL_OPT_OK 0
#define TL_OPT_HELP (-1)
#define TL_OPT_USAGE 2

/* The usual -m/--model PATH entry (defaulting to $TYPELLM_MODEL via tl_cli_model). */
#define TL_OPT_MODEL(dest) \
    {'m', "model", TL_OPT_STR, (dest), .metavar = "PATH", .help = "GGUF model (default: $TYPELLM_MODEL)"}
/* -t/--threads N: engine threads, 0 = all cores. */
#define TL_OPT_THREADS(dest)                                                                          \
    {'t', "threads", TL_OPT_LONG, (dest), .min = 0, .max = 1024, .metavar = "N",                       \
     .help = "CPU threads (default: all cores)"}
/* -c/--ctx-size N: longest sequence; past the model's trained context with a warning (tl_cli_ctx). */
#define TL_OPT_CTX(dest)                                                                              \
    {'c', "ctx-size", TL_OPT_LONG, (dest), .min = 0, .max = 1 << 24, .metavar = "N",                   \
     .help = "context length (default: the model's; larger runs past it with a warning)"}

/* --no-mmap: read the weights into memory (tl_cli_model_load). */
#define TL_OPT_NO_MMAP(dest)                                                                          \
    {0, "no-mmap", TL_OPT_FLAG, (dest),                                                               \
     .help = "read the weights into memory instead of mapping the file (safe if it is replaced)"}

/* Parses argv[1..argc) against cmd->opts. Positional arguments go to pos
 * (room for cmd->max_positional), their count to *n_pos (either may be NULL
 * when max_positional is 0). Returns TL_OPT_OK, TL_OPT_HELP (usage printed on
 * stdout) or TL_OPT_USAGE (error and a hint printed on stderr). */
int tl_opt_parse(const tl_opt_cmd *cmd, int argc, char **argv, const char **pos, int *n_pos);
/* The exit status for a non-OK tl_opt_parse result: 0 for help, 2 otherwise. */
static inline int tl_opt_exit(int rc) { return rc == TL_OPT_HELP ? 0 : 2; }
/* Prints the usage generated from cmd to f. */
void tl_opt_usage(const tl_opt_cmd *cmd, FILE *f);
/* Sets option --name from environment variable env when that is set and not
 * empty, with the option's checks (errors name env). TL_OPT_OK or TL_OPT_USAGE.
 * Call before tl_opt_parse so the command line wins. */
int tl_opt_env(const tl_opt_cmd *cmd, const char *name, const char *env);
/* "typellm CMD: " + message on stderr; returns 2 (a usage error). */
int tl_opt_fail(const tl_opt_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

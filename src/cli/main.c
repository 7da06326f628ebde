/* main.c: `typellm COMMAND ...` dispatch and top-level help. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"decide", tl_cmd_decide, "typed decisions: context + ordered JSON Schema -> values with probabilities"},
    {"serve", tl_cmd_serve, "HTTP server: SGLang API, /v1/systemone, /v1/decide"},
    {"synth", tl_cmd_synth, "fill the typed hole of an Aeon program with a well-typed term"},
    {"oracle", tl_cmd_oracle, "Aeon completion oracle: is a prefix still completable?"},
    {"generate", tl_cmd_generate, "generate text from a prompt"},
    {"logits", tl_cmd_logits, "print next-token logits (reference JSON format)"},
    {"bench", tl_cmd_bench, "prefill/decode speed, llama-bench style"},
    {"tokenize", tl_cmd_tokenize, "text -> token ids"},
    {"detokenize", tl_cmd_detokenize, "token ids -> text"},
    {"template", tl_cmd_template, "render a chat template for a conversation, byte for byte"},
    {"inspect", tl_cmd_inspect, "describe a GGUF file"},
    {"quantize", tl_cmd_quantize, "convert a GGUF model's weights to Q8_0/Q4_0/Q4_K/Q6_K/..."},
    {"batch", tl_cmd_batch, "typed decisions over every record of a JSONL / CSV / OpenAI batch file, resumable"},
};

static void usage(FILE *f) {
    fprintf(f, "typellm %s: typed decisions and type-correct code from any GGUF model\n\n", TL_VERSION);
    fprintf(f, "usage: typellm COMMAND [options]   (typellm help COMMAND, or COMMAND --help, for details)\n"
               "options: --opt VALUE or --opt=VALUE; -m/--model (default $TYPELLM_MODEL), -t/--threads,\n"
               "-c/--ctx-size, -n, -p/--prompt, -f/--file as in llama.cpp\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") && argc >= 3) { /* typellm help CMD = typellm CMD --help */
        static char help_flag[] = "--help";
        char *sub[] = {argv[2], help_flag, NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i].name))
                return commands[i].run(2, sub);
        fprintf(stderr, "typellm: unknown command '%s'\n\n", argv[2]);
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("typellm %s\n", TL_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "typellm: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

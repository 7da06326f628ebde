/* cmd_template.c: `typellm template`: renders a chat template (a model's
 * tokenizer.chat_template or a .jinja file) for a conversation and prints
 * the rendering byte for byte, so any template can be checked against a
 * reference rendering from the command line. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"

#define MAX_FILE_BYTES ((size_t)64 << 20)

static void usage(FILE *f) {
    fprintf(f, "usage: typellm template (--model M.gguf | --template FILE.jinja) --messages MSGS.json\n"
               "                        [--add-generation-prompt] [--bos TEXT] [--eos TEXT]\n"
               "                        [--tools TOOLS.json] [--var NAME=JSON ...] [--now UNIX_SECONDS]\n"
               "  --model M.gguf           render the model's tokenizer.chat_template; BOS/EOS texts\n"
               "                           default to the model's tokens\n"
               "  --template FILE.jinja    render this template file\n"
               "  --messages MSGS.json     a JSON array of {\"role\", \"content\", ...} ('-' = stdin)\n"
               "  --add-generation-prompt  open the assistant's turn at the end\n"
               "  --bos TEXT, --eos TEXT   the bos_token / eos_token variables\n"
               "  --tools TOOLS.json       the tools variable (default None)\n"
               "  --var NAME=JSON          an extra variable, e.g. --var enable_thinking=false\n"
               "  --now UNIX_SECONDS       the time strftime_now reads (default: the clock, UTC)\n"
               "Prints the rendering with no added newline; exits 1 with the template's error.\n");
}

static char *token_text(const tl_vocab *v, int32_t id) {
    if (id < 0)
        return NULL;
    size_t n = tl_vocab_token_bytes(v, id, true, NULL, 0);
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    tl_vocab_token_bytes(v, id, true, s, n + 1);
    s[n] = 0;
    return s;
}

/* The template text, and the BOS/EOS texts of a model (NULL when unknown). */
static int load_model(const char *path, char **tpl, size_t *len, char **bos, char **eos) {
    tl_error err = {0};
    tl_gguf *g;
    if (tl_gguf_open(path, &g, &err) != TL_OK) {
        fprintf(stderr, "typellm template: %s\n", err.msg);
        return 1;
    }
    tl_gguf_str s;
    if (tl_gguf_get_str(g, "tokenizer.chat_template", &s, NULL) != TL_OK) {
        fprintf(stderr, "typellm template: %s: no tokenizer.chat_template in this GGUF\n", path);
        tl_gguf_close(g);
        return 1;
    }
    *tpl = malloc(s.len + 1);
    if (*tpl) {
        memcpy(*tpl, s.ptr, s.len);
        (*tpl)[s.len] = 0;
    }
    *len = s.len;
    tl_gguf_close(g);
    tl_vocab *v;
    if (tl_vocab_load_file(path, &v, &err) == TL_OK) {
        *bos = token_text(v, tl_vocab_bos(v));
        *eos = token_text(v, tl_vocab_eos(v));
        tl_vocab_free(v);
    }
    return *tpl ? 0 : 1;
}

static json_t *load_json(const char *what, const char *path) {
    char *data;
    size_t len;
    tl_error err = {0};
    if (tl_read_file(path, MAX_FILE_BYTES, &data, &len, &err) != TL_OK) {
        fprintf(stderr, "typellm template: %s\n", err.msg);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(data, len, JSON_ALLOW_NUL, &je);
    free(data);
    if (!j)
        fprintf(stderr, "typellm template: %s %s:%d:%d: %s\n", what, path, je.line, je.column, je.text);
    return j;
}

int tl_cmd_template(int argc, char **argv) {
    const char *model = NULL, *tpl_path = NULL, *msgs_path = NULL, *tools_path = NULL;
    const char *bos_arg = NULL, *eos_arg = NULL;
    bool gen = false;
    tl_template_opts topts = {0};
    json_t *vars = json_object();
    int rc = 2;
    char *tpl = NULL, *bos = NULL, *eos = NULL, *msgs_text = NULL, *tools_text = NULL, *vars_text = NULL;
    json_t *messages = NULL, *tools = NULL;
    tl_template *t = NULL;
    tl_strbuf out = TL_STRBUF_INIT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            rc = 0;
            goto out;
        } else if (!strcmp(a, "--model") && has_value) {
            model = argv[++i];
        } else if (!strcmp(a, "--template") && has_value) {
            tpl_path = argv[++i];
        } else if (!strcmp(a, "--messages") && has_value) {
            msgs_path = argv[++i];
        } else if (!strcmp(a, "--tools") && has_value) {
            tools_path = argv[++i];
        } else if (!strcmp(a, "--bos") && has_value) {
            bos_arg = argv[++i];
        } else if (!strcmp(a, "--eos") && has_value) {
            eos_arg = argv[++i];
        } else if (!strcmp(a, "--now") && has_value) {
            char *end;
            topts.now_unix = strtoll(argv[++i], &end, 10);
            topts.fixed_now = true;
            if (!*argv[i] || *end) {
                fprintf(stderr, "typellm template: --now %s: expected seconds since the epoch\n", argv[i]);
                goto out;
            }
        } else if (!strcmp(a, "--add-generation-prompt")) {
            gen = true;
        } else if (!strcmp(a, "--var") && has_value) {
            const char *why = NULL;
            if (!tl_cli_var(argv[++i], vars, &why)) {
                fprintf(stderr, "typellm template: --var %s: %s\n", argv[i], why);
                goto out;
            }
        } else {
            fprintf(stderr, "typellm template: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            goto out;
        }
    }
    if (!!model + !!tpl_path != 1 || !msgs_path) {
        fprintf(stderr, "typellm template: need exactly one of --model, --template, and --messages\n");
        usage(stderr);
        goto out;
    }
    rc = 1;
    size_t len = 0;
    tl_error err = {0};
    if (model) {
        if (load_model(model, &tpl, &len, &bos, &eos))
            goto out;
    } else if (tl_read_file(tpl_path, MAX_FILE_BYTES, &tpl, &len, &err) != TL_OK) {
        fprintf(stderr, "typellm template: %s\n", err.msg);
        goto out;
    }
    if (!(messages = load_json("messages", msgs_path)))
        goto out;
    if (!json_is_array(messages)) {
        fprintf(stderr, "typellm template: %s: messages must be a JSON array\n", msgs_path);
        goto out;
    }
    if (tools_path && !(tools = load_json("tools", tools_path)))
        goto out;
    if (tl_template_parse(tpl, len, &t, &err) != TL_OK) {
        fprintf(stderr, "typellm template: %s: %s\n", model ? model : tpl_path, err.msg);
        goto out;
    }
    msgs_text = json_dumps(messages, JSON_COMPACT | JSON_ENCODE_ANY);
    tools_text = tools ? json_dumps(tools, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    vars_text = json_dumps(vars, JSON_COMPACT);
    if (!msgs_text || !vars_text || (tools && !tools_text)) {
        fprintf(stderr, "typellm template: out of memory\n");
        goto out;
    }
    tl_chat_text_request req = {.messages_json = msgs_text,
                                .add_generation_prompt = gen,
                                .bos_token = bos_arg ? bos_arg : bos,
                                .eos_token = eos_arg ? eos_arg : eos,
                                .tools_json = tools_text,
                                .vars_json = vars_text};
    if (tl_template_render_chat(t, &req, &topts, &out, &err) != TL_OK) {
        fprintf(stderr, "typellm template: %s\n", err.msg);
        goto out;
    }
    if (out.len && fwrite(out.buf, 1, out.len, stdout) != out.len) {
        fprintf(stderr, "typellm template: writing stdout failed\n");
        goto out;
    }
    rc = fflush(stdout) ? 1 : 0;
out:
    tl_strbuf_free(&out);
    tl_template_free(t);
    json_decref(messages);
    json_decref(tools);
    json_decref(vars);
    free(tpl);
    free(bos);
    free(eos);
    free(msgs_text);
    free(tools_text);
    free(vars_text);
    return rc;
}

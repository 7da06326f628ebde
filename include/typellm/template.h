/* typellm/template.h: chat templates. A Jinja2 renderer for the templates
 * models publish (GGUF tokenizer.chat_template), run as transformers'
 * apply_chat_template runs them (trim_blocks, lstrip_blocks, loop controls,
 * raise_exception, strftime_now, its tojson). docs/templates.md lists what
 * is supported.
 *
 * A template is untrusted input: parse errors name "template:LINE:COL";
 * rendering is bounded in work, output, memory and depth (tl_template_limits),
 * so a hostile template fails with TL_ERR_LIMIT instead of hanging.
 *
 * Threading: a parsed tl_template is immutable; any number of threads may
 * render it at once.
 *
 *   tl_template *t;
 *   tl_template_parse(src, strlen(src), &t, &err);
 *   tl_chat_text_request req = {.messages_json = "[{\"role\":\"user\",\"content\":\"Hi\"}]",
 *                               .add_generation_prompt = true,
 *                               .vars_json = "{\"enable_thinking\": false}"};
 *   tl_strbuf out = TL_STRBUF_INIT;
 *   if (tl_template_render_chat(t, &req, NULL, &out, &err) == TL_OK) ... out.buf ...
 *   tl_strbuf_free(&out);
 *   tl_template_free(t); */
#ifndef TYPELLM_TEMPLATE_H
#define TYPELLM_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "util.h"
#include "vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_template tl_template;

/* Bounds on one render. Zero fields take the defaults below. */
typedef struct tl_template_limits {
    size_t max_output;  /* bytes of rendered text (default 16 MiB) */
    uint64_t max_steps; /* evaluation steps: nodes evaluated, loop iterations, items built (default 50M) */
    size_t max_memory;  /* bytes of values alive in one render (default 256 MiB) */
    int max_depth;      /* nested evaluation (expressions, statements, macro calls; default 400) */
} tl_template_limits;

#define TL_TEMPLATE_MAX_OUTPUT (16u << 20)
#define TL_TEMPLATE_MAX_STEPS 50000000ull
#define TL_TEMPLATE_MAX_MEMORY (256u << 20)
#define TL_TEMPLATE_MAX_DEPTH 400

typedef struct tl_template_opts {
    const tl_template_limits *limits; /* NULL: defaults */
    bool fixed_now;                   /* strftime_now uses now_unix instead of the clock */
    int64_t now_unix;                 /* seconds since the epoch, UTC */
} tl_template_opts;

/* Parses template source (need not be NUL-terminated). Errors: TL_ERR_FORMAT
 * with "template:LINE:COL: ...". */
TL_API tl_status tl_template_parse(const char *src, size_t len, tl_template **out, tl_error *err);
TL_API void tl_template_free(tl_template *t);

/* A conversation as JSON text (what an OpenAI chat request carries). */
typedef struct tl_chat_text_request {
    const char *messages_json; /* array of {"role", "content", ...} (required) */
    bool add_generation_prompt;
    const char *bos_token;     /* NULL: "" */
    const char *eos_token;     /* NULL: "" */
    const char *tools_json;    /* array, or NULL: tools is None */
    const char *vars_json;     /* object of extra variables (enable_thinking, reasoning_effort, ...), or NULL */
} tl_chat_text_request;

/* Renders the conversation as apply_chat_template does (variables messages,
 * add_generation_prompt, tools and documents (None when absent), bos_token,
 * eos_token, then vars), appending to out. Errors: TL_ERR_INVALID for bad
 * JSON (with line:column) and for runtime errors; a raise_exception(msg) in
 * the template fails with exactly msg as the message; TL_ERR_LIMIT past a
 * bound. On failure out may hold partial text. */
TL_API tl_status tl_template_render_chat(const tl_template *t, const tl_chat_text_request *req,
                                         const tl_template_opts *opts, tl_strbuf *out, tl_error *err);

/* What a chat template does with a decision's answer (implemented by the
 * decision layer, which frames turns with it; see docs/templates.md). */
typedef struct tl_template_info {
    char family[32];     /* "chatml", "llama3", "llama2", "gemma", "phi3", or "jinja" */
    bool reasoning;      /* it writes a reasoning block or channel */
    char thinking[128];  /* how the answer is kept out of it ("enable_thinking=false", "final channel", ...) or "" */
} tl_template_info;

/* Renders probe conversations with src[0..len) and fills *out. Errors as
 * for a decision framed with it: a syntax error (line:column), a template
 * that fails for a plain conversation, or one whose answer would stay inside
 * a reasoning block (TL_ERR_UNSUPPORTED); out->family and out->reasoning are
 * still filled from the template's text. */
TL_API tl_status tl_template_describe(const char *src, size_t len, tl_template_info *out, tl_error *err);

/* ---- prompts for generation: a conversation in the model's own template ----
 * What `typellm generate --messages` and the server's /v1/chat/completions
 * start generating from: the conversation rendered with the model's
 * tokenizer.chat_template (or an override) and add_generation_prompt, then
 * tokenized as transformers, SGLang and llama.cpp tokenize a rendered chat:
 * special-token texts parsed, BOS first when the tokenizer adds one and the
 * rendering did not already write it. A GGUF without a template (and no
 * override) reads a plain transcript: "User: ...\n\nAssistant: ...\n\n"
 * ending in "Assistant:", system messages opening the first user turn. */
typedef struct tl_chat_prompt_opts {
    const char *template_name;  /* built-in family instead of the model's template ("chatml", "llama3",
                                   "llama2"/"mistral", "gemma", "phi3"), or NULL */
    const char *template_jinja; /* Jinja source instead of the model's template, or NULL (wins over template_name) */
    const char *vars_json;      /* extra template variables ({"enable_thinking": false}, ...), or NULL */
    bool add_generation_prompt; /* open the assistant's turn (true to generate a reply) */
} tl_chat_prompt_opts;

typedef struct tl_chat_prompt {
    tl_strbuf text;        /* the rendering, byte for byte what `typellm template` prints */
    int32_t *ids;          /* text tokenized (see above); tl_free */
    size_t n_ids;
    char template_used[48]; /* "model", "given", "builtin:chatml", ..., "plain" */
} tl_chat_prompt;

/* Renders messages_json (an array of {"role", "content", ...}) for the
 * tokenizer v with o (NULL: the model's template, add_generation_prompt).
 * Errors: TL_ERR_INVALID for bad JSON, a role or content a built-in framing
 * cannot write, and template runtime errors (a raise_exception message as the
 * template wrote it, after "the model's chat template: "); TL_ERR_FORMAT for a template syntax error (line:column);
 * TL_ERR_LIMIT past a render bound. Messages name the template used. On
 * failure *out is empty. Free with tl_chat_prompt_free. */
TL_API tl_status tl_chat_prompt_build(const tl_vocab *v, const char *messages_json, const tl_chat_prompt_opts *o,
                                      tl_chat_prompt *out, tl_error *err);
TL_API void tl_chat_prompt_free(tl_chat_prompt *p);

#ifdef __cplusplus
}
#endif

#endif

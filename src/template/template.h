/* template.h: the layers' view of the template renderer. The public calls
 * (tl_template_parse, tl_template_render_chat, limits and options) are in
 * include/typellm/template.h; the jansson entry points here serve the
 * decision core and the server.
 *
 * A Jinja2 renderer for the chat templates models publish
 * (GGUF tokenizer.chat_template), as transformers' apply_chat_template runs
 * them: ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True),
 * loop controls, {% generation %}, raise_exception(msg), strftime_now(fmt),
 * and its tojson (ensure_ascii=False, no HTML escaping).
 *
 * A template is untrusted input (a GGUF carries it): parsing reports syntax
 * errors as "template:LINE:COL: message"; rendering is bounded in work
 * (evaluation steps), output size, nesting depth and memory, so a hostile
 * template fails with TL_ERR_LIMIT instead of hanging or exhausting memory.
 *
 * Supported: text, {{ }}, {% %}, {# #} with '-'/'+' whitespace control;
 * if/elif/else, for (unpacking, 'if' filter, else, loop.*, recursive),
 * set (names, tuples, namespace attributes, block set with filters), macro
 * (defaults, caller), call blocks, filter blocks, break/continue, raw,
 * generation; literals, lists, tuples, dicts, attribute/item access,
 * slicing, calls with keyword arguments, filters, tests, 'in', 'not in',
 * 'is [not]', '~', + - * / // % **, chained comparisons, and/or/not,
 * conditional expressions; the str/list/dict methods and the filters the
 * published templates use. Values are Python's: str() and repr() print as
 * Python does, strings index by code point.
 *
 * Threading: a parsed template is immutable; any number of threads may
 * render it at once. */
#ifndef TL_TEMPLATE_TEMPLATE_H
#define TL_TEMPLATE_TEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "typellm/template.h"
#include "util/strbuf.h"

/* Renders t with the variables of the JSON object vars (NULL: none),
 * appending to out. JSON null is Python None; a name not in vars is
 * undefined. raise_exception(msg) fails with TL_ERR_INVALID and exactly msg
 * as the message; other runtime errors are TL_ERR_INVALID "template:LINE:COL:
 * ..."; exceeded bounds TL_ERR_LIMIT. On failure out may hold partial text. */
tl_status tl_template_render(const tl_template *t, const json_t *vars, const tl_template_opts *opts, tl_strbuf *out,
                             tl_error *err);

/* ---- chat rendering: the call the decision core, the server and the SGLang
 * client share ---------------------------------------------------------------
 * Renders a conversation as transformers' apply_chat_template does:
 * variables messages, add_generation_prompt, tools and documents (None when
 * absent), bos_token, eos_token, then every member of vars (kwargs such as
 * enable_thinking, reasoning_effort; they override the former). */
typedef struct tl_chat_request {
    const json_t *messages;     /* array of {"role":..., "content":...} (required) */
    bool add_generation_prompt;
    const char *bos_token;      /* NULL: "" */
    const char *eos_token;      /* NULL: "" */
    const json_t *tools;        /* NULL: None */
    const json_t *vars;         /* object of extra variables, or NULL */
} tl_chat_request;

tl_status tl_chat_render(const tl_template *t, const tl_chat_request *req, const tl_template_opts *opts, tl_strbuf *out,
                         tl_error *err);

#endif

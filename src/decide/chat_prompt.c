/* chat_prompt.c: the prompt a chat generation starts from (tl_chat_prompt_build,
 * typellm/template.h): a conversation rendered with the model's own template
 * (src/template), a given one, or a built-in framing (chat_template.c), then
 * tokenized. One function so that `typellm generate --messages` and the
 * server's chat completions cannot frame the same conversation differently. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide/chat_template.h"
#include "template/template.h"
#include "typellm/vocab.h"
#include "util/error.h"
#include "util/strbuf.h"

char *tl_chat_token_text(const tl_vocab *v, int32_t id) {
    if (!v || id < 0)
        return NULL;
    size_t n = tl_vocab_token_bytes(v, id, true, NULL, 0);
    char *s = malloc(n + 1);
    if (s) {
        tl_vocab_token_bytes(v, id, true, s, n + 1);
        s[n] = 0;
    }
    return s;
}

/* ---- built-in framings and the plain transcript ------------------------------ */

/* A role's turn text around content; system messages open the first user
 * turn (the built-in framings have no system turn). fr NULL: the plain
 * "User: ...\n\nAssistant: ..." transcript. */
static tl_status render_framed(const tl_chat_framing *fr, const json_t *msgs, bool gen, tl_strbuf *out,
                               tl_error *err) {
    const char *name = fr ? fr->name : "plain transcript";
    if (!json_is_array(msgs))
        return tl_error_set(err, TL_ERR_INVALID, "chat prompt: messages must be a JSON array");
    tl_strbuf sys = TL_STRBUF_INIT;
    bool ok = true, any_user = false;
    tl_status st = TL_OK;
    for (size_t i = 0; i < json_array_size(msgs) && !st; i++) {
        const json_t *m = json_array_get(msgs, i), *c = json_object_get(m, "content");
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *text = json_is_string(c) ? json_string_value(c) : "";
        size_t len = json_is_string(c) ? json_string_length(c) : 0;
        if (!role || (c && !json_is_string(c) && !json_is_null(c))) {
            st = tl_error_set(err, TL_ERR_INVALID,
                              "chat prompt (%s): messages[%zu]: needs a string role and a string content", name, i);
            break;
        }
        if (!strcmp(role, "system") || !strcmp(role, "developer")) {
            ok &= (!sys.len || tl_strbuf_puts(&sys, "\n\n")) && tl_strbuf_append(&sys, text, len);
            continue;
        }
        bool user = !strcmp(role, "user");
        if (!user && strcmp(role, "assistant")) {
            st = tl_error_set(err, TL_ERR_INVALID,
                              "chat prompt (%s): messages[%zu].role: '%s' is not system, developer, user or assistant",
                              name, i, role);
            break;
        }
        const char *open = fr ? (user ? fr->user_open : fr->assistant_open) : (user ? "User: " : "Assistant: ");
        const char *close = fr ? (user ? fr->user_close : fr->assistant_close) : "\n\n";
        ok &= tl_strbuf_puts(out, open);
        if (!user && fr)
            ok &= tl_strbuf_puts(out, fr->label_prefix);
        if (user && !any_user && sys.len)
            ok &= tl_strbuf_append(out, sys.buf, sys.len) && tl_strbuf_puts(out, "\n\n");
        any_user |= user;
        ok &= tl_strbuf_append(out, text, len) && tl_strbuf_puts(out, close);
    }
    if (!st && !any_user && sys.len) /* only system messages: they are the user turn */
        ok &= tl_strbuf_puts(out, fr ? fr->user_open : "User: ") && tl_strbuf_append(out, sys.buf, sys.len) &&
              tl_strbuf_puts(out, fr ? fr->user_close : "\n\n");
    if (!st && gen)
        ok &= tl_strbuf_puts(out, fr ? fr->assistant_open : "Assistant:");
    tl_strbuf_free(&sys);
    if (!st && !ok)
        st = tl_error_set(err, TL_ERR_NOMEM, "chat prompt: out of memory");
    return st;
}

/* ---- the prompt ------------------------------------------------------------------ */

void tl_chat_prompt_free(tl_chat_prompt *p) {
    if (!p)
        return;
    tl_strbuf_free(&p->text);
    free(p->ids);
    memset(p, 0, sizeof *p);
}

static tl_status render_jinja(const tl_vocab *v, const char *src, const char *messages_json,
                              const tl_chat_prompt_opts *o, tl_strbuf *out, tl_error *err) {
    tl_template *t = NULL;
    tl_status st = tl_template_parse(src, strlen(src), &t, err);
    if (st)
        return st;
    char *bos = tl_chat_token_text(v, tl_vocab_bos(v)), *eos = tl_chat_token_text(v, tl_vocab_eos(v));
    tl_chat_text_request req = {.messages_json = messages_json,
                                .add_generation_prompt = o->add_generation_prompt,
                                .bos_token = bos,
                                .eos_token = eos,
                                .vars_json = o->vars_json};
    st = tl_template_render_chat(t, &req, NULL, out, err);
    free(bos);
    free(eos);
    tl_template_free(t);
    return st;
}

tl_status tl_chat_prompt_build(const tl_vocab *v, const char *messages_json, const tl_chat_prompt_opts *opts,
                               tl_chat_prompt *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    tl_chat_prompt_opts o = opts ? *opts : (tl_chat_prompt_opts){.add_generation_prompt = true};
    const char *model_tpl = tl_vocab_chat_template(v);
    const char *jinja = o.template_jinja ? o.template_jinja : o.template_name ? NULL : model_tpl;
    tl_status st = TL_OK;
    if (jinja) {
        snprintf(out->template_used, sizeof out->template_used, "%s", o.template_jinja ? "given" : "model");
        st = render_jinja(v, jinja, messages_json, &o, &out->text, err);
    } else {
        const tl_chat_framing *fr = NULL;
        if (o.template_name && !(fr = tl_chat_framing_of(tl_chat_family_by_name(o.template_name))))
            return tl_error_set(err, TL_ERR_INVALID,
                                "chat prompt: unknown chat template '%s' (chatml, llama3, llama2, mistral, gemma, "
                                "phi3, or a .jinja file)",
                                o.template_name);
        snprintf(out->template_used, sizeof out->template_used, "%s%s", fr ? "builtin:" : "plain",
                 fr ? fr->name : "");
        json_error_t je;
        json_t *msgs = json_loads(messages_json ? messages_json : "", 0, &je);
        st = msgs ? render_framed(fr, msgs, o.add_generation_prompt, &out->text, err)
                  : tl_error_set(err, TL_ERR_INVALID, "chat prompt: messages: JSON %d:%d: %s", je.line, je.column,
                                 je.text);
        json_decref(msgs);
    }
    if (st) {
        if (jinja)
            tl_error_wrap(err, "%s chat template", o.template_jinja ? "the given" : "the model's");
        tl_chat_prompt_free(out);
        return st;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    st = tl_vocab_tokenize(v, tl_strbuf_cstr(&out->text), out->text.len, false, true, &ids, &n, err);
    int32_t bos = tl_vocab_bos(v);
    bool add_bos = !st && tl_vocab_add_bos(v) && bos >= 0 && (n == 0 || ids[0] != bos);
    if (!st && !(out->ids = malloc((n + 1) * sizeof *ids)))
        st = tl_error_set(err, TL_ERR_NOMEM, "chat prompt: out of memory");
    if (!st) {
        if (add_bos)
            out->ids[out->n_ids++] = bos;
        if (n)
            memcpy(out->ids + out->n_ids, ids, n * sizeof *ids);
        out->n_ids += n;
    }
    free(ids);
    if (st)
        tl_chat_prompt_free(out);
    return st;
}

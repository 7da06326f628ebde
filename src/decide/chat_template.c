/* chat_template.c: turn framing (see chat_template.h): read off the model's
 * own template rendered for probe conversations, or, for GGUFs without a
 * template, one of five built-in families whose strings follow each
 * family's published template for a user turn followed by the generation
 * prompt, without any default system prompt. */
#define _GNU_SOURCE /* memmem */
#include "decide/chat_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "template/template.h"
#include "util/error.h"
#include "util/strbuf.h"

static const tl_chat_framing framings[] = {
    [TL_CHAT_CHATML] = {"chatml", "<|im_start|>user\n", "<|im_end|>\n", "<|im_start|>assistant\n", "",
                        "<|im_end|>\n"},
    [TL_CHAT_LLAMA3] = {"llama3", "<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>",
                        "<|start_header_id|>assistant<|end_header_id|>\n\n", "", "<|eot_id|>"},
    [TL_CHAT_LLAMA2] = {"llama2", "[INST] ", " [/INST]", "", " ", " </s><s>"},
    [TL_CHAT_GEMMA] = {"gemma", "<start_of_turn>user\n", "<end_of_turn>\n", "<start_of_turn>model\n", "",
                       "<end_of_turn>\n"},
    [TL_CHAT_PHI3] = {"phi3", "<|user|>\n", "<|end|>\n", "<|assistant|>\n", "", "<|end|>\n"},
};

tl_chat_family tl_chat_family_detect(const char *jinja) {
    if (!jinja)
        return TL_CHAT_NONE;
    /* Most specific markers first: Phi-3 and Llama 3 templates may mention [INST]-free text only. */
    if (strstr(jinja, "<|im_start|>"))
        return TL_CHAT_CHATML;
    if (strstr(jinja, "<|start_header_id|>"))
        return TL_CHAT_LLAMA3;
    if (strstr(jinja, "<start_of_turn>"))
        return TL_CHAT_GEMMA;
    if (strstr(jinja, "<|user|>") && strstr(jinja, "<|end|>"))
        return TL_CHAT_PHI3;
    if (strstr(jinja, "[INST]"))
        return TL_CHAT_LLAMA2;
    return TL_CHAT_NONE;
}

tl_chat_family tl_chat_family_by_name(const char *name) {
    if (!name)
        return TL_CHAT_NONE;
    if (!strcasecmp(name, "chatml") || !strcasecmp(name, "qwen"))
        return TL_CHAT_CHATML;
    if (!strcasecmp(name, "llama3") || !strcasecmp(name, "llama-3"))
        return TL_CHAT_LLAMA3;
    if (!strcasecmp(name, "llama2") || !strcasecmp(name, "llama-2") || !strcasecmp(name, "mistral"))
        return TL_CHAT_LLAMA2;
    if (!strcasecmp(name, "gemma"))
        return TL_CHAT_GEMMA;
    if (!strcasecmp(name, "phi3") || !strcasecmp(name, "phi-3"))
        return TL_CHAT_PHI3;
    return TL_CHAT_NONE;
}

const tl_chat_framing *tl_chat_framing_of(tl_chat_family f) {
    if (f <= TL_CHAT_NONE || f > TL_CHAT_PHI3)
        return NULL;
    return &framings[f];
}

/* ---- framing from a Jinja template ------------------------------------------------
 * Probe conversations with marker contents are rendered and the framing is
 * the text around the markers. Markers are plain ASCII words, so templates
 * that trim, split or test contents leave them intact. */


#define MARK_U1 "TLMARKUSERONE"
#define MARK_A1 "TLMARKANSWERONE"
#define MARK_U2 "TLMARKUSERTWO"
#define MARK_R "TLMARKREASONING"

/* Reasoning blocks a generation prompt may leave open: opening and closing text. */
static const char *const reasoning_tags[][2] = {
    {"<think>", "</think>"},           {"<seed:think>", "</seed:think>"}, {"<|START_THINKING|>", "<|END_THINKING|>"},
    {"[THINK]", "[/THINK]"},           {"<|channel>thought", "<channel|>"}, {"<|think|>", "<|end|>"},
};
#define N_REASONING_TAGS (sizeof reasoning_tags / sizeof reasoning_tags[0])

static const char *last_of(const char *s, size_t n, const char *pat) {
    size_t m = strlen(pat);
    for (size_t i = n >= m ? n - m + 1 : 0; i-- > 0;)
        if (!memcmp(s + i, pat, m))
            return s + i;
    return NULL;
}

static tl_status probe(const tl_template *t, const char *msgs_json, bool gen, json_t *vars,
                       const tl_chat_derive_opts *o, tl_strbuf *out, tl_error *err) {
    json_t *msgs = json_loads(msgs_json, 0, NULL);
    if (!msgs)
        return tl_error_set(err, TL_ERR_INTERNAL, "chat template: bad probe");
    tl_chat_request req = {.messages = msgs,
                           .add_generation_prompt = gen,
                           .bos_token = o->bos_text,
                           .eos_token = o->eos_text,
                           .vars = vars};
    tl_strbuf_clear(out);
    tl_status st = tl_chat_render(t, &req, NULL, out, err);
    json_decref(msgs);
    return st;
}

static char *dup_range(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

void tl_chat_derived_free(tl_chat_derived *d) {
    for (int i = 0; i < 4; i++)
        free(d->strings[i]);
    free(d->think_open);
    free(d->think_close);
    memset(d, 0, sizeof *d);
}

/* The text a template writes between reasoning and the answer of a turn
 * (the reasoning family k's closing tag and what follows it), read off an
 * assistant turn rendered with its reasoning as reasoning_content or as a
 * {"type": "thinking"} content block; NULL when neither shows it. Points
 * into scratch. */
static const char *reasoning_close(const tl_template *t, size_t k, json_t *vars, const tl_chat_derive_opts *o,
                                   tl_strbuf *scratch, size_t *len) {
    static const char *const with_reasoning[] = {
        "[{\"role\":\"user\",\"content\":\"" MARK_U1 "\"},{\"role\":\"assistant\",\"content\":\"" MARK_A1
        "\",\"reasoning_content\":\"" MARK_R "\"}]",
        "[{\"role\":\"user\",\"content\":\"" MARK_U1 "\"},{\"role\":\"assistant\",\"content\":[{\"type\":"
        "\"thinking\",\"thinking\":\"" MARK_R "\"},{\"type\":\"text\",\"text\":\"" MARK_A1 "\"}]}]"};
    for (size_t i = 0; i < 2; i++) {
        tl_error ignored = {0};
        if (probe(t, with_reasoning[i], false, vars, o, scratch, &ignored))
            continue;
        const char *rr = strstr(tl_strbuf_cstr(scratch), MARK_R);
        const char *aa = rr ? strstr(rr, MARK_A1) : NULL;
        const char *c = rr ? strstr(rr, reasoning_tags[k][1]) : NULL;
        if (aa && c && c < aa) {
            *len = (size_t)(aa - (rr + strlen(MARK_R)));
            return rr + strlen(MARK_R);
        }
    }
    return NULL;
}

/* think_open / think_close (chat_template.h) of a reasoning template: an
 * assistant turn with reasoning (as reasoning_content, a thinking content
 * block, or gpt-oss's "thinking"), rendered with thinking on, must begin with
 * the generation prompt; the text between that and the reasoning opens the
 * block, the text between the reasoning and the answer closes it. Leaves
 * both NULL when no rendering shows it. */
static tl_status derive_think(const tl_template *t, const tl_chat_derive_opts *o, tl_chat_derived *out) {
    static const char one_turn[] = "[{\"role\":\"user\",\"content\":\"" MARK_U1 "\"}]";
    static const char *const with_reasoning[] = {
        "[{\"role\":\"user\",\"content\":\"" MARK_U1 "\"},{\"role\":\"assistant\",\"content\":\"" MARK_A1
        "\",\"reasoning_content\":\"" MARK_R "\"}]",
        "[{\"role\":\"user\",\"content\":\"" MARK_U1 "\"},{\"role\":\"assistant\",\"content\":[{\"type\":"
        "\"thinking\",\"thinking\":\"" MARK_R "\"},{\"type\":\"text\",\"text\":\"" MARK_A1 "\"}]}]",
        "[{\"role\":\"user\",\"content\":\"" MARK_U1 "\"},{\"role\":\"assistant\",\"content\":\"" MARK_A1
        "\",\"thinking\":\"" MARK_R "\"}]"};
    json_t *vars = json_pack("{s:b, s:b}", "enable_thinking", 1, "thinking", 1);
    tl_strbuf g = TL_STRBUF_INIT, h = TL_STRBUF_INIT;
    tl_error ignored = {0};
    tl_status st = TL_OK;
    const char *gen = NULL;
    if (vars && !probe(t, one_turn, true, vars, o, &g, &ignored))
        gen = strstr(tl_strbuf_cstr(&g), MARK_U1);
    for (size_t i = 0; gen && i < sizeof with_reasoning / sizeof *with_reasoning && !out->think_open; i++) {
        if (probe(t, with_reasoning[i], false, vars, o, &h, &ignored))
            continue;
        const char *u = strstr(tl_strbuf_cstr(&h), MARK_U1);
        size_t gl = strlen(gen + strlen(MARK_U1));
        if (!u || strncmp(u + strlen(MARK_U1), gen + strlen(MARK_U1), gl))
            continue;
        const char *after = u + strlen(MARK_U1), *rr = strstr(after + gl, MARK_R);
        const char *aa = rr ? strstr(rr, MARK_A1) : NULL;
        if (!aa)
            continue;
        out->think_open = dup_range(after, (size_t)(rr - after));
        out->think_close = dup_range(rr + strlen(MARK_R), (size_t)(aa - rr - strlen(MARK_R)));
        if (!out->think_open || !out->think_close)
            st = TL_ERR_NOMEM;
    }
    json_decref(vars);
    tl_strbuf_free(&g);
    tl_strbuf_free(&h);
    return st;
}

tl_status tl_chat_derive(const char *jinja, size_t len, const tl_chat_derive_opts *o, tl_chat_derived *out,
                         tl_error *err) {
    memset(out, 0, sizeof *out);
    const char *src = o->source ? o->source : "chat template";
    tl_template *t = NULL;
    tl_status st = tl_template_parse(jinja, len, &t, err);
    if (st) {
        tl_error_wrap(err, "%s", src);
        return st;
    }
    tl_strbuf r1 = TL_STRBUF_INIT, r0 = TL_STRBUF_INIT, r2 = TL_STRBUF_INIT, r3 = TL_STRBUF_INIT;
    tl_strbuf q = TL_STRBUF_INIT;
    /* thinking off, in each spelling templates read */
    json_t *vars = json_pack("{s:b, s:b}", "enable_thinking", 0, "thinking", 0);
    char *tpl = dup_range(jinja, len);
    if (!vars || !tpl) {
        st = tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
        goto out;
    }
    if (strstr(tpl, "reasoning_effort"))
        json_object_set_new(vars, "reasoning_effort", json_string("low"));
    if (strstr(tpl, "thinking_budget"))
        json_object_set_new(vars, "thinking_budget", json_integer(0));
    static const char one_turn[] = "[{\"role\":\"user\",\"content\":\"" MARK_U1 "\"}]";
    if ((st = probe(t, one_turn, true, vars, o, &r1, err)) || (st = probe(t, one_turn, true, NULL, o, &r0, err))) {
        tl_error_wrap(err, "%s: rendering one user message", src);
        goto out;
    }
    const char *u1 = strstr(tl_strbuf_cstr(&r1), MARK_U1);
    if (!u1) {
        st = tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: the user's message does not appear in its rendering", src);
        goto out;
    }
    size_t open_len = (size_t)(u1 - r1.buf);
    const char *gen = u1 + strlen(MARK_U1);
    size_t gen_len = r1.len - (size_t)(gen - r1.buf);
    if (!tl_strbuf_append(&q, gen, gen_len)) {
        st = tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
        goto out;
    }
    /* reasoning: does the generation prompt leave a block open? */
    static const char *const reasoning_words[] = {"think>", "reasoning_content", "<|channel|>", "<|channel>",
                                                  "enable_thinking", "THINKING", "[THINK]", "<|think|>"};
    for (size_t i = 0; i < sizeof reasoning_words / sizeof *reasoning_words; i++)
        out->reasoning |= strstr(tpl, reasoning_words[i]) != NULL;
    const char *g0 = strstr(tl_strbuf_cstr(&r0), MARK_U1);
    if (g0 && strcmp(g0 + strlen(MARK_U1), gen))
        snprintf(out->thinking, sizeof out->thinking, "%s", strstr(tpl, "enable_thinking") ? "enable_thinking=false"
                                                           : strstr(tpl, "reasoning_effort") ? "reasoning_effort=low"
                                                                                             : "thinking off");
    bool closed = false; /* the generation prompt leaves a block open, now closed */
    for (size_t k = 0; k < N_REASONING_TAGS && !closed; k++) {
        const char *open = last_of(gen, gen_len, reasoning_tags[k][0]);
        if (!open || strstr(open, reasoning_tags[k][1]))
            continue;
        /* open: close it as the template closes a reasoning block it renders */
        out->reasoning = closed = true;
        size_t close_len = 0;
        const char *close_text = reasoning_close(t, k, vars, o, &r3, &close_len);
        tl_strbuf fallback = TL_STRBUF_INIT;
        if (!close_text) {
            /* the family's closing tag after a blank reasoning line */
            tl_strbuf_printf(&fallback, "%s%s\n\n", gen_len && gen[gen_len - 1] == '\n' ? "\n" : "\n\n",
                             reasoning_tags[k][1]);
            close_text = tl_strbuf_cstr(&fallback);
            close_len = fallback.len;
        }
        bool ok = tl_strbuf_append(&q, close_text, close_len);
        snprintf(out->thinking, sizeof out->thinking, "the template opens %s; closed with %s", reasoning_tags[k][0],
                 reasoning_tags[k][1]);
        tl_strbuf_free(&fallback);
        if (!ok) {
            st = tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
            goto out;
        }
    }
    if (gen_len >= 18 && !memcmp(gen + gen_len - 18, "<|start|>assistant", 18) && strstr(tpl, "<|channel|>final")) {
        /* gpt-oss: the model would choose its channel; answers go in the final one */
        out->reasoning = true;
        if (!tl_strbuf_puts(&q, "<|channel|>final<|message|>")) {
            st = tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
            goto out;
        }
        snprintf(out->thinking, sizeof out->thinking, "final channel");
    }
    if (last_of(q.buf, q.len, "reasoning steps:") && q.len - (size_t)(last_of(q.buf, q.len, "reasoning steps:") - q.buf) < 20) {
        st = tl_error_set(err, TL_ERR_UNSUPPORTED,
                          "%s: its generation prompt starts the answer with free-text reasoning (\"...reasoning "
                          "steps:\"), which typellm cannot close; labels would be scored inside the reasoning. Use "
                          "--chat-template with another template, or --style record",
                          src);
        goto out;
    }
    /* A prompt that tells the model to reason in a block before answering
     * (Ministral 3 Reasoning's default system prompt: "[THINK]...[/THINK]
     * Here, provide a self-contained response") while its generation prompt
     * opens none: the model's first token would open the block. The answer
     * goes after an empty block, written as the template writes reasoning. */
    for (size_t k = 0; k < N_REASONING_TAGS && !closed && !out->thinking[0]; k++) {
        const char *tag_open = reasoning_tags[k][0], *tag_close = reasoning_tags[k][1];
        if (!memmem(r1.buf, open_len, tag_open, strlen(tag_open)) || !memmem(r1.buf, open_len, tag_close, strlen(tag_close)) ||
            memmem(q.buf, q.len, tag_close, strlen(tag_close)))
            continue;
        out->reasoning = true;
        size_t close_len = 0;
        const char *close_text = reasoning_close(t, k, vars, o, &r3, &close_len);
        if (!close_text) {
            st = tl_error_set(err, TL_ERR_UNSUPPORTED,
                              "%s: its prompt tells the model to reason in %s...%s before answering, and no rendering "
                              "shows how the template writes a reasoning block; labels would be scored where the "
                              "model opens its reasoning. Use --chat-template with another template, or --style record",
                              src, tag_open, tag_close);
            goto out;
        }
        if (!tl_strbuf_puts(&q, tag_open) || !tl_strbuf_append(&q, close_text, close_len)) {
            st = tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
            goto out;
        }
        snprintf(out->thinking, sizeof out->thinking, "the prompt asks for %s...%s first; answered after an empty %s%s",
                 tag_open, tag_close, tag_open, tag_close);
    }
    /* a second exchange: what closes an answered turn and opens the next question */
    static const char two_turns[] = "[{\"role\":\"user\",\"content\":\"" MARK_U1 "\"},{\"role\":\"assistant\","
                                    "\"content\":\"" MARK_A1 "\"},{\"role\":\"user\",\"content\":\"" MARK_U2 "\"}]";
    if ((st = probe(t, two_turns, true, vars, o, &r2, err))) {
        tl_error_wrap(err, "%s: rendering a user, assistant, user conversation", src);
        goto out;
    }
    const char *a = strstr(tl_strbuf_cstr(&r2), MARK_A1), *u2 = a ? strstr(a, MARK_U2) : NULL;
    const char *u1b = strstr(tl_strbuf_cstr(&r2), MARK_U1);
    if (!a || !u2 || !u1b || u1b > a) {
        st = tl_error_set(err, TL_ERR_UNSUPPORTED,
                          "%s: an answered assistant turn does not appear in order in its rendering", src);
        goto out;
    }
    const char *ans_close = a + strlen(MARK_A1);
    const char *hist_open = u1b + strlen(MARK_U1);
    size_t hist_len = (size_t)(a - hist_open), pre = 0;
    /* text the answer carries after the generation prompt ("[/INST]" then " answer") */
    if (hist_len > gen_len && !memcmp(hist_open, gen, gen_len)) {
        pre = hist_len - gen_len;
        for (size_t i = 0; i < pre; i++)
            if (hist_open[gen_len + i] != ' ')
                pre = 0;
    }
    const char *opening = r1.buf;
    if (o->strip_bos && o->bos_text && *o->bos_text && !strncmp(opening, o->bos_text, strlen(o->bos_text))) {
        opening += strlen(o->bos_text);
        open_len -= strlen(o->bos_text);
    }
    out->strings[0] = dup_range(opening, open_len);
    out->strings[1] = dup_range(q.buf, q.len);
    out->strings[2] = dup_range(ans_close, (size_t)(u2 - ans_close));
    out->strings[3] = dup_range(hist_open + gen_len, pre);
    if (!out->strings[0] || !out->strings[1] || !out->strings[2] || !out->strings[3]) {
        st = tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
        goto out;
    }
    tl_chat_family fam = tl_chat_family_detect(tpl);
    snprintf(out->name, sizeof out->name, "%s", fam != TL_CHAT_NONE ? framings[fam].name : "jinja");
    out->framing = (tl_chat_framing){.name = out->name,
                                     .user_open = "",
                                     .user_close = "",
                                     .assistant_open = out->strings[1],
                                     .label_prefix = out->strings[3],
                                     .assistant_close = out->strings[2],
                                     .opening = out->strings[0]};
    if (out->reasoning && derive_think(t, o, out))
        st = tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
out:
    if (st)
        tl_chat_derived_free(out);
    json_decref(vars);
    free(tpl);
    tl_strbuf_free(&r0);
    tl_strbuf_free(&r1);
    tl_strbuf_free(&r2);
    tl_strbuf_free(&r3);
    tl_strbuf_free(&q);
    tl_template_free(t);
    return st;
}

tl_status tl_template_describe(const char *src, size_t len, tl_template_info *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    char *text = dup_range(src, len);
    if (!text)
        return tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
    tl_chat_family fam = tl_chat_family_detect(text);
    snprintf(out->family, sizeof out->family, "%s", fam != TL_CHAT_NONE ? framings[fam].name : "jinja");
    free(text);
    tl_chat_derive_opts o = {.source = "chat template"};
    tl_chat_derived d;
    tl_status st = tl_chat_derive(src, len, &o, &d, err);
    if (st) {
        /* still say whether it reasons, from its text */
        out->reasoning = memmem(src, len, "think>", 6) || memmem(src, len, "reasoning_content", 17) ||
                         memmem(src, len, "<|channel|>", 11);
        return st;
    }
    out->reasoning = d.reasoning;
    snprintf(out->thinking, sizeof out->thinking, "%s", d.thinking);
    tl_chat_derived_free(&d);
    return TL_OK;
}

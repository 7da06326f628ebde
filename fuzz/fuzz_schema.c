/* fuzz_schema.c: libFuzzer target for the decision schema layer: any bytes
 * -> JSON -> tl_dschema_parse (every path must end in TL_OK or an error with
 * a message, never a crash, hang or huge allocation), and for accepted
 * schemas the plans of every mode and the text rendering of every field. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "decide/chat_template.h"
#include "decide/decide.h"
#include "decide/labels.h"
#include "decide/plan.h"
#include "decide/render.h"
#include "decide/schema.h"
#include "constrain/constrain.h"

/* A byte-level vocabulary (tokens 1..255 are the bytes, 256.. a few
 * multi-byte strings) for driving string automata. */
static const char *MULTI[] = {"ab", "12", "-0", "\xc3\xa9", "\xe2\x82", "\xac\"", "AB", " x", "\"", "2024-"};
static size_t fuzz_token_bytes(void *ctx, int32_t id, char *buf, size_t cap) {
    (void)ctx;
    if (id == 0)
        return 0;
    if (id < 256) {
        buf[0] = (char)id;
        return 1;
    }
    const char *m = MULTI[id - 256];
    size_t n = strlen(m);
    if (n <= cap)
        memcpy(buf, m, n);
    return n;
}

/* Walks a string field's automaton: the first allowed token at each step. */
static void walk_string(const tl_dfield *f) {
    static tl_number_index *idx;
    tl_error err = {0};
    if (!idx && tl_number_index_new_custom(256 + (int32_t)(sizeof MULTI / sizeof MULTI[0]), fuzz_token_bytes, NULL,
                                           &idx, &err))
        return;
    tl_string_automaton *a = NULL;
    size_t max = f->max_length > 64 ? 64 : f->max_length;
    if (tl_string_automaton_new(idx, f->pattern, f->min_length < max ? f->min_length : max, max, &a, &err))
        return;
    int32_t allowed[256 + sizeof MULTI / sizeof MULTI[0]];
    for (int step = 0; step < 80 && !tl_string_automaton_done(a); step++) {
        size_t k = tl_string_automaton_allowed(a, allowed);
        if (!k)
            __builtin_trap(); /* a viable state always has a way on (every byte is a token) */
        if (tl_string_automaton_accept(a, allowed[(size_t)step % k], &err))
            __builtin_trap(); /* mask and accept disagree */
    }
    tl_string_automaton_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_error_t je;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!j)
        return 0;
    tl_dschema *s = NULL;
    tl_error err = {0};
    /* lenient parsing accepts a superset: it must end as cleanly */
    tl_dschema_opts lenient = {.lenient = true};
    if (tl_dschema_parse_opts(j, &lenient, &s, &err) == TL_OK) {
        for (size_t f = 0; f < s->n_fields && f < 8; f++)
            if (s->fields[f].kind == TL_DFIELD_STRING)
                walk_string(&s->fields[f]);
        tl_dschema_free(s);
        s = NULL;
    } else if (!err.msg[0]) {
        __builtin_trap();
    }
    if (tl_dschema_parse(j, &s, &err) == TL_OK) {
        static const tl_dmode modes[] = {TL_DMODE_AUTO, TL_DMODE_SEQUENTIAL, TL_DMODE_BATCH};
        for (size_t m = 0; m < 3; m++) {
            tl_dplan p;
            if (tl_dplan_make(s, modes[m], NULL, &p, &err) == TL_OK) {
                if (p.n_order != s->n_fields)
                    __builtin_trap();
                tl_dplan_free(&p);
            }
        }
        /* every choice has a label text (two-token fields have up to TL_DFIELD_MAX_VALUES + 1) */
        static tl_label_text labels[TL_DFIELD_MAX_VALUES + 1];
        for (size_t i = 0; i <= TL_DFIELD_MAX_VALUES && !labels[TL_DFIELD_MAX_VALUES][0]; i++)
            snprintf(labels[i], sizeof labels[i], "%zu", i);
        tl_render styles[2] = {{TL_STYLE_CHAT, tl_chat_framing_of(TL_CHAT_LLAMA3)}, {TL_STYLE_RECORD, NULL}};
        tl_strbuf sb = TL_STRBUF_INIT;
        for (int st = 0; st < 2; st++) {
            tl_render_context_text(&styles[st], s, "ctx", 3, &sb);
            for (size_t f = 0; f < s->n_fields && f < 64; f++) {
                size_t body;
                tl_render_question_text(&styles[st], &s->fields[f], labels, &sb, &body);
                if (s->fields[f].n_values > 0)
                    tl_render_answer_text(&styles[st], &s->fields[f], s->fields[f].n_values - 1, &sb, &body);
            }
            tl_strbuf_clear(&sb);
        }
        tl_strbuf_free(&sb);
        tl_dschema_free(s);
    } else if (!err.msg[0]) {
        __builtin_trap(); /* every error carries a message */
    }
    json_decref(j);
    return 0;
}

/* cmd_inspect.c: `typellm inspect MODEL.gguf [--json] [--keys]`: what a GGUF
 * file holds, read with the gguf layer only (no weights are touched): version,
 * architecture and hyperparameters, tokenizer kind, chat-template family,
 * tensors by type, parameter count, file size; --keys lists every metadata
 * entry with a shortened value; --json prints one object (jansson). */
#define _GNU_SOURCE /* memmem */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

#define KEY_PREVIEW_BYTES 60 /* string values are cut to this many bytes */
#define KEY_PREVIEW_ITEMS 4  /* arrays show this many first items */

/* ---- facts drawn from the metadata --------------------------------------- */

/* "chatml", "llama3", "llama2" (also Mistral), "gemma", "phi3", "other", or "none". */
static const char *chat_template_family(const tl_gguf *g) {
    tl_gguf_str t;
    if (tl_gguf_get_str(g, "tokenizer.chat_template", &t, NULL) != TL_OK)
        return "none";
    static const struct { const char *marker, *family; } families[] = {
        {"<|im_start|>", "chatml"},      {"<|start_header_id|>", "llama3"}, {"<start_of_turn>", "gemma"},
        {"<|user|>", "phi3"},            {"[INST]", "llama2"},
    };
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (memmem(t.ptr, t.len, families[i].marker, strlen(families[i].marker)))
            return families[i].family;
    return "other";
}

/* tokenizer.ggml.model -> the algorithm it names. */
static const char *tokenizer_kind(tl_gguf_str model) {
    if (tl_gguf_str_eq(model, "llama")) return "SPM";
    if (tl_gguf_str_eq(model, "gpt2")) return "BPE";
    if (tl_gguf_str_eq(model, "bert")) return "WPM";
    if (tl_gguf_str_eq(model, "t5")) return "UGM";
    if (tl_gguf_str_eq(model, "rwkv")) return "RWKV";
    if (tl_gguf_str_eq(model, "none")) return "none";
    return "unknown";
}

/* A NUL-terminated copy of a GGUF string (NULs become '?'); caller frees. */
static char *str_dup(tl_gguf_str s) {
    char *p = malloc(s.len + 1);
    if (!p)
        return NULL;
    for (uint64_t i = 0; i < s.len; i++)
        p[i] = s.ptr[i] ? s.ptr[i] : '?';
    p[s.len] = '\0';
    return p;
}

typedef struct hparam {
    const char *label;  /* text output */
    const char *json;   /* JSON field */
    const char *suffix; /* key after "ARCH." */
    bool is_float;
    bool present;
    double value;
} hparam;

typedef struct summary {
    hparam hp[9];
    int64_t head_dim_k, head_dim_v; /* key/value_length, else embedding/heads; -1 unknown */
    const char *tok_model_kind;
    char *tok_model, *tok_pre; /* NULL when absent */
    int64_t n_tokens;          /* -1 when absent */
    const char *template_family;
    tl_template_info template_info; /* reasoning, when the template renders */
    bool template_described;
    uint64_t by_type[TL_TYPE_COUNT];
    uint64_t params;
    char *name;
} summary;

enum { HP_CTX, HP_EMBD, HP_LAYERS, HP_HEADS, HP_KV_HEADS, HP_FF, HP_ROPE, HP_ROPE_DIM, HP_EPS };

static void summarize(const tl_gguf *g, summary *s) {
    memset(s, 0, sizeof *s);
    const hparam init[9] = {
        {"context", "context_length", "context_length", false, false, 0},
        {"embedding", "embedding_length", "embedding_length", false, false, 0},
        {"layers", "block_count", "block_count", false, false, 0},
        {"heads", "head_count", "attention.head_count", false, false, 0},
        {"kv heads", "head_count_kv", "attention.head_count_kv", false, false, 0},
        {"feed forward", "feed_forward_length", "feed_forward_length", false, false, 0},
        {"rope base", "rope_freq_base", "rope.freq_base", true, false, 0},
        {"rope dims", "rope_dimension_count", "rope.dimension_count", false, false, 0},
        {"rms eps", "rms_norm_eps", "attention.layer_norm_rms_epsilon", true, false, 0},
    };
    memcpy(s->hp, init, sizeof init);
    const char *arch = tl_gguf_arch(g);
    char key[256];
    for (int i = 0; i < 9; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, s->hp[i].suffix);
        int64_t iv;
        float fv;
        if (!s->hp[i].is_float && tl_gguf_get_i64(g, key, &iv, NULL) == TL_OK) {
            s->hp[i].present = true;
            s->hp[i].value = (double)iv;
        } else if (s->hp[i].is_float && tl_gguf_get_f32(g, key, &fv, NULL) == TL_OK) {
            s->hp[i].present = true;
            s->hp[i].value = fv;
        }
    }
    s->head_dim_k = s->head_dim_v = -1;
    int64_t kl, vl;
    snprintf(key, sizeof key, "%s.attention.key_length", arch);
    if (tl_gguf_get_i64(g, key, &kl, NULL) == TL_OK)
        s->head_dim_k = kl;
    snprintf(key, sizeof key, "%s.attention.value_length", arch);
    if (tl_gguf_get_i64(g, key, &vl, NULL) == TL_OK)
        s->head_dim_v = vl;
    if (s->hp[HP_EMBD].present && s->hp[HP_HEADS].present && s->hp[HP_HEADS].value > 0) {
        int64_t d = (int64_t)(s->hp[HP_EMBD].value / s->hp[HP_HEADS].value);
        if (s->head_dim_k < 0)
            s->head_dim_k = d;
        if (s->head_dim_v < 0)
            s->head_dim_v = d;
    }

    tl_gguf_str str;
    s->tok_model_kind = "none";
    if (tl_gguf_get_str(g, "tokenizer.ggml.model", &str, NULL) == TL_OK) {
        s->tok_model = str_dup(str);
        s->tok_model_kind = tokenizer_kind(str);
    }
    if (tl_gguf_get_str(g, "tokenizer.ggml.pre", &str, NULL) == TL_OK)
        s->tok_pre = str_dup(str);
    if (tl_gguf_get_str(g, "general.name", &str, NULL) == TL_OK)
        s->name = str_dup(str);
    const tl_gguf_value *toks = tl_gguf_get(g, "tokenizer.ggml.tokens");
    s->n_tokens = toks && toks->type == TL_GGUF_ARRAY ? (int64_t)toks->v.arr.n : -1;
    s->template_family = chat_template_family(g);
    tl_gguf_str tpl;
    if (tl_gguf_get_str(g, "tokenizer.chat_template", &tpl, NULL) == TL_OK) {
        tl_error terr = {0};
        tl_template_describe(tpl.ptr, tpl.len, &s->template_info, &terr);
        s->template_described = true;
    }

    for (uint64_t i = 0; i < tl_gguf_n_tensors(g); i++) {
        const tl_gguf_tensor *t = tl_gguf_tensor_at(g, i);
        s->by_type[t->type]++;
        /* The reader guarantees the element count fits int64; the sum cannot
         * exceed the file size times the densest packing, far below 2^64. */
        s->params += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    }
}

static void summary_free(summary *s) {
    free(s->tok_model);
    free(s->tok_pre);
    free(s->name);
}

/* ---- shortened values ---------------------------------------------------- */

/* Appends s quoted, control bytes escaped, cut to max bytes on a UTF-8 boundary. */
static void append_short_str(tl_strbuf *sb, tl_gguf_str s, size_t max) {
    size_t n = s.len < max ? (size_t)s.len : max;
    while (n < s.len && n > 0 && ((uint8_t)s.ptr[n] & 0xC0) == 0x80)
        n--; /* do not split a multi-byte character */
    tl_strbuf_putc(sb, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '\n') tl_strbuf_puts(sb, "\\n");
        else if (c == '\t') tl_strbuf_puts(sb, "\\t");
        else if (c == '"') tl_strbuf_puts(sb, "\\\"");
        else if (c == '\\') tl_strbuf_puts(sb, "\\\\");
        else if (c < 0x20 || c == 0x7f) tl_strbuf_printf(sb, "\\x%02x", c);
        else tl_strbuf_putc(sb, (char)c);
    }
    tl_strbuf_putc(sb, '"');
    if (n < s.len)
        tl_strbuf_printf(sb, "...(%" PRIu64 " bytes)", s.len);
}

static void append_scalar(tl_strbuf *sb, const tl_gguf_value *v) {
    switch (v->type) {
    case TL_GGUF_U8: case TL_GGUF_U16: case TL_GGUF_U32: case TL_GGUF_U64:
        tl_strbuf_printf(sb, "%" PRIu64, v->v.u);
        break;
    case TL_GGUF_I8: case TL_GGUF_I16: case TL_GGUF_I32: case TL_GGUF_I64:
        tl_strbuf_printf(sb, "%" PRId64, v->v.i);
        break;
    case TL_GGUF_BOOL: tl_strbuf_puts(sb, v->v.u ? "true" : "false"); break;
    case TL_GGUF_F32: case TL_GGUF_F64: tl_strbuf_printf(sb, "%.9g", v->v.f); break;
    case TL_GGUF_STRING: append_short_str(sb, v->v.s, KEY_PREVIEW_BYTES); break;
    case TL_GGUF_ARRAY: break;
    }
}

/* "array[string] 512: ["<unk>", "<s>", ...]" */
static void append_short_value(tl_strbuf *sb, const tl_gguf_value *v) {
    if (v->type != TL_GGUF_ARRAY) {
        append_scalar(sb, v);
        return;
    }
    uint64_t n = v->v.arr.n;
    tl_strbuf_printf(sb, "%" PRIu64 " x %s: [", n, tl_gguf_vtype_name(v->v.arr.elem));
    for (uint64_t i = 0; i < n && i < KEY_PREVIEW_ITEMS; i++) {
        if (i)
            tl_strbuf_puts(sb, ", ");
        if (v->v.arr.strs) {
            append_short_str(sb, v->v.arr.strs[i], 24);
        } else if (v->v.arr.items) {
            tl_strbuf_printf(sb, "array(%" PRIu64 ")", v->v.arr.items[i].v.arr.n);
        } else if (v->v.arr.elem == TL_GGUF_F32 || v->v.arr.elem == TL_GGUF_F64) {
            tl_strbuf_printf(sb, "%.6g", tl_gguf_arr_float(v, i));
        } else if (v->v.arr.elem == TL_GGUF_U64) {
            tl_strbuf_printf(sb, "%" PRIu64, (uint64_t)tl_gguf_arr_int(v, i));
        } else {
            tl_strbuf_printf(sb, "%" PRId64, tl_gguf_arr_int(v, i));
        }
    }
    tl_strbuf_puts(sb, n > KEY_PREVIEW_ITEMS ? ", ...]" : "]");
}

static const char *type_label(const tl_gguf_value *v, char *buf, size_t cap) {
    if (v->type == TL_GGUF_ARRAY)
        snprintf(buf, cap, "array[%s]", tl_gguf_vtype_name(v->v.arr.elem));
    else
        snprintf(buf, cap, "%s", tl_gguf_vtype_name(v->type));
    return buf;
}

/* ---- text output --------------------------------------------------------- */

/* ---- what the engine makes of it ------------------------------------------ */

/* The model as the engine would run it: NULL (and the reason in err) when it
 * would refuse the file. */
static tl_model *engine_view(const char *path, tl_model_features *f, tl_error *err) {
    tl_model *m = NULL;
    if (tl_model_load(path, &m, err) != TL_OK)
        return NULL;
    tl_model_get_features(m, f);
    return m;
}

/* One line naming the architecture's distinctive parts ("plain" when none). */
static void features_text(const tl_model_features *f, tl_strbuf *sb) {
    size_t start = sb->len;
#define ADD(...) ((void)(sb->len > start && tl_strbuf_puts(sb, ", ")), (void)tl_strbuf_printf(sb, __VA_ARGS__))
    if (f->window)
        ADD("sliding window %d on %d layers", f->window, f->n_window_layers);
    if (f->n_nope_layers)
        ADD("no RoPE on %d layers", f->n_nope_layers);
    if (f->n_rope_tables > 1 && !f->longrope)
        ADD("%d RoPE tables", f->n_rope_tables);
    if (f->longrope)
        ADD("LongRoPE factors");
    if (f->attn_softcap > 0)
        ADD("attention soft-cap %g", f->attn_softcap);
    if (f->final_softcap > 0)
        ADD("final soft-cap %g", f->final_softcap);
    if (f->embd_scale != 1.0f)
        ADD("embedding scale %g", f->embd_scale);
    if (f->residual_scale != 1.0f)
        ADD("residual scale %g", f->residual_scale);
    if (f->logit_scale != 1.0f)
        ADD("logit scale 1/%g", f->logit_scale);
    if (f->attn_temp_scale != 0.0f)
        ADD("attention temperature %g", f->attn_temp_scale);
    if (f->n_expert)
        ADD("%d experts, %d used", f->n_expert, f->n_expert_used);
    if (f->qkv_bias)
        ADD("q/k/v biases");
    if (f->qk_norm)
        ADD("q/k norms");
    if (f->v_norm)
        ADD("v norm");
    if (f->post_norms)
        ADD("post-norms");
    if (f->fused_qkv)
        ADD("fused qkv");
    if (f->fused_gate_up)
        ADD("fused gate/up");
    ADD("%s", f->gelu ? "GeGLU" : "SwiGLU");
#undef ADD
}

static void print_text(const tl_gguf *g, const summary *s, bool keys) {
    const char *arch = tl_gguf_arch(g);
    printf("file:          %s\n", tl_gguf_path(g));
    printf("size:          %" PRIu64 " bytes (%.1f MiB)\n", tl_gguf_file_size(g),
           (double)tl_gguf_file_size(g) / (1024.0 * 1024.0));
    printf("gguf version:  %" PRIu32 " (alignment %" PRIu32 ", data at %" PRIu64 ")\n", tl_gguf_version(g),
           tl_gguf_alignment(g), tl_gguf_data_offset(g));
    printf("architecture:  %s\n", arch[0] ? arch : "(none)");
    if (s->name)
        printf("name:          %s\n", s->name);
    for (int i = 0; i < 9; i++) {
        char label[32];
        snprintf(label, sizeof label, "%s:", s->hp[i].label);
        printf("%-15s", label);
        if (!s->hp[i].present)
            printf("-%s\n", i == HP_ROPE ? " (default 10000)" : "");
        else if (s->hp[i].is_float)
            printf("%g\n", s->hp[i].value);
        else
            printf("%.0f\n", s->hp[i].value);
    }
    if (s->head_dim_k >= 0)
        printf("head dims:     k %" PRId64 ", v %" PRId64 "\n", s->head_dim_k, s->head_dim_v);
    else
        printf("head dims:     -\n");
    printf("tokenizer:     %s", s->tok_model_kind);
    if (s->tok_model)
        printf(" (tokenizer.ggml.model %s)", s->tok_model);
    printf(", pre %s", s->tok_pre ? s->tok_pre : "-");
    if (s->n_tokens >= 0)
        printf(", %" PRId64 " tokens", s->n_tokens);
    printf("\nchat template: %s\n", s->template_family);
    if (s->template_described)
        printf("reasoning:     %s%s%s%s\n", s->template_info.reasoning ? "yes" : "no",
               s->template_info.thinking[0] ? " (decisions: " : "", s->template_info.thinking,
               s->template_info.thinking[0] ? ")" : "");
    tl_model_features f;
    tl_error err = {0};
    tl_model *m = engine_view(tl_gguf_path(g), &f, &err);
    if (m) {
        tl_strbuf sb = TL_STRBUF_INIT;
        features_text(&f, &sb);
        printf("engine:        runs it (%s)\n", tl_model_type_name(m));
        printf("features:      %s\n", tl_strbuf_cstr(&sb));
        tl_strbuf_free(&sb);
        tl_model_free(m);
    } else {
        printf("engine:        cannot run it: %s\n", err.msg);
    }
    printf("tensors:       %" PRIu64, tl_gguf_n_tensors(g));
    const char *sep = " (";
    for (int t = 0; t < TL_TYPE_COUNT; t++)
        if (s->by_type[t]) {
            printf("%s%s %" PRIu64, sep, tl_type_name((tl_ggml_type)t), s->by_type[t]);
            sep = ", ";
        }
    printf("%s\n", tl_gguf_n_tensors(g) ? ")" : "");
    printf("parameters:    %" PRIu64 " (%.2fM)\n", s->params, (double)s->params / 1e6);
    printf("metadata keys: %" PRIu64 "\n", tl_gguf_n_kv(g));
    if (!keys)
        return;
    printf("\n");
    tl_strbuf sb = TL_STRBUF_INIT;
    for (uint64_t i = 0; i < tl_gguf_n_kv(g); i++) {
        tl_gguf_str k = tl_gguf_kv_key(g, i);
        const tl_gguf_value *v = tl_gguf_kv_value(g, i);
        char tl[32];
        tl_strbuf_clear(&sb);
        append_short_value(&sb, v);
        printf("%-44.*s %-14s %s\n", (int)k.len, k.ptr, type_label(v, tl, sizeof tl), tl_strbuf_cstr(&sb));
    }
    tl_strbuf_free(&sb);
}

/* ---- JSON output --------------------------------------------------------- */

/* A string that is valid UTF-8 in the JSON output (tokens need not be). */
static json_t *json_text(const char *p, size_t n) {
    json_t *j = json_stringn(p, n);
    if (j)
        return j;
    tl_strbuf sb = TL_STRBUF_INIT;
    tl_strbuf_json_string(&sb, p, n); /* replaces bad bytes with U+FFFD */
    json_t *parsed = json_loads(tl_strbuf_cstr(&sb), JSON_DECODE_ANY, NULL);
    tl_strbuf_free(&sb);
    return parsed ? parsed : json_string("");
}

static json_t *json_scalar(const tl_gguf_value *v) {
    switch (v->type) {
    case TL_GGUF_U8: case TL_GGUF_U16: case TL_GGUF_U32:
        return json_integer((json_int_t)v->v.u);
    case TL_GGUF_U64:
        return v->v.u <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v->v.u) : json_real((double)v->v.u);
    case TL_GGUF_I8: case TL_GGUF_I16: case TL_GGUF_I32: case TL_GGUF_I64:
        return json_integer(v->v.i);
    case TL_GGUF_BOOL: return json_boolean(v->v.u);
    case TL_GGUF_F32: case TL_GGUF_F64:
        return v->v.f == v->v.f && v->v.f - v->v.f == 0 ? json_real(v->v.f) : json_null(); /* NaN/inf: null */
    case TL_GGUF_STRING: {
        size_t n = v->v.s.len < KEY_PREVIEW_BYTES ? (size_t)v->v.s.len : KEY_PREVIEW_BYTES;
        return json_text(v->v.s.ptr, n);
    }
    case TL_GGUF_ARRAY: break;
    }
    return json_null();
}

static json_t *json_key_entry(tl_gguf_str k, const tl_gguf_value *v) {
    json_t *o = json_object();
    json_object_set_new(o, "key", json_text(k.ptr, k.len));
    json_object_set_new(o, "type", json_string(tl_gguf_vtype_name(v->type)));
    if (v->type != TL_GGUF_ARRAY) {
        json_object_set_new(o, "value", json_scalar(v));
        if (v->type == TL_GGUF_STRING)
            json_object_set_new(o, "length", json_integer((json_int_t)v->v.s.len));
        return o;
    }
    json_object_set_new(o, "elem_type", json_string(tl_gguf_vtype_name(v->v.arr.elem)));
    json_object_set_new(o, "count", json_integer((json_int_t)v->v.arr.n));
    json_t *first = json_array();
    for (uint64_t i = 0; i < v->v.arr.n && i < KEY_PREVIEW_ITEMS; i++) {
        if (v->v.arr.strs)
            json_array_append_new(first, json_text(v->v.arr.strs[i].ptr, v->v.arr.strs[i].len < 64 ? v->v.arr.strs[i].len : 64));
        else if (v->v.arr.items)
            json_array_append_new(first, json_integer((json_int_t)v->v.arr.items[i].v.arr.n));
        else if (v->v.arr.elem == TL_GGUF_F32 || v->v.arr.elem == TL_GGUF_F64) {
            double f = tl_gguf_arr_float(v, i);
            json_array_append_new(first, f == f && f - f == 0 ? json_real(f) : json_null());
        } else
            json_array_append_new(first, json_integer(tl_gguf_arr_int(v, i)));
    }
    json_object_set_new(o, "first", first);
    return o;
}

static int print_json(const tl_gguf *g, const summary *s, bool keys) {
    json_t *o = json_object();
    json_object_set_new(o, "path", json_text(tl_gguf_path(g), strlen(tl_gguf_path(g))));
    json_object_set_new(o, "file_size", json_integer((json_int_t)tl_gguf_file_size(g)));
    json_object_set_new(o, "version", json_integer(tl_gguf_version(g)));
    json_object_set_new(o, "alignment", json_integer(tl_gguf_alignment(g)));
    json_object_set_new(o, "data_offset", json_integer((json_int_t)tl_gguf_data_offset(g)));
    const char *arch = tl_gguf_arch(g);
    json_object_set_new(o, "architecture", arch[0] ? json_text(arch, strlen(arch)) : json_null());
    json_object_set_new(o, "name", s->name ? json_text(s->name, strlen(s->name)) : json_null());
    json_t *hp = json_object();
    for (int i = 0; i < 9; i++) {
        json_t *v = json_null();
        if (s->hp[i].present)
            v = s->hp[i].is_float ? json_real(s->hp[i].value) : json_integer((json_int_t)s->hp[i].value);
        json_object_set_new(hp, s->hp[i].json, v);
    }
    json_object_set_new(hp, "head_dim_k", s->head_dim_k >= 0 ? json_integer(s->head_dim_k) : json_null());
    json_object_set_new(hp, "head_dim_v", s->head_dim_v >= 0 ? json_integer(s->head_dim_v) : json_null());
    json_object_set_new(o, "hparams", hp);
    json_t *tok = json_object();
    json_object_set_new(tok, "kind", json_string(s->tok_model_kind));
    json_object_set_new(tok, "model", s->tok_model ? json_text(s->tok_model, strlen(s->tok_model)) : json_null());
    json_object_set_new(tok, "pre", s->tok_pre ? json_text(s->tok_pre, strlen(s->tok_pre)) : json_null());
    json_object_set_new(tok, "n_tokens", s->n_tokens >= 0 ? json_integer(s->n_tokens) : json_null());
    json_object_set_new(o, "tokenizer", tok);
    json_object_set_new(o, "chat_template", json_string(s->template_family));
    json_object_set_new(o, "chat_template_reasoning",
                        s->template_described ? json_boolean(s->template_info.reasoning) : json_null());
    json_object_set_new(o, "chat_template_thinking",
                        s->template_info.thinking[0] ? json_string(s->template_info.thinking) : json_null());
    tl_model_features f;
    tl_error err = {0};
    tl_model *m = engine_view(tl_gguf_path(g), &f, &err);
    json_t *eng = json_object();
    json_object_set_new(eng, "supported", json_boolean(m != NULL));
    if (m) {
        json_t *fe = json_object();
        json_object_set_new(fe, "window", json_integer(f.window));
        json_object_set_new(fe, "window_layers", json_integer(f.n_window_layers));
        json_object_set_new(fe, "nope_layers", json_integer(f.n_nope_layers));
        json_object_set_new(fe, "rope_tables", json_integer(f.n_rope_tables));
        json_object_set_new(fe, "longrope", json_boolean(f.longrope));
        json_object_set_new(fe, "attn_softcap", json_real(f.attn_softcap));
        json_object_set_new(fe, "final_softcap", json_real(f.final_softcap));
        json_object_set_new(fe, "embedding_scale", json_real(f.embd_scale));
        json_object_set_new(fe, "residual_scale", json_real(f.residual_scale));
        json_object_set_new(fe, "logit_scale", json_real(f.logit_scale));
        json_object_set_new(fe, "attn_temperature_scale", json_real(f.attn_temp_scale));
        json_object_set_new(fe, "experts", json_integer(f.n_expert));
        json_object_set_new(fe, "experts_used", json_integer(f.n_expert_used));
        json_object_set_new(fe, "qkv_bias", json_boolean(f.qkv_bias));
        json_object_set_new(fe, "qk_norm", json_boolean(f.qk_norm));
        json_object_set_new(fe, "v_norm", json_boolean(f.v_norm));
        json_object_set_new(fe, "post_norms", json_boolean(f.post_norms));
        json_object_set_new(fe, "fused_qkv", json_boolean(f.fused_qkv));
        json_object_set_new(fe, "fused_gate_up", json_boolean(f.fused_gate_up));
        json_object_set_new(fe, "ffn", json_string(f.gelu ? "geglu" : "swiglu"));
        json_object_set_new(eng, "features", fe);
        tl_model_free(m);
    } else {
        json_object_set_new(eng, "error", json_text(err.msg, strlen(err.msg)));
    }
    json_object_set_new(o, "engine", eng);
    json_t *tens = json_object(), *by = json_object();
    json_object_set_new(tens, "count", json_integer((json_int_t)tl_gguf_n_tensors(g)));
    for (int t = 0; t < TL_TYPE_COUNT; t++)
        if (s->by_type[t])
            json_object_set_new(by, tl_type_name((tl_ggml_type)t), json_integer((json_int_t)s->by_type[t]));
    json_object_set_new(tens, "by_type", by);
    json_object_set_new(o, "tensors", tens);
    json_object_set_new(o, "parameters", json_integer((json_int_t)s->params));
    json_object_set_new(o, "n_kv", json_integer((json_int_t)tl_gguf_n_kv(g)));
    if (keys) {
        json_t *arr = json_array();
        for (uint64_t i = 0; i < tl_gguf_n_kv(g); i++)
            json_array_append_new(arr, json_key_entry(tl_gguf_kv_key(g, i), tl_gguf_kv_value(g, i)));
        json_object_set_new(o, "keys", arr);
    }
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text) {
        fprintf(stderr, "typellm inspect: out of memory\n");
        return 1;
    }
    puts(text);
    free(text);
    return 0;
}

int tl_cmd_inspect(int argc, char **argv) {
    bool json = false, keys = false;
    const char *path = NULL;
    const tl_opt opts[] = {
        {'m', "model", TL_OPT_STR, &path, .metavar = "PATH",
         .help = "the file (or as the argument; default $TYPELLM_MODEL)"},
        {0, "json", TL_OPT_FLAG, &json, .help = "print one JSON object instead of text"},
        {0, "keys", TL_OPT_FLAG, &keys, .help = "also list every metadata key with its type and a shortened value"},
        {0},
    };
    const tl_opt_cmd cmd = {"inspect", "MODEL.gguf [--json] [--keys]",
                            "describe a GGUF file: version, architecture, hyperparameters, tokenizer,\n"
                            "  chat template family, tensors by type, parameter count, file size, and\n"
                            "  whether the engine runs it with the architecture's features (window, soft-caps, ...)",
                            .opts = opts, .max_positional = 2};
    const char *pos[2];
    int n_pos = 0;
    int prc = tl_opt_parse(&cmd, argc, argv, pos, &n_pos);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    if (n_pos + (path != NULL) > 1)
        return tl_opt_fail(&cmd, "one model file at a time ('%s' and '%s')", path ? path : pos[0], pos[n_pos - 1]);
    if (n_pos)
        path = pos[0];
    if (!(path = tl_cli_model(path)))
        return tl_opt_fail(&cmd, "no model file given");
    tl_gguf *g = NULL;
    tl_error err = {0};
    if (tl_gguf_open(path, &g, &err) != TL_OK) {
        tl_cli_error("inspect", err.msg);
        return 1;
    }
    summary s;
    summarize(g, &s);
    int rc = 0;
    if (json)
        rc = print_json(g, &s, keys);
    else
        print_text(g, &s, keys);
    summary_free(&s);
    tl_gguf_close(g);
    return rc;
}

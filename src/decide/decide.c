/* decide.c: the decision core: schema -> labels -> plan -> render -> score -> values.
 *
 * The type guarantee lives here: a field's value is always one of its
 * declared values, because the only tokens ever read are the field's labels
 * and the chosen index maps back to the value list. Probabilities are a
 * softmax over the candidates' logprobs only (temperature divides them
 * first), so they sum to 1 and never involve a token outside the domain. */
#include "decide/decide.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"
#include "decide/chat_template.h"
#include "decide/correct.h"
#include "decide/labels.h"
#include "decide/plan.h"
#include "decide/render.h"
#include "decide/schema.h"
#include "tok/vocab.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/rng.h"
#include "util/sample.h"

/* What became of one field. */
typedef struct field_outcome {
    bool decided;     /* scored in some wave */
    bool given;       /* supplied by the caller */
    bool abstained;   /* below the threshold: no value */
    size_t chosen;    /* value index (decided or given) */
    double *logprobs; /* n_values: full-vocabulary log-softmax of each label token (two-token labels: of the pair) */
    double *probs;    /* n_values: renormalized over the candidates (after temperature) */
    json_t *trace;    /* or NULL */
    /* generated numbers */
    tl_number_value num;
    char *num_text;     /* the number as generated */
    double num_prob;    /* probability of the whole text under the constrained distribution */
    double num_logprob; /* its log-probability under the unconstrained model (sum over tokens) */
    size_t num_tokens;
    /* open fields: the open choice picked and the value the model wrote */
    bool open_picked;
    char *open_text;    /* unescaped, valid UTF-8 */
    size_t open_chars;  /* code points */
    size_t open_tokens;
    bool open_closed;   /* ended by the closing quote / end of turn, not a limit */
    bool constant;      /* const: known without asking */
    bool selected;      /* multi-label value: in the chosen set (after minItems/maxItems) */
    bool undecided;     /* --partial: not reached before the context ran out */
    /* two-token labels (more choices than single-token labels): logprobs[i]
     * = first_lp[i] + second_lp[i], log P(first) + log P(second | first) */
    bool two_token;
    double *first_lp, *second_lp; /* n choices, two-token fields only */
    bool inactive;      /* its condition failed (an item beyond the length, a value decided null): never asked */
    /* corrections (correct.h): probs is then the corrected distribution */
    tl_debias debias;
    tl_calibrate calibrate;
    const char *cf_input;  /* the calibration branch's context (owned by the schema or the options) */
    bool corrected;        /* scored with a correction */
    size_t n_orders;       /* orders scored */
    double *raw_probs;     /* n choices: the identity order's distribution (after temperature) */
    double *cf_probs;      /* n choices: the calibration branch's distribution (identity order), or NULL */
    double *prior;         /* n choices: pride's prior over label positions, or NULL */
    /* think-then-decide: the reasoning written before the answer */
    long think;            /* reasoning token limit (0: none) */
    char *think_text;      /* what the model reasoned (blank space around it dropped), or NULL */
    size_t think_n;        /* tokens it generated */
    bool think_closed;     /* it closed the block itself (not the limit) */
} field_outcome;

/* A calibration branch's prefix: the context replaced by `input`, rendered once per run. */
typedef struct cf_base {
    const char *input;
    tl_idseq seq;
} cf_base;

typedef struct decide_run {
    tl_backend *b;
    const tl_decide_opts *opts;
    tl_dschema *schema;
    tl_render render;
    tl_chat_derived derived; /* the framing read off the template, when one was rendered */
    const char *template_source; /* "model", "given", "builtin" */
    tl_labelset labels;
    tl_labelpairs pairs;           /* two-token labels, for fields with more choices than labels.n */
    field_outcome *out;
    tl_usage usage;
    const tl_number_index *number_index; /* local vocabularies, when the schema has generated numbers (the vocabulary's, shared) */
    tl_backend_requests req0;      /* the backend's request counters when the run began */
    bool partial;                  /* --partial: some fields were not reached */
    cf_base *cf;                   /* calibration prefixes, one per distinct input */
    size_t n_cf;
} decide_run;

static tl_status nomem(tl_error *err) { return tl_error_set(err, TL_ERR_NOMEM, "decide: out of memory"); }

/* (Re)sizes o's per-choice arrays from `from` to n choices, zeroing the new
 * entries (the two-token parts too when the field has two-token labels). */
static tl_status outcome_alloc(field_outcome *o, size_t from, size_t n, tl_error *err) {
    double **arrays[4] = {&o->logprobs, &o->probs, &o->first_lp, &o->second_lp};
    for (size_t a = 0; a < (o->two_token ? 4u : 2u); a++) {
        double *p = realloc(*arrays[a], (n ? n : 1) * sizeof *p);
        if (!p)
            return nomem(err);
        if (n > from)
            memset(p + from, 0, (n - from) * sizeof *p);
        *arrays[a] = p;
    }
    return TL_OK;
}

/* Whether a condition holds: its control field answered (decided, given or
 * known, not abstained) with a value index in [lo, hi]. A control field
 * precedes what it controls, so its own condition was settled first. */
static bool cond_holds(const decide_run *r, tl_dcond c) {
    if (c.field < 0)
        return true;
    const field_outcome *o = &r->out[c.field];
    bool answered = (o->decided || o->given || o->constant) && !o->abstained && !o->inactive && !o->undecided &&
                    !r->schema->fields[c.field].skip;
    return answered && !o->open_picked && o->chosen >= c.lo && o->chosen <= c.hi;
}

/* Code points of a valid UTF-8 string. */
static size_t utf8_chars(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* ---- choosing a value ---------------------------------------------------- */

/* A draw from probs with the stream seeded by (seed, field index). */
static size_t sample_index(const double *probs, size_t n, uint64_t seed, size_t field_idx) {
    uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(field_idx + 1));
    int32_t pick = tl_sample_weights(probs, (int32_t)n, NULL, tl_rng_uniform(&state), NULL);
    return pick >= 0 ? (size_t)pick : n - 1;
}

/* probs = softmax(logprobs / T) over the n candidates (T = 1 when temperature
 * is 0: argmax needs no scaling and reports the model's own renormalized
 * distribution). Returns the chosen index: argmax (first on ties) at T = 0,
 * else a draw from probs with a stream seeded by (seed, field index). */
static tl_status decision_choose(const double *logprobs, size_t n, double temperature, uint64_t seed, size_t field_idx,
                                 double *probs, size_t *chosen, tl_error *err) {
    double t = temperature > 0 ? temperature : 1.0;
    double max = -INFINITY;
    size_t best = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(logprobs[i]))
            return tl_error_set(err, TL_ERR_INTERNAL, "decide: backend returned NaN logprob for candidate %zu", i);
        if (logprobs[i] > max)
            max = logprobs[i], best = i;
    }
    if (!isfinite(max))
        return tl_error_set(err, TL_ERR_INTERNAL, "decide: every candidate has logprob -inf");
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += probs[i] = exp((logprobs[i] - max) / t);
    for (size_t i = 0; i < n; i++)
        probs[i] /= sum;
    *chosen = best;
    if (temperature > 0)
        *chosen = sample_index(probs, n, seed, field_idx);
    return TL_OK;
}

/* ---- labels ---------------------------------------------------------------- */

/* The label texts of field fi's choices (choice i has text [i]). */
static const tl_label_text *field_labels(const decide_run *r, size_t fi) {
    return r->out[fi].two_token ? r->pairs.text : r->labels.text;
}

/* The token of choice i's label (the first one of a two-token label). */
static int32_t label_token(const decide_run *r, size_t fi, size_t i) {
    return r->out[fi].two_token ? r->pairs.first[i] : r->labels.id[i];
}

/* Appends choice i's label tokens: the one token (with the answer prefix), or
 * the first piece's token then the second's. */
static tl_status append_label(decide_run *r, tl_idseq *seq, size_t fi, size_t i, tl_error *err) {
    const char *prefix = tl_render_label_prefix(&r->render);
    char text[16];
    if (!r->out[fi].two_token) {
        snprintf(text, sizeof text, "%s%s", prefix, r->labels.text[i]);
        return tl_idseq_append_id(seq, r->labels.id[i], text, err);
    }
    const char *label = r->pairs.text[i];
    int split = r->pairs.split[i];
    snprintf(text, sizeof text, "%s%.*s", prefix, split, label);
    tl_status st = tl_idseq_append_id(seq, r->pairs.first[i], text, err);
    return st ? st : tl_idseq_append_id(seq, r->pairs.second[i], label + split, err);
}

/* ---- rendering answered fields ------------------------------------------- */

/* Field fi's question with its values shown in `order` (NULL: the identity). */
static tl_status append_question_order(decide_run *r, tl_idseq *seq, size_t fi, const size_t *order, tl_error *err) {
    tl_strbuf q = TL_STRBUF_INIT;
    size_t body = 0;
    tl_status st = TL_OK;
    if (!tl_render_question_text_order(&r->render, &r->schema->fields[fi], field_labels(r, fi), order, &q, &body))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_framed(r->b, seq, q.buf, q.len, body, err);
    tl_strbuf_free(&q);
    return st;
}

static tl_status append_question(decide_run *r, tl_idseq *seq, size_t fi, tl_error *err) {
    return append_question_order(r, seq, fi, NULL, err);
}

/* The chosen label token, then the value written back and the turn closed. */
static tl_status append_answer(decide_run *r, tl_idseq *seq, size_t fi, size_t vi, tl_error *err) {
    tl_status st = append_label(r, seq, fi, vi, err);
    tl_strbuf a = TL_STRBUF_INIT;
    size_t body = 0;
    if (!st && !tl_render_answer_text(&r->render, &r->schema->fields[fi], vi, &a, &body))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_framed(r->b, seq, a.buf, a.len, body, err);
    tl_strbuf_free(&a);
    return st;
}

static json_t *real_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *ids_json(const int32_t *ids, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    return a;
}

/* End-of-turn tokens that close a chat answer (eot, eos; else the first token
 * of the framing's assistant close). Returns how many (<= 2). */
static tl_status chat_terminator_ids(decide_run *r, int32_t term_ids[2], size_t *n_term, tl_error *err) {
    *n_term = 0;
    if (r->b->vocab) {
        int32_t eot = tl_vocab_eot(r->b->vocab), eos = tl_vocab_eos(r->b->vocab);
        if (eot >= 0)
            term_ids[(*n_term)++] = eot;
        if (eos >= 0 && eos != eot)
            term_ids[(*n_term)++] = eos;
        return TL_OK;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    const char *ac = r->render.chat->assistant_close;
    tl_status st = tl_backend_tokenize(r->b, ac, strlen(ac), false, true, &ids, &n, err);
    if (st)
        return st;
    if (n)
        term_ids[(*n_term)++] = ids[0];
    free(ids);
    return TL_OK;
}

/* A copy of what the model wrote, without the blank space around it (NULL: out of memory). */
static char *generated_text(const tl_freetext_result *fr) {
    const char *v = fr->value ? fr->value : "";
    size_t len = fr->value ? fr->value_len : 0;
    while (len && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
        v++, len--;
    while (len && (v[len - 1] == ' ' || v[len - 1] == '\t' || v[len - 1] == '\n' || v[len - 1] == '\r'))
        len--;
    return strndup(v, len);
}

/* The open choice of field fi was picked after the question in branch: the
 * label and the lead are appended to a copy, then the model writes the value
 * unconstrained (tl_freetext_generate) until the closing quote (record) or
 * the end of the turn (chat), at most maxLength characters / the token limit. */
static tl_status generate_open(decide_run *r, const tl_idseq *branch, size_t fi, tl_error *err) {
    const tl_dfield *f = &r->schema->fields[fi];
    field_outcome *o = &r->out[fi];
    tl_idseq seq = {0};
    tl_strbuf lead = TL_STRBUF_INIT;
    tl_status st = tl_idseq_copy(&seq, branch, err);
    if (!st)
        st = append_label(r, &seq, fi, f->n_values, err);
    if (!st && !tl_render_open_lead_text(&r->render, &lead))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_text(r->b, &seq, lead.buf, lead.len, false, err);
    tl_freetext_params fp = {.max_chars = f->max_length,
                             .sample = {.temperature = r->opts->temperature,
                                        .seed = r->opts->seed ^ (TL_RNG_GOLDEN * (uint64_t)(fi + 1)),
                                        .max_tokens = f->max_tokens}};
    int32_t term_ids[2];
    size_t n_term = 0;
    if (r->render.style == TL_STYLE_RECORD) {
        fp.terminator = "\"";
        fp.json_escapes = true;
    } else if (!st) {
        st = chat_terminator_ids(r, term_ids, &n_term, err);
        fp.terminator_ids = term_ids;
        fp.n_terminator_ids = n_term;
        if (!n_term)
            fp.terminator = "\n";
    }
    tl_freetext_result fr;
    memset(&fr, 0, sizeof fr);
    if (!st && (st = tl_freetext_generate(r->b, seq.ids, seq.n, &fp, &fr, err)))
        tl_error_wrap(err, "decide: %s", tl_dfield_where(f));
    if (!st) {
        tl_usage_add(&r->usage, &fr.usage);
        /* blank space around the value is layout, not value (" mobile app\n") */
        o->open_picked = true;
        o->open_text = generated_text(&fr);
        o->open_chars = o->open_text ? utf8_chars(o->open_text) : 0;
        o->open_tokens = fr.n_ids;
        o->open_closed = fr.closed;
        if (!o->open_text)
            st = nomem(err);
    }
    tl_freetext_result_free(&fr);
    tl_strbuf_free(&lead);
    tl_idseq_free(&seq);
    return st;
}

/* The open label, the lead, the written value, then the record or turn closed. */
static tl_status append_open_answer(decide_run *r, tl_idseq *seq, size_t fi, tl_error *err) {
    const tl_dfield *f = &r->schema->fields[fi];
    tl_status st = append_label(r, seq, fi, f->n_values, err);
    tl_strbuf a = TL_STRBUF_INIT;
    size_t body = 0;
    if (!st && !tl_render_open_lead_text(&r->render, &a))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_text(r->b, seq, a.buf, a.len, false, err);
    tl_strbuf_clear(&a);
    if (!st && !tl_render_open_answer_text(&r->render, r->out[fi].open_text, &a, &body))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_framed(r->b, seq, a.buf, a.len, body, err);
    tl_strbuf_free(&a);
    return st;
}

/* A written open value joins the domains of the later, still undecided
 * fields that declare "x-domain-from" this field (with a new label). */
static tl_status grow_domains(decide_run *r, size_t fi, tl_error *err) {
    for (size_t g = fi + 1; g < r->schema->n_fields; g++) {
        tl_dfield *f = &r->schema->fields[g];
        field_outcome *o = &r->out[g];
        if (f->domain_from != (long)fi || o->decided || o->given)
            continue;
        bool added = false;
        tl_status st = tl_dfield_add_string(f, r->out[fi].open_text, &added, err);
        if (st)
            return st;
        if (!added)
            continue;
        size_t need = tl_dfield_n_choices(f);
        const char *tail = tl_render_label_tail(&r->render), *prefix = tl_render_label_prefix(&r->render);
        if ((st = o->two_token ? tl_labelpairs_fill(&r->pairs, r->b, tail, prefix, need, err)
                               : tl_labelset_fill(&r->labels, r->b, tail, prefix, need, err)))
            return st;
        if ((st = outcome_alloc(o, need - 1, need, err)))
            return st;
        if (need > (o->two_token ? r->pairs.n : r->labels.n)) {
            /* no label left for it: the domain stays as it was */
            json_decref(f->values[f->n_values - 1]);
            free(f->value_keys[f->n_values - 1]);
            free(f->value_json[f->n_values - 1]);
            f->n_values--;
        }
    }
    return TL_OK;
}

/* Generates field fi's number after the question in seq (the number
 * automaton of src/constrain: only tokens that keep the text a valid prefix
 * of an allowed number, closing only once it is complete). */
static tl_status generate_number(decide_run *r, const tl_idseq *seq, size_t fi, tl_error *err) {
    const tl_dfield *f = &r->schema->fields[fi];
    field_outcome *o = &r->out[fi];
    tl_number_close close = {0};
    int32_t term_ids[2];
    size_t n_term = 0;
    if (r->render.style == TL_STYLE_RECORD) {
        close.terminator = "\"";
    } else {
        /* The assistant turn ends with the end-of-turn token. */
        close.allow_leading_space = true;
        tl_status st = chat_terminator_ids(r, term_ids, &n_term, err);
        if (st)
            return st;
        close.terminator_ids = term_ids;
        close.n_terminator_ids = n_term;
        if (!n_term)
            close.terminator = "\n";
    }
    tl_sample_params sp = {.temperature = r->opts->temperature,
                           .seed = r->opts->seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(fi + 1))};
    tl_number_result nr;
    memset(&nr, 0, sizeof nr);
    tl_status st = tl_number_generate(r->b, r->number_index, &f->number, &close, seq->ids, seq->n, &sp, &nr, err);
    if (st) {
        tl_number_result_free(&nr);
        return tl_error_wrap(err, "decide: %s", tl_dfield_where(f));
    }
    r->usage.prompt_tokens += nr.usage.prompt_tokens;
    r->usage.cached_tokens += nr.usage.cached_tokens;
    r->usage.computed_tokens += nr.usage.computed_tokens;
    r->usage.forward_passes += nr.usage.forward_passes;
    r->usage.output_tokens += nr.usage.output_tokens;
    o->num = nr.value;
    o->num_text = strdup(nr.text ? nr.text : "");
    o->num_prob = exp(nr.sum_logprob_allowed);
    o->num_logprob = nr.sum_logprob_full;
    o->num_tokens = nr.n_ids;
    tl_number_result_free(&nr);
    return o->num_text ? TL_OK : nomem(err);
}

/* Generates field fi's string after the question in seq: the opening quote
 * (chat style; record style's question already ends at answer="), then the
 * body under the string automaton (pattern, minLength/maxLength) up to the
 * closing quote. */
static tl_status generate_string(decide_run *r, const tl_idseq *seq, size_t fi, tl_error *err) {
    const tl_dfield *f = &r->schema->fields[fi];
    field_outcome *o = &r->out[fi];
    tl_idseq s2 = {0};
    tl_strbuf lead = TL_STRBUF_INIT;
    tl_status st = tl_idseq_copy(&s2, seq, err);
    if (!st && !tl_render_string_lead_text(&r->render, &lead))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_text(r->b, &s2, lead.buf, lead.len, false, err);
    tl_sample_params sp = {.temperature = r->opts->temperature,
                           .seed = r->opts->seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(fi + 1)),
                           .max_tokens = f->max_tokens};
    tl_string_result sr;
    memset(&sr, 0, sizeof sr);
    if (!st && (st = tl_string_generate(r->b, r->number_index, f->pattern, f->min_length, f->max_length, s2.ids, s2.n,
                                        &sp, &sr, err)))
        tl_error_wrap(err, "decide: %s", tl_dfield_where(f));
    if (!st) {
        tl_usage_add(&r->usage, &sr.usage);
        o->num_text = strdup(sr.value);
        o->num_prob = exp(sr.sum_logprob_allowed);
        o->num_logprob = sr.sum_logprob_full;
        o->num_tokens = sr.n_ids;
        o->open_chars = sr.n_chars;
        if (!o->num_text)
            st = nomem(err);
    }
    tl_string_result_free(&sr);
    tl_strbuf_free(&lead);
    tl_idseq_free(&s2);
    return st;
}

/* The generated string written back: the quote, the value, the closing quote
 * and the record or turn closed. */
static tl_status append_string_answer(decide_run *r, tl_idseq *seq, size_t fi, tl_error *err) {
    const char *text = r->out[fi].num_text;
    tl_strbuf a = TL_STRBUF_INIT;
    size_t body = 0;
    tl_status st = TL_OK;
    if (!tl_render_string_lead_text(&r->render, &a))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_text(r->b, seq, a.buf, a.len, false, err);
    if (!st)
        st = tl_idseq_append_text(r->b, seq, text, strlen(text), false, err);
    tl_strbuf_clear(&a);
    if (!st && !tl_render_string_answer_text(&r->render, &a, &body))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_framed(r->b, seq, a.buf, a.len, body, err);
    tl_strbuf_free(&a);
    return st;
}

/* The generated number written back: its text, then the record or turn closed. */
static tl_status append_number_answer(decide_run *r, tl_idseq *seq, size_t fi, tl_error *err) {
    const char *text = r->out[fi].num_text;
    tl_status st = tl_idseq_append_text(r->b, seq, text, strlen(text), false, err);
    tl_strbuf a = TL_STRBUF_INIT;
    size_t body = 0;
    if (!st && !tl_render_number_answer_text(&r->render, text, &a, &body))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_framed(r->b, seq, a.buf, a.len, body, err);
    tl_strbuf_free(&a);
    return st;
}

/* ---- two-token scoring ----------------------------------------------------- */

/* The requests that score a two-token field after its question (branch):
 * one for the first tokens it uses, then one branch per first token (the
 * question + that token) for the second tokens of its pairs, all in the
 * wave's one batched step over the shared prefix. */
typedef struct pair_branches {
    size_t n_groups;  /* first tokens the field uses */
    int32_t *firsts;  /* (n_groups) those tokens */
    double *first_lp; /* (n_groups) their logprobs after the question */
    int32_t **ids;    /* (n_groups) the question's branch + that first token */
} pair_branches;

static void pair_branches_free(pair_branches *pb) {
    for (size_t g = 0; pb->ids && g < pb->n_groups; g++)
        free(pb->ids[g]);
    free(pb->ids);
    free(pb->firsts);
    free(pb->first_lp);
    memset(pb, 0, sizeof *pb);
}

/* How many score requests field fi takes (two-token: 1 + its first tokens). */
static size_t field_requests(const decide_run *r, size_t fi) {
    const tl_dfield *f = &r->schema->fields[fi];
    if (tl_dfield_generated(f))
        return 0;
    return r->out[fi].two_token ? 2 + r->pairs.group[tl_dfield_n_choices(f) - 1] : 1;
}

/* Appends field fi's requests (reqs has room for field_requests). */
static tl_status pair_requests(decide_run *r, size_t fi, const tl_idseq *branch, pair_branches *pb,
                               tl_score_req *reqs, size_t *n_reqs, tl_error *err) {
    size_t n = tl_dfield_n_choices(&r->schema->fields[fi]);
    const tl_labelpairs *lp = &r->pairs;
    field_outcome *o = &r->out[fi];
    pb->n_groups = lp->group[n - 1] + 1;
    pb->firsts = malloc(pb->n_groups * sizeof *pb->firsts);
    pb->first_lp = malloc(pb->n_groups * sizeof *pb->first_lp);
    pb->ids = calloc(pb->n_groups, sizeof *pb->ids);
    if (!pb->firsts || !pb->first_lp || !pb->ids)
        return nomem(err);
    reqs[(*n_reqs)++] = (tl_score_req){branch->ids, branch->n, pb->firsts, pb->n_groups, pb->first_lp};
    for (size_t i = 0; i < n;) {
        size_t g = lp->group[i], end = i;
        while (end < n && lp->group[end] == g)
            end++;
        pb->firsts[g] = lp->first[i];
        if (!(pb->ids[g] = malloc((branch->n + 1) * sizeof *pb->ids[g])))
            return nomem(err);
        memcpy(pb->ids[g], branch->ids, branch->n * sizeof *branch->ids);
        pb->ids[g][branch->n] = lp->first[i];
        /* the pairs of one first token are contiguous: their second tokens and logprobs too */
        reqs[(*n_reqs)++] = (tl_score_req){pb->ids[g], branch->n + 1, lp->second + i, end - i, o->second_lp + i};
        i = end;
    }
    return TL_OK;
}

/* After scoring: each pair's logprob is its first token's plus its second's. */
static void pair_combine(decide_run *r, size_t fi, const pair_branches *pb) {
    size_t n = tl_dfield_n_choices(&r->schema->fields[fi]);
    field_outcome *o = &r->out[fi];
    for (size_t i = 0; i < n; i++) {
        o->first_lp[i] = pb->first_lp[r->pairs.group[i]];
        o->logprobs[i] = o->first_lp[i] + o->second_lp[i];
    }
}

/* ---- corrections (correct.h) ------------------------------------------------ */

/* The branches that correct field fi beside its identity one: orders 1..k-1
 * over the wave's prefix, then, with calibration, the k orders over the
 * calibration prefix; all in the wave's one batched step. */
typedef struct corr_branches {
    size_t k;        /* orders (0: the field is not corrected) */
    size_t *orders;  /* k x n: the value at each label position; row 0 the identity */
    double *lp, *cf; /* k x n logprobs by label position (cf: calibration, NULL without) */
    tl_idseq *seqs;  /* n_seqs: the branches beyond the identity one */
    size_t n_seqs;
} corr_branches;

static void corr_branches_free(corr_branches *cb) {
    for (size_t i = 0; cb->seqs && i < cb->n_seqs; i++)
        tl_idseq_free(&cb->seqs[i]);
    free(cb->seqs);
    free(cb->orders);
    free(cb->lp);
    free(cb->cf);
    memset(cb, 0, sizeof *cb);
}

/* How many orders field fi is scored in (pride with a given prior: the identity alone). */
static tl_debias orders_method(const decide_run *r, size_t fi) {
    const field_outcome *o = &r->out[fi];
    return o->debias == TL_DEBIAS_PRIDE && r->schema->fields[fi].prior ? TL_DEBIAS_NONE : o->debias;
}

/* Requests field fi adds beyond its identity one. */
static tl_status corr_extra_requests(const decide_run *r, size_t fi, size_t *extra, tl_error *err) {
    const field_outcome *o = &r->out[fi];
    *extra = 0;
    if (!o->corrected)
        return TL_OK;
    size_t *orders = NULL, k = 0;
    tl_status st = tl_debias_orders(orders_method(r, fi), r->schema->fields[fi].n_values,
                                    r->schema->fields[fi].debias_orders, &orders, &k, err);
    free(orders);
    if (st)
        return tl_error_wrap(err, "%s", tl_dfield_where(&r->schema->fields[fi]));
    *extra = k - 1 + (o->calibrate ? k : 0);
    return TL_OK;
}

/* The calibration prefix for `input` (the context replaced by it), rendered once per run. */
static tl_status calibration_base(decide_run *r, const char *input, size_t *idx, tl_error *err) {
    for (size_t i = 0; i < r->n_cf; i++)
        if (!strcmp(r->cf[i].input, input)) {
            *idx = i;
            return TL_OK;
        }
    cf_base *p = realloc(r->cf, (r->n_cf + 1) * sizeof *p);
    if (!p)
        return nomem(err);
    r->cf = p;
    memset(&p[r->n_cf], 0, sizeof *p);
    p[r->n_cf].input = input;
    *idx = r->n_cf++;
    return tl_render_begin(r->b, &r->render, r->schema, input, strlen(input), &p[*idx].seq, err);
}

/* Appends field fi's requests: its identity branch (already holding the
 * question) into cb->lp row 0, then every other order and calibration branch. */
static tl_status corr_requests(decide_run *r, size_t fi, const tl_idseq *base, const tl_idseq *branch,
                               corr_branches *cb, tl_score_req *reqs, size_t *n_reqs, tl_error *err) {
    const tl_dfield *f = &r->schema->fields[fi];
    const field_outcome *o = &r->out[fi];
    size_t n = f->n_values;
    tl_status st = tl_debias_orders(orders_method(r, fi), n, f->debias_orders, &cb->orders, &cb->k, err);
    if (st)
        return st;
    size_t k = cb->k;
    cb->lp = calloc(k * n, sizeof *cb->lp);
    cb->cf = o->calibrate ? calloc(k * n, sizeof *cb->cf) : NULL;
    cb->seqs = calloc(2 * k, sizeof *cb->seqs);
    if (!cb->lp || !cb->seqs || (o->calibrate && !cb->cf))
        return nomem(err);
    reqs[(*n_reqs)++] = (tl_score_req){branch->ids, branch->n, r->labels.id, n, cb->lp};
    size_t cfi = 0;
    if (o->calibrate && (st = calibration_base(r, o->cf_input, &cfi, err)))
        return st;
    for (size_t pass = 0; pass < 2 && !st; pass++) {
        if (pass == 1 && !o->calibrate)
            break;
        for (size_t oi = pass ? 0 : 1; oi < k && !st; oi++) {
            tl_idseq *seq = &cb->seqs[cb->n_seqs++];
            st = tl_idseq_copy(seq, pass ? &r->cf[cfi].seq : base, err);
            if (!st)
                st = append_question_order(r, seq, fi, oi ? cb->orders + oi * n : NULL, err);
            if (!st)
                reqs[(*n_reqs)++] = (tl_score_req){seq->ids, seq->n, r->labels.id, n, (pass ? cb->cf : cb->lp) + oi * n};
        }
    }
    return st;
}

/* After scoring: the raw distribution (the identity order, as an
 * uncorrected field reports it), then the corrected one (temperature applied
 * to it as a power) and the choice from it. */
static tl_status corr_choose(decide_run *r, size_t fi, const corr_branches *cb, tl_error *err) {
    const tl_dfield *f = &r->schema->fields[fi];
    field_outcome *o = &r->out[fi];
    size_t n = f->n_values;
    memcpy(o->logprobs, cb->lp, n * sizeof *o->logprobs);
    size_t raw_chosen = 0;
    tl_status st = decision_choose(o->logprobs, n, r->opts->temperature, r->opts->seed, fi, o->raw_probs,
                                   &raw_chosen, err);
    for (size_t i = 0; !st && i < cb->k * n; i++)
        if (isnan(cb->lp[i]) || (cb->cf && isnan(cb->cf[i])))
            st = tl_error_set(err, TL_ERR_INTERNAL, "decide: %s: backend returned NaN logprob", tl_dfield_where(f));
    if (st)
        return st;
    if (o->prior && f->prior) {
        double sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += f->prior[i];
        for (size_t i = 0; i < n; i++)
            o->prior[i] = f->prior[i] / sum;
    }
    tl_correct_combine(o->debias, n, cb->k, cb->orders, cb->lp, cb->cf, f->prior != NULL, o->prior, o->probs);
    if (o->cf_probs) {
        double max = -INFINITY, sum = 0;
        for (size_t i = 0; i < n; i++)
            max = cb->cf[i] > max ? cb->cf[i] : max;
        for (size_t i = 0; i < n; i++)
            sum += o->cf_probs[i] = exp(cb->cf[i] - max);
        for (size_t i = 0; i < n; i++)
            o->cf_probs[i] /= sum;
    }
    double t = r->opts->temperature, sum = 0;
    size_t best = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(o->probs[i]))
            return tl_error_set(err, TL_ERR_INTERNAL, "decide: %s: the corrected distribution is not finite",
                                tl_dfield_where(f));
        if (t > 0)
            o->probs[i] = pow(o->probs[i], 1.0 / t);
        sum += o->probs[i];
    }
    for (size_t i = 0; i < n; i++) {
        o->probs[i] = sum > 0 ? o->probs[i] / sum : 1.0 / (double)n;
        if (o->probs[i] > o->probs[best])
            best = i;
    }
    o->chosen = t > 0 ? sample_index(o->probs, n, r->opts->seed, fi) : best;
    o->n_orders = cb->k;
    return TL_OK;
}

/* The trace of a corrected field: every order's and calibration branch's ids and label logprobs. */
static json_t *corr_trace(const decide_run *r, size_t fi, const tl_idseq *branch, const corr_branches *cb) {
    size_t n = r->schema->fields[fi].n_values;
    json_t *orders = json_array(), *cal = cb->cf ? json_array() : NULL;
    for (size_t pass = 0; pass < 2 && orders; pass++) {
        if (pass == 1 && !cb->cf)
            break;
        for (size_t oi = 0; oi < cb->k; oi++) {
            const tl_idseq *seq = !pass && !oi ? branch : &cb->seqs[pass ? cb->k - 1 + oi : oi - 1];
            const double *lp = (pass ? cb->cf : cb->lp) + oi * n;
            json_t *ord = json_array(), *lps = json_array();
            for (size_t p = 0; ord && lps && p < n; p++) {
                json_array_append_new(ord, json_integer((json_int_t)cb->orders[oi * n + p]));
                json_array_append_new(lps, real_or_null(lp[p]));
            }
            json_array_append_new(pass ? cal : orders,
                                  json_pack("{s:o, s:o, s:I, s:o}", "order", ord, "ids", ids_json(seq->ids, seq->n),
                                            "position", (json_int_t)seq->n - 1, "logprobs", lps));
        }
    }
    json_t *t = json_object();
    json_object_set_new(t, "orders", orders);
    if (cal)
        json_object_set_new(t, "calibration", cal);
    return t;
}

/* ---- think-then-decide ------------------------------------------------------- */

/* Field fi's question with the reasoning block open: the question's own
 * text, then the template's think_open instead of the thinking-off close. */
static tl_status think_open(decide_run *r, tl_idseq *seq, size_t fi, tl_error *err) {
    tl_strbuf q = TL_STRBUF_INIT;
    size_t body = 0;
    tl_status st = TL_OK;
    if (!tl_render_question_text(&r->render, &r->schema->fields[fi], field_labels(r, fi), &q, &body))
        st = nomem(err);
    q.len = body; /* the question's own text, before the turn closes */
    if (!st && !tl_strbuf_puts(&q, r->derived.think_open))
        st = nomem(err);
    if (!st)
        st = tl_idseq_append_framed(r->b, seq, q.buf, q.len, body, err);
    tl_strbuf_free(&q);
    return st;
}

/* The reasoning of the wave's thinking fields (branches[j] opened by
 * think_open), generated together: up to o->think tokens each (the request's
 * sampling, a stream per field), stopping at the closing text's first token
 * or the end of the turn. Then each branch gets its reasoning and the
 * template's closing text: its labels are scored after it. */
static tl_status think_wave(decide_run *r, const size_t *order, size_t k, tl_idseq *branches, tl_error *err) {
    size_t m = 0;
    for (size_t j = 0; j < k; j++)
        m += r->out[order[j]].think > 0;
    if (!m)
        return TL_OK;
    const char *close = r->derived.think_close;
    while (*close == ' ' || *close == '\n')
        close++;
    int32_t term[3], *ids = NULL;
    size_t n_term = 0, n = 0;
    tl_status st = chat_terminator_ids(r, term + 1, &n_term, err);
    if (!st)
        st = tl_backend_tokenize(r->b, close, strlen(close), false, true, &ids, &n, err);
    term[0] = n ? ids[0] : (n_term ? term[1] : 0);
    free(ids);
    const int32_t **seqs = calloc(m, sizeof *seqs);
    size_t *lens = calloc(m, sizeof *lens), *who = calloc(m, sizeof *who);
    tl_freetext_params *fp = calloc(m, sizeof *fp);
    tl_freetext_result *fr = calloc(m, sizeof *fr);
    if (!st && (!seqs || !lens || !who || !fp || !fr))
        st = nomem(err);
    for (size_t j = 0, i = 0; !st && j < k; j++) {
        size_t fi = order[j];
        const field_outcome *o = &r->out[fi];
        if (o->think <= 0)
            continue;
        who[i] = j;
        seqs[i] = branches[j].ids;
        lens[i] = branches[j].n;
        fp[i++] = (tl_freetext_params){.terminator_ids = term,
                                       .n_terminator_ids = n_term + 1,
                                       .max_chars = 64 * (size_t)o->think + 64,
                                       .sample = {.temperature = r->opts->temperature,
                                                  .seed = r->opts->seed ^ (TL_RNG_GOLDEN * (uint64_t)(fi + 1)),
                                                  .max_tokens = (int)o->think}};
    }
    tl_usage gen_usage = {0};
    if (!st && (st = tl_freetext_generate_batch(r->b, m, seqs, lens, fp, fr, &gen_usage, err)))
        tl_error_wrap(err, "decide: %s: thinking", tl_dfield_where(&r->schema->fields[order[who[0]]]));
    if (!st && r->b->ops->eval) /* (remote: the per-call usage is already in fr) */
        tl_usage_add(&r->usage, &gen_usage);
    for (size_t i = 0; !st && i < m; i++) {
        size_t j = who[i];
        field_outcome *o = &r->out[order[j]];
        if (!r->b->ops->eval)
            tl_usage_add(&r->usage, &fr[i].usage);
        else
            r->usage.output_tokens += fr[i].usage.output_tokens;
        o->think_n = fr[i].n_ids;
        o->think_closed = fr[i].closed;
        if (!(o->think_text = generated_text(&fr[i])))
            st = nomem(err);
        if (!st)
            st = tl_idseq_append_text(r->b, &branches[j], o->think_text, strlen(o->think_text), false, err);
        if (!st)
            st = tl_idseq_append_text(r->b, &branches[j], r->derived.think_close, strlen(r->derived.think_close),
                                      true, err);
    }
    for (size_t i = 0; fr && i < m; i++)
        tl_freetext_result_free(&fr[i]);
    free(seqs), free(lens), free(who), free(fp), free(fr);
    return st;
}

/* ---- one wave ------------------------------------------------------------ */

/* Scores the fields order[0..k) as branches of base in one batched step,
 * chooses their values, then appends their answers to base (schema order,
 * abstained fields left out: later decisions see no answer for them). */
static tl_status run_wave(decide_run *r, tl_idseq *base, const size_t *wave_order, size_t wave_k, size_t wave,
                         tl_error *err) {
    /* fields whose condition failed (an item past the decided length, a
     * value decided null or absent) are not asked */
    size_t *order = calloc(wave_k ? wave_k : 1, sizeof *order), k = 0;
    if (!order)
        return nomem(err);
    for (size_t j = 0; j < wave_k; j++) {
        size_t fi = wave_order[j];
        if (cond_holds(r, r->schema->fields[fi].cond))
            order[k++] = fi;
        else
            r->out[fi].inactive = true;
    }
    size_t max_reqs = 0;
    tl_status st = TL_OK;
    for (size_t j = 0; j < k && !st; j++) {
        size_t extra = 0;
        st = corr_extra_requests(r, order[j], &extra, err);
        max_reqs += field_requests(r, order[j]) + extra;
    }
    tl_idseq *branches = calloc(k ? k : 1, sizeof *branches);
    tl_score_req *reqs = calloc(max_reqs ? max_reqs : 1, sizeof *reqs);
    pair_branches *pbs = calloc(k ? k : 1, sizeof *pbs);
    corr_branches *cbs = calloc(k ? k : 1, sizeof *cbs);
    if (st || !branches || !reqs || !pbs || !cbs) {
        free(branches);
        free(reqs);
        free(pbs);
        free(cbs);
        free(order);
        return st ? st : nomem(err);
    }
    size_t n_reqs = 0;
    for (size_t j = 0; j < k && !st; j++) {
        size_t fi = order[j];
        st = tl_idseq_copy(&branches[j], base, err);
        if (!st)
            st = r->out[fi].think > 0 ? think_open(r, &branches[j], fi, err) : append_question(r, &branches[j], fi, err);
    }
    /* the thinking fields' reasoning, all at once, before the labels are scored */
    if (!st)
        st = think_wave(r, order, k, branches, err);
    for (size_t j = 0; j < k && !st; j++) {
        size_t fi = order[j];
        const tl_dfield *f = &r->schema->fields[fi];
        if (tl_dfield_generated(f))
            continue;
        if (r->out[fi].two_token)
            st = pair_requests(r, fi, &branches[j], &pbs[j], reqs, &n_reqs, err);
        else if (r->out[fi].corrected)
            st = corr_requests(r, fi, base, &branches[j], &cbs[j], reqs, &n_reqs, err);
        else
            reqs[n_reqs++] =
                (tl_score_req){branches[j].ids, branches[j].n, r->labels.id, tl_dfield_n_choices(f),
                               r->out[fi].logprobs};
    }
    tl_usage wave_usage = {0};
    if (!st && n_reqs && (st = tl_backend_score(r->b, reqs, n_reqs, &wave_usage, err))) {
        /* name what the failure cost: the fields of this step */
        tl_strbuf names = TL_STRBUF_INIT;
        for (size_t j = 0; j < k && names.len < 200; j++)
            tl_strbuf_printf(&names, "%s%s", j ? ", " : "", tl_dfield_where(&r->schema->fields[order[j]]));
        tl_error_wrap(err, "decide: %s%s undecided", tl_strbuf_cstr(&names), names.len >= 200 ? ", ..." : "");
        tl_strbuf_free(&names);
    }
    r->usage.prompt_tokens += wave_usage.prompt_tokens;
    r->usage.cached_tokens += wave_usage.cached_tokens;
    r->usage.computed_tokens += wave_usage.computed_tokens;
    r->usage.forward_passes += wave_usage.forward_passes;
    for (size_t j = 0; j < k && !st; j++) {
        size_t fi = order[j];
        field_outcome *o = &r->out[fi];
        if (r->schema->fields[fi].kind == TL_DFIELD_STRING) {
            st = generate_string(r, &branches[j], fi, err);
            o->decided = true;
            o->abstained = !st && r->opts->threshold > 0 && o->num_prob < r->opts->threshold;
        } else if (tl_dfield_generated(&r->schema->fields[fi])) {
            st = generate_number(r, &branches[j], fi, err);
            o->decided = true;
            o->abstained = !st && r->opts->threshold > 0 && o->num_prob < r->opts->threshold;
        } else {
            const tl_dfield *f = &r->schema->fields[fi];
            if (o->two_token)
                pair_combine(r, fi, &pbs[j]);
            st = o->corrected ? corr_choose(r, fi, &cbs[j], err)
                              : decision_choose(o->logprobs, tl_dfield_n_choices(f), r->opts->temperature,
                                                r->opts->seed, fi, o->probs, &o->chosen, err);
            o->decided = true;
            o->abstained = r->opts->threshold > 0 && o->probs[o->chosen] < r->opts->threshold;
            /* the open choice: the label was in the batch, the value is written now */
            if (!st && f->open && o->chosen == f->n_values && !o->abstained)
                st = generate_open(r, &branches[j], fi, err);
        }
        if (!st && r->opts->trace) {
            o->trace = json_pack("{s:o, s:I, s:I, s:s%, s:{s:I, s:I, s:I}}", "ids",
                                 ids_json(branches[j].ids, branches[j].n), "position", (json_int_t)branches[j].n - 1,
                                 "wave", (json_int_t)wave, "text", tl_strbuf_cstr(&branches[j].text),
                                 branches[j].text.len, "wave_usage", "prompt_tokens",
                                 (json_int_t)wave_usage.prompt_tokens, "cached_tokens",
                                 (json_int_t)wave_usage.cached_tokens, "computed_tokens",
                                 (json_int_t)wave_usage.computed_tokens);
            if (!o->trace)
                st = nomem(err);
            /* how a generated value was constrained: typellm's automaton (local
             * logits, or candidate-only scoring on a remote server) or, remote
             * without a local tokenizer, the server's regex */
            const tl_dfield *tf = &r->schema->fields[fi];
            const char *how = NULL;
            if (tl_dfield_generated(tf))
                how = r->b->ops->next_logits || r->b->vocab ? "automaton" : "server regex";
            else if (o->open_picked)
                how = r->b->ops->next_logits ? "automaton" : "server regex";
            if (o->trace && how)
                json_object_set_new(o->trace, "generated_by", json_string(how));
            if (o->trace && o->corrected)
                json_object_update_new(o->trace, corr_trace(r, fi, &branches[j], &cbs[j]));
            if (o->trace && o->think_text)
                json_object_set_new(o->trace, "reasoning",
                                    json_pack("{s:s, s:I, s:b, s:I}", "text", o->think_text, "tokens",
                                              (json_int_t)o->think_n, "closed", o->think_closed, "max_tokens",
                                              (json_int_t)o->think));
        }
    }
    /* Carry the answers: a one-field wave extends its own branch (so the next
     * prompt is this prompt + answer + next question, token for token). */
    for (size_t j = 0; j < k && !st; j++) {
        size_t fi = order[j];
        if (r->out[fi].abstained)
            continue;
        if (k == 1 && !r->out[fi].think) { /* (a reasoning is not kept in the history) */
            tl_idseq tmp = *base;
            *base = branches[0];
            branches[0] = tmp;
        } else {
            st = append_question(r, base, fi, err);
        }
        if (!st)
            st = r->schema->fields[fi].kind == TL_DFIELD_STRING ? append_string_answer(r, base, fi, err)
                 : tl_dfield_generated(&r->schema->fields[fi]) ? append_number_answer(r, base, fi, err)
                 : r->out[fi].open_picked                    ? append_open_answer(r, base, fi, err)
                                                             : append_answer(r, base, fi, r->out[fi].chosen, err);
        if (!st && r->out[fi].open_picked)
            st = grow_domains(r, fi, err);
    }
    for (size_t j = 0; j < k; j++) {
        tl_idseq_free(&branches[j]);
        pair_branches_free(&pbs[j]);
        corr_branches_free(&cbs[j]);
    }
    free(branches);
    free(reqs);
    free(pbs);
    free(cbs);
    free(order);
    return st;
}

/* ---- the context ---------------------------------------------------------- */

static tl_status text_tokens(decide_run *r, const char *text, size_t len, size_t *n, tl_error *err) {
    int32_t *ids = NULL;
    tl_status st = tl_backend_tokenize(r->b, text, len, false, false, &ids, n, err);
    free(ids);
    return st;
}

/* A lower bound of the tokens field fi adds to the prompt when answered
 * (question, label or value, answer framing), and of its question alone. */
static tl_status field_tokens(decide_run *r, size_t fi, size_t *question, size_t *answered, tl_error *err) {
    const tl_dfield *f = &r->schema->fields[fi];
    tl_strbuf q = TL_STRBUF_INIT, a = TL_STRBUF_INIT;
    size_t body = 0, nq = 0, na = 0;
    tl_status st = TL_OK;
    if (!tl_render_question_text(&r->render, f, field_labels(r, fi), &q, &body))
        st = nomem(err);
    if (!st)
        st = text_tokens(r, q.buf, q.len, &nq, err);
    if (!st && !tl_dfield_generated(f)) {
        size_t shortest = SIZE_MAX;
        for (size_t i = 0; i < f->n_values && !st; i++) {
            tl_strbuf_clear(&a);
            size_t n = 0;
            if (!tl_render_answer_text(&r->render, f, i, &a, &body))
                st = nomem(err);
            if (!st)
                st = text_tokens(r, a.buf, a.len, &n, err);
            if (n < shortest)
                shortest = n;
        }
        na = (r->out[fi].two_token ? 2 : 1) + (shortest == SIZE_MAX ? 0 : shortest);
    } else {
        na = 1 + (f->kind == TL_DFIELD_STRING ? f->min_length / 4 : 0);
    }
    tl_strbuf_free(&q);
    tl_strbuf_free(&a);
    /* pieces are tokenized after a tail: a boundary may merge a token or two */
    *question = nq > 2 ? nq - 2 : 0;
    *answered = *question + (na > 1 ? na - 1 : 0);
    return st;
}

/* Before any model work: the first wave whose prompt must pass the context
 * (*wave = n_waves when every wave fits). */
static tl_status check_context(decide_run *r, const tl_idseq *base, const tl_dplan *plan, size_t *wave,
                               size_t *field, size_t *need, tl_error *err) {
    *wave = plan->n_waves;
    if (!r->b->n_ctx)
        return TL_OK;
    size_t len = base->n;
    for (size_t w = 0; w < plan->n_waves; w++) {
        size_t grow_by = 0;
        for (size_t j = plan->wave_start[w]; j < plan->wave_start[w + 1]; j++) {
            size_t fi = plan->order[j], q = 0, a = 0;
            if (r->schema->fields[fi].cond.field >= 0)
                continue; /* asked only if its condition holds: not a lower bound */
            tl_status st = field_tokens(r, fi, &q, &a, err);
            if (st)
                return st;
            if (len + q + 1 > (size_t)r->b->n_ctx) {
                *wave = w;
                *field = fi;
                *need = len + q + 1;
                return TL_OK;
            }
            grow_by += a;
        }
        len += grow_by;
    }
    return TL_OK;
}

static void mark_undecided(decide_run *r, const tl_dplan *plan, size_t from_wave) {
    for (size_t j = plan->wave_start[from_wave]; j < plan->n_order; j++) {
        field_outcome *o = &r->out[plan->order[j]];
        o->undecided = true;
        o->decided = false;
    }
}

/* ---- result -------------------------------------------------------------- */

/* A candidate's "logprob" (decided fields); a two-token label adds "tokens"
 * [first, second] and "logprobs" [log P(first), log P(second | first)]. */
static void candidate_scores(const decide_run *r, size_t fi, size_t i, json_t *c) {
    const field_outcome *o = &r->out[fi];
    if (!c)
        return;
    if (o->two_token)
        json_object_set_new(c, "tokens", json_pack("[i, i]", (int)r->pairs.first[i], (int)r->pairs.second[i]));
    if (!o->decided)
        return;
    json_object_set_new(c, "logprob", real_or_null(o->logprobs[i]));
    if (o->two_token)
        json_object_set_new(c, "logprobs", json_pack("[o, o]", real_or_null(o->first_lp[i]),
                                                     real_or_null(o->second_lp[i])));
}

/* {value text: p} over f's values. */
static json_t *values_probs(const tl_dfield *f, const double *p) {
    json_t *o = json_object();
    for (size_t i = 0; o && i < f->n_values; i++)
        json_object_set_new(o, f->value_keys[i], json_real(p[i]));
    return o;
}

/* What corrected a field's distribution: {"debias", "orders", ("prior"),
 * "calibrate", ("content_free_input"), ("calibration_probabilities")}. */
static json_t *correction_json(const decide_run *r, size_t fi) {
    const tl_dfield *f = &r->schema->fields[fi];
    const field_outcome *o = &r->out[fi];
    json_t *c = json_pack("{s:s, s:I, s:s}", "debias", tl_debias_name(o->debias), "orders", (json_int_t)o->n_orders,
                          "calibrate", tl_calibrate_name(o->calibrate));
    if (c && o->prior) {
        json_t *pa = json_array();
        for (size_t i = 0; pa && i < f->n_values; i++)
            json_array_append_new(pa, json_real(o->prior[i]));
        json_object_set_new(c, "prior", pa);
        json_object_set_new(c, "prior_given", json_boolean(f->prior != NULL));
    }
    if (c && o->calibrate == TL_CALIBRATE_CONTENT_FREE)
        json_object_set_new(c, "content_free_input", json_string(o->cf_input));
    if (c && o->cf_probs)
        json_object_set_new(c, "calibration_probabilities", values_probs(f, o->cf_probs));
    return c;
}

static json_t *field_json(const decide_run *r, size_t fi) {
    const tl_dfield *f = &r->schema->fields[fi];
    const field_outcome *o = &r->out[fi];
    bool has_value = (o->decided || o->given || o->constant) && !o->abstained;
    json_t *fj = json_object();
    json_t *probs = json_object(), *cands = json_array();
    if (!fj || !probs || !cands) {
        json_decref(fj), json_decref(probs), json_decref(cands);
        return NULL;
    }
    if (f->role != TL_DROLE_VALUE) {
        static const char *ROLE[] = {"value", "length", "more", "presence"};
        json_object_set_new(fj, "control", json_string(ROLE[f->role]));
    }
    if (f->skip || o->undecided || o->inactive) {
        json_decref(probs), json_decref(cands);
        json_object_set_new(fj, "value", json_null());
        json_object_set_new(fj, f->skip ? "skipped" : o->undecided ? "undecided" : "inactive", json_true());
        return fj;
    }
    if (tl_dfield_generated(f)) {
        json_decref(probs), json_decref(cands);
        bool str = f->kind == TL_DFIELD_STRING;
        json_object_set_new(fj, "value", !has_value ? json_null()
                                         : str ? json_string(o->num_text ? o->num_text : "")
                                         : o->num.is_integer ? json_integer((json_int_t)o->num.ival)
                                                             : json_real(o->num.dval));
        json_object_set_new(fj, "label", json_null());
        json_object_set_new(fj, "text", o->num_text ? json_string(o->num_text) : json_null());
        /* NaN: generated by a remote regex, no constrained probability */
        json_object_set_new(fj, "probability", isfinite(o->num_prob) ? json_real(o->num_prob) : json_null());
        json_object_set_new(fj, "logprob", isfinite(o->num_logprob) ? json_real(o->num_logprob) : json_null());
        json_object_set_new(fj, "tokens", json_integer((json_int_t)o->num_tokens));
        if (str)
            json_object_set_new(fj, "characters", json_integer((json_int_t)o->open_chars));
        json_object_set_new(fj, "abstained", json_boolean(o->abstained));
        if (o->trace)
            json_object_set(fj, "trace", o->trace);
        return fj;
    }
    bool open_value = has_value && o->open_picked;
    bool absent = has_value && !open_value && o->chosen == f->absent;
    json_object_set_new(fj, "value", open_value ? json_string(o->open_text)
                                     : has_value && !absent ? json_incref(f->values[o->chosen])
                                                            : json_null());
    json_object_set_new(fj, "label", has_value && !o->constant ? json_string(field_labels(r, fi)[o->chosen]) : json_null());
    if (f->absent != SIZE_MAX)
        json_object_set_new(fj, "absent", json_boolean(absent));
    if (o->constant)
        json_object_set_new(fj, "constant", json_true());
    if (f->open) {
        json_object_set_new(fj, "open", json_boolean(open_value));
        if (open_value) {
            json_object_set_new(fj, "probability", json_real(o->given ? 1.0 : o->probs[f->n_values]));
            json_object_set_new(fj, "closed", json_boolean(o->open_closed));
            json_object_set_new(fj, "characters", json_integer((json_int_t)o->open_chars));
            json_object_set_new(fj, "tokens", json_integer((json_int_t)o->open_tokens));
        }
    }
    for (size_t i = 0; i < f->n_values; i++) {
        double p = o->given || o->constant ? (i == o->chosen ? 1.0 : 0.0) : o->probs[i];
        json_object_set_new(probs, f->value_keys[i], json_real(p));
        if (o->constant)
            continue;
        json_t *c = json_pack("{s:O, s:s, s:i}", "value", f->values[i], "label", field_labels(r, fi)[i], "token",
                              (int)label_token(r, fi, i));
        if (c && i == f->absent)
            json_object_set_new(c, "absent", json_true());
        candidate_scores(r, fi, i, c);
        json_array_append_new(cands, c);
    }
    if (f->open) {
        size_t i = f->n_values;
        json_object_set_new(probs, f->open_name, json_real(o->given ? (o->open_picked ? 1.0 : 0.0) : o->probs[i]));
        json_t *c = json_pack("{s:n, s:s, s:i, s:b}", "value", "label", field_labels(r, fi)[i], "token",
                              (int)label_token(r, fi, i), "open", 1);
        candidate_scores(r, fi, i, c);
        json_array_append_new(cands, c);
    }
    json_object_set_new(fj, "probabilities", probs);
    if (o->corrected && o->decided)
        json_object_set_new(fj, "raw_probabilities", values_probs(f, o->raw_probs));
    if (o->corrected && o->decided)
        json_object_set_new(fj, "correction", correction_json(r, fi));
    json_object_set_new(fj, "candidates", cands);
    if (o->decided) {
        /* label_mass: full-vocabulary probability on the declared labels (decide.h) */
        double mass = 0;
        for (size_t i = 0; i < tl_dfield_n_choices(f); i++)
            mass += exp(o->logprobs[i]);
        json_object_set_new(fj, "label_mass", json_real(mass));
    }
    json_object_set_new(fj, "abstained", json_boolean(o->abstained));
    if (o->given)
        json_object_set_new(fj, "given", json_true());
    if (o->trace)
        json_object_set(fj, "trace", o->trace);
    return fj;
}

/* Multi-label arrays: each value's yes/no decision is independent, so the
 * most probable set is every value whose "true" is more probable (the
 * values chosen as true); minItems / maxItems then add the most probable
 * missing values or drop the least probable chosen ones. */
static void choose_groups(decide_run *r) {
    for (size_t gi = 0; gi < r->schema->n_groups; gi++) {
        const tl_dgroup *g = &r->schema->groups[gi];
        if (g->skip || r->out[g->first].inactive || r->out[g->first].undecided)
            continue;
        size_t count = 0;
        for (size_t i = 0; i < g->n; i++) {
            field_outcome *o = &r->out[g->first + i];
            o->selected = (o->decided || o->given) && !o->abstained && o->chosen == 0;
            count += o->selected;
        }
        while (count < g->min_items || count > g->max_items) {
            bool add = count < g->min_items;
            size_t best = SIZE_MAX;
            double bp = 0;
            for (size_t i = 0; i < g->n; i++) {
                const field_outcome *o = &r->out[g->first + i];
                if (o->selected == add)
                    continue;
                double p = o->given ? (o->chosen == 0) : o->decided ? o->probs[0] : 0;
                if (best == SIZE_MAX || (add ? p > bp : p < bp))
                    best = i, bp = p;
            }
            if (best == SIZE_MAX)
                break;
            r->out[g->first + best].selected = add;
            count += add ? 1 : (size_t)-1;
        }
    }
}

static json_t *group_json(const decide_run *r, size_t gi) {
    const tl_dgroup *g = &r->schema->groups[gi];
    json_t *gj = json_object(), *value = json_array(), *probs = json_object(), *items = json_array();
    if (!gj || !value || !probs || !items) {
        json_decref(gj), json_decref(value), json_decref(probs), json_decref(items);
        return NULL;
    }
    for (size_t i = 0; i < g->n; i++) {
        const field_outcome *o = &r->out[g->first + i];
        double p = o->given ? (o->chosen == 0) : o->decided ? o->probs[0] : 0;
        if (o->selected)
            json_array_append(value, g->values[i]);
        json_object_set_new(probs, g->value_keys[i], json_real(p));
        size_t fi = g->first + i;
        json_t *it = json_pack("{s:O, s:f, s:b, s:s, s:s, s:i, s:i}", "value", g->values[i], "probability", p,
                               "selected", (int)o->selected, "label_true", field_labels(r, fi)[0], "label_false",
                               field_labels(r, fi)[1], "token_true", (int)label_token(r, fi, 0), "token_false",
                               (int)label_token(r, fi, 1));
        if (it && o->decided)
            json_object_set_new(it, "logprobs", json_pack("{s:f, s:f}", "true", o->logprobs[0], "false", o->logprobs[1]));
        if (it && o->trace)
            json_object_set(it, "trace", o->trace);
        json_array_append_new(items, it);
    }
    bool inactive = r->out[g->first].inactive;
    json_object_set_new(gj, "value", g->skip || inactive ? json_null() : value);
    if (g->skip || inactive) {
        json_decref(value);
        json_object_set_new(gj, g->skip ? "skipped" : "inactive", json_true());
    }
    json_object_set_new(gj, "probabilities", probs);
    json_object_set_new(gj, "items", items);
    json_object_set_new(gj, "min_items", json_integer((json_int_t)g->min_items));
    json_object_set_new(gj, "max_items", json_integer((json_int_t)g->max_items));
    return gj;
}

/* The object at segs[0..n) under root, created on the way. */
static json_t *object_at(json_t *root, char *const *segs, size_t n) {
    json_t *cur = root;
    for (size_t i = 0; cur && i < n; i++) {
        json_t *next = json_object_get(cur, segs[i]);
        if (!json_is_object(next)) {
            next = json_object();
            if (!next || json_object_set_new(cur, segs[i], next))
                return NULL;
        }
        cur = next;
    }
    return cur;
}

/* Where a node goes in "values": left out, null, or its value. */
enum { PLACE_NONE, PLACE_NULL, PLACE_VALUE };
static int node_place(const decide_run *r, const tl_dnode *nd) {
    if (!cond_holds(r, nd->cond))
        return PLACE_NONE;
    if (nd->presence < 0)
        return PLACE_VALUE;
    const tl_dfield *p = &r->schema->fields[nd->presence];
    const field_outcome *o = &r->out[nd->presence];
    if (p->skip || o->undecided || o->inactive || !(o->decided || o->given || o->constant))
        return PLACE_NONE;
    if (o->abstained)
        return PLACE_NULL;
    if (o->chosen == p->absent)
        return PLACE_NONE;
    return o->chosen == 0 ? PLACE_VALUE : PLACE_NULL; /* value 0 is "(present)" */
}

/* Sets segs[n-1] of the object at segs[0..n-1) to v (a new reference). */
static bool set_at(json_t *root, char *const *segs, size_t n, json_t *v) {
    json_t *parent = object_at(root, segs, n - 1);
    if (!parent || json_object_set_new(parent, segs[n - 1], v))
        return false;
    return true;
}

/* An array of objects, numbers or strings was built as an object keyed
 * "0", "1", ... (so its items nest like any object); it becomes the array
 * of those items in order. */
static bool array_from_items(json_t *root, char *const *segs, size_t n, size_t max_items) {
    json_t *parent = root;
    for (size_t i = 0; parent && i + 1 < n; i++)
        parent = json_object_get(parent, segs[i]);
    json_t *obj = json_is_object(parent) ? json_object_get(parent, segs[n - 1]) : NULL;
    if (!json_is_object(obj))
        return true;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < max_items; i++) {
        char k[32];
        snprintf(k, sizeof k, "%zu", i);
        json_t *x = json_object_get(obj, k);
        if (x && json_array_append(arr, x)) {
            json_decref(arr);
            return false;
        }
    }
    return arr && !json_object_set_new(parent, segs[n - 1], arr);
}

static tl_status build_result(const decide_run *r, tl_dmode mode, double t_prepare, double t_score, double t_total,
                              json_t **result, tl_error *err) {
    json_t *res = json_object(), *values = json_object(), *fields = json_object();
    if (!res || !values || !fields) {
        json_decref(res), json_decref(values), json_decref(fields);
        return nomem(err);
    }
    const tl_dschema *s = r->schema;
    bool ok = true;
    for (size_t ni = 0; ni < s->n_nodes && ok; ni++) {
        const tl_dnode *nd = &s->nodes[ni];
        int place = node_place(r, nd);
        if (nd->kind == TL_DNODE_OBJECT) {
            const tl_dobject *ob = &s->objects[nd->index];
            if (!ob->skip && place == PLACE_VALUE)
                ok = object_at(values, ob->segs, ob->n_segs) != NULL;
            else if (!ob->skip && place == PLACE_NULL)
                ok = set_at(values, ob->segs, ob->n_segs, json_null());
            continue;
        }
        if (nd->kind == TL_DNODE_ARRAY) {
            const tl_darray *a = &s->arrays[nd->index];
            const field_outcome *lo = a->length >= 0 ? &r->out[a->length] : NULL;
            if (a->skip || place == PLACE_NONE)
                continue;
            /* (a null array's length decision was never asked: inactive) */
            if (place == PLACE_VALUE && lo && (lo->undecided || lo->inactive))
                continue;
            if (place == PLACE_NULL || (lo && lo->abstained))
                ok = set_at(values, a->segs, a->n_segs, json_null());
            else /* its items fill it; array_from_items below makes it an array */
                ok = object_at(values, a->segs, a->n_segs) != NULL;
            continue;
        }
        bool group = nd->kind == TL_DNODE_GROUP;
        const char *key = group ? s->groups[nd->index].key : s->fields[nd->index].key;
        json_t *fj = group ? group_json(r, nd->index) : field_json(r, nd->index);
        if (!fj) {
            ok = false;
            break;
        }
        if (!group && s->fields[nd->index].role != TL_DROLE_VALUE) {
            json_object_set_new(fields, key, fj); /* a control field: an answer about the shape, not a value */
            continue;
        }
        bool skip = group ? s->groups[nd->index].skip : s->fields[nd->index].skip;
        if (!group && r->out[nd->index].undecided)
            skip = true;
        if (group)
            for (size_t i = 0; i < s->groups[nd->index].n; i++)
                skip |= r->out[s->groups[nd->index].first + i].undecided;
        if (skip && json_is_object(fj) && !json_object_get(fj, "skipped"))
            json_object_set_new(fj, "undecided", json_true());
        bool absent = !group && json_is_true(json_object_get(fj, "absent"));
        if (!skip && !absent && place != PLACE_NONE) {
            char *const *segs = group ? s->groups[nd->index].segs : s->fields[nd->index].segs;
            size_t n_segs = group ? s->groups[nd->index].n_segs : s->fields[nd->index].n_segs;
            json_t *v = place == PLACE_NULL ? json_null() : json_incref(json_object_get(fj, "value"));
            ok = set_at(values, segs, n_segs, v);
        }
        json_object_set_new(fields, key, fj);
    }
    /* inner arrays first (they come later in the layout), so every parent is still an object */
    for (size_t ni = s->n_nodes; ni-- > 0 && ok;)
        if (s->nodes[ni].kind == TL_DNODE_ARRAY)
            ok = array_from_items(values, s->arrays[s->nodes[ni].index].segs, s->arrays[s->nodes[ni].index].n_segs,
                                  s->arrays[s->nodes[ni].index].max_items);
    if (!ok) {
        json_decref(res), json_decref(values), json_decref(fields);
        return nomem(err);
    }
    json_object_set_new(res, "values", values);
    json_object_set_new(res, "fields", fields);
    if (r->partial) {
        json_t *und = json_array();
        for (size_t fi = 0; und && fi < s->n_fields; fi++)
            if (r->out[fi].undecided)
                json_array_append_new(und, json_string(s->fields[fi].key));
        json_object_set_new(res, "partial", json_true());
        json_object_set_new(res, "undecided", und);
    }
    if (s->n_warnings) {
        json_t *wa = json_array();
        for (size_t i = 0; wa && i < s->n_warnings; i++)
            json_array_append_new(wa, json_string(s->warnings[i]));
        json_object_set_new(res, "warnings", wa);
    }
    json_object_set_new(res, "usage",
                        json_pack("{s:I, s:I, s:I, s:I}", "prompt_tokens", (json_int_t)r->usage.prompt_tokens,
                                  "cached_tokens", (json_int_t)r->usage.cached_tokens, "computed_tokens",
                                  (json_int_t)r->usage.computed_tokens, "forward_passes",
                                  (json_int_t)r->usage.forward_passes));
    size_t reasoning = 0;
    for (size_t fi = 0; fi < r->schema->n_fields; fi++)
        reasoning += r->out[fi].think_text ? r->out[fi].think_n : 0;
    if (reasoning) /* think-then-decide: the reasoning tokens generated (computed_tokens includes them) */
        json_object_set_new(json_object_get(res, "usage"), "reasoning_tokens", json_integer((json_int_t)reasoning));
    if (!r->b->ops->next_logits) { /* remote: this decision's round trips, by endpoint */
        const tl_backend_requests *q = &r->b->requests, *q0 = &r->req0;
        json_object_set_new(json_object_get(res, "usage"), "http_requests",
                            json_pack("{s:I, s:I, s:I, s:I}", "tokenize", (json_int_t)(q->tokenize - q0->tokenize),
                                      "detokenize", (json_int_t)(q->detokenize - q0->detokenize), "generate",
                                      (json_int_t)(q->generate - q0->generate), "other",
                                      (json_int_t)(q->other - q0->other)));
    }
    json_object_set_new(res, "timing_ms",
                        json_pack("{s:f, s:f, s:f}", "prepare", t_prepare * 1e3, "score", t_score * 1e3, "total",
                                  t_total * 1e3));
    json_object_set_new(res, "mode", json_string(tl_dmode_name(mode)));
    json_object_set_new(res, "style", json_string(r->render.style == TL_STYLE_CHAT ? "chat" : "record"));
    if (r->render.style == TL_STYLE_CHAT) {
        json_object_set_new(res, "chat_template", json_string(r->render.chat->name));
        if (r->opts->trace) {
            json_object_set_new(res, "chat_template_source", json_string(r->template_source));
            json_object_set_new(res, "reasoning",
                                r->derived.reasoning ? json_string(r->derived.thinking[0] ? r->derived.thinking
                                                                                          : "reasoning template")
                                                     : json_null());
        }
    }
    json_object_set_new(res, "model", r->b->model_name ? json_string(r->b->model_name) : json_null());
    *result = res;
    return TL_OK;
}

/* ---- options, given answers, labels -------------------------------------- */

/* Framing from the model's (or the given) Jinja template; TL_ERR_UNSUPPORTED
 * etc. when it cannot frame a decision. */
static tl_status derive_framing(decide_run *r, const char *jinja, const char *source, tl_error *err) {
    char *bos = r->b->vocab ? tl_chat_token_text(r->b->vocab, tl_vocab_bos(r->b->vocab)) : NULL;
    char *eos = r->b->vocab ? tl_chat_token_text(r->b->vocab, tl_vocab_eos(r->b->vocab)) : NULL;
    tl_chat_derive_opts o = {.source = source,
                             .bos_text = bos,
                             .eos_text = eos,
                             .strip_bos = r->b->vocab && tl_vocab_add_bos(r->b->vocab)};
    tl_status st = tl_chat_derive(jinja, strlen(jinja), &o, &r->derived, err);
    free(bos);
    free(eos);
    if (st)
        tl_error_wrap(err, "decide: chat template");
    return st;
}

static tl_status choose_style(decide_run *r, tl_error *err) {
    tl_backend *b = r->b;
    const tl_decide_opts *o = r->opts;
    tl_render *render = &r->render;
    tl_chat_family fam = TL_CHAT_NONE;
    const tl_chat_framing *framing = NULL;
    bool want_chat = !o->style || !strcmp(o->style, "chat");
    if (o->style && strcmp(o->style, "chat") && strcmp(o->style, "record"))
        return tl_error_set(err, TL_ERR_INVALID, "decide: unknown style '%s' (chat, record)", o->style);
    if (o->chat_template) {
        fam = tl_chat_family_by_name(o->chat_template);
        if (fam == TL_CHAT_NONE)
            return tl_error_set(err, TL_ERR_INVALID,
                                "decide: unknown chat template '%s' (chatml, llama3, llama2, mistral, gemma, phi3, "
                                "or a .jinja file)",
                                o->chat_template);
        framing = tl_chat_framing_of(fam);
        r->template_source = "builtin";
    } else if (want_chat && (o->chat_template_jinja || b->chat_template)) {
        const char *src = o->chat_template_jinja ? o->chat_template_jinja : b->chat_template;
        tl_status st = derive_framing(r, src, o->chat_template_jinja ? "the given chat template"
                                                                    : "the model's chat template (tokenizer.chat_template)",
                                      err);
        if (st)
            return st;
        framing = &r->derived.framing;
        r->template_source = o->chat_template_jinja ? "given" : "model";
    } else if (!b->chat_template && b->template_from_caller && want_chat) {
        /* A remote server that does not send its template (SGLang): never
         * guess the style from its absence, which would change the answers. */
        return tl_error_set(err, TL_ERR_INVALID,
                            "decide: the %s server does not send the model's chat template: give it with "
                            "--chat-template NAME|FILE.jinja, or pass --tokenizer M.gguf (a GGUF of the same "
                            "model, carrying its tokenizer and template); --style record needs neither",
                            b->ops->kind);
    }
    if (!o->style) {
        render->style = framing ? TL_STYLE_CHAT : TL_STYLE_RECORD;
    } else if (!strcmp(o->style, "record")) {
        render->style = TL_STYLE_RECORD;
    } else {
        if (!framing)
            return tl_error_set(err, TL_ERR_UNSUPPORTED,
                                "decide: style chat: the model has no chat template; force one with --chat-template "
                                "(chatml, llama3, llama2, gemma, phi3, or FILE.jinja) or use --style record");
        render->style = TL_STYLE_CHAT;
    }
    render->chat = render->style == TL_STYLE_CHAT ? framing : NULL;
    return TL_OK;
}

/* Marks given fields done and records their values; *order lists them in given's order. */
static tl_status apply_given(decide_run *r, const json_t *given, bool *done, size_t *order, size_t *n_order,
                             tl_error *err) {
    *n_order = 0;
    if (!given)
        return TL_OK;
    if (!json_is_object(given))
        return tl_error_set(err, TL_ERR_INVALID, "decide: given answers must be an object {field: value}");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)given, key, v) {
        long fi = tl_dschema_find(r->schema, key);
        if (fi < 0)
            return tl_error_set(err, TL_ERR_INVALID, "decide: given/%s: no such field", key);
        if (tl_dfield_generated(&r->schema->fields[fi]))
            return tl_error_set(err, TL_ERR_UNSUPPORTED, "decide: given/%s: generated fields cannot be given", key);
        if (r->schema->fields[fi].skip)
            return tl_error_set(err, TL_ERR_INVALID, "decide: given/%s: the field is skipped (x-optional)", key);
        const tl_dfield *f = &r->schema->fields[fi];
        long vi = tl_dfield_value_index(f, v);
        if (vi < 0 && f->open && json_is_string(v)) {
            /* an open field's given value: as if the model had written it */
            if (utf8_chars(json_string_value(v)) > f->max_length)
                return tl_error_set(err, TL_ERR_INVALID, "decide: given/%s: longer than maxLength %zu", key,
                                    f->max_length);
            if (!(r->out[fi].open_text = strdup(json_string_value(v))))
                return nomem(err);
            r->out[fi].open_picked = true;
            r->out[fi].open_closed = true;
            r->out[fi].open_chars = utf8_chars(json_string_value(v));
            vi = (long)f->n_values;
        }
        if (vi < 0)
            return tl_error_set(err, TL_ERR_INVALID, "decide: given/%s: value is not in the field's domain", key);
        done[fi] = true;
        r->out[fi].given = true;
        r->out[fi].chosen = (size_t)vi;
        order[(*n_order)++] = (size_t)fi;
    }
    return TL_OK;
}

static tl_status fill_labels(decide_run *r, tl_error *err) {
    size_t need = 0;
    for (size_t i = 0; i < r->schema->n_fields; i++)
        if (tl_dfield_n_choices(&r->schema->fields[i]) > need)
            need = tl_dfield_n_choices(&r->schema->fields[i]);
    const char *tail = tl_render_label_tail(&r->render), *prefix = tl_render_label_prefix(&r->render);
    tl_status st = tl_labelset_fill(&r->labels, r->b, tail, prefix, need, err);
    if (st)
        return st;
    /* a field with more choices than single-token labels takes two-token labels */
    size_t need_pairs = 0;
    for (size_t i = 0; i < r->schema->n_fields; i++) {
        size_t n = tl_dfield_n_choices(&r->schema->fields[i]);
        if (n > r->labels.n) {
            r->out[i].two_token = true;
            if ((st = outcome_alloc(&r->out[i], 0, n, err)))
                return st;
            need_pairs = n > need_pairs ? n : need_pairs;
        }
    }
    if (need_pairs && (st = tl_labelpairs_fill(&r->pairs, r->b, tail, prefix, need_pairs, err)))
        return st;
    for (size_t i = 0; i < r->schema->n_fields; i++) {
        const tl_dfield *f = &r->schema->fields[i];
        if (tl_dfield_n_choices(f) > r->labels.n && tl_dfield_n_choices(f) > r->pairs.n)
            return tl_error_set(err, TL_ERR_SCHEMA,
                                "schema: %s: %zu choices, but only %zu labels are single tokens and %zu two-token "
                                "labels verify with this tokenizer in this rendering",
                                f->path, tl_dfield_n_choices(f), r->labels.n, r->pairs.n);
    }
    return TL_OK;
}

/* Whether field i thinks first: its x-think, else the options' think (on
 * the fields that can: plain choices, neither open nor two-token). */
static tl_status resolve_think(decide_run *r, size_t i, tl_error *err) {
    const tl_dfield *f = &r->schema->fields[i];
    field_outcome *o = &r->out[i];
    bool own = f->think_tokens >= 0;
    long n = own ? f->think_tokens : r->opts->think;
    bool can = !f->open && !o->two_token && f->domain_from < 0;
    if (!n || (!own && !can))
        return TL_OK;
    if (!can)
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-think: only plain choice fields think first (not open, "
                            "x-domain-from or two-token fields)", f->path);
    if (r->render.style != TL_STYLE_CHAT || r->render.chat != &r->derived.framing || !r->derived.think_open)
        return tl_error_set(err, TL_ERR_UNSUPPORTED,
                            "decide: %s: think-then-decide needs a reasoning chat template that renders an assistant "
                            "turn's reasoning (the model's own, or --chat-template FILE.jinja: Qwen3, gpt-oss, "
                            "DeepSeek-R1, ...); %s", tl_dfield_where(f),
                            r->render.style != TL_STYLE_CHAT ? "this decision is in record style"
                            : r->render.chat != &r->derived.framing ? "a built-in framing has no reasoning block"
                                                                    : "this template shows none");
    o->think = n;
    return TL_OK;
}

/* Which fields are corrected, and how: the schema's x-debias / x-calibrate,
 * else the options' (on every field that can take them). */
static tl_status resolve_corrections(decide_run *r, tl_error *err) {
    const tl_decide_opts *op = r->opts;
    tl_debias odm = TL_DEBIAS_NONE;
    tl_calibrate ocm = TL_CALIBRATE_NONE;
    if (op->debias)
        tl_debias_parse(op->debias, &odm);
    if (op->calibrate)
        tl_calibrate_parse(op->calibrate, &ocm);
    for (size_t i = 0; i < r->schema->n_fields; i++) {
        const tl_dfield *f = &r->schema->fields[i];
        field_outcome *o = &r->out[i];
        if (tl_dfield_generated(f) || f->constant || f->skip)
            continue;
        tl_status st = resolve_think(r, i, err);
        if (st)
            return st;
        tl_debias dm = (tl_debias)f->debias;
        tl_calibrate cm = (tl_calibrate)f->calibrate;
        const char *input = f->cf_input;
        if (!f->corrections_set) {
            if (f->open || f->domain_from >= 0 || o->two_token)
                continue;
            dm = odm, cm = ocm, input = op->content_free;
        }
        if (!dm && !cm)
            continue;
        if (o->think)
            return tl_error_set(err, TL_ERR_UNSUPPORTED,
                                "decide: %s: think-then-decide with x-debias or x-calibrate is not supported (each "
                                "order would need its own reasoning)", tl_dfield_where(f));
        if (o->two_token)
            return tl_error_set(err, TL_ERR_SCHEMA,
                                "schema: %s: x-debias and x-calibrate need single-token labels (%zu values here)",
                                f->path, f->n_values);
        if (dm == TL_DEBIAS_FULL && f->n_values > TL_DEBIAS_FULL_MAX_VALUES)
            return tl_error_set(err, TL_ERR_INVALID,
                                "decide: %s: debias full scores all n! orders; %zu values is more than %d (use permute)",
                                tl_dfield_where(f), f->n_values, TL_DEBIAS_FULL_MAX_VALUES);
        size_t n = f->n_values;
        o->debias = dm;
        o->calibrate = cm;
        o->cf_input = cm == TL_CALIBRATE_PMI ? "" : input ? input : TL_CALIBRATE_DEFAULT_INPUT;
        o->corrected = true;
        o->raw_probs = calloc(n, sizeof *o->raw_probs);
        o->prior = dm == TL_DEBIAS_PRIDE ? calloc(n, sizeof *o->prior) : NULL;
        o->cf_probs = cm ? calloc(n, sizeof *o->cf_probs) : NULL;
        if (!o->raw_probs || (dm == TL_DEBIAS_PRIDE && !o->prior) || (cm && !o->cf_probs))
            return nomem(err);
    }
    return TL_OK;
}

static tl_status check_opts(const tl_decide_opts *o, tl_error *err) {
    if (!(o->temperature >= 0) || !isfinite(o->temperature))
        return tl_error_set(err, TL_ERR_INVALID, "decide: temperature must be a finite number >= 0");
    if (!(o->threshold >= 0 && o->threshold <= 1))
        return tl_error_set(err, TL_ERR_INVALID, "decide: threshold must be within [0, 1]");
    tl_debias dm;
    tl_calibrate cm;
    if (o->debias && !tl_debias_parse(o->debias, &dm))
        return tl_error_set(err, TL_ERR_INVALID, "decide: unknown debias method '%s' (permute, full, pride, none)",
                            o->debias);
    if (o->calibrate && !tl_calibrate_parse(o->calibrate, &cm))
        return tl_error_set(err, TL_ERR_INVALID, "decide: unknown calibration '%s' (content-free, pmi, none)",
                            o->calibrate);
    if (o->think < 0 || o->think > 65536)
        return tl_error_set(err, TL_ERR_INVALID, "decide: think must be within [0, 65536] tokens");
    return TL_OK;
}

/* ---- entry points -------------------------------------------------------- */

static tl_dschema_opts schema_opts(const tl_decide_opts *o) {
    return (tl_dschema_opts){.lenient = o && o->lenient, .strict = o && o->strict};
}

tl_status tl_decide_check_schema_opts(const json_t *schema, const tl_decide_opts *opts, tl_error *err) {
    tl_dschema *s = NULL;
    tl_dschema_opts so = schema_opts(opts);
    tl_status st = tl_dschema_parse_opts(schema, &so, &s, err);
    tl_dschema_free(s);
    return st;
}

tl_status tl_decide_check_schema(const json_t *schema, tl_error *err) {
    return tl_decide_check_schema_opts(schema, NULL, err);
}

tl_status tl_decide_run(tl_backend *b, const char *context, size_t context_len, const json_t *schema,
                        const json_t *given, const tl_decide_opts *opts, json_t **result, tl_decision **decision,
                        tl_error *err) {
    static const tl_decide_opts defaults = {0};
    if (result)
        *result = NULL;
    if (decision)
        *decision = NULL;
    if (!b || !schema || (!context && context_len))
        return tl_error_set(err, TL_ERR_INVALID, "decide: missing backend, schema or context");
    if (!opts)
        opts = &defaults;
    double t0 = tl_now_s();
    tl_dmode mode;
    tl_status st = check_opts(opts, err);
    if (!st)
        st = tl_dmode_parse(opts->mode, &mode, err);
    if (st)
        return st;

    decide_run *r = calloc(1, sizeof *r);
    if (!r)
        return nomem(err);
    r->b = b;
    r->opts = opts;
    r->req0 = b->requests;
    tl_idseq base = {0};
    tl_dplan plan = {0};
    bool *done = NULL;
    size_t *given_order = NULL, n_given = 0;
    double t_score = 0, t_prepare = 0;

    tl_dschema_opts so = schema_opts(opts);
    if ((st = tl_dschema_parse_opts(schema, &so, &r->schema, err)) || (st = choose_style(r, err)))
        goto out;
    size_t n = r->schema->n_fields;
    r->out = calloc(n, sizeof *r->out);
    done = calloc(n, sizeof *done);
    given_order = calloc(n, sizeof *given_order);
    if (!r->out || !done || !given_order) {
        st = nomem(err);
        goto out;
    }
    for (size_t i = 0; i < n && !st; i++)
        st = outcome_alloc(&r->out[i], 0, tl_dfield_n_choices(&r->schema->fields[i]), err);
    if (st)
        goto out;
    bool any_numbers = false;
    for (size_t i = 0; i < n; i++)
        any_numbers |= tl_dfield_generated(&r->schema->fields[i]);
    if (any_numbers && b->vocab && (st = tl_number_index_of(b->vocab, &r->number_index, err)))
        goto out;
    if ((st = apply_given(r, given, done, given_order, &n_given, err)))
        goto out;
    /* const fields are known and skipped ones never asked: neither is planned */
    for (size_t i = 0; i < n; i++) {
        const tl_dfield *f = &r->schema->fields[i];
        if (done[i])
            continue;
        if (f->skip) {
            done[i] = true;
        } else if (f->constant) {
            done[i] = true;
            r->out[i].constant = true;
            r->out[i].chosen = 0;
        }
    }
    if ((st = fill_labels(r, err)) || (st = resolve_corrections(r, err)) ||
        (st = tl_dplan_make(r->schema, mode, done, &plan, err)) ||
        (st = tl_render_begin(b, &r->render, r->schema, context ? context : "", context_len, &base, err)))
        goto out;
    for (size_t i = 0; i < n_given && !st; i++) {
        size_t fi = given_order[i];
        st = append_question(r, &base, fi, err);
        if (!st)
            st = r->out[fi].open_picked ? append_open_answer(r, &base, fi, err)
                                        : append_answer(r, &base, fi, r->out[fi].chosen, err);
        if (!st && r->out[fi].open_picked)
            st = grow_domains(r, fi, err);
    }
    size_t last_wave = plan.n_waves, over_field = 0, over_need = 0;
    if (!st)
        st = check_context(r, &base, &plan, &last_wave, &over_field, &over_need, err);
    if (!st && last_wave < plan.n_waves && !opts->partial)
        st = last_wave == 0
                 ? tl_error_set(err, TL_ERR_LIMIT,
                                "decide: %s: the context and this field's question reach at least %zu tokens, past "
                                "the context length of %d: shorten the context or use a model with a longer context",
                                tl_dfield_where(&r->schema->fields[over_field]), over_need, (int)b->n_ctx)
                 : tl_error_set(err, TL_ERR_LIMIT,
                                "decide: %s: the prompt reaches at least %zu tokens at this field, past the context "
                                "length %d (%s mode keeps every earlier answer in the prompt): decide the independent "
                                "fields together (--mode batch, or depends_on in auto mode), use a model with a "
                                "longer context, or pass --partial for the fields decided before it",
                                tl_dfield_where(&r->schema->fields[over_field]), over_need, (int)b->n_ctx, tl_dmode_name(mode));
    t_prepare = tl_now_s() - t0;
    bool partial = false;
    for (size_t w = 0; w < plan.n_waves && !st; w++) {
        if (w >= last_wave) {
            mark_undecided(r, &plan, w);
            partial = true;
            break;
        }
        double ts = tl_now_s();
        st = run_wave(r, &base, plan.order + plan.wave_start[w], plan.wave_start[w + 1] - plan.wave_start[w], w, err);
        t_score += tl_now_s() - ts;
        if (st == TL_ERR_LIMIT && opts->partial) {
            /* a generated answer ran the prompt past the context: keep what was decided */
            for (size_t j = plan.wave_start[w]; j < plan.wave_start[w + 1]; j++)
                r->out[plan.order[j]].abstained = false;
            mark_undecided(r, &plan, w);
            partial = true;
            st = TL_OK;
            break;
        }
    }
    r->partial = partial;
    /* given and known fields under a condition that failed are inactive too (index order: controls first) */
    for (size_t i = 0; i < n && !st; i++) {
        field_outcome *o = &r->out[i];
        if (!o->decided && !o->undecided && !o->inactive && !cond_holds(r, r->schema->fields[i].cond))
            o->inactive = true;
    }
    json_t *res = NULL;
    if (!st) {
        choose_groups(r);
        st = build_result(r, mode, t_prepare, t_score, tl_now_s() - t0, &res, err);
    }
    if (!st && decision)
        st = tl_decision_wrap(res, r->schema, decision, err); /* takes its own reference */
    if (!st && result)
        *result = json_incref(res);
    json_decref(res);
out:
    if (r->out)
        for (size_t i = 0; i < r->schema->n_fields; i++) {
            free(r->out[i].logprobs);
            free(r->out[i].probs);
            free(r->out[i].first_lp);
            free(r->out[i].second_lp);
            free(r->out[i].raw_probs);
            free(r->out[i].cf_probs);
            free(r->out[i].prior);
            free(r->out[i].think_text);
            json_decref(r->out[i].trace);
            free(r->out[i].num_text);
            free(r->out[i].open_text);
        }
    for (size_t i = 0; i < r->n_cf; i++)
        tl_idseq_free(&r->cf[i].seq);
    free(r->cf);
    tl_labelpairs_free(&r->pairs);
    tl_chat_derived_free(&r->derived);
    free(r->out);
    tl_dschema_free(r->schema);
    tl_idseq_free(&base);
    tl_dplan_free(&plan);
    free(done);
    free(given_order);
    free(r);
    return st;
}

tl_status tl_decide_given_json(tl_backend *b, const char *context, size_t context_len, const json_t *schema,
                               const json_t *given, const tl_decide_opts *opts, json_t **result, tl_error *err) {
    return tl_decide_run(b, context, context_len, schema, given, opts, result, NULL, err);
}

tl_status tl_decide_json(tl_backend *b, const char *context, size_t context_len, const json_t *schema,
                         const tl_decide_opts *opts, json_t **result, tl_error *err) {
    return tl_decide_run(b, context, context_len, schema, NULL, opts, result, NULL, err);
}

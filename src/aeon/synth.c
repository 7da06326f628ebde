/* synth.c: the whole synthesis of a hole (typellm/aeon_synth.h): prompt,
 * attempts, independent validation, Pareto choice, the filled program and
 * its JSON report. The CLI's `typellm synth` and the Python package call
 * this one loop, so both choose the same term for the same seed. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "aeon/oracle.h"
#include "aeon/sampler.h"
#include "typellm/aeon_synth.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_text.h"

/* Where a retry after a failed greedy attempt samples from. */
#define RETRY_TEMPERATURE 0.8

/* The prompt: guidance from @prompt / @doc, the hole's context and goal, and the program. */
static void build_prompt(const tl_aeon_program *p, const tl_aeon_scope *scope, tl_strbuf *out) {
    const tl_aeon_def *d = &p->defs[p->hole_def];
    tl_strbuf_printf(out, "Complete the Aeon program: replace the hole ?%s in `%s` with an expression.\n",
                     p->hole->str, d->name);
    for (int i = 0; i < d->n_decos; i++)
        if (d->decos[i].text && (!strcmp(d->decos[i].name, "prompt") || !strcmp(d->decos[i].name, "doc")))
            tl_strbuf_printf(out, "%s\n", d->decos[i].text);
    tl_strbuf_puts(out, "Names in scope at the hole:\n");
    tl_aeon_scope_describe(scope, out);
    tl_strbuf_printf(out, "The expression must have type %s.\n\n", tl_aeon_scope_goal_text(scope));
    tl_strbuf_append(out, p->source, p->source_len);
    tl_strbuf_printf(out, "\n\n?%s := ", p->hole->str);
}

/* Appends term with each blank run that holds a line break written as one
 * space: the filled hole stays on its def's line (a raw newline cannot be
 * inside a string literal, so only layout changes). */
static bool append_one_line(tl_strbuf *sb, const char *term, size_t len) {
    for (size_t i = 0; i < len;) {
        if (term[i] != ' ' && term[i] != '\t' && term[i] != '\n' && term[i] != '\r') {
            if (!tl_strbuf_putc(sb, term[i++]))
                return false;
            continue;
        }
        size_t j = i;
        bool line_break = false;
        while (j < len && (term[j] == ' ' || term[j] == '\t' || term[j] == '\n' || term[j] == '\r'))
            line_break |= term[j] == '\n' || term[j] == '\r', j++;
        if (!(line_break ? tl_strbuf_putc(sb, ' ') : tl_strbuf_append(sb, term + i, j - i)))
            return false;
        i = j;
    }
    return true;
}

char *tl_aeon_program_fill(const tl_aeon_program *p, const char *term, size_t len) {
    tl_strbuf sb = TL_STRBUF_INIT;
    size_t off = (size_t)p->hole->ival, hole_len = p->hole->str_len;
    bool ok = tl_strbuf_append(&sb, p->source, off) && tl_strbuf_putc(&sb, '(') && append_one_line(&sb, term, len) &&
              tl_strbuf_putc(&sb, ')') &&
              tl_strbuf_append(&sb, p->source + off + hole_len, p->source_len - off - hole_len);
    if (!ok) {
        tl_strbuf_free(&sb);
        return NULL;
    }
    return tl_strbuf_detach(&sb);
}

/* A term that passes everything with no objective to improve ends the search. */
static bool nothing_to_improve(const tl_aeon_validation *v) {
    return v->typed && v->refinements_ok && v->examples_failed == 0 && v->n_objectives == 0;
}

tl_status tl_aeon_synth(tl_backend *b, tl_aeon_program *p, const tl_aeon_synth_params *params,
                        tl_aeon_synth_result *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    out->status = "exhausted";
    out->chosen = -1;
    out->unconstrained = params->unconstrained;
    double t_start = tl_now_s();
    tl_aeon_synth_params sp = *params;
    if (sp.max_tokens <= 0)
        sp.max_tokens = 128;
    if (sp.max_probes <= 0)
        sp.max_probes = 4096;
    if (sp.top_k <= 0)
        sp.top_k = 32;
    if (sp.attempts <= 0)
        sp.attempts = 8;
    if (sp.max_oracle_work <= 0)
        sp.max_oracle_work = 200 * (sp.max_states > 0 ? sp.max_states : TL_AEON_DEFAULT_MAX_STATES);
    if (!b->ops->next_logits)
        return tl_error_set(err, TL_ERR_UNSUPPORTED,
                            "aeon synth: the %s backend gives no next-token logits (use a local model)", b->ops->kind);
    tl_aeon_scope *scope = NULL;
    tl_aeon_engine *eng = NULL;
    int32_t *ids = NULL;
    size_t n_prompt = 0;
    tl_strbuf prompt = TL_STRBUF_INIT;
    tl_aeon_validation *vals = NULL;
    int *val_attempt = NULL; /* vals[k] is attempts[val_attempt[k]]'s */
    double *val_logprob = NULL;
    int n_vals = 0;
    tl_status st;
    out->attempts = calloc((size_t)sp.attempts, sizeof *out->attempts);
    vals = calloc((size_t)sp.attempts, sizeof *vals);
    val_attempt = calloc((size_t)sp.attempts, sizeof *val_attempt);
    val_logprob = calloc((size_t)sp.attempts, sizeof *val_logprob);
    if (!out->attempts || !vals || !val_attempt || !val_logprob) {
        st = tl_error_set(err, TL_ERR_NOMEM, "aeon synth: out of memory");
        goto done;
    }
    if ((st = tl_aeon_scope_new(p, &scope, err)))
        goto done;
    tl_aeon_oracle_limits lim = {.max_states = sp.max_states, .deadline = sp.deadline};
    if ((st = tl_aeon_engine_new(scope, &lim, &eng, err)))
        goto done;
    build_prompt(p, scope, &prompt);
    if ((st = tl_backend_tokenize(b, prompt.buf, prompt.len, true, false, &ids, &n_prompt, err)))
        goto done;
    int32_t ctx_len = sp.n_ctx > 0 ? sp.n_ctx : b->n_ctx;
    if (ctx_len > 0 && n_prompt + (size_t)sp.max_tokens + 1 > (size_t)ctx_len) {
        /* keep the first token (BOS) and the prompt's tail: the hole and its context come last */
        size_t keep = (size_t)ctx_len > (size_t)sp.max_tokens + 2 ? (size_t)ctx_len - (size_t)sp.max_tokens - 1 : 1;
        if (keep < n_prompt) {
            memmove(ids + 1, ids + (n_prompt - keep + 1), sizeof *ids * (keep - 1));
            n_prompt = keep;
        }
    }
    out->prompt_tokens = n_prompt;
    for (int a = 0; a < sp.attempts; a++) {
        if (sp.deadline > 0 && tl_now_s() > sp.deadline) {
            out->status = "deadline";
            break;
        }
        tl_aeon_synth_attempt *at = &out->attempts[out->n_attempts];
        at->seed = sp.seed + (uint64_t)a;
        at->temperature = sp.temperature > 0 || a == 0 ? sp.temperature : RETRY_TEMPERATURE;
        tl_aeon_sampler_config cfg = {.temperature = at->temperature, .seed = at->seed, .max_tokens = sp.max_tokens,
                                      .max_probes = sp.max_probes, .top_k = sp.top_k, .deadline = sp.deadline,
                                      .unconstrained = sp.unconstrained, .max_oracle_work = sp.max_oracle_work,
                                      .canonical_names = true};
        double t_attempt = tl_now_s();
        st = tl_aeon_sample_attempt(b, eng, ids, n_prompt, &cfg, &at->run, err);
        out->n_attempts++;
        at->elapsed_s = tl_now_s() - t_attempt;
        if (st) {
            tl_error_wrap(err, "attempt %d", a);
            goto done;
        }
        if (at->run.end != TL_AEON_END_COMPLETE || (sp.deadline > 0 && tl_now_s() > sp.deadline))
            continue;
        st = tl_aeon_validate(p, at->run.text, at->run.text_len, &at->validation, err);
        at->elapsed_s = tl_now_s() - t_attempt;
        if (st)
            goto done;
        at->validated = true;
        vals[n_vals] = at->validation;
        val_logprob[n_vals] = at->run.logprob;
        val_attempt[n_vals++] = a;
        if (nothing_to_improve(&at->validation))
            break;
    }
    int pick = n_vals ? tl_aeon_rank_pick(vals, val_logprob, n_vals) : -1;
    if (pick >= 0 && !(sp.deadline > 0 && tl_now_s() > sp.deadline)) {
        const tl_aeon_attempt *run = &out->attempts[val_attempt[pick]].run;
        if (!(out->program = tl_aeon_program_fill(p, run->text, run->text_len))) {
            st = tl_error_set(err, TL_ERR_NOMEM, "aeon synth: out of memory");
            goto done;
        }
        out->chosen = val_attempt[pick];
        out->status = "ok";
    } else if (pick >= 0) {
        out->status = "deadline";
    }
done:
    out->elapsed_s = tl_now_s() - t_start;
    free(vals);
    free(val_attempt);
    free(val_logprob);
    free(ids);
    tl_strbuf_free(&prompt);
    tl_aeon_engine_free(eng);
    tl_aeon_scope_free(scope);
    return st;
}

void tl_aeon_synth_result_free(tl_aeon_synth_result *r) {
    if (!r)
        return;
    for (int i = 0; i < r->n_attempts; i++)
        tl_aeon_attempt_free(&r->attempts[i].run);
    free(r->attempts);
    free(r->program);
    memset(r, 0, sizeof *r);
}

static json_t *validation_json(const tl_aeon_validation *v) {
    json_t *objs = json_array();
    for (int i = 0; i < v->n_objectives; i++)
        json_array_append_new(objs, json_real(v->objectives[i]));
    return json_pack("{s:b,s:b,s:b,s:i,s:i,s:i,s:i,s:o,s:o}", "parsed", v->parsed, "typed", v->typed,
                     "refinements_ok", v->refinements_ok, "refinement_checks", v->refinement_checks,
                     "refinement_failures", v->refinement_failures, "examples_total", v->examples_total,
                     "examples_failed", v->examples_failed, "objectives", objs, "message",
                     json_string_lossy(v->message, strlen(v->message)));
}

static json_t *attempt_json(int index, const tl_aeon_synth_attempt *at) {
    const tl_aeon_attempt *run = &at->run;
    json_t *toks = json_array();
    for (int i = 0; i < run->n_tokens; i++)
        json_array_append_new(toks, json_integer(run->tokens[i]));
    const char *text = run->text ? run->text : "";
    json_t *j = json_pack("{s:i,s:I,s:f,s:s,s:o,s:o,s:i,s:I,s:I,s:I,s:I,s:f,s:f,s:f}", "attempt", index, "seed",
                          (json_int_t)at->seed, "temperature", at->temperature, "end",
                          tl_aeon_attempt_end_name(run->end), "text", json_string_lossy(text, run->text_len),
                          "tokens", toks, "tokens_committed", run->n_tokens, "probes", (json_int_t)run->counts.probes,
                          "rejected_probes", (json_int_t)run->counts.rejected, "unknown_probes",
                          (json_int_t)run->counts.unknown, "excluded_probes", (json_int_t)run->counts.excluded,
                          "oracle_s", run->counts.oracle_s, "model_s", run->model_s, "logprob", run->logprob);
    if (j) {
        json_object_set_new(j, "over_budget_probes", json_integer(run->counts.over_budget));
        json_object_set_new(j, "noncanonical_probes", json_integer(run->counts.noncanonical));
        json_object_set_new(j, "oracle_calls", json_integer(run->counts.oracle_calls));
        json_object_set_new(j, "oracle_work", json_integer(run->counts.oracle_work));
        json_object_set_new(j, "elapsed_s", json_real(at->elapsed_s));
        /* the per-attempt verdicts at the top level, null when the text never finished */
        json_object_set_new(j, "well_typed", at->validated ? json_boolean(at->validation.typed) : json_null());
        json_object_set_new(j, "examples_passed",
                            at->validated && at->validation.typed
                                ? json_integer(at->validation.examples_total - at->validation.examples_failed)
                                : json_null());
    }
    if (j && at->validated)
        json_object_set_new(j, "validation", validation_json(&at->validation));
    return j;
}

char *tl_aeon_synth_result_to_json(const tl_aeon_program *p, const tl_aeon_synth_result *r) {
    json_t *attempts = json_array();
    for (int i = 0; i < r->n_attempts; i++)
        json_array_append_new(attempts, attempt_json(i, &r->attempts[i]));
    tl_strbuf goal = TL_STRBUF_INIT;
    tl_aeon_type_print(&p->types, p->goal, &goal);
    json_t *j = json_pack("{s:s,s:s#,s:I,s:f,s:o,s:i}", "status", r->status, "goal", tl_strbuf_cstr(&goal),
                          (int)goal.len, "prompt_tokens", (json_int_t)r->prompt_tokens, "elapsed_s", r->elapsed_s,
                          "attempts", attempts, "chosen_attempt", r->chosen);
    tl_strbuf_free(&goal);
    /* How the attempts ended, and which budgets ran out in any of them. */
    json_t *ends = json_object(), *spent = json_array();
    bool ran_out[4] = {false, false, false, false};
    for (int i = 0; i < r->n_attempts; i++) {
        tl_aeon_attempt_end e = r->attempts[i].run.end;
        const char *name = tl_aeon_attempt_end_name(e);
        json_t *c = json_object_get(ends, name);
        json_object_set_new(ends, name, json_integer(c ? json_integer_value(c) + 1 : 1));
        ran_out[0] |= e == TL_AEON_END_TOKEN_LIMIT;
        ran_out[1] |= e == TL_AEON_END_ORACLE_BUDGET;
        ran_out[2] |= e == TL_AEON_END_PROBE_LIMIT;
        ran_out[3] |= e == TL_AEON_END_DEADLINE;
    }
    static const char *budget_names[4] = {"tokens", "oracle_states", "probes", "wall_time"};
    if (!strcmp(r->status, "deadline"))
        ran_out[3] = true;
    for (int k = 0; k < 4; k++)
        if (ran_out[k])
            json_array_append_new(spent, json_string(budget_names[k]));
    if (j) {
        json_object_set_new(j, "ends", ends);
        json_object_set_new(j, "budgets_exhausted", spent);
        json_object_set_new(j, "unconstrained", json_boolean(r->unconstrained));
    } else {
        json_decref(ends);
        json_decref(spent);
    }
    if (j && r->chosen >= 0 && r->chosen < r->n_attempts) {
        const tl_aeon_attempt *run = &r->attempts[r->chosen].run;
        json_object_set_new(j, "program", json_string_lossy(r->program ? r->program : "", r->program ? strlen(r->program) : 0));
        json_object_set_new(j, "chosen_attempt_text", json_string_lossy(run->text, run->text_len));
    }
    char *text = j ? tl_json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    return text;
}

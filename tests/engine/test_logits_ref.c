/* test_logits_ref.c: every model in $TL_FIXTURES/models against every
 * reference in $TL_FIXTURES/ref/MODEL.PROMPT.json (llama.cpp's logits at the
 * last 4 positions, F32 KV), driven by the reference's token ids (the
 * tokenizer is not under test here). Bars are relative to the row's max
 * |logit| (fixtures/README.md); top-1 must be equal wherever the reference's
 * top-2 gap exceeds the bar.
 *
 * F32 weights: 2% (the two engines' arithmetic on the same weights).
 *
 * Other weights (F16, BF16, quantized) are measured against the F32 forward of
 * the same weights dequantized, computed here with the kernels' oracle on the
 * scalar path (kernels.h, tl_kernels_set_oracle): o. Two more oracle runs
 * round every product's activations first: as llama.cpp's CPU kernel for
 * that weight type does (F16, BF16, Q8_0, Q8_K): e, so |e - o| estimates the
 * reference's own error on those weights; and as typellm's integer kernels
 * do (Q8_0): s, the effect of typellm's own rounding. Then
 *   - typellm's forward t: |t - o| <= 1e-4 for F16/BF16 (exact weights, F32
 *     activations), <= |s - o| + |e - o| for quantized weights, and
 *   - |t - ref| <= 2% + |e - o| + |t - o| (the F32 bar plus both engines'
 *     distance from exact),
 * so each bar follows from the format's error on that model and prompt, with
 * no per-model exception. (gemma4's fixture, q·k unscaled, amplifies BF16
 * activation rounding to ~7% at the code prompt; each of its features moves
 * the logits by 50% or more, so a wrong feature still fails.) */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "kernels/kernels.h"
#include "tl_test.h"

static bool is_float_type(const char *t) { return !strcmp(t, "F32") || !strcmp(t, "F16") || !strcmp(t, "BF16"); }
static size_t n_format_checks; /* positions checked against the oracle */
static double ref_peer; /* the current reference's largest |e - o| */
static double worst_peer, worst_own, worst_kern, worst_dev; /* largest |e - o|, |s - o|, |t - s|, |t - o| */
/* |t - o| for float weights: the same arithmetic in another summation order */
#define OWN_TOL 1e-4

/* The last k_last positions' logits of ids (n tokens) in a session of its own
 * under oracle mode `mode` (TL_ORACLE_OFF: the kernels as they run). */
static tl_status eval_rows(const tl_model *m, tl_oracle_mode mode, const int32_t *ids, size_t n, size_t k_last,
                           float *logits, tl_error *err) {
    const char *isa = tl_kernels_isa();
    if (mode == TL_ORACLE_EXACT)
        tl_kernels_force_isa("scalar");
    tl_kernels_set_oracle(mode);
    /* the references ran with a context of tokens + 8, which picks LongRoPE's
     * short factors (phi3): the same here; longer than the model (stories260k.long)
     * with extend_ctx, as llama.cpp did */
    size_t train = (size_t)tl_model_n_ctx_train(m);
    tl_session_params sp = {.n_threads = 2, .n_ctx = (int32_t)(n > train ? n : n + 8 < train ? n + 8 : train),
                            .extend_ctx = n > train};
    tl_session *s = NULL;
    tl_status st = tl_session_new(m, &sp, &s, err);
    if (!st)
        st = tl_session_eval_last(s, ids, n, k_last, logits, NULL, err);
    tl_session_free(s);
    tl_kernels_set_oracle(TL_ORACLE_OFF);
    tl_kernels_force_isa(isa);
    return st;
}

/* max |a - b| / max |b| over a row */
static double row_rel(const float *a, const float *b, int32_t n) {
    double d = 0, mx = 0;
    for (int32_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        mx = fmax(mx, fabs(b[i]));
    }
    return mx > 0 ? d / mx : d;
}

/* Checks one reference file against the model; returns the worst relative error. */
static double check_ref(const tl_model *m, tl_session *s, const char *ref_path, bool f32_weights) {
    json_error_t jerr;
    json_t *ref = json_load_file(ref_path, 0, &jerr);
    CHECKF(ref != NULL, "%s: %s", ref_path, jerr.text);
    if (!ref)
        return INFINITY;
    int32_t n_vocab = (int32_t)json_integer_value(json_object_get(ref, "n_vocab"));
    CHECKF(n_vocab == tl_model_n_vocab(m), "%s: n_vocab %d vs model %d", ref_path, n_vocab, tl_model_n_vocab(m));
    json_t *jt = json_object_get(ref, "tokens");
    size_t n = json_array_size(jt);
    int32_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(jt, i));
    json_t *rows = json_object_get(ref, "logits");
    size_t k_last = json_object_size(rows);
    size_t row_n = k_last * (size_t)n_vocab;
    float *logits = malloc(4 * row_n * sizeof *logits), *exact = logits + row_n, *peer = logits + 2 * row_n,
          *own = logits + 3 * row_n;
    tl_error err = {0};
    if (n > (size_t)tl_model_n_ctx_train(m)) {
        /* stories260k.long: 2119 tokens over a 512-token model. Refused by
         * default, naming both lengths; accepted with extend_ctx (eval_rows). */
        tl_status st = tl_session_eval_last(s, ids, n, k_last, logits, NULL, &err);
        CHECKF(st == TL_ERR_LIMIT && strstr(err.msg, "context length"), "%s: %s", ref_path, err.msg);
    }
    tl_status st = eval_rows(m, TL_ORACLE_OFF, ids, n, k_last, logits, &err);
    if (!st && !f32_weights)
        st = eval_rows(m, TL_ORACLE_EXACT, ids, n, k_last, exact, &err);
    if (!st && !f32_weights)
        st = eval_rows(m, TL_ORACLE_PEER_ACT, ids, n, k_last, peer, &err);
    if (!st && !f32_weights)
        st = eval_rows(m, TL_ORACLE_OWN_ACT, ids, n, k_last, own, &err);
    CHECKF(st == TL_OK, "%s: %s", ref_path, err.msg);
    double worst = 0;
    if (st == TL_OK) {
        const char *key;
        json_t *row;
        json_object_foreach(rows, key, row) {
            long pos = strtol(key, NULL, 10);
            size_t r = (size_t)(pos - (long)(n - k_last));
            CHECKF(r < k_last, "%s: position %ld", ref_path, pos);
            if (r >= k_last)
                continue;
            const float *got = logits + r * (size_t)n_vocab;
            json_t *top = json_object_get(row, "top"), *sample = json_object_get(row, "sample");
            int64_t stride = json_integer_value(json_object_get(row, "stride"));
            double maxabs = 0, maxdiff = 0;
            for (size_t j = 0; j < json_array_size(top); j++)
                maxabs = fmax(maxabs, fabs(json_number_value(json_array_get(json_array_get(top, j), 1))));
            for (size_t j = 0; j < json_array_size(sample); j++)
                maxabs = fmax(maxabs, fabs(json_number_value(json_array_get(sample, j))));
            for (size_t j = 0; j < json_array_size(top); j++) {
                json_t *e = json_array_get(top, j);
                int64_t id = json_integer_value(json_array_get(e, 0));
                maxdiff = fmax(maxdiff, fabs(got[id] - json_number_value(json_array_get(e, 1))));
            }
            for (size_t j = 0; j < json_array_size(sample); j++)
                maxdiff = fmax(maxdiff, fabs(got[(int64_t)j * stride] - json_number_value(json_array_get(sample, j))));
            double tol = 0.02 * maxabs;
            if (!f32_weights) {
                const float *o = exact + r * (size_t)n_vocab, *e = peer + r * (size_t)n_vocab,
                            *so = own + r * (size_t)n_vocab;
                double peer_err = row_rel(e, o, n_vocab), own_err = row_rel(so, o, n_vocab);
                double kern = row_rel(got, so, n_vocab), dev = row_rel(got, o, n_vocab);
                /* F16/BF16 weights are exact in F32 and the float kernels take F32
                 * activations: typellm's forward is the oracle's to summation order.
                 * The integer kernels round activations (Q8_0 blocks): no further from
                 * exact than that rounding's effect plus the peer's (a value crossing a
                 * rounding boundary after a last-bit difference moves the logits by as
                 * much as the rounding itself: |t - s| is reported, not bounded) */
                double dev_bar = is_float_type(tl_model_type_name(m)) ? OWN_TOL : own_err + peer_err;
                CHECKF(dev <= dev_bar, "%s pos %s: |typellm - exact| %.5f of the row's max, past %.5f", ref_path, key,
                       dev, dev_bar);
                tol = (0.02 + peer_err + dev) * maxabs;
                n_format_checks++;
                worst_peer = fmax(worst_peer, peer_err);
                ref_peer = fmax(ref_peer, peer_err);
                worst_own = fmax(worst_own, own_err);
                worst_kern = fmax(worst_kern, kern);
                worst_dev = fmax(worst_dev, dev);
            }
            CHECKF(maxdiff <= tol, "%s pos %s: max |dlogit| %.4f > %.4f", ref_path, key, maxdiff, tol);
            worst = fmax(worst, maxdiff / maxabs);
            double gap = json_number_value(json_array_get(json_array_get(top, 0), 1)) -
                         json_number_value(json_array_get(json_array_get(top, 1), 1));
            if (gap > tol) {
                int64_t want = json_integer_value(json_array_get(json_array_get(top, 0), 0));
                int32_t best = 0;
                for (int32_t i = 1; i < n_vocab; i++)
                    if (got[i] > got[best])
                        best = i;
                CHECKF(best == want, "%s pos %s: top-1 %d, reference %lld", ref_path, key, best, (long long)want);
            }
        }
    }
    free(logits);
    free(ids);
    json_decref(ref);
    return worst;
}

/* Families of issue 14 still being brought up: their fixtures may be refused
 * as an unsupported architecture or type until they land (each landing
 * removes its names here). Anything else that fails to load is a failure. */
static bool pending_arch(const char *msg) {
    static const char *pending[] = {"'qwen3moe'", "'qwen2moe'", "'qwen35'", "gpt-oss"};
    for (size_t i = 0; i < sizeof pending / sizeof pending[0]; i++)
        if (strstr(msg, pending[i]))
            return true;
    return false;
}

int main(void) {
    char models_dir[4096], ref_dir[4096];
    snprintf(models_dir, sizeof models_dir, "%s", tl_fixture("models"));
    snprintf(ref_dir, sizeof ref_dir, "%s", tl_fixture("ref"));
    DIR *d = opendir(models_dir);
    CHECKF(d != NULL, "cannot open %s", models_dir);
    if (!d)
        return TEST_DONE();
    int n_models = 0, n_refs = 0;
    bool sanitizer_run = getenv("TL_SANITIZER_RUN") != NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".gguf"))
            continue;
        char path[8192], stem[1024];
        snprintf(path, sizeof path, "%s/%s", models_dir, e->d_name);
        snprintf(stem, sizeof stem, "%.*s", (int)(len - 5), e->d_name);
        tl_model *m = NULL;
        tl_error err = {0};
        tl_status st = tl_model_load(path, &m, &err);
        if (st != TL_OK && pending_arch(err.msg)) {
            fprintf(stderr, "%-40s pending (issue 14): %s\n", e->d_name, err.msg);
            continue;
        }
        CHECKF(st == TL_OK, "%s: %s", path, err.msg);
        if (st != TL_OK)
            continue;
        n_models++;
        tl_session *s = NULL;
        tl_session_params sp = {.n_threads = 2};
        CHECK(tl_session_new(m, &sp, &s, &err) == TL_OK);
        bool f32_weights = !strcmp(tl_model_type_name(m), "F32");
        /* stories260k-v1 is the same model as stories260k in GGUF v1: same references */
        const char *ref_stem = !strcmp(stem, "stories260k-v1-f32") ? "stories260k-f32" : stem;
        DIR *rd = opendir(ref_dir);
        struct dirent *re;
        while (rd && (re = readdir(rd))) {
            size_t sl = strlen(ref_stem), rl = strlen(re->d_name);
            if (rl <= sl + 6 || strncmp(re->d_name, ref_stem, sl) || re->d_name[sl] != '.' ||
                strcmp(re->d_name + rl - 5, ".json") || strstr(re->d_name, ".greedy-"))
                continue;
            /* under the sanitizers (slow) one short prompt per model still covers
             * every architecture and weight type */
            if (sanitizer_run && !strstr(re->d_name, ".fox.json"))
                continue;
            char rp[8192];
            snprintf(rp, sizeof rp, "%s/%s", ref_dir, re->d_name);
            tl_session_flush(s);
            ref_peer = 0;
            double worst = check_ref(m, s, rp, f32_weights);
            fprintf(stderr, "%-40s %-6s worst |dlogit|/max %.5f", re->d_name, tl_model_type_name(m), worst);
            if (!f32_weights)
                fprintf(stderr, " (llama.cpp's own error, estimated: %.5f)", ref_peer);
            fprintf(stderr, "\n");
            n_refs++;
        }
        if (rd)
            closedir(rd);
        tl_session_free(s);
        tl_model_free(m);
    }
    closedir(d);
    fprintf(stderr, "%zu positions against the F32 forward of the dequantized weights: worst |typellm - exact| %.5f, "
            "|typellm's rounding - exact| %.5f, |llama.cpp's - exact| (estimated) %.5f, |typellm - its rounding| %.5f\n",
            n_format_checks, worst_dev, worst_own, worst_peer, worst_kern);
    CHECKF(n_models >= 19, "only %d models loaded", n_models);
    CHECKF(n_refs >= (sanitizer_run ? 19 : 98), "only %d references checked", n_refs);
    return TEST_DONE();
}

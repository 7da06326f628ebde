/* test_logits_ref.c: every model in $TL_FIXTURES/models against every
 * reference in $TL_FIXTURES/ref/MODEL.PROMPT.json (llama.cpp's logits at the
 * last 4 positions, F32 KV). Bars (fixtures/README.md): max |Δlogit| <= 2% of
 * the row's max |logit| for F32/F16/BF16 weights, 5% for quantized; top-1
 * equal wherever the reference's top-2 gap exceeds that tolerance. Driven by
 * the reference's token ids, so the tokenizer is not under test here. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "tl_test.h"

static bool is_float_type(const char *t) { return !strcmp(t, "F32") || !strcmp(t, "F16") || !strcmp(t, "BF16"); }

/* Checks one reference file against the model; returns the worst relative error. */
static double check_ref(const tl_model *m, tl_session *s, const char *ref_path, double tol_frac) {
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
    float *logits = malloc(k_last * (size_t)n_vocab * sizeof *logits);
    tl_error err = {0};
    tl_session *own = NULL;
    if (n > (size_t)tl_model_n_ctx_train(m)) {
        /* stories260k.long: 2119 tokens over a 512-token model. Refused by
         * default, naming both lengths; accepted with extend_ctx (as llama.cpp did). */
        tl_status st = tl_session_eval_last(s, ids, n, k_last, logits, NULL, &err);
        CHECKF(st == TL_ERR_LIMIT && strstr(err.msg, "context length"), "%s: %s", ref_path, err.msg);
        tl_session_params sp = {.n_threads = 2, .n_ctx = (int32_t)n, .extend_ctx = true};
        CHECK(tl_session_new(m, &sp, &own, &err) == TL_OK);
    } else {
        /* the references ran with a context of tokens + 8, which picks
         * LongRoPE's short factors (phi3): the same here */
        size_t n_ctx = n + 8 < (size_t)tl_model_n_ctx_train(m) ? n + 8 : (size_t)tl_model_n_ctx_train(m);
        tl_session_params sp = {.n_threads = 2, .n_ctx = (int32_t)n_ctx};
        CHECK(tl_session_new(m, &sp, &own, &err) == TL_OK);
    }
    if (own)
        s = own;
    tl_status st = tl_session_eval_last(s, ids, n, k_last, logits, NULL, &err);
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
            double tol = tol_frac * maxabs;
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
    tl_session_free(own);
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
        double tol = is_float_type(tl_model_type_name(m)) ? 0.02 : 0.05;
        /* gemma4's fixture (q·k unscaled, so scores are large) amplifies the
         * rounding of llama.cpp's BF16 kernels: node-llama-cpp 3.22.1 gives
         * results 5-10% apart on the BF16 file and on the same weights
         * converted to F32 (code prompt), and on the F32 copy it agrees with
         * typellm to 0.4%. Its bar is 8%; each of its features moves the
         * logits by 50% or more (without layer_output_scale 100%, without
         * RoPE 50%, with 1/sqrt(d) 140%), so a wrong feature still fails. */
        if (!strcmp(stem, "gemma4-spm-d128-bf16"))
            tol = 0.08;
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
            double worst = check_ref(m, s, rp, tol);
            fprintf(stderr, "%-40s %-6s worst |dlogit|/max %.5f\n", re->d_name, tl_model_type_name(m), worst);
            n_refs++;
        }
        if (rd)
            closedir(rd);
        tl_session_free(s);
        tl_model_free(m);
    }
    closedir(d);
    CHECKF(n_models >= 19, "only %d models loaded", n_models);
    CHECKF(n_refs >= (sanitizer_run ? 19 : 98), "only %d references checked", n_refs);
    return TEST_DONE();
}

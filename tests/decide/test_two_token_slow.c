/* test_two_token_slow.c: a 5,000-value enum (two-token labels) on the
 * smallest fixture model (llama-spm-d64: its distribution over the values
 * is spread, not one-hot), its context extended to hold the choices line:
 * the distribution sums to 1 within 1e-9, equals the softmax over the
 * declared values of the label-pair log-probabilities recomputed from the
 * engine's full logits, and the value is the argmax. */
#include "decide/decide.h"
#include "engine/engine.h"
#include "test_two_token.h"
#include "util/fileio.h"

int main(void) {
    tl_model *m = NULL;
    tl_backend *b = NULL;
    tl_error err = {0};
    tl_session_params sp = {.n_threads = 1, .n_ctx = 65536, .extend_ctx = true};
    if (tl_model_load(tl_fixture("models/llama-spm-d64-f32.gguf"), &m, &err) || tl_backend_local_new(m, &sp, &b, &err)) {
        CHECKF(0, "%s", err.msg);
        return TEST_DONE();
    }
    json_t *schema = json_pack("{s:s, s:{s:o}}", "type", "object", "properties", "city",
                               enum_property(5000, "Which city is the ticket about?"));
    const char *ctx = "Ticket: the parcel for customer 4471 is stuck in the depot since Monday.";
    {
        tl_decide_opts o = {.trace = true, .style = "record"};
        json_t *res = NULL;
        double t0 = tl_now_s();
        tl_status st = tl_decide_json(b, ctx, strlen(ctx), schema, &o, &res, &err);
        double t1 = tl_now_s();
        CHECKF(st == TL_OK, "%s", err.msg);
        if (st)
            return TEST_DONE();
        const json_t *fr = json_object_get(json_object_get(res, "fields"), "city");
        size_t firsts = 0;
        double worst = check_pair_field(b, fr, 5000, 1e-7, &firsts);
        printf("%s: 5000 values, %zu first tokens, %lld prompt tokens, decide %.1f s, max |p - softmax| %.3g\n",
               o.style, firsts, (long long)json_integer_value(json_object_get(json_object_get(res, "usage"),
                                                                               "prompt_tokens")),
               t1 - t0, worst);
        json_decref(res);
    }
    json_decref(schema);
    tl_backend_free(b);
    tl_model_free(m);
    return TEST_DONE();
}

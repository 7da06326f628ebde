/* test_two_token_remote.c: a field with more values than single-token
 * labels (two-token labels, decide/labels.h) over the server's /v1/decide and
 * over the SGLang client backend (src/backend/sglang.c) against typellm's own
 * server in-process on a loopback port:
 *   - /v1/decide gives bit-identical values, candidates and probabilities to
 *     a local decision (the same engine), and a field past the value limit is
 *     a 422 naming its JSON path;
 *   - the SGLang client, with a local tokenizer and with the server's
 *     /tokenize, scores the pairs through its batched /generate (one request
 *     per first token's branch) and gives the same values and probabilities
 *     within 1e-4 as local, in sequential, batch and auto modes. */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "decide/decide.h"
#include "decide/schema.h"
#include "server/server_internal.h"
#include "decide_compare.h"
#include "tl_test.h"

static const char *CONTEXT = "Ticket 4471: the parcel is stuck in the depot since Monday; the customer asks for a "
                             "refund and mentions the driver never called.";
static const char *MODEL = "models/llama-spm-d64-f32.gguf";

static json_t *enum_values(size_t n) {
    json_t *en = json_array();
    for (size_t i = 0; i < n; i++) {
        char v[32];
        snprintf(v, sizeof v, "v%zu", i);
        json_array_append_new(en, json_string(v));
    }
    return en;
}

static json_t *make_schema(size_t n) {
    return json_pack("{s:s, s:{s:{s:s}, s:{s:s, s:o, s:s}, s:{s:s, s:[s,s,s], s:[s]}}}", "type", "object",
                     "properties", "urgent", "type", "boolean", "city", "type", "string", "enum", enum_values(n),
                     "question", "Which depot city?", "team", "type", "string", "enum", "depot", "drivers",
                     "refunds", "depends_on", "city");
}

/* POST /v1/decide through the transport-free handler. */
static json_t *post_decide(tl_server *srv, const json_t *schema, const char *mode, int *status) {
    json_t *body = json_pack("{s:s, s:O, s:s, s:s}", "context", CONTEXT, "schema", schema, "mode", mode, "style",
                             "record");
    char *text = json_dumps(body, JSON_COMPACT);
    tl_http_request req = {.method = "POST", .path = "/v1/decide", .body = text, .body_len = strlen(text)};
    tl_http_reply rep = {.stream_fd = -1};
    tl_server_handle(srv, &req, &rep);
    *status = rep.status;
    json_t *res = json_loadb(rep.body.buf ? rep.body.buf : "", rep.body.len, 0, NULL);
    tl_http_reply_free(&rep);
    free(text);
    json_decref(body);
    return res;
}

int main(void) {
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_model_load(tl_fixture(MODEL), &m, &err) != TL_OK) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    tl_server_params sp = {.port = 0, .n_threads = 1, .model_path = "llama-spm-d64-f32.gguf"};
    tl_server *srv = NULL;
    CHECK(tl_server_new(m, &sp, &srv, &err) == TL_OK && tl_server_start(srv, &err) == TL_OK);
    if (!srv) {
        tl_model_free(m);
        return TEST_DONE();
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", tl_server_port(srv));
    tl_session_params lsp = {.n_threads = 1};
    tl_backend *local = NULL, *remote = NULL, *remote_tok = NULL;
    CHECK(tl_backend_local_new(m, &lsp, &local, &err) == TL_OK);
    tl_sglang_params rp = {.base_url = url};
    CHECKF(tl_backend_sglang_new(&rp, &remote, &err) == TL_OK, "%s", err.msg);
    tl_sglang_params rpt = rp;
    rpt.tokenizer_path = tl_fixture(MODEL);
    CHECKF(tl_backend_sglang_new(&rpt, &remote_tok, &err) == TL_OK, "%s", err.msg);
    json_t *schema = make_schema(300);

    /* /v1/decide: the local engine's decision, bit for bit */
    const char *modes[3] = {"sequential", "batch", "auto"};
    for (int i = 0; i < 3 && local; i++) {
        tl_decide_opts o = {.mode = modes[i], .style = "record"};
        json_t *lr = NULL;
        CHECK(tl_decide_json(local, CONTEXT, strlen(CONTEXT), schema, &o, &lr, &err) == TL_OK);
        int status = 0;
        json_t *sr = post_decide(srv, schema, modes[i], &status);
        CHECKF(status == 200 && sr, "/v1/decide %s: status %d", modes[i], status);
        if (lr && sr)
            compare_results(lr, sr, modes[i], 0);
        const json_t *cands = json_object_get(json_object_get(json_object_get(sr, "fields"), "city"), "candidates");
        CHECK(json_array_size(json_object_get(json_array_get(cands, 299), "tokens")) == 2);
        json_decref(lr);
        json_decref(sr);
    }
    /* past the limit: 422 naming the path */
    json_t *big = make_schema(TL_DFIELD_MAX_VALUES + 1);
    int status = 0;
    json_t *bad = post_decide(srv, big, "batch", &status);
    char *bad_text = bad ? json_dumps(bad, JSON_COMPACT) : NULL;
    CHECKF(status == 422 && bad_text && strstr(bad_text, "/properties/city/enum: 10001 values; a field may have at most 10000"),
           "status %d: %s", status, bad_text ? bad_text : "(no body)");
    free(bad_text);
    json_decref(bad);
    json_decref(big);

    /* the SGLang client: pairs scored remotely, same answers as local */
    for (int i = 0; i < 3 && local && remote && remote_tok; i++) {
        tl_decide_opts o = {.mode = modes[i], .style = "record"};
        json_t *lr = NULL, *rr = NULL, *rt = NULL;
        CHECK(tl_decide_json(local, CONTEXT, strlen(CONTEXT), schema, &o, &lr, &err) == TL_OK);
        tl_status st = tl_decide_json(remote_tok, CONTEXT, strlen(CONTEXT), schema, &o, &rt, &err);
        CHECKF(st == TL_OK, "%s: sglang with a local tokenizer: %s", modes[i], err.msg);
        if (lr && rt)
            compare_results(lr, rt, modes[i], 1e-4);
        if (i == 1) { /* the server's /tokenize and /detokenize once (each distinct text is asked once) */
            st = tl_decide_json(remote, CONTEXT, strlen(CONTEXT), schema, &o, &rr, &err);
            CHECKF(st == TL_OK, "%s: sglang: %s", modes[i], err.msg);
            if (lr && rr)
                compare_results(lr, rr, "batch (remote tokenizer)", 1e-4);
            const json_t *http = json_object_get(json_object_get(rr, "usage"), "http_requests");
            printf("batch over /tokenize: %lld tokenize, %lld detokenize, %lld generate\n",
                   (long long)json_integer_value(json_object_get(http, "tokenize")),
                   (long long)json_integer_value(json_object_get(http, "detokenize")),
                   (long long)json_integer_value(json_object_get(http, "generate")));
            /* one batched /generate for the wave: urgent, city's first tokens and its branches, team */
            CHECK(json_integer_value(json_object_get(http, "generate")) == 1);
        }
        json_decref(lr);
        json_decref(rr);
        json_decref(rt);
    }
    json_decref(schema);
    tl_backend_free(remote);
    tl_backend_free(remote_tok);
    tl_backend_free(local);
    tl_server_stop(srv);
    tl_server_free(srv);
    tl_model_free(m);
    return TEST_DONE();
}

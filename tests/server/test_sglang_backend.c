/* test_sglang_backend.c: the remote SGLang backend (src/backend/sglang.c)
 * against typellm's own server started in-process on a loopback port: every
 * decision mode gives the same values and probabilities (within 1e-4) as the
 * local engine, repeated work shows up as cached tokens, regex generation
 * works, and the failure cases (unreachable server, bad key, a server
 * without /tokenize covered by a local tokenizer) give clear errors.
 * The server sends no chat template (as real SGLang): a chat decision without
 * a template source is refused before any /generate; --chat-template or a
 * local tokenizer GGUF gives the same answers as local. Numbers are generated
 * under the local automaton by candidate-only scoring: identical values
 * (multipleOf, exclusive bounds, decimals; greedy and seeded sampling) and
 * probabilities within 1e-4; an array of objects (its length decision, then
 * each item) gives the same values and probabilities as local. */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "constrain/constrain.h"
#include "decide/decide.h"
#include "server/server_internal.h"
#include "tl_test.h"
#include "util/error.h"

static const char *CONTEXT =
    "Ticket #4471: the checkout page returns HTTP 500 for every customer since the 14:02 deploy. "
    "Revenue is down; the on-call engineer suggests rolling back.";

static json_t *make_schema(void) {
    return json_loads("{\"type\":\"object\",\"properties\":{"
                      "\"area\":{\"type\":\"string\",\"enum\":[\"payments\",\"search\",\"accounts\"]},"
                      "\"outage\":{\"type\":\"boolean\",\"description\":\"Is this an outage?\"},"
                      "\"severity\":{\"type\":\"integer\",\"enum\":[1,2,3,4]},"
                      "\"rollback\":{\"type\":\"string\",\"enum\":[\"yes\",\"no\"],\"x-descriptions\":{\"yes\":\"undo the deploy\"}}}}",
                      0, NULL);
}

/* Same values, probabilities within tol. */
static void compare(const json_t *local, const json_t *remote, const char *mode, double tol) {
    const char *name;
    json_t *lf;
    json_object_foreach(json_object_get((json_t *)local, "fields"), name, lf) {
        json_t *rf = json_object_get(json_object_get(remote, "fields"), name);
        CHECKF(rf != NULL, "%s: field %s missing remotely", mode, name);
        if (!rf)
            continue;
        CHECKF(json_equal(json_object_get(lf, "value"), json_object_get(rf, "value")), "%s/%s: values differ", mode, name);
        const char *v;
        json_t *lp;
        json_object_foreach(json_object_get(lf, "probabilities"), v, lp) {
            json_t *rp = json_object_get(json_object_get(rf, "probabilities"), v);
            double d = rp ? fabs(json_number_value(lp) - json_number_value(rp)) : 1;
            CHECKF(d < tol, "%s/%s/%s: |local - remote| = %g", mode, name, v, d);
        }
    }
}

/* A decision run on its own thread (against a server whose slot the test holds). */
typedef struct decider {
    tl_backend *b;
    const json_t *schema;
    tl_status status;
    tl_error err;
    json_t *result;
} decider;

static void *decide_main(void *arg) {
    decider *d = arg;
    tl_decide_opts o = {.mode = "batch", .chat_template = "chatml"};
    d->status = tl_decide_json(d->b, CONTEXT, strlen(CONTEXT), d->schema, &o, &d->result, &d->err);
    return NULL;
}

/* Counts lines containing needle in the file at path (read through its own handle). */
static int count_in_file(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

int main(void) {
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_model_load(tl_fixture("models/qwen2-d64-q8_0.gguf"), &m, &err) != TL_OK) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    tl_server_params sp = {.port = 0, .n_threads = 1, .api_key = "t0ken", .model_path = "qwen2-d64-q8_0.gguf"};
    tl_server *srv = NULL;
    CHECK(tl_server_new(m, &sp, &srv, &err) == TL_OK && tl_server_start(srv, &err) == TL_OK);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", tl_server_port(srv));

    tl_session_params lsp = {.n_threads = 1};
    tl_backend *local = NULL, *remote = NULL, *remote_tok = NULL;
    CHECK(tl_backend_local_new(m, &lsp, &local, &err) == TL_OK);
    tl_sglang_params rp = {.base_url = url, .api_key = "t0ken"};
    CHECK(tl_backend_sglang_new(&rp, &remote, &err) == TL_OK);
    if (!remote)
        fprintf(stderr, "sglang: %s\n", err.msg);
    tl_sglang_params rpt = rp;
    rpt.tokenizer_path = tl_fixture("models/qwen2-d64-q8_0.gguf");
    CHECK(tl_backend_sglang_new(&rpt, &remote_tok, &err) == TL_OK);
    if (remote) {
        CHECK(!strcmp(remote->ops->kind, "sglang"));
        CHECK(remote->chat_template == NULL); /* SGLang does not send it */
        CHECK(remote->template_from_caller);
        CHECK(!strcmp(remote->model_name, "qwen2-d64-q8_0.gguf") || remote->model_name[0]);
    }
    if (remote_tok) {
        CHECK(remote_tok->chat_template != NULL); /* from the local GGUF */
        CHECK(remote_tok->n_vocab == tl_model_n_vocab(m));
    }
    json_t *schema0 = make_schema();
    /* No template source: refused before any model call, naming both options. */
    if (remote) {
        tl_decide_opts o = {.mode = "batch"};
        json_t *res = NULL;
        int64_t gen0 = remote->requests.generate;
        CHECK(tl_decide_json(remote, CONTEXT, strlen(CONTEXT), schema0, &o, &res, &err) == TL_ERR_INVALID);
        CHECKF(strstr(err.msg, "--chat-template") && strstr(err.msg, "--tokenizer"), "message: %s", err.msg);
        CHECK(remote->requests.generate == gen0);
        tl_decide_opts rec = {.mode = "batch", .style = "record"};
        CHECK(tl_decide_json(remote, CONTEXT, strlen(CONTEXT), schema0, &rec, &res, &err) == TL_OK);
        json_decref(res);
    }
    json_decref(schema0);

    json_t *schema = make_schema();
    const char *modes[3] = {"sequential", "batch", "auto"};
    for (int i = 0; i < 3 && remote && remote_tok; i++) {
        /* the remote gets the model's own template (what --chat-template FILE.jinja passes) */
        tl_decide_opts o = {.mode = modes[i]}, oc = {.mode = modes[i], .chat_template_jinja = local->chat_template};
        json_t *lr = NULL, *rr = NULL, *rr2 = NULL, *rt = NULL;
        CHECK(tl_decide_json(local, CONTEXT, strlen(CONTEXT), schema, &o, &lr, &err) == TL_OK);
        tl_status st = tl_decide_json(remote, CONTEXT, strlen(CONTEXT), schema, &oc, &rr, &err);
        CHECKF(st == TL_OK, "%s: remote decide: %s", modes[i], err.msg);
        if (lr && rr)
            compare(lr, rr, modes[i], 1e-4);
        /* Again: the server's prefix cache now holds all of it. */
        CHECK(tl_decide_json(remote, CONTEXT, strlen(CONTEXT), schema, &oc, &rr2, &err) == TL_OK);
        if (rr2) {
            json_t *u = json_object_get(rr2, "usage");
            json_int_t prompt = json_integer_value(json_object_get(u, "prompt_tokens"));
            json_int_t cached = json_integer_value(json_object_get(u, "cached_tokens"));
            CHECKF(prompt > 0 && cached >= prompt * 9 / 10, "%s: repeat cached %lld of %lld", modes[i],
                   (long long)cached, (long long)prompt);
            if (!strcmp(modes[i], "sequential")) {
                json_int_t c1 = json_integer_value(json_object_get(json_object_get(rr, "usage"), "cached_tokens"));
                CHECKF(c1 > 0, "sequential: later decisions reuse earlier ones (cached %lld)", (long long)c1);
            }
        }
        CHECK(tl_decide_json(remote_tok, CONTEXT, strlen(CONTEXT), schema, &o, &rt, &err) == TL_OK);
        if (lr && rt)
            compare(lr, rt, "with --tokenizer", 1e-4);
        if (rt) { /* the local tokenizer answers every tokenize: no round trip for it */
            json_t *hr = json_object_get(json_object_get(rt, "usage"), "http_requests");
            CHECKF(hr && json_integer_value(json_object_get(hr, "tokenize")) == 0 &&
                       json_integer_value(json_object_get(hr, "generate")) >= 1,
                   "%s: http_requests with --tokenizer", modes[i]);
        }
        json_decref(lr);
        json_decref(rr);
        json_decref(rr2);
        json_decref(rt);
    }

    /* Generated numbers, patterned strings and open text over the remote backend with a local
     * tokenizer: the automaton runs client-side, so multipleOf and exclusive
     * bounds hold by construction and every value has its real probability. */
    if (remote_tok) {
        json_t *ns = json_loads(
            "{\"type\":\"object\",\"properties\":{"
            "\"sevens\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000,\"multipleOf\":7},"
            "\"open_low\":{\"type\":\"integer\",\"exclusiveMinimum\":-20,\"exclusiveMaximum\":20},"
            "\"price\":{\"type\":\"number\",\"minimum\":0,\"maximum\":99.5,\"multipleOf\":0.25},"
            "\"note\":{\"type\":\"string\",\"enum\":[\"ok\"],\"open\":true,\"maxLength\":12},"
            "\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-[0-9]{3}$\"},"
            "\"day\":{\"type\":\"string\",\"format\":\"date\"}}}",
            0, NULL);
        CHECK(ns != NULL);
        for (int t = 0; t < 4 && ns; t++) {
            const char *md = t % 2 ? "sequential" : "batch";
            tl_decide_opts o = {.mode = md, .temperature = t < 2 ? 0.0 : 1.0, .seed = (uint64_t)(7 + t)};
            json_t *lr = NULL, *rr = NULL;
            CHECK(tl_decide_json(local, CONTEXT, strlen(CONTEXT), ns, &o, &lr, &err) == TL_OK);
            tl_status st = tl_decide_json(remote_tok, CONTEXT, strlen(CONTEXT), ns, &o, &rr, &err);
            CHECKF(st == TL_OK, "numbers remote (%s, T=%g): %s", md, o.temperature, err.msg);
            if (lr && rr) {
                compare(lr, rr, "numbers", 1e-4);
                const char *names[5] = {"sevens", "open_low", "price", "code", "day"};
                for (int k = 0; k < 5; k++) {
                    json_t *lf = json_object_get(json_object_get(lr, "fields"), names[k]);
                    json_t *rf = json_object_get(json_object_get(rr, "fields"), names[k]);
                    double lp = json_number_value(json_object_get(lf, "probability"));
                    double rpv = json_number_value(json_object_get(rf, "probability"));
                    CHECKF(json_is_real(json_object_get(rf, "probability")) && fabs(lp - rpv) < 1e-4 && rpv > 0 && rpv <= 1,
                           "%s: probability local %g remote %g", names[k], lp, rpv);
                    CHECKF(json_equal(json_object_get(lf, "value"), json_object_get(rf, "value")),
                           "%s (T=%g): local and remote values differ", names[k], o.temperature);
                }
                json_int_t sev = json_integer_value(json_object_get(json_object_get(rr, "values"), "sevens"));
                CHECKF(sev % 7 == 0 && sev >= 0 && sev <= 1000, "sevens = %lld", (long long)sev);
                json_int_t ol = json_integer_value(json_object_get(json_object_get(rr, "values"), "open_low"));
                CHECKF(ol > -20 && ol < 20, "open_low = %lld", (long long)ol);
            }
            json_decref(lr);
            json_decref(rr);
        }
        /* without a local tokenizer a step cannot be a regex: a clear refusal */
        json_t *res = NULL;
        tl_decide_opts o = {.mode = "batch", .style = "record"};
        if (remote && ns) {
            CHECK(tl_decide_json(remote, CONTEXT, strlen(CONTEXT), ns, &o, &res, &err) == TL_ERR_UNSUPPORTED);
            CHECKF(strstr(err.msg, "--tokenizer") && strstr(err.msg, "sevens"), "message: %s", err.msg);
        }
        json_decref(ns);
    }

    /* An array of objects (issue 13): the length, then each item's fields
     * (an enum, a patterned string, a nullable number: presence first), and
     * an open-ended array of strings: over the remote backend exactly as
     * locally, in every mode. */
    if (remote_tok) {
        json_t *as = json_loads(
            "{\"type\":\"object\",\"properties\":{"
            "\"people\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":3,\"description\":\"Who is named\","
            " \"items\":{\"type\":\"object\",\"properties\":{"
            "  \"role\":{\"type\":\"string\",\"enum\":[\"customer\",\"engineer\"]},"
            "  \"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}[0-9]{2}$\"},"
            "  \"hours\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":0,\"maximum\":48},{\"type\":\"null\"}]}},"
            "  \"required\":[\"role\",\"code\",\"hours\"]}},"
            "\"steps\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":8},\"maxItems\":2,"
            " \"x-length\":\"open\"}}}",
            0, NULL);
        CHECK(as != NULL);
        const char *amodes[3] = {"sequential", "batch", "auto"};
        for (int i = 0; i < 3 && as; i++) {
            tl_decide_opts o = {.mode = amodes[i]};
            json_t *lr = NULL, *rr = NULL;
            CHECK(tl_decide_json(local, CONTEXT, strlen(CONTEXT), as, &o, &lr, &err) == TL_OK);
            tl_status st = tl_decide_json(remote_tok, CONTEXT, strlen(CONTEXT), as, &o, &rr, &err);
            CHECKF(st == TL_OK, "array of objects remote (%s): %s", amodes[i], err.msg);
            if (lr && rr) {
                compare(lr, rr, amodes[i], 1e-4);
                const json_t *lv = json_object_get(lr, "values"), *rv = json_object_get(rr, "values");
                CHECKF(json_equal(lv, rv), "%s: array-of-objects values differ", amodes[i]);
                const json_t *people = json_object_get(rv, "people");
                json_int_t len = json_integer_value(
                    json_object_get(json_object_get(json_object_get(rr, "fields"), "people#length"), "value"));
                CHECKF(json_is_array(people) && (json_int_t)json_array_size(people) == len && len >= 1 && len <= 3,
                       "%s: people has %zu items, the length decision says %lld", amodes[i], json_array_size(people),
                       (long long)len);
            }
            json_decref(lr);
            json_decref(rr);
        }
        json_decref(as);
    }

    /* Open free text: the server generates under the JSON-string-body regex
     * and the client replays the reply as the local loop runs (closing, or
     * cutting at maxLength), so at T=0 the value equals the local one. */
    if (remote_tok) {
        const char *prompts[4] = {"note=\"", "Ticket #4471 summary: \"", "The customer wrote: \"", "x=\"\""};
        int closed_compared = 0;
        for (int k = 0; k < 4; k++) {
            int32_t *ids = NULL;
            size_t n = 0;
            CHECK(tl_backend_tokenize(local, prompts[k], strlen(prompts[k]), true, false, &ids, &n, &err) == TL_OK);
            for (int ml = 4; ml <= 24; ml += 10) {
                tl_freetext_params fp = {.terminator = "\"", .json_escapes = true, .max_chars = (size_t)ml};
                tl_freetext_result lr, rr;
                CHECK(tl_freetext_generate(local, ids, n, &fp, &lr, &err) == TL_OK);
                tl_status st = tl_freetext_generate(remote_tok, ids, n, &fp, &rr, &err);
                CHECKF(st == TL_OK, "remote free text: %s", err.msg);
                if (st == TL_OK) {
                    {
                        closed_compared += !lr.truncated;
                        CHECKF(lr.value_len == rr.value_len && !memcmp(lr.value, rr.value, lr.value_len),
                               "free text (max %d): local '%s' remote '%s'", ml, lr.value, rr.value);
                    }
                    CHECK(rr.n_chars <= (size_t)ml);
                }
                tl_freetext_result_free(&lr);
                tl_freetext_result_free(&rr);
            }
            free(ids);
        }
        fprintf(stderr, "free text: 8 values compared with local, %d closed by the model\n", closed_compared);
    }

    /* Numbers through regex. */
    if (remote) {
        int32_t *ids = NULL, *out = NULL;
        size_t n = 0, n_out = 0;
        CHECK(tl_backend_tokenize(remote, "The answer is ", 14, false, false, &ids, &n, &err) == TL_OK);
        tl_usage u = {0};
        tl_status st = remote->ops->generate_regex(remote, ids, n, "[1-9][0-9]{0,2}", 4, 0.0, 1, &out, &n_out, &u, &err);
        CHECKF(st == TL_OK && n_out >= 1, "generate_regex: %s", err.msg);
        tl_strbuf text = TL_STRBUF_INIT;
        if (st == TL_OK)
            tl_backend_detokenize(remote, out, n_out, &text, &err);
        const char *t = tl_strbuf_cstr(&text);
        bool digits = text.len >= 1 && text.len <= 3 && t[0] >= '1' && t[0] <= '9';
        for (size_t i = 1; i < text.len; i++)
            digits = digits && t[i] >= '0' && t[i] <= '9';
        CHECKF(digits, "regex output '%s'", t);
        CHECK(u.prompt_tokens == (int64_t)n);
        tl_strbuf_free(&text);
        free(ids);
        free(out);
    }

    /* The regexes typellm itself sends (src/constrain) are enforced by the
     * server: every sampled value is in range and ends with the terminator. */
    if (remote) {
        int32_t *ids = NULL;
        size_t n = 0;
        CHECK(tl_backend_tokenize(remote, "amount=\"", 8, false, false, &ids, &n, &err) == TL_OK);
        tl_number_spec specs[2];
        CHECK(tl_number_spec_integer(-50, 250, 1, &specs[0], &err) == TL_OK);
        const char *dec = "{\"type\":\"number\",\"minimum\":0,\"maximum\":1,\"x-decimals\":2}";
        CHECK(tl_number_spec_from_json(dec, strlen(dec), "/properties/p", &specs[1], &err) == TL_OK);
        tl_number_close close = {.terminator = "\""};
        for (int k = 0; k < 3; k++) {
            tl_strbuf re = TL_STRBUF_INIT;
            const char *vals[3] = {"meal", "travel", "equipment"};
            tl_status st = k < 2 ? tl_number_regex(&specs[k], &close, &re, &err) : tl_enum_regex(vals, 3, "\"", &re, &err);
            CHECKF(st == TL_OK, "regex %d: %s", k, err.msg);
            for (int seed = 0; seed < 4 && st == TL_OK; seed++) {
                int32_t *out = NULL;
                size_t n_out = 0;
                st = remote->ops->generate_regex(remote, ids, n, tl_strbuf_cstr(&re), 16, seed ? 1.0 : 0.0,
                                                 (uint64_t)seed, &out, &n_out, NULL, &err);
                CHECKF(st == TL_OK, "generate with %s: %s", tl_strbuf_cstr(&re), err.msg);
                tl_strbuf text = TL_STRBUF_INIT;
                if (st == TL_OK)
                    tl_backend_detokenize(remote, out, n_out, &text, &err);
                const char *t = tl_strbuf_cstr(&text);
                bool closed = text.len >= 1 && t[text.len - 1] == '"';
                bool ok = closed && (k < 2 ? tl_number_spec_accepts(&specs[k], t, text.len - 1, NULL)
                                           : (!strncmp(t, "meal\"", 5) || !strncmp(t, "travel\"", 7) ||
                                              !strncmp(t, "equipment\"", 10)));
                CHECKF(ok, "regex %s, seed %d: '%s'", tl_strbuf_cstr(&re), seed, t);
                tl_strbuf_free(&text);
                free(out);
            }
            tl_strbuf_free(&re);
        }
        free(ids);
    }

    /* 429 is retried (Retry-After honoured) until the server has room. */
    {
        char log_path[] = "/tmp/tl_server_log_XXXXXX";
        int log_fd = mkstemp(log_path);
        FILE *log = log_fd >= 0 ? fdopen(log_fd, "w") : NULL;
        CHECK(log != NULL);
        tl_server_params bp = {.port = 0, .n_threads = 1, .max_queue = 1, .log = log};
        tl_server *busy = NULL;
        CHECK(tl_server_new(m, &bp, &busy, &err) == TL_OK && tl_server_start(busy, &err) == TL_OK);
        char burl[64];
        snprintf(burl, sizeof burl, "http://127.0.0.1:%d", tl_server_port(busy));
        tl_sglang_params bpr = {.base_url = burl, .max_retries = 20};
        tl_backend *rb = NULL;
        CHECK(tl_backend_sglang_new(&bpr, &rb, &err) == TL_OK);
        /* Hold the only slot until the backend has been refused at least once. */
        CHECK(tl_server_slot_acquire(busy));
        decider d = {.b = rb, .schema = schema};
        pthread_t dt;
        pthread_create(&dt, NULL, decide_main, &d);
        int n429 = 0;
        for (int i = 0; i < 3000 && n429 == 0; i++) {
            struct timespec ms = {0, 10 * 1000000};
            nanosleep(&ms, NULL);
            n429 = count_in_file(log_path, "POST /generate 429");
        }
        tl_server_slot_release(busy);
        pthread_join(dt, NULL);
        CHECKF(n429 > 0, "the busy server never answered 429");
        CHECKF(d.status == TL_OK, "decide retried through 429: %s", d.err.msg);
        fprintf(stderr, "busy server: retried through %d x 429\n", count_in_file(log_path, "POST /generate 429"));
        json_t *res = d.result;
        json_decref(res);
        tl_backend_free(rb);
        tl_server_free(busy);
        fclose(log);
        unlink(log_path);
    }

    /* Failures: bad key, unreachable server. */
    tl_backend *bad = NULL;
    tl_sglang_params bk = {.base_url = url, .api_key = "wrong", .max_retries = 0};
    CHECK(tl_backend_sglang_new(&bk, &bad, &err) == TL_ERR_REMOTE && strstr(err.msg, "401"));
    tl_sglang_params un = {.base_url = "http://127.0.0.1:1", .max_retries = 1, .timeout_s = 2};
    CHECK(tl_backend_sglang_new(&un, &bad, &err) == TL_ERR_NETWORK && strstr(err.msg, "127.0.0.1:1"));
    tl_sglang_params nu = {.base_url = "ftp://x"};
    CHECK(tl_backend_sglang_new(&nu, &bad, &err) == TL_ERR_INVALID);

    json_decref(schema);
    tl_backend_free(local);
    tl_backend_free(remote);
    tl_backend_free(remote_tok);
    tl_server_free(srv);
    tl_model_free(m);
    return TEST_DONE();
}

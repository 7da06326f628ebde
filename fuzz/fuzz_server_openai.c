/* fuzz_server_openai.c: libFuzzer target for the OpenAI request parsers:
 * /v1/decisions (input items, questions, choices, levels; a request that
 * parses must give a decision schema the decision core accepts), and
 * /v1/chat/completions and /v1/completions (messages through the chat
 * template into token ids, sampling fields, response_format, the /generate
 * request they become). Bad input must give an OpenAI error body
 * ({"error":{"message","type","param","code"}}) with 400/404/413, never a
 * crash. The first byte picks the endpoint; the rest is the body. The model
 * (qwen2-d64-q8_0, ChatML) comes from $TL_FIXTURES (default ../shared/fixtures).
 * Seeds: fuzz/corpus/server_openai/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide/decide.h"
#include "server/server_internal.h"

static tl_model *model;
static tl_server *server;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *root = getenv("TL_FIXTURES");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/qwen2-d64-q8_0.gguf", root ? root : "../shared/fixtures");
    tl_error err = {0};
    tl_server_params p = {.n_threads = 1, .max_tokens = 2000};
    if (tl_model_load(path, &model, &err) != TL_OK || tl_server_new(model, &p, &server, &err) != TL_OK) {
        fprintf(stderr, "fuzz_server_openai: %s\n", err.msg);
        abort();
    }
    return 0;
}

/* An OpenAI error body: {"error":{"message": string, "type": string, "param", "code"}}. */
static void check_error(const parse_failure *f) {
    if (f->status != 400 && f->status != 404 && f->status != 413)
        abort();
    const json_t *e = json_object_get(f->body, "error");
    if (!json_is_string(json_object_get(e, "message")) || !json_is_string(json_object_get(e, "type")) ||
        !json_object_get(e, "param") || !json_object_get(e, "code"))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    parse_failure f = {0};
    switch (data[0] % 3) {
    case 0: {
        od_request r;
        if (!od_request_parse(body, len, OD_MAX_QUESTIONS, &r, &f)) {
            check_error(&f);
            break;
        }
        json_t *schema = od_build_schema(&r);
        tl_error err = {0};
        if (!schema || tl_decide_check_schema(schema, &err) != TL_OK) {
            fprintf(stderr, "a parsed request built a bad schema: %s\n", err.msg);
            abort();
        }
        json_decref(schema);
        od_request_free(&r);
        break;
    }
    default: {
        bool chat = data[0] % 3 == 1;
        if (!oai_request_check(server, body, len, chat, &f)) {
            /* gen_request_from_json speaks SGLang; its failures carry code, not type. */
            if (json_object_get(json_object_get(f.body, "error"), "type"))
                check_error(&f);
            else if (f.status != 400 && f.status != 413)
                abort();
        }
        break;
    }
    }
    json_decref(f.body);
    return 0;
}

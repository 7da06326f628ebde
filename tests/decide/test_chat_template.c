/* test_chat_template.c: decisions framed by the model's own chat template.
 *   - every fixture template that renders a plain conversation gives a
 *     framing whose generation prompt leaves no reasoning block open; the
 *     reasoning families close theirs exactly as the template does
 *     (Qwen3: "<think>\n\n</think>\n\n"; R1: the closing text the template
 *     writes after reasoning; gpt-oss: the final channel) or are refused;
 *   - on the fixture models whose GGUF carries Qwen3's template, a decision's
 *     scored position comes right after "</think>\n\n", and the prompt is the
 *     template's own rendering of the conversation;
 *   - --chat-template FILE (chat_template_jinja) overrides the model's. */
#include <jansson.h>
#include <string.h>

#include "backend/backend.h"
#include "decide/chat_template.h"
#include "decide/decide.h"
#include "engine/engine.h"
#include "template/template.h"
#include "reasoning_blocks.h"
#include "tl_test.h"
#include "util/fileio.h"

static char *slurp(const char *path) {
    char *data = NULL;
    size_t len;
    tl_error err;
    return tl_read_file(path, 16u << 20, &data, &len, &err) ? NULL : data;
}


static void derive_one(const char *name, tl_chat_derived *d, tl_status *st, tl_error *err) {
    char path[4600];
    snprintf(path, sizeof path, "%s/%s.jinja", tl_fixture("templates"), name);
    char *src = slurp(path);
    CHECKF(src != NULL, "%s", path);
    tl_chat_derive_opts o = {.source = name, .bos_text = "<s>", .eos_text = "</s>"};
    *st = src ? tl_chat_derive(src, strlen(src), &o, d, err) : TL_ERR_IO;
    free(src);
}

static void check_template(const char *name, const char *want_question_end) {
    tl_chat_derived d;
    tl_error err = {0};
    tl_status st;
    derive_one(name, &d, &st, &err);
    CHECKF(st == TL_OK, "%s: %s", name, err.msg);
    if (st)
        return;
    CHECKF(ends_with(d.framing.assistant_open, want_question_end), "%s: question ends \"%s\", want \"...%s\"", name,
           d.framing.assistant_open, want_question_end);
    CHECKF(d.reasoning, "%s is a reasoning template", name);
    tl_chat_derived_free(&d);
}

static void check_all_fixture_templates(void) {
    static const char *const names[] = {
        "Apertus-8B-Instruct", "Bielik-11B-v3.0-Instruct", "ByteDance-Seed-OSS", "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
        "GLM-4.6", "GLM-4.7-Flash", "GigaChat3-10B-A1.8B", "HuggingFaceTB-SmolLM3-3B", "Kimi-K2-Instruct", "LFM2-8B-A1B",
        "LFM2.5-8B-A1B", "MiMo-VL", "MiniMax-M2", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "Qwen-Qwen3-0.6B", "Qwen3.5-4B",
        "Reka-Edge", "StepFun3.5-Flash", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "deepseek-ai-DeepSeek-V3.2", "google-gemma-2-2b-it",
        "google-gemma-4-31B-it", "ibm-granite-granite-4.0", "llama-cpp-deepseek-r1", "llama-cpp-rwkv-world",
        "meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.2-3B-Instruct", "microsoft-Phi-3.5-mini-instruct",
        "mistralai-Mistral-Nemo-Instruct-2407", "moonshotai-Kimi-K2", "openai-gpt-oss-120b", "openbmb-MiniCPM5-1B",
        "unsloth-mistral-Devstral-Small-2507", "upstage-Solar-Open-100B"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        tl_chat_derived d;
        tl_error err = {0};
        tl_status st;
        derive_one(names[i], &d, &st, &err);
        CHECKF(st == TL_OK, "%s: %s", names[i], err.msg);
        if (st)
            continue;
        CHECKF(!leaves_block_open(d.framing.assistant_open), "%s: answer inside an open block: \"%s\"", names[i],
               d.framing.assistant_open);
        if (getenv("TL_SHOW_FRAMING"))
            fprintf(stderr, "%-48s %-8s q=%s | a=%s | p=[%s] | %s\n", names[i], d.framing.name,
                    json_dumps(json_string(d.framing.assistant_open), JSON_ENCODE_ANY),
                    json_dumps(json_string(d.framing.assistant_close), JSON_ENCODE_ANY), d.framing.label_prefix,
                    d.thinking);
        tl_chat_derived_free(&d);
    }
    /* forced reasoning closed with the family's own text, or the final channel */
    check_template("Qwen-Qwen3-0.6B", "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    check_template("Qwen3.5-4B", "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    check_template("deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "<｜Assistant｜><think>\n\n</think>\n\n");
    check_template("llama-cpp-deepseek-r1", "<｜Assistant｜><think>\n\n</think>\n\n");
    check_template("MiniMax-M2", "<think>\n\n</think>\n\n");
    check_template("StepFun3.5-Flash", "<|im_start|>assistant\n<think>\n\n</think>\n"); /* its own closing text */
    check_template("openai-gpt-oss-120b", "<|start|>assistant<|channel|>final<|message|>");
    check_template("google-gemma-4-31B-it", "<|channel>thought\n<channel|>");
    check_template("HuggingFaceTB-SmolLM3-3B", "<think>\n\n</think>\n");
    /* free-text reasoning that cannot be closed: refused, naming the template */
    tl_chat_derived d;
    tl_error err = {0};
    tl_status st;
    derive_one("Apriel-1.6-15b-Thinker-fixed", &d, &st, &err);
    CHECKF(st == TL_ERR_UNSUPPORTED && strstr(err.msg, "Apriel-1.6-15b-Thinker-fixed") && strstr(err.msg, "reasoning"),
           "Apriel: %d %s", st, err.msg);
}

/* a decision on a fixture model whose GGUF carries Qwen3's template */
static void check_model(const char *rel) {
    tl_model *m = NULL;
    tl_backend *b = NULL;
    tl_error err = {0};
    CHECKF(tl_model_load(tl_fixture(rel), &m, &err) == TL_OK, "%s: %s", rel, err.msg);
    tl_session_params sp = {.n_threads = 1};
    if (!m || tl_backend_local_new(m, &sp, &b, &err) != TL_OK) {
        tl_model_free(m);
        return;
    }
    CHECKF(b->chat_template && strstr(b->chat_template, "enable_thinking"), "%s carries Qwen3's template", rel);
    json_t *schema = json_loads("{\"type\":\"object\",\"properties\":{\"kind\":{\"type\":\"string\",\"enum\":[\"bug\","
                                "\"feature\"],\"question\":\"Bug or feature?\"},\"urgent\":{\"type\":\"boolean\"}}}",
                                0, NULL);
    tl_decide_opts o = {.mode = "sequential", .trace = true};
    json_t *res = NULL;
    const char *ctx = "The app crashes on start.";
    tl_status st = tl_decide_json(b, ctx, strlen(ctx), schema, &o, &res, &err);
    CHECKF(st == TL_OK, "%s: %s", rel, err.msg);
    for (int f = 0; f < 2 && res; f++) {
        json_t *tr = json_object_get(json_object_get(json_object_get(res, "fields"), f ? "urgent" : "kind"), "trace");
        const char *text = json_string_value(json_object_get(tr, "text"));
        CHECKF(text && ends_with(text, "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"),
               "%s: scored after: %s", rel, text ? text + (strlen(text) > 80 ? strlen(text) - 80 : 0) : "(none)");
        if (!f && text) {
            /* the first question's prompt is exactly the template's rendering of one user turn */
            const char *content = text + strlen("<|im_start|>user\n");
            size_t clen = strlen(content) - strlen("<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
            json_t *msgs = json_pack("[{s:s, s:s%}]", "role", "user", "content", content, clen);
            tl_template *t = NULL;
            tl_strbuf want = TL_STRBUF_INIT;
            json_t *vars = json_pack("{s:b}", "enable_thinking", 0);
            tl_chat_request req = {.messages = msgs, .add_generation_prompt = true, .vars = vars};
            CHECK(tl_template_parse(b->chat_template, strlen(b->chat_template), &t, &err) == TL_OK &&
                  tl_chat_render(t, &req, NULL, &want, &err) == TL_OK);
            CHECKF(!strcmp(tl_strbuf_cstr(&want), text), "%s: prompt differs from the template's rendering", rel);
            CHECK(strstr(text, ctx) != NULL);
            tl_strbuf_free(&want);
            tl_template_free(t);
            json_decref(vars);
            json_decref(msgs);
        }
    }
    CHECK(res && !strcmp(json_string_value(json_object_get(res, "chat_template_source")), "model"));
    json_decref(res);
    res = NULL;
    /* a given template replaces the model's */
    o.chat_template_jinja = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
    st = tl_decide_json(b, ctx, strlen(ctx), schema, &o, &res, &err);
    CHECKF(st == TL_OK, "%s: %s", rel, err.msg);
    json_t *tr = json_object_get(json_object_get(json_object_get(res, "fields"), "kind"), "trace");
    const char *text = json_string_value(json_object_get(tr, "text"));
    CHECKF(text && ends_with(text, "<|im_end|>\n<|im_start|>assistant\n") && !strstr(text, "think"), "given: %s",
           text ? text : "(none)");
    CHECK(res && !strcmp(json_string_value(json_object_get(res, "chat_template_source")), "given"));
    json_decref(res);
    res = NULL;
    /* a template that cannot frame a decision is an error naming it */
    o.chat_template_jinja = "{{ raise_exception('only tools conversations') }}";
    st = tl_decide_json(b, ctx, strlen(ctx), schema, &o, &res, &err);
    CHECKF(st != TL_OK && strstr(err.msg, "only tools conversations") && strstr(err.msg, "given chat template"),
           "raise: %s", err.msg);
    json_decref(schema);
    tl_backend_free(b);
    tl_model_free(m);
}

int main(void) {
    check_all_fixture_templates();
    check_model("models/qwen3-d64-f16.gguf");
    check_model("models/qwen2-d64-q8_0.gguf");
    return TEST_DONE();
}

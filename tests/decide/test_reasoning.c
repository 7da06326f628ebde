/* test_reasoning.c: decisions on reasoning models are scored where the model
 * gives its final answer, for every reasoning family in the fixtures.
 *
 * Real decisions (tl_decide_json with trace) on the fixture models that carry
 * a reasoning template of their own (Qwen3, Qwen3.5, Qwen3-MoE, SmolLM3,
 * gpt-oss, Gemma 4, Granite, Ministral 3 Reasoning), and on the qwen3 model
 * with every fixture template given as chat_template_jinja. For each, the
 * scored prompt (the first field's trace text) must be
 *   the template's own rendering of the question turn with the generation
 *   prompt (thinking off where the template reads it), followed only by
 *   reasoning-closing text (a family's tags and blank space, or gpt-oss's
 *   final-channel header),
 * must leave no reasoning block open, and must end in the family's known
 * closing text where the table below names it. A decision that cannot be
 * placed so is refused with an error naming the template. */
#include <dirent.h>
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

/* What may follow the template's generation prompt: closing text only. */
static const char *const closers[] = {"<think>", "</think>", "<seed:think>", "</seed:think>", "[THINK]", "[/THINK]",
                                      "<|START_THINKING|>", "<|END_THINKING|>", "<|channel|>final<|message|>",
                                      "\n", " "};

/* Where the families answer: the scored prompt's last characters. */
static const struct {
    const char *name, *ending;
} endings[] = {
    {"Qwen-Qwen3-0.6B", "<think>\n\n</think>\n\n"},
    {"Qwen3.5-4B", "<think>\n\n</think>\n\n"},
    {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "<think>\n\n</think>\n\n"},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "<think>\n</think>"},
    {"deepseek-ai-DeepSeek-V3.2", "<think></think>"},
    {"llama-cpp-deepseek-r1", "<think>\n\n</think>\n\n"},
    {"MiniMax-M2", "<think>\n\n</think>\n\n"},
    {"StepFun3.5-Flash", "<think>\n\n</think>\n"},
    {"HuggingFaceTB-SmolLM3-3B", "<think>\n\n</think>\n"},
    {"openai-gpt-oss-120b", "<|start|>assistant<|channel|>final<|message|>"},
    {"google-gemma-4-31B-it", "<|channel>thought\n<channel|>"},
    {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "<think></think>"},
    {"GLM-4.6", "<think></think>"},
    {"ByteDance-Seed-OSS", "</seed:think>"},
    {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", "<|START_THINKING|><|END_THINKING|>"},
    {"openbmb-MiniCPM5-1B", "<think>\n\n</think>\n\n"},
    {"models/qwen3-d64-f16.gguf", "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
    {"models/qwen35-d64-q8_0.gguf", "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
    {"models/qwen3moe-d64-q8_0.gguf", "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
    {"models/smollm3-gpt2-d64-f16.gguf", "<|im_start|>assistant\n<think>\n\n</think>\n"},
    {"models/gpt-oss-gpt2-d64-mxfp4.gguf", "<|start|>assistant<|channel|>final<|message|>"},
    {"models/gemma4-spm-d128-bf16.gguf", "<|turn>model\n<|channel>thought\n<channel|>"},
    {"models/mistral3-spm-d256-q4_k_m.gguf", "[/INST][THINK][/THINK]"},
    {"models/granite-gpt2-d64-bf16.gguf", "<|start_of_role|>assistant<|end_of_role|>"},
};
/* Refused: free-text reasoning that cannot be closed. */
static const char *const refused[] = {"Apriel-1.6-15b-Thinker-fixed"};

static const char ctx[] = "The app crashes on start.";
static int n_checked, n_refused, n_ending;


static bool only_closing_text(const char *x) {
    while (*x) {
        size_t i = 0;
        while (i < sizeof closers / sizeof *closers && strncmp(x, closers[i], strlen(closers[i])))
            i++;
        if (i == sizeof closers / sizeof *closers)
            return false;
        x += strlen(closers[i]);
    }
    return true;
}

/* The template's rendering of one user turn holding content[0..n), with the
 * generation prompt and thinking off. */
static char *render_turn(const char *tpl, const char *content, size_t n, const tl_vocab *v) {
    tl_template *t = NULL;
    tl_error err = {0};
    if (tl_template_parse(tpl, strlen(tpl), &t, &err))
        return NULL;
    json_t *msgs = json_pack("[{s:s, s:s%}]", "role", "user", "content", content, n);
    json_t *vars = json_pack("{s:b, s:b}", "enable_thinking", 0, "thinking", 0);
    if (strstr(tpl, "reasoning_effort"))
        json_object_set_new(vars, "reasoning_effort", json_string("low"));
    if (strstr(tpl, "thinking_budget"))
        json_object_set_new(vars, "thinking_budget", json_integer(0));
    char *bos = tl_chat_token_text(v, tl_vocab_bos(v)), *eos = tl_chat_token_text(v, tl_vocab_eos(v));
    tl_chat_request req = {.messages = msgs, .add_generation_prompt = true, .bos_token = bos, .eos_token = eos,
                           .vars = vars};
    tl_strbuf out = TL_STRBUF_INIT;
    tl_status st = tl_chat_render(t, &req, NULL, &out, &err);
    /* the decision's opening drops a BOS text the tokenizer adds itself */
    char *r = NULL;
    if (!st) {
        size_t skip = tl_vocab_add_bos(v) && bos && *bos && !strncmp(out.buf, bos, strlen(bos)) ? strlen(bos) : 0;
        r = strdup(out.buf + skip);
    }
    tl_strbuf_free(&out);
    json_decref(msgs);
    json_decref(vars);
    free(bos);
    free(eos);
    tl_template_free(t);
    return r;
}

/* One decision with template tpl (NULL: the model's own), named name. */
static void check_decision(tl_backend *b, const char *name, const char *tpl) {
    json_t *schema = json_loads("{\"type\":\"object\",\"properties\":{\"kind\":{\"type\":\"string\",\"enum\":[\"bug\","
                                "\"feature\"],\"question\":\"Bug or feature?\"}}}",
                                0, NULL);
    tl_decide_opts o = {.mode = "sequential", .trace = true, .style = "chat", .chat_template_jinja = tpl};
    json_t *res = NULL;
    tl_error err = {0};
    tl_status st = tl_decide_json(b, ctx, strlen(ctx), schema, &o, &res, &err);
    bool want_refusal = false;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        want_refusal |= !strcmp(name, refused[i]);
    if (st) {
        /* refused: only where expected, or a template that cannot render a plain conversation; named either way */
        CHECKF(want_refusal || st == TL_ERR_INVALID, "%s: refused: %s", name, err.msg);
        CHECKF(strstr(err.msg, tpl ? "the given chat template" : "the model's chat template") != NULL,
               "%s: the error names the template: %s", name, err.msg);
        if (want_refusal)
            CHECKF(st == TL_ERR_UNSUPPORTED && strstr(err.msg, "reasoning"), "%s: refusal says why: %s", name, err.msg);
        n_refused++;
        json_decref(schema);
        return;
    }
    CHECKF(!want_refusal, "%s: decided, but its answer would sit inside free-text reasoning", name);
    const json_t *tr = json_object_get(json_object_get(json_object_get(res, "fields"), "kind"), "trace");
    const char *text = json_string_value(json_object_get(tr, "text"));
    const char *c0 = text ? strstr(text, ctx) : NULL, *c1 = c0 ? strstr(c0, "\n)") : NULL;
    CHECKF(c1 != NULL, "%s: the question is in the scored prompt", name);
    if (c1) {
        const char *src = tpl ? tpl : b->chat_template;
        char *want = render_turn(src, c0, (size_t)(c1 + 2 - c0), b->vocab);
        CHECKF(want && !strncmp(text, want, strlen(want)), "%s: the scored prompt starts with the template's rendering",
               name);
        const char *x = want && !strncmp(text, want, strlen(want)) ? text + strlen(want) : "";
        CHECKF(only_closing_text(x), "%s: after the generation prompt only closing text: \"%s\"", name, x);
        CHECKF(!leaves_block_open(text + (c1 - text)), "%s: a reasoning block is left open: ...%s", name,
               text + strlen(text) - (strlen(text) > 60 ? 60 : strlen(text)));
        CHECKF(!ends_with(text, "<|start|>assistant"), "%s: gpt-oss's channel left to the model", name);
        for (size_t i = 0; i < sizeof endings / sizeof *endings; i++)
            if (!strcmp(name, endings[i].name)) {
                CHECKF(ends_with(text, endings[i].ending), "%s: scored after \"%s\"", name,
                       text + strlen(text) - (strlen(text) > 50 ? 50 : strlen(text)));
                n_ending++;
            }
        if (getenv("TL_SHOW_FRAMING"))
            fprintf(stderr, "%-48s +%s\n", name, json_dumps(json_string(x), JSON_ENCODE_ANY));
        free(want);
        n_checked++;
    }
    json_decref(res);
    json_decref(schema);
}

static bool open_backend(const char *rel, tl_model **m, tl_backend **b) {
    tl_error err = {0};
    tl_session_params sp = {.n_threads = 1};
    *m = NULL;
    *b = NULL;
    CHECKF(tl_model_load(tl_fixture(rel), m, &err) == TL_OK && tl_backend_local_new(*m, &sp, b, &err) == TL_OK, "%s: %s",
           rel, err.msg);
    return *b != NULL;
}

int main(void) {
    /* the fixture models' own reasoning templates */
    static const char *const models[] = {"models/qwen3-d64-f16.gguf",         "models/qwen35-d64-q8_0.gguf",
                                         "models/qwen3moe-d64-q8_0.gguf",     "models/smollm3-gpt2-d64-f16.gguf",
                                         "models/gpt-oss-gpt2-d64-mxfp4.gguf", "models/gemma4-spm-d128-bf16.gguf",
                                         "models/mistral3-spm-d256-q4_k_m.gguf", "models/granite-gpt2-d64-bf16.gguf"};
    tl_model *m;
    tl_backend *b;
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        if (open_backend(models[i], &m, &b))
            check_decision(b, models[i], NULL);
        tl_backend_free(b);
        tl_model_free(m);
    }
    /* every fixture template that reasons, given to the qwen3 model */
    if (!open_backend("models/qwen3-d64-f16.gguf", &m, &b))
        return TEST_DONE();
    const char *dir = tl_fixture("templates");
    DIR *d = opendir(dir);
    CHECKF(d != NULL, "%s", dir);
    struct dirent *e;
    int n_reasoning = 0;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 7 || strcmp(e->d_name + n - 6, ".jinja"))
            continue;
        char path[4600], name[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(name, sizeof name, "%.*s", (int)(n - 6), e->d_name);
        char *src = NULL;
        size_t len;
        tl_error err = {0};
        CHECKF(tl_read_file(path, 16u << 20, &src, &len, &err) == TL_OK, "%s", path);
        tl_template_info info;
        tl_template_describe(src, len, &info, &err);
        if (info.reasoning) {
            n_reasoning++;
            check_decision(b, name, src);
        }
        free(src);
    }
    if (d)
        closedir(d);
    fprintf(stderr, "test_reasoning: %d reasoning templates and %zu models: %d scored after closing text (%d "
                    "against a known ending), %d refused with the template named\n",
            n_reasoning, sizeof models / sizeof *models, n_checked, n_ending, n_refused);
    CHECKF(n_reasoning >= 20 && n_ending >= (int)(sizeof endings / sizeof *endings),
           "every family in the table was decided (%d reasoning templates, %d endings)", n_reasoning, n_ending);
    tl_backend_free(b);
    tl_model_free(m);
    return TEST_DONE();
}

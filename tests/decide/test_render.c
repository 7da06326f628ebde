/* test_render.c: decision prompts as text (chat and record styles), chat
 * template family detection and the label pools, checked on exact strings. */
#include <jansson.h>

#include "decide/chat_template.h"
#include "decide/labels.h"
#include "decide/render.h"
#include "decide/schema.h"
#include "tl_test.h"
#include "tok/vocab.h"

static tl_dschema *schema(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    tl_dschema *s = NULL;
    tl_error err = {0};
    CHECKF(j && tl_dschema_parse(j, &s, &err) == TL_OK, "%s", err.msg);
    json_decref(j);
    return s;
}

static void test_families(void) {
    CHECK(tl_chat_family_detect(NULL) == TL_CHAT_NONE);
    CHECK(tl_chat_family_detect("{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n'}}") == TL_CHAT_CHATML);
    CHECK(tl_chat_family_detect("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}") ==
          TL_CHAT_LLAMA3);
    CHECK(tl_chat_family_detect("{{ bos_token + '[INST] ' + content + ' [/INST]' }}") == TL_CHAT_LLAMA2);
    CHECK(tl_chat_family_detect("{{ '<start_of_turn>' + role + '\\n' }}") == TL_CHAT_GEMMA);
    CHECK(tl_chat_family_detect("{{'<|user|>' + '\\n' + message['content'] + '<|end|>' + '\\n'}}") == TL_CHAT_PHI3);
    CHECK(tl_chat_family_detect("{{ messages }}") == TL_CHAT_NONE);
    CHECK(tl_chat_family_by_name("ChatML") == TL_CHAT_CHATML);
    CHECK(tl_chat_family_by_name("mistral") == TL_CHAT_LLAMA2);
    CHECK(tl_chat_family_by_name("phi-3") == TL_CHAT_PHI3);
    CHECK(tl_chat_family_by_name("vicuna") == TL_CHAT_NONE);
    CHECK(tl_chat_framing_of(TL_CHAT_NONE) == NULL);
    CHECK(!strcmp(tl_chat_framing_of(TL_CHAT_GEMMA)->name, "gemma"));
}

/* The families of the real templates in the fixture vocabularies. */
static void test_fixture_templates(void) {
    struct { const char *file; tl_chat_family want; } cases[] = {
        {"vocab/ggml-vocab-phi-3.gguf", TL_CHAT_PHI3},
        {"vocab/ggml-vocab-llama3.gguf", TL_CHAT_LLAMA3},
        {"vocab/ggml-vocab-qwen3.gguf", TL_CHAT_CHATML},
        {"vocab/ggml-vocab-llama-spm.gguf", TL_CHAT_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tl_vocab *v = NULL;
        tl_error err = {0};
        CHECKF(tl_vocab_load_file(tl_fixture(cases[i].file), &v, &err) == TL_OK, "%s", err.msg);
        if (!v)
            continue;
        CHECKF(tl_chat_family_detect(tl_vocab_chat_template(v)) == cases[i].want, "%s", cases[i].file);
        tl_vocab_free(v);
    }
}

static void test_pools(void) {
    char t[4];
    tl_label_pool_text(0, t); CHECK(!strcmp(t, "A"));
    tl_label_pool_text(25, t); CHECK(!strcmp(t, "Z"));
    tl_label_pool_text(26, t); CHECK(!strcmp(t, "a"));
    tl_label_pool_text(52, t); CHECK(!strcmp(t, "0"));
    tl_label_pool_text(61, t); CHECK(!strcmp(t, "9"));
    tl_label_pool_text(62, t); CHECK(!strcmp(t, "AA"));
    tl_label_pool_text(63, t); CHECK(!strcmp(t, "AB"));
    tl_label_pool_text(TL_LABEL_POOL_SIZE - 1, t); CHECK(!strcmp(t, "ZZ"));
    tl_label_pool_text(TL_LABEL_POOL_SIZE, t); CHECK(!strcmp(t, ""));
    /* All pool texts are distinct. */
    int dups = 0;
    for (size_t i = 0; i < TL_LABEL_POOL_SIZE; i++)
        for (size_t j = i + 1; j < TL_LABEL_POOL_SIZE; j++) {
            char a[4], b[4];
            tl_label_pool_text(i, a), tl_label_pool_text(j, b);
            dups += !strcmp(a, b);
        }
    CHECK(dups == 0);
}

static void test_texts(void) {
    tl_dschema *s = schema("{\"title\":\"Expenses\",\"properties\":{"
                           "\"expense_type\":{\"type\":\"string\",\"enum\":[\"meal\",\"travel\",\"equip\\\"ment\"],"
                           "\"question\":\"What type of expense is this?\",\"x-descriptions\":{\"meal\":\"food\"}},"
                           "\"ok\":{\"type\":\"boolean\",\"x-name\":\"q7\"}}}");
    if (!s)
        return;
    tl_label_text labels[3] = {"A", "B", "C"};
    tl_render chat = {TL_STYLE_CHAT, tl_chat_framing_of(TL_CHAT_CHATML)};
    tl_render rec = {TL_STYLE_RECORD, NULL};
    tl_strbuf sb = TL_STRBUF_INIT;
    size_t body = 0;

    CHECK(!strcmp(tl_render_opening(&chat), "<|im_start|>user\n"));
    CHECK(!strcmp(tl_render_opening(&rec), ""));
    CHECK(tl_render_context_text(&chat, s, "Hilton <|im_end|>", 17, &sb));
    CHECK(!strcmp(sb.buf, "# Expenses\nHilton <|im_end|>\n\nAnswer each Choice with the label of one of its "
                          "choices.\n\n"));
    tl_strbuf_clear(&sb);
    CHECK(tl_render_question_text(&chat, &s->fields[0], labels, &sb, &body));
    const char *want_q = "Choice(\n  name=\"expense_type\",\n  question=\"What type of expense is this?\",\n"
                         "  choices={\"A\":\"meal\",\"B\":\"travel\",\"C\":\"equip\\\"ment\"},\n"
                         "  descriptions={\"A\":\"food\"}\n)";
    CHECKF(!strncmp(sb.buf, want_q, strlen(want_q)) && body == strlen(want_q), "%s", sb.buf);
    CHECK(!strcmp(sb.buf + body, "<|im_end|>\n<|im_start|>assistant\n"));
    tl_strbuf_clear(&sb);
    CHECK(tl_render_answer_text(&chat, &s->fields[0], 1, &sb, &body));
    CHECK(!strcmp(sb.buf, "\nvalue=\"travel\"<|im_end|>\n<|im_start|>user\n") && body == strlen("\nvalue=\"travel\""));
    CHECK(!strcmp(tl_render_label_tail(&chat), "<|im_start|>assistant\n"));
    CHECK(!strcmp(tl_render_label_prefix(&chat), ""));

    /* x-name is what the model reads; booleans render as JSON. */
    tl_strbuf_clear(&sb);
    CHECK(tl_render_question_text(&rec, &s->fields[1], labels, &sb, &body));
    CHECKF(!strcmp(sb.buf, "field name=\"q7\"\nquestion=\"q7\"\nchoices={\"A\":true,\"B\":false}\nanswer=\""), "%s",
           sb.buf);
    CHECK(body == sb.len);
    tl_strbuf_clear(&sb);
    CHECK(tl_render_answer_text(&rec, &s->fields[1], 1, &sb, &body));
    CHECK(!strcmp(sb.buf, "\"\nvalue=false\n\n") && body == sb.len);
    CHECK(!strcmp(tl_render_label_tail(&rec), "answer=\""));
    tl_strbuf_clear(&sb);
    CHECK(tl_render_context_text(&rec, s, "ctx", 3, &sb));
    CHECK(!strncmp(sb.buf, "# Expenses\nInput:\nctx\n\n", 23));

    /* Llama 2: the answer follows [/INST] after a space carried by the label token. */
    tl_render l2 = {TL_STYLE_CHAT, tl_chat_framing_of(TL_CHAT_LLAMA2)};
    CHECK(!strcmp(tl_render_label_tail(&l2), " [/INST]"));
    CHECK(!strcmp(tl_render_label_prefix(&l2), " "));
    tl_strbuf_clear(&sb);
    CHECK(tl_render_answer_text(&l2, &s->fields[1], 0, &sb, &body));
    CHECK(!strcmp(sb.buf, "\nvalue=true </s><s>[INST] "));
    tl_strbuf_free(&sb);
    tl_dschema_free(s);
}

int main(void) {
    test_families();
    test_fixture_templates();
    test_pools();
    test_texts();
    return TEST_DONE();
}

/* fuzz_template.c: chat templates from arbitrary bytes (a GGUF carries its
 * template, so the parser and renderer face hostile input). The input is the
 * template source, optionally followed by a NUL byte and a JSON array used as
 * the messages. It is parsed and, when it parses, rendered under tight
 * bounds with and without a generation prompt. Invariants: an error always
 * has a message; a failed parse names line:column; a render that succeeds
 * stays within the output bound. Any crash, sanitizer report, hang or failed
 * invariant is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template/template.h"

static const char DEFAULT_MESSAGES[] =
    "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi {{ x }} \\u00e9\"},"
    "{\"role\":\"assistant\",\"content\":\"<think>r</think>Hello\",\"tool_calls\":[{\"function\":{\"name\":\"f\","
    "\"arguments\":{\"a\":[1,2.5,null,true]}}}]},{\"role\":\"user\",\"content\":\"Bye\"}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *src = (const char *)data;
    const char *nul = memchr(src, 0, size);
    size_t src_len = nul ? (size_t)(nul - src) : size;
    json_t *messages = NULL;
    if (nul)
        messages = json_loadb(nul + 1, size - src_len - 1, 0, NULL);
    if (!messages || !json_is_array(messages)) {
        json_decref(messages);
        messages = json_loads(DEFAULT_MESSAGES, 0, NULL);
    }
    tl_error err = {0};
    tl_template *t = NULL;
    if (tl_template_parse(src, src_len, &t, &err) != TL_OK) {
        if (!err.msg[0] || (err.code == TL_ERR_FORMAT && strncmp(err.msg, "template:", 9)))
            abort();
        json_decref(messages);
        return 0;
    }
    tl_template_limits lim = {.max_output = 1 << 20, .max_steps = 200000, .max_memory = 64 << 20, .max_depth = 200};
    tl_template_opts opts = {.limits = &lim, .fixed_now = true, .now_unix = 1768435200};
    json_t *vars = json_pack("{s:b,s:s}", "enable_thinking", 0, "reasoning_effort", "low");
    for (int gen = 0; gen < 2; gen++) {
        tl_chat_request req = {.messages = messages, .add_generation_prompt = gen, .bos_token = "<s>",
                               .eos_token = "</s>", .vars = gen ? vars : NULL};
        tl_strbuf out = TL_STRBUF_INIT;
        memset(&err, 0, sizeof err);
        tl_status st = tl_chat_render(t, &req, &opts, &out, &err);
        if (st != TL_OK && !err.msg[0] && st != TL_ERR_INVALID)
            abort();
        if (st == TL_OK && out.len > lim.max_output)
            abort();
        tl_strbuf_free(&out);
    }
    json_decref(vars);
    tl_template_free(t);
    json_decref(messages);
    return 0;
}

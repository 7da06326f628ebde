/* chat_template.c: family detection and turn framing (see chat_template.h).
 * The strings follow each family's published template for a user turn
 * followed by the generation prompt, without any default system prompt. */
#include "decide/chat_template.h"

#include <string.h>
#include <strings.h>

static const tl_chat_framing framings[] = {
    [TL_CHAT_CHATML] = {"chatml", "<|im_start|>user\n", "<|im_end|>\n", "<|im_start|>assistant\n", "",
                        "<|im_end|>\n"},
    [TL_CHAT_LLAMA3] = {"llama3", "<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>",
                        "<|start_header_id|>assistant<|end_header_id|>\n\n", "", "<|eot_id|>"},
    [TL_CHAT_LLAMA2] = {"llama2", "[INST] ", " [/INST]", "", " ", " </s><s>"},
    [TL_CHAT_GEMMA] = {"gemma", "<start_of_turn>user\n", "<end_of_turn>\n", "<start_of_turn>model\n", "",
                       "<end_of_turn>\n"},
    [TL_CHAT_PHI3] = {"phi3", "<|user|>\n", "<|end|>\n", "<|assistant|>\n", "", "<|end|>\n"},
};

tl_chat_family tl_chat_family_detect(const char *jinja) {
    if (!jinja)
        return TL_CHAT_NONE;
    /* Most specific markers first: Phi-3 and Llama 3 templates may mention [INST]-free text only. */
    if (strstr(jinja, "<|im_start|>"))
        return TL_CHAT_CHATML;
    if (strstr(jinja, "<|start_header_id|>"))
        return TL_CHAT_LLAMA3;
    if (strstr(jinja, "<start_of_turn>"))
        return TL_CHAT_GEMMA;
    if (strstr(jinja, "<|user|>") && strstr(jinja, "<|end|>"))
        return TL_CHAT_PHI3;
    if (strstr(jinja, "[INST]"))
        return TL_CHAT_LLAMA2;
    return TL_CHAT_NONE;
}

tl_chat_family tl_chat_family_by_name(const char *name) {
    if (!name)
        return TL_CHAT_NONE;
    if (!strcasecmp(name, "chatml") || !strcasecmp(name, "qwen"))
        return TL_CHAT_CHATML;
    if (!strcasecmp(name, "llama3") || !strcasecmp(name, "llama-3"))
        return TL_CHAT_LLAMA3;
    if (!strcasecmp(name, "llama2") || !strcasecmp(name, "llama-2") || !strcasecmp(name, "mistral"))
        return TL_CHAT_LLAMA2;
    if (!strcasecmp(name, "gemma"))
        return TL_CHAT_GEMMA;
    if (!strcasecmp(name, "phi3") || !strcasecmp(name, "phi-3"))
        return TL_CHAT_PHI3;
    return TL_CHAT_NONE;
}

const tl_chat_framing *tl_chat_framing_of(tl_chat_family f) {
    if (f <= TL_CHAT_NONE || f > TL_CHAT_PHI3)
        return NULL;
    return &framings[f];
}

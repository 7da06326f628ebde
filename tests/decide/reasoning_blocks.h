/* reasoning_blocks.h: what the decision tests call a reasoning block left
 * open (test_chat_template.c, test_reasoning.c): the last opening tag of a
 * family with no closing tag after it. */
#ifndef TL_TEST_REASONING_BLOCKS_H
#define TL_TEST_REASONING_BLOCKS_H

#include <stdbool.h>
#include <string.h>

static const char *const reasoning_blocks[][2] = {{"<think>", "</think>"},   {"<seed:think>", "</seed:think>"},
                                                  {"[THINK]", "[/THINK]"},   {"<|START_THINKING|>", "<|END_THINKING|>"},
                                                  {"<|channel>thought", "<channel|>"}};

static inline bool leaves_block_open(const char *q) {
    for (size_t k = 0; k < sizeof reasoning_blocks / sizeof *reasoning_blocks; k++) {
        const char *open = NULL;
        for (const char *p = q; (p = strstr(p, reasoning_blocks[k][0])); p++)
            open = p;
        if (open && !strstr(open, reasoning_blocks[k][1]))
            return true;
    }
    return false;
}

static inline bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

#endif

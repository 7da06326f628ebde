/* test_ref_prompts.c: every reference tokenization in $TL_FIXTURES/ref agrees.
 *
 * ref/MODEL.PROMPT.json holds "tokens": ref/PROMPT.txt tokenized by the
 * reference engine with MODEL's vocabulary (BOS where add_bos, special tokens
 * such as <|im_start|> parsed). Each must come out identical here, and the ids
 * must detokenize back to the prompt. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tok/vocab.h"
#include "util/fileio.h"
#include "util/strbuf.h"

/* One load per model (files are visited sorted, so a model's prompts come together). */
static char cached_model[256];
static tl_vocab *cached_vocab;

static tl_vocab *vocab_for(const char *model) {
    if (cached_vocab && !strcmp(cached_model, model))
        return cached_vocab;
    tl_vocab_free(cached_vocab);
    cached_vocab = NULL;
    snprintf(cached_model, sizeof cached_model, "%s", model);
    char path[1024];
    snprintf(path, sizeof path, "models/%s.gguf", model);
    tl_error err = {0};
    CHECKF(tl_vocab_load_file(tl_fixture(path), &cached_vocab, &err) == TL_OK, "%s", err.msg);
    return cached_vocab;
}

static void check_one(const char *json_name) {
    /* MODEL.PROMPT.json: the model name may contain dots (none do today, but split at the last one) */
    char model[256], prompt[256];
    const char *ext = strstr(json_name, ".json");
    const char *dot = NULL;
    for (const char *p = json_name; p < ext; p++)
        if (*p == '.')
            dot = p;
    if (!dot || (size_t)(dot - json_name) >= sizeof model || (size_t)(ext - dot) >= sizeof prompt)
        return;
    snprintf(model, sizeof model, "%.*s", (int)(dot - json_name), json_name);
    snprintf(prompt, sizeof prompt, "%.*s", (int)(ext - dot - 1), dot + 1);

    char path[1024];
    snprintf(path, sizeof path, "ref/%s", json_name);
    json_error_t jerr;
    json_t *root = json_load_file(tl_fixture(path), 0, &jerr);
    CHECKF(root != NULL, "%s: %s", json_name, jerr.text);
    if (!root)
        return;
    json_t *tokens = json_object_get(root, "tokens");
    if (!json_is_array(tokens)) { /* greedy-*.json hold generations, not prompt tokenizations */
        json_decref(root);
        return;
    }
    snprintf(path, sizeof path, "ref/%s.txt", prompt);
    char *text;
    size_t len;
    tl_error err = {0};
    CHECKF(tl_read_file(tl_fixture(path), 1 << 20, &text, &len, &err) == TL_OK, "%s", err.msg);
    tl_vocab *v = vocab_for(model);
    if (v && text) {
        int32_t *ids;
        size_t n;
        CHECK(tl_vocab_tokenize(v, text, len, true, true, &ids, &n, &err) == TL_OK);
        size_t want_n = json_array_size(tokens);
        size_t first_diff = n < want_n ? n : want_n;
        for (size_t i = 0; i < first_diff; i++)
            if (ids[i] != (int32_t)json_integer_value(json_array_get(tokens, i))) {
                first_diff = i;
                break;
            }
        CHECKF(n == want_n && first_diff == n, "%s: %zu ids (want %zu), first difference at %zu", json_name, n,
               want_n, first_diff);
        /* and back: BOS and control tokens render as their text with render_special */
        tl_strbuf sb = TL_STRBUF_INIT;
        CHECK(tl_vocab_detokenize(v, ids, n, true, true, &sb, &err) == TL_OK);
        size_t skip = 0;
        if (n > 0 && tl_vocab_add_bos(v) && ids[0] == tl_vocab_bos(v)) {
            size_t bl;
            tl_vocab_token_piece(v, ids[0], &bl);
            skip = bl; /* the BOS text is not part of the prompt */
        }
        CHECKF(sb.len == len + skip && memcmp(tl_strbuf_cstr(&sb) + skip, text, len) == 0,
               "%s: detokenize does not give the prompt back", json_name);
        tl_strbuf_free(&sb);
        free(ids);
    }
    free(text);
    json_decref(root);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void) {
    DIR *d = opendir(tl_fixture("ref"));
    CHECK(d != NULL);
    char *names[512];
    size_t n_files = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n_files < 512) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json"))
            names[n_files++] = strdup(e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, n_files, sizeof names[0], cmp_str);
    for (size_t i = 0; i < n_files; i++) {
        check_one(names[i]);
        free(names[i]);
    }
    tl_vocab_free(cached_vocab);
    CHECK(n_files >= 40);
    return TEST_DONE();
}

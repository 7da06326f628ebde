/* test_fixtures.c: every published chat template in fixtures/templates/
 * renders every case (a-g, and h with tools) byte for byte as transformers'
 * apply_chat_template did; a template that raised in the reference raises
 * here with the same message, one that failed otherwise fails here too. */
#include <dirent.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "template/template.h"
#include "tl_test.h"
#include "util/fileio.h"

static char *slurp(const char *path, size_t *len) {
    char *data = NULL;
    tl_error err;
    if (tl_read_file(path, 64u << 20, &data, len, &err))
        return NULL;
    return data;
}

static int n_ok, n_raise, n_error, n_fail;

static void run_case(const char *name, const tl_template *t, const char *case_id, json_t *c, json_t *tokens,
                     const char *expect_dir, const char *status) {
    char path[8192];
    tl_chat_request req = {0};
    req.messages = json_object_get(c, "messages");
    req.add_generation_prompt = json_is_true(json_object_get(c, "add_generation_prompt"));
    req.tools = json_object_get(c, "tools");
    json_t *tok = json_object_get(tokens, name);
    req.bos_token = json_string_value(json_object_get(tok, "bos_token"));
    req.eos_token = json_string_value(json_object_get(tok, "eos_token"));
    req.vars = json_object_get(c, "kwargs");
    struct tm tm = {.tm_year = 126, .tm_mon = 0, .tm_mday = 15};
    tl_template_opts opts = {.fixed_now = true, .now_unix = (int64_t)timegm(&tm)};
    tl_strbuf out = TL_STRBUF_INIT;
    tl_error err = {0};
    tl_status st = tl_chat_render(t, &req, &opts, &out, &err);
    if (!strcmp(status, "ok")) {
        snprintf(path, sizeof path, "%s/%s.%s.txt", expect_dir, name, case_id);
        size_t elen = 0;
        char *exp = slurp(path, &elen);
        CHECKF(exp != NULL, "%s", path);
        bool same = !st && exp && out.len == elen && !memcmp(out.buf ? out.buf : "", exp, elen);
        if (!same) {
            n_fail++;
            size_t k = 0;
            while (exp && k < out.len && k < elen && out.buf[k] == exp[k])
                k++;
            fprintf(stderr, "MISMATCH %s.%s: %s; got %zu bytes, want %zu; first difference at %zu\n", name, case_id,
                    st ? err.msg : "rendered", out.len, elen, k);
            if (exp && !st) {
                fprintf(stderr, "  got:  \"%.60s\"\n  want: \"%.60s\"\n", out.buf + k, exp + k);
            }
        } else
            n_ok++;
        CHECK(same);
        free(exp);
    } else {
        snprintf(path, sizeof path, "%s/%s.%s.error", expect_dir, name, case_id);
        size_t elen = 0;
        char *exp = slurp(path, &elen);
        bool good = st != TL_OK;
        if (good && !strcmp(status, "raise"))
            good = exp && strlen(err.msg) == elen && !memcmp(err.msg, exp, elen);
        if (!good) {
            n_fail++;
            fprintf(stderr, "MISMATCH %s.%s: want %s \"%s\", got %s \"%s\"\n", name, case_id, status, exp ? exp : "?",
                    st ? "error" : "success", st ? err.msg : "");
        } else if (!strcmp(status, "raise"))
            n_raise++;
        else
            n_error++;
        CHECK(good);
        free(exp);
    }
    tl_strbuf_free(&out);
}

int main(void) {
    char dir[4200], path[8192];
    snprintf(dir, sizeof dir, "%s", tl_fixture("templates"));
    snprintf(path, sizeof path, "%s/cases.json", dir);
    json_error_t je;
    json_t *cases = json_load_file(path, 0, &je);
    CHECKF(cases != NULL, "%s: %s", path, je.text);
    if (!cases)
        return TEST_DONE();
    snprintf(path, sizeof path, "%s/expected/summary.json", dir);
    json_t *summary = json_load_file(path, 0, &je);
    snprintf(path, sizeof path, "%s/expected-extra/summary.json", dir);
    json_t *summary_extra = json_load_file(path, 0, &je);
    CHECK(summary && summary_extra);
    json_t *tokens = json_object_get(cases, "tokens");
    int n_templates = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 7 || strcmp(e->d_name + n - 6, ".jinja"))
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 6), e->d_name);
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        char *src = slurp(path, &len);
        tl_template *t = NULL;
        tl_error err = {0};
        tl_status st = src ? tl_template_parse(src, len, &t, &err) : TL_ERR_IO;
        CHECKF(st == TL_OK, "%s: %s", name, err.msg);
        free(src);
        if (st)
            continue;
        n_templates++;
        const char *id;
        json_t *c;
        json_t *sum = json_object_get(summary, name);
        CHECKF(sum != NULL, "%s not in summary.json", name);
        json_object_foreach(json_object_get(cases, "cases"), id, c) {
            const char *status = json_string_value(json_object_get(sum, id));
            snprintf(path, sizeof path, "%s/expected", dir);
            if (status)
                run_case(name, t, id, c, tokens, path, status);
        }
        json_t *sumx = json_object_get(summary_extra, name);
        json_object_foreach(json_object_get(cases, "extra_cases"), id, c) {
            const char *status = json_string_value(json_object_get(sumx, id));
            snprintf(path, sizeof path, "%s/expected-extra", dir);
            if (status)
                run_case(name, t, id, c, tokens, path, status);
        }
        tl_template_free(t);
    }
    if (d)
        closedir(d);
    CHECK(n_templates >= 40);
    fprintf(stderr, "templates: %d; cases: %d rendered exactly, %d raised as the reference, %d failed as the "
                    "reference; %d mismatches\n",
            n_templates, n_ok, n_raise, n_error, n_fail);
    json_decref(cases);
    json_decref(summary);
    json_decref(summary_extra);
    return TEST_DONE();
}

/* bench_template.c: chat-template render speed.
 *
 * Builds a conversation of about 4,000 tokens (a long system prompt, then
 * alternating user and assistant turns of varied prose; counted with the
 * qwen3 fixture's tokenizer on Qwen3's rendering) and renders it with every
 * template in $TL_FIXTURES/templates REPS times (default 200), with a
 * generation prompt and enable_thinking=false. Prints, per template, the
 * parse time, the mean render time (process CPU time, which stays meaningful
 * on a shared machine, and wall clock) and the rendered size. Templates that
 * fail for a plain conversation (the tools-only ones) are listed as such.
 * Run it through bench_template.sh. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "template/template.h"
#include "tok/vocab.h"
#include "util/fileio.h"

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const WORDS[] = {"the", "model", "renders", "a", "prompt", "with", "its", "own", "template,",
                                    "and", "every", "answer", "lands", "where", "it", "belongs.", "Tokens", "flow",
                                    "through", "layers;", "caches", "keep", "prefixes", "warm", "(usually)", "—",
                                    "naïve", "über", "42", "3.14", "\"quoted\"", "{braces}", "\n"};

static json_t *conversation(int turns, int words_per_turn) {
    json_t *msgs = json_array();
    unsigned seed = 12345;
    for (int t = -1; t < turns; t++) {
        int n = t < 0 ? words_per_turn * 3 : words_per_turn;
        char *buf = malloc((size_t)n * 16 + 1);
        size_t o = 0;
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            const char *w = WORDS[(seed >> 16) % (sizeof WORDS / sizeof *WORDS)];
            o += (size_t)sprintf(buf + o, "%s%s", i && w[0] != '\n' ? " " : "", w);
        }
        buf[o] = 0;
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", t < 0 ? "system" : t % 2 ? "assistant" : "user",
                                              "content", buf));
        free(buf);
    }
    /* end on a user turn */
    if (json_is_object(json_array_get(msgs, json_array_size(msgs) - 1)) &&
        !strcmp(json_string_value(json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "role")),
                "assistant"))
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", "And the last question?"));
    return msgs;
}

int main(int argc, char **argv) {
    const char *root = getenv("TL_FIXTURES");
    if (!root)
        root = "../shared/fixtures";
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    if (reps < 1)
        reps = 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/models/qwen3-d64-f16.gguf", root);
    tl_error err = {0};
    tl_vocab *v = NULL;
    if (tl_vocab_load_file(path, &v, &err)) {
        fprintf(stderr, "bench_template: %s\n", err.msg);
        return 1;
    }
    json_t *vars = json_pack("{s:b}", "enable_thinking", 0);
    json_t *msgs = conversation(24, 100);
    /* the token count on Qwen3's rendering */
    snprintf(path, sizeof path, "%s/templates/Qwen-Qwen3-0.6B.jinja", root);
    char *src;
    size_t len;
    tl_template *t;
    if (tl_read_file(path, 1 << 24, &src, &len, &err) || tl_template_parse(src, len, &t, &err)) {
        fprintf(stderr, "bench_template: %s\n", err.msg);
        return 1;
    }
    free(src);
    tl_chat_request req = {.messages = msgs, .add_generation_prompt = true, .vars = vars, .bos_token = "<s>",
                           .eos_token = "</s>"};
    tl_strbuf out = TL_STRBUF_INIT;
    int32_t *ids;
    size_t n_ids;
    if (tl_chat_render(t, &req, NULL, &out, &err) || tl_vocab_tokenize(v, out.buf, out.len, false, true, &ids, &n_ids, &err)) {
        fprintf(stderr, "bench_template: %s\n", err.msg);
        return 1;
    }
    tl_template_free(t);
    printf("conversation: %zu messages, %zu tokens (qwen3 tokenizer on Qwen3's rendering, %zu bytes); %d renders per "
           "template\n\n",
           json_array_size(msgs), n_ids, out.len, reps);
    free(ids);
    printf("%-48s %10s %12s %12s %9s\n", "template", "parse_us", "render_us", "wall_us", "bytes");
    DIR *d = opendir(path[0] ? root : ".");
    snprintf(path, sizeof path, "%s/templates", root);
    closedir(d);
    d = opendir(path);
    struct dirent *e;
    char *names[256];
    int n_names = 0;
    while (d && (e = readdir(d)) && n_names < 256) {
        size_t n = strlen(e->d_name);
        if (n > 6 && !strcmp(e->d_name + n - 6, ".jinja"))
            names[n_names++] = strdup(e->d_name);
    }
    if (d)
        closedir(d);
    for (int i = 0; i < n_names; i++)
        for (int j = i + 1; j < n_names; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char *x = names[i];
                names[i] = names[j];
                names[j] = x;
            }
    double worst = 0, sum = 0;
    int counted = 0;
    for (int i = 0; i < n_names; i++) {
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", path, names[i]);
        if (tl_read_file(p, 1 << 24, &src, &len, &err))
            continue;
        double c0 = cpu_seconds();
        tl_status st = tl_template_parse(src, len, &t, &err);
        double parse_us = (cpu_seconds() - c0) * 1e6;
        free(src);
        names[i][strlen(names[i]) - 6] = 0;
        if (st) {
            printf("%-48s parse error: %s\n", names[i], err.msg);
            continue;
        }
        tl_strbuf_clear(&out);
        if (tl_chat_render(t, &req, NULL, &out, &err)) {
            printf("%-48s %10.1f   (fails for a plain conversation: %.60s)\n", names[i], parse_us, err.msg);
            tl_template_free(t);
            continue;
        }
        double w0 = (double)clock() / CLOCKS_PER_SEC;
        struct timespec ws, we;
        clock_gettime(CLOCK_MONOTONIC, &ws);
        c0 = cpu_seconds();
        for (int r = 0; r < reps; r++) {
            tl_strbuf_clear(&out);
            tl_chat_render(t, &req, NULL, &out, &err);
        }
        double cpu_us = (cpu_seconds() - c0) * 1e6 / reps;
        clock_gettime(CLOCK_MONOTONIC, &we);
        double wall_us = ((double)(we.tv_sec - ws.tv_sec) + (double)(we.tv_nsec - ws.tv_nsec) * 1e-9) * 1e6 / reps;
        (void)w0;
        printf("%-48s %10.1f %12.1f %12.1f %9zu\n", names[i], parse_us, cpu_us, wall_us, out.len);
        if (cpu_us > worst)
            worst = cpu_us;
        sum += cpu_us;
        counted++;
        tl_template_free(t);
    }
    printf("\n%d templates rendered: mean %.1f us, slowest %.1f us per render (CPU time)\n", counted,
           counted ? sum / counted : 0, worst);
    for (int i = 0; i < n_names; i++)
        free(names[i]);
    tl_strbuf_free(&out);
    json_decref(msgs);
    json_decref(vars);
    tl_vocab_free(v);
    return 0;
}

/* bench_template.c: chat-template render speed.
 *
 * Builds a conversation of about 4,000 tokens (a long system prompt, then
 * alternating user and assistant turns of varied prose; counted with the
 * qwen3 fixture's tokenizer on Qwen3's rendering) and renders it with every
 * template in $TL_FIXTURES/templates REPS times (default 200), with a
 * generation prompt and enable_thinking=false, through the public call the
 * server makes (tl_template_render_chat: the conversation as JSON text, so a
 * render includes reading it). Prints, per template, the parse time, the
 * median and mean render time (process CPU time, which stays meaningful on a
 * shared machine), the mean wall clock and the rendered size. Templates that
 * fail for a plain conversation (the tools-only ones) are listed as such.
 * Only the public headers are used. Run it through bench_template.sh. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "typellm/template.h"
#include "typellm/util.h"
#include "typellm/vocab.h"

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
    json_t *msgs = conversation(24, 100);
    char *msgs_json = json_dumps(msgs, JSON_COMPACT);
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
    tl_chat_text_request req = {.messages_json = msgs_json, .add_generation_prompt = true,
                                .vars_json = "{\"enable_thinking\": false}", .bos_token = "<s>", .eos_token = "</s>"};
    tl_strbuf out = TL_STRBUF_INIT;
    int32_t *ids;
    size_t n_ids;
    if (tl_template_render_chat(t, &req, NULL, &out, &err) ||
        tl_vocab_tokenize(v, out.buf, out.len, false, true, &ids, &n_ids, &err)) {
        fprintf(stderr, "bench_template: %s\n", err.msg);
        return 1;
    }
    tl_template_free(t);
    printf("conversation: %zu messages, %zu tokens (qwen3 tokenizer on Qwen3's rendering, %zu bytes, %zu bytes of "
           "JSON); %d renders per template\n\n",
           json_array_size(msgs), n_ids, out.len, strlen(msgs_json), reps);
    free(ids);
    /* what reading the conversation's JSON alone costs (part of every render) */
    double *times = malloc(sizeof *times * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        double c0 = cpu_seconds();
        json_decref(json_loads(msgs_json, 0, NULL));
        times[r] = (cpu_seconds() - c0) * 1e6;
    }
    qsort(times, (size_t)reps, sizeof *times, by_value);
    printf("reading the messages' JSON (jansson): median %.1f us\n\n", times[reps / 2]);
    printf("%-48s %10s %11s %11s %11s %9s\n", "template", "parse_us", "median_us", "mean_us", "wall_us", "bytes");
    snprintf(path, sizeof path, "%s/templates", root);
    DIR *d = opendir(path);
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
    qsort(names, (size_t)n_names, sizeof *names, by_name);
    double worst = 0, sum = 0, *medians = malloc(sizeof *medians * (size_t)(n_names ? n_names : 1));
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
        if (tl_template_render_chat(t, &req, NULL, &out, &err)) {
            printf("%-48s %10.1f   (fails for a plain conversation: %.60s)\n", names[i], parse_us, err.msg);
            tl_template_free(t);
            continue;
        }
        struct timespec ws, we;
        clock_gettime(CLOCK_MONOTONIC, &ws);
        double total = 0;
        for (int r = 0; r < reps; r++) {
            tl_strbuf_clear(&out);
            c0 = cpu_seconds();
            tl_template_render_chat(t, &req, NULL, &out, &err);
            times[r] = (cpu_seconds() - c0) * 1e6;
            total += times[r];
        }
        clock_gettime(CLOCK_MONOTONIC, &we);
        double wall_us = ((double)(we.tv_sec - ws.tv_sec) + (double)(we.tv_nsec - ws.tv_nsec) * 1e-9) * 1e6 / reps;
        qsort(times, (size_t)reps, sizeof *times, by_value);
        double median = times[reps / 2];
        printf("%-48s %10.1f %11.1f %11.1f %11.1f %9zu\n", names[i], parse_us, median, total / reps, wall_us, out.len);
        if (median > worst)
            worst = median;
        sum += median;
        medians[counted++] = median;
        tl_template_free(t);
    }
    qsort(medians, (size_t)counted, sizeof *medians, by_value);
    printf("\n%d templates rendered: per template median render %.1f us (median of medians), mean %.1f us, slowest "
           "%.1f us (CPU time; budget 1000 us)\n",
           counted, counted ? medians[counted / 2] : 0, counted ? sum / counted : 0, worst);
    for (int i = 0; i < n_names; i++)
        free(names[i]);
    free(times);
    free(medians);
    free(msgs_json);
    tl_strbuf_free(&out);
    json_decref(msgs);
    tl_vocab_free(v);
    return 0;
}

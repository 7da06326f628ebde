/* test_metrics_format.c: the /metrics exposition and the request log line,
 * without a socket: counters and histograms add up, label values and log
 * fields are escaped (a path with a newline, a model name with a quote or a
 * bad byte), each log line is one line, and its JSON parses. */
#include <jansson.h>
#include <string.h>

#include "server/metrics.h"
#include "tl_test.h"

static const char *names[] = {"/v1/decide", "/metrics"};
static const char *endpoint_name(size_t i) { return names[i]; }

static bool has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

int main(void) {
    server_metrics *m = metrics_new(2);
    CHECK(m != NULL);
    metrics_request(m, 0, 200, 0.002, true);
    metrics_request(m, 0, 200, 0.3, true);
    metrics_request(m, 0, 422, 0.001, false);
    metrics_request(m, -1, 404, 0.0001, false);
    metrics_request(m, 0, 504, 2.0, true);
    metrics_request(m, 0, 499, 0.5, true);
    metrics_request(m, 1, 1000, 0.0, false); /* an impossible status counts as 500 */
    tl_shared_step st = {.jobs = 2, .seqs = 3, .seconds = 0.004, .ok = true,
                         .usage = {.prompt_tokens = 100, .cached_tokens = 60, .computed_tokens = 40},
                         .cache_bytes = 1000, .cache_budget = 4000};
    metrics_on_step(m, &st);
    st.ok = false;
    st.seconds = 70; /* past the last bucket */
    metrics_on_step(m, &st);
    metrics_first_token(m, 0.02);
    metrics_generated(m, 7);
    json_t *schema = json_loads("{\"properties\":{\"a\":{\"enum\":[1,2]},\"b\":{\"type\":\"boolean\"},"
                                "\"c\":{\"type\":\"number\",\"format\":\"score\"},\"d\":{\"type\":\"integer\"},"
                                "\"e\":{\"type\":\"number\"},\"f\":{\"type\":\"string\",\"enum\":[\"x\"]}}}",
                                0, NULL);
    metrics_decided(m, schema);
    json_decref(schema);

    metrics_view v = {.endpoint_name = endpoint_name, .sched = {.queued = 5, .queued_batch = 2, .running_seqs = 3},
                      .running = 4, .model = "qu\"o\nte\\\xff"};
    tl_strbuf o = TL_STRBUF_INIT;
    CHECK(metrics_render(m, &v, &o));
    const char *t = tl_strbuf_cstr(&o);
    CHECK(has_line(t, "typellm:requests_total{endpoint=\"/v1/decide\",status=\"200\"} 2"));
    CHECK(has_line(t, "typellm:requests_total{endpoint=\"/v1/decide\",status=\"422\"} 1"));
    CHECK(has_line(t, "typellm:requests_total{endpoint=\"other\",status=\"404\"} 1"));
    CHECK(has_line(t, "typellm:requests_total{endpoint=\"/metrics\",status=\"500\"} 1"));
    CHECK(has_line(t, "typellm:aborted_requests_total{reason=\"timeout\"} 1"));
    CHECK(has_line(t, "typellm:aborted_requests_total{reason=\"cancelled\"} 1"));
    CHECK(has_line(t, "typellm:prompt_tokens_total 200"));
    CHECK(has_line(t, "typellm:cached_tokens_total 120"));
    CHECK(has_line(t, "typellm:computed_tokens_total 80"));
    CHECK(has_line(t, "typellm:generation_tokens_total 7"));
    CHECK(has_line(t, "typellm:prefix_cache_hit_ratio 0.59999999999999998"));
    CHECK(has_line(t, "typellm:prefix_cache_usage_ratio 0.25"));
    CHECK(has_line(t, "typellm:num_requests_running 4"));
    CHECK(has_line(t, "typellm:num_requests_waiting 5"));
    CHECK(has_line(t, "typellm:num_running_seqs 3"));
    CHECK(has_line(t, "typellm:forward_passes_total 2"));
    CHECK(has_line(t, "typellm:forward_pass_errors_total 1"));
    CHECK(has_line(t, "typellm:forward_pass_seqs_total 6"));
    CHECK(has_line(t, "typellm:decisions_total{kind=\"enum\"} 2"));
    CHECK(has_line(t, "typellm:decisions_total{kind=\"boolean\"} 1"));
    CHECK(has_line(t, "typellm:decisions_total{kind=\"score\"} 1"));
    CHECK(has_line(t, "typellm:decisions_total{kind=\"integer\"} 1"));
    CHECK(has_line(t, "typellm:decisions_total{kind=\"number\"} 1"));
    /* histograms: cumulative buckets, +Inf = count */
    CHECK(has_line(t, "typellm:forward_pass_seconds_bucket{le=\"0.005\"} 1"));
    CHECK(has_line(t, "typellm:forward_pass_seconds_bucket{le=\"60\"} 1"));
    CHECK(has_line(t, "typellm:forward_pass_seconds_bucket{le=\"+Inf\"} 2"));
    CHECK(has_line(t, "typellm:forward_pass_seconds_count 2"));
    CHECK(has_line(t, "typellm:forward_pass_seconds_sum 70.004000000"));
    CHECK(has_line(t, "typellm:forward_pass_batch_size_bucket{le=\"2\"} 0"));
    CHECK(has_line(t, "typellm:forward_pass_batch_size_bucket{le=\"3\"} 2"));
    CHECK(has_line(t, "typellm:forward_pass_batch_size_sum 6.000000000"));
    /* latency: only the four requests that ran the model */
    CHECK(has_line(t, "typellm:e2e_request_latency_seconds_bucket{le=\"0.001\"} 0"));
    CHECK(has_line(t, "typellm:e2e_request_latency_seconds_bucket{le=\"0.0025\"} 1"));
    CHECK(has_line(t, "typellm:e2e_request_latency_seconds_count 4"));
    CHECK(has_line(t, "typellm:time_to_first_token_seconds_bucket{le=\"0.025\"} 1"));
    CHECK(has_line(t, "typellm:model_info{model=\"qu\\\"o\\nte\\\\\xEF\xBF\xBD\"} 1"));
    CHECK(t[o.len - 1] == '\n');
    tl_strbuf_free(&o);
    metrics_free(m);

    /* the log line: one line, the path's control characters out of the text
     * form, escaped in JSON; tokens and reuse as given */
    request_log_line l = {.id = 42, .method = "POST", .endpoint = "/v1/de cide\n\x01x\xff", .status = 200,
                          .bytes_in = 10, .bytes_out = 20, .usage = {.prompt_tokens = 8, .cached_tokens = 6,
                          .computed_tokens = 2, .forward_passes = 1}, .ms = 1.25};
    tl_strbuf a = TL_STRBUF_INIT, j = TL_STRBUF_INIT;
    request_log_format(&a, &l, false);
    const char *at = tl_strbuf_cstr(&a);
    CHECK(strchr(at, '\n') == at + a.len - 1);
    CHECK(strstr(at, " id=42 POST /v1/de?cide??x\xff 200 prompt=8 cached=6 computed=2 reuse=0.75 in=10 out=20 1.2ms\n") ||
          strstr(at, " id=42 POST /v1/de?cide??x\xff 200 prompt=8 cached=6 computed=2 reuse=0.75 in=10 out=20 1.3ms\n"));
    request_log_format(&j, &l, true);
    const char *jt = tl_strbuf_cstr(&j);
    CHECK(strchr(jt, '\n') == jt + j.len - 1);
    json_error_t je;
    json_t *obj = json_loads(jt, 0, &je);
    CHECK(obj != NULL);
    CHECK(json_integer_value(json_object_get(obj, "id")) == 42);
    CHECK(!strcmp(json_string_value(json_object_get(obj, "endpoint")), "/v1/de cide\n\x01x\xEF\xBF\xBD"));
    CHECK(json_integer_value(json_object_get(obj, "cached_tokens")) == 6);
    CHECK(json_real_value(json_object_get(obj, "cache_reuse")) == 0.75);
    CHECK(json_object_size(obj) == 13);
    json_decref(obj);
    tl_strbuf_free(&a);
    tl_strbuf_free(&j);
    return TEST_DONE();
}

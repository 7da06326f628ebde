/* ui.c: the playground page at GET / (src/server/ui/, embedded at build
 * time: ui_assets.h), the examples it offers (GET /ui/examples.json, from
 * the examples/ embedded beside it) and GET /metrics.
 *
 * The page and its files need no key (the page asks for one and sends it
 * to /v1/decide, the only API it calls); `typellm serve --no-ui` answers
 * them 404. /metrics takes the key unless --metrics-public. */
#include <string.h>

#include "server/metrics.h"
#include "server/server_internal.h"
#include "server/ui_assets.h"

static const ui_asset *asset_named(const char *name) {
    for (const ui_asset *a = ui_assets; a->name; a++)
        if (!strcmp(a->name, name))
            return a;
    return NULL;
}

static bool ui_off(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    if (!s->p.no_ui)
        return false;
    reply_sglang_error(r, 404, "GET %s: the playground is off on this server (--no-ui)", req->path);
    return true;
}

static void reply_asset(tl_http_reply *r, const char *name, const char *content_type) {
    const ui_asset *a = asset_named(name);
    if (!a) { /* a build without the file: say so rather than serve nothing */
        reply_sglang_error(r, 500, "the playground's %s is missing from this build", name);
        return;
    }
    r->status = 200;
    r->content_type = content_type;
    tl_strbuf_clear(&r->body);
    tl_strbuf_append(&r->body, a->data, a->len);
}

void handle_ui_page(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    if (!ui_off(s, req, r))
        reply_asset(r, "index.html", "text/html; charset=utf-8");
}

void handle_ui_script(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    if (!ui_off(s, req, r))
        reply_asset(r, "app.js", "text/javascript; charset=utf-8");
}

void handle_ui_style(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    if (!ui_off(s, req, r))
        reply_asset(r, "style.css", "text/css; charset=utf-8");
}

/* [{name, title, context, schema}] for every examples/NAME with both a
 * schema.json that parses and a context.txt, by name. */
void handle_ui_examples(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    if (ui_off(s, req, r))
        return;
    json_t *list = json_array();
    const char *prefix = "examples/";
    size_t np = strlen(prefix);
    for (const ui_asset *a = ui_assets; a->name; a++) {
        size_t n = strlen(a->name);
        const char *tail = "/schema.json";
        size_t nt = strlen(tail);
        if (strncmp(a->name, prefix, np) || n <= np + nt || strcmp(a->name + n - nt, tail))
            continue;
        char ctx_name[256];
        int nn = (int)(n - np - nt);
        if (snprintf(ctx_name, sizeof ctx_name, "examples/%.*s/context.txt", nn, a->name + np) >= (int)sizeof ctx_name)
            continue;
        const ui_asset *c = asset_named(ctx_name);
        json_t *schema = json_loadb((const char *)a->data, a->len, 0, NULL);
        if (!c || !json_is_object(schema)) {
            json_decref(schema);
            continue;
        }
        json_t *title = json_object_get(schema, "title");
        json_array_append_new(list, json_pack("{s:s%,s:O,s:o,s:o}", "name", a->name + np, (size_t)nn, "title",
                                              json_is_string(title) ? title : json_null(), "context",
                                              json_string_lossy((const char *)c->data, c->len), "schema", schema));
    }
    reply_json(r, 200, list);
}

static const char *endpoint_name(size_t i) { return server_route_path(i); }

void handle_metrics(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    (void)req;
    metrics_view v = {.endpoint_name = endpoint_name, .model = s->model_name};
    tl_backend_shared_stats(s->shared, &v.sched, NULL);
    pthread_mutex_lock(&s->mu);
    v.running = s->in_flight;
    pthread_mutex_unlock(&s->mu);
    tl_strbuf_clear(&r->body);
    if (!metrics_render(s->metrics, &v, &r->body)) {
        reply_sglang_error(r, 503, "out of memory");
        return;
    }
    r->status = 200;
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

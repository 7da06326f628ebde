/* serve.c: typellm's HTTP server embedded in a program. It starts the server
 * on a free loopback port, sends itself one /v1/decide request over a plain
 * socket, prints the reply and shuts down.
 *   cc serve.c $(pkg-config --cflags --libs typellm) -o serve
 *   ./serve MODEL.gguf SCHEMA.json CONTEXT.txt */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <typellm/typellm.h>

/* POSTs body to 127.0.0.1:port/path (HTTP/1.0) and appends the whole reply to *reply. */
static int http_post(int port, const char *path, const tl_strbuf *body, tl_strbuf *reply) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        return -1;
    tl_strbuf req = TL_STRBUF_INIT;
    tl_strbuf_printf(&req, "POST %s HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", path,
                     body->len);
    tl_strbuf_append(&req, body->buf, body->len);
    ssize_t sent = write(fd, req.buf, req.len);
    tl_strbuf_free(&req);
    char buf[4096];
    ssize_t got;
    while (sent > 0 && (got = read(fd, buf, sizeof buf)) > 0)
        tl_strbuf_append(reply, buf, (size_t)got);
    close(fd);
    return sent > 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.gguf SCHEMA.json CONTEXT.txt\n", argv[0]);
        return 2;
    }
    tl_error err;
    tl_model *model = NULL;
    tl_server *server = NULL;
    char *schema = NULL, *context = NULL;
    size_t schema_len, context_len;
    tl_status st = tl_read_file(argv[2], 1 << 20, &schema, &schema_len, &err);
    if (!st) st = tl_read_file(argv[3], 1 << 24, &context, &context_len, &err);
    if (!st) st = tl_model_load(argv[1], &model, &err);
    tl_server_params params = {.host = "127.0.0.1", .port = 0, .n_threads = 2};
    if (!st) st = tl_server_new(model, &params, &server, &err);
    if (!st) st = tl_server_start(server, &err);
    if (st) {
        fprintf(stderr, "serve: %s\n", err.msg);
    } else {
        printf("listening on 127.0.0.1:%d\n", tl_server_port(server));
        tl_strbuf body = TL_STRBUF_INIT, reply = TL_STRBUF_INIT;
        tl_strbuf_puts(&body, "{\"mode\": \"batch\", \"context\": ");
        tl_strbuf_json_string(&body, context, context_len);
        tl_strbuf_puts(&body, ", \"schema\": ");
        tl_strbuf_append(&body, schema, schema_len);
        tl_strbuf_puts(&body, "}");
        if (http_post(tl_server_port(server), "/v1/decide", &body, &reply) != 0) {
            fprintf(stderr, "serve: cannot reach the server\n");
            st = TL_ERR_IO;
        } else {
            fwrite(reply.buf, 1, reply.len, stdout);
            putchar('\n');
            if (strncmp(tl_strbuf_cstr(&reply), "HTTP/1.0 200", 12) && strncmp(tl_strbuf_cstr(&reply), "HTTP/1.1 200", 12))
                st = TL_ERR_REMOTE;
        }
        tl_strbuf_free(&body);
        tl_strbuf_free(&reply);
        tl_server_stop(server);
    }
    tl_server_free(server);
    tl_model_free(model);
    tl_free(schema);
    tl_free(context);
    return st ? 1 : 0;
}

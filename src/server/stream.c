/* stream.c: server-sent events. A streaming request runs on its own
 * detached thread and writes `data: ...` events into a pipe that
 * libmicrohttpd sends from as they arrive; socket-free callers (tests, fuzz
 * targets) collect the same events into a buffer. A write to a pipe whose
 * reader is gone fails (EPIPE, SIGPIPE blocked on the thread), which is how a
 * stream learns that its client left. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "server/server_internal.h"

static bool sse_write(sse_out *o, const char *data, size_t n) {
    if (o->fd < 0)
        return tl_strbuf_append(&o->buf, data, n);
    while (n) {
        ssize_t w = write(o->fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false; /* EPIPE: the client (and MHD's read end) went away */
        data += w;
        n -= (size_t)w;
    }
    return true;
}

bool sse_send_json(sse_out *o, json_t *ev) {
    char *line = tl_json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    tl_strbuf b = TL_STRBUF_INIT;
    tl_strbuf_printf(&b, "data: %s\n\n", line ? line : "{}");
    free(line);
    bool ok = sse_write(o, b.buf, b.len);
    tl_strbuf_free(&b);
    return ok;
}

bool sse_send_done(sse_out *o) { return sse_write(o, "data: [DONE]\n\n", 14); }

typedef struct stream_thread {
    tl_server *s;
    void (*run)(void *job, sse_out *out);
    void *job;
    sse_out out;
} stream_thread;

static void *stream_main(void *arg) {
    stream_thread *t = arg;
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
    t->run(t->job, &t->out);
    close(t->out.fd);
    tl_server_slot_release(t->s);
    tl_server_stream_done(t->s);
    free(t);
    return NULL;
}

bool server_stream_start(tl_server *s, tl_http_reply *r, void (*run)(void *job, sse_out *out), void *job) {
    int fds[2];
    stream_thread *t = calloc(1, sizeof *t);
    if (!t || pipe2(fds, O_CLOEXEC) != 0) {
        free(t);
        return false;
    }
    t->s = s;
    t->run = run;
    t->job = job;
    t->out.fd = fds[1];
    tl_server_stream_begin(s);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int rc = pthread_create(&th, &attr, stream_main, t);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        tl_server_stream_done(s);
        close(fds[0]);
        close(fds[1]);
        free(t);
        return false;
    }
    r->status = 200;
    r->content_type = "text/event-stream";
    r->stream_fd = fds[0];
    return true;
}

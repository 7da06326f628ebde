/* conn_guard.c: overall deadlines for the slow parts of a connection that
 * libmicrohttpd only bounds by inactivity (its timeout restarts on every
 * byte, so a client trickling one byte every few seconds would hold its
 * connection, and its thread, forever). Every connection is registered
 * here; a watchdog thread shuts down the socket of one that has spent longer
 * than header_s waiting for (or receiving) a request's headers, which
 * includes an idle keep-alive connection, or longer than body_s receiving a
 * body. While its request is being answered a connection has no deadline
 * here (--timeout bounds the work). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "server/server_internal.h"
#include "typellm/util.h"

typedef enum guard_phase { PHASE_HEADERS, PHASE_BODY, PHASE_ANSWERING } guard_phase;

struct conn_entry {
    int fd;
    guard_phase phase;
    double since_s;     /* when the phase began */
    double extra_s;     /* added to body_s for this body (a large upload); 0 after it */
    bool cut;           /* already shut down */
    conn_entry *prev, *next;
};

struct conn_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stop;
    double header_s, body_s;
    conn_entry *head;
    size_t n_cut;
};

struct timespec realtime_in_ms(long ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static void *guard_main(void *arg) {
    conn_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        double now = tl_now_s();
        for (conn_entry *e = g->head; e; e = e->next) {
            double limit = e->phase == PHASE_HEADERS ? g->header_s : e->phase == PHASE_BODY ? g->body_s + e->extra_s : 0;
            if (!e->cut && limit > 0 && now - e->since_s > limit) {
                shutdown(e->fd, SHUT_RDWR); /* MHD sees EOF and closes the connection */
                e->cut = true;
                g->n_cut++;
            }
        }
        struct timespec ts = realtime_in_ms(250);
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

conn_guard *conn_guard_new(double header_s, double body_s) {
    conn_guard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->header_s = header_s;
    g->body_s = body_s;
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        free(g);
        return NULL;
    }
    return g;
}

void conn_guard_free(conn_guard *g) {
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    while (g->head) {
        conn_entry *e = g->head;
        g->head = e->next;
        free(e);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

conn_entry *conn_guard_open(conn_guard *g, int fd) {
    conn_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->fd = fd;
    e->phase = PHASE_HEADERS;
    e->since_s = tl_now_s();
    pthread_mutex_lock(&g->mu);
    e->next = g->head;
    if (g->head)
        g->head->prev = e;
    g->head = e;
    pthread_mutex_unlock(&g->mu);
    return e;
}

void conn_guard_close(conn_guard *g, conn_entry *e) {
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    if (e->prev)
        e->prev->next = e->next;
    else
        g->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    pthread_mutex_unlock(&g->mu);
    free(e);
}

static void set_phase(conn_guard *g, conn_entry *e, guard_phase p) {
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    if (e->phase != p) {
        e->phase = p;
        e->since_s = tl_now_s();
        e->extra_s = 0;
    }
    pthread_mutex_unlock(&g->mu);
}

void conn_guard_body(conn_guard *g, conn_entry *e) { set_phase(g, e, PHASE_BODY); }
void conn_guard_answering(conn_guard *g, conn_entry *e) { set_phase(g, e, PHASE_ANSWERING); }

void conn_guard_body_extend(conn_guard *g, conn_entry *e, double extra_s) {
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    e->extra_s = extra_s;
    pthread_mutex_unlock(&g->mu);
}
void conn_guard_idle(conn_guard *g, conn_entry *e) { set_phase(g, e, PHASE_HEADERS); }

size_t conn_guard_cut(conn_guard *g) {
    pthread_mutex_lock(&g->mu);
    size_t n = g->n_cut;
    pthread_mutex_unlock(&g->mu);
    return n;
}

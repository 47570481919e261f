/* outbox: the worker's reports to the server, in order, sent again until the server takes
 * them (see outbox.h). */
#include "outbox.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "httpc.h"
#include "log.h"

struct entry {
    char method[8];
    char *path;
    char *ctype; /* NULL for JSON */
    char *data;
    size_t len;
    int droppable;
    struct entry *next;
};

struct outbox {
    struct entry *head, *tail;
    size_t n, max;
    unsigned long dropped;
};

static void entry_free(struct entry *e)
{
    if (!e)
        return;
    free(e->path);
    free(e->ctype);
    free(e->data);
    free(e);
}

struct outbox *outbox_create(size_t max)
{
    struct outbox *o = calloc(1, sizeof(*o));
    if (o)
        o->max = max ? max : 1;
    return o;
}

void outbox_destroy(struct outbox *o)
{
    if (!o)
        return;
    while (o->head) {
        struct entry *e = o->head;
        o->head = e->next;
        entry_free(e);
    }
    free(o);
}

/* Drops the oldest droppable entry; 0, or -1 when none is. */
static int drop_one(struct outbox *o)
{
    struct entry **pp = &o->head, *prev = NULL;
    while (*pp && !(*pp)->droppable) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    struct entry *e = *pp;
    if (!e)
        return -1;
    *pp = e->next;
    if (o->tail == e)
        o->tail = prev;
    entry_free(e);
    o->n--;
    o->dropped++;
    return 0;
}

static int append(struct outbox *o, struct entry *e)
{
    if (o->n >= o->max && e->droppable && drop_one(o) < 0) {
        entry_free(e);
        o->dropped++;
        return -1;
    }
    if (o->tail)
        o->tail->next = e;
    else
        o->head = e;
    o->tail = e;
    o->n++;
    return 0;
}

int outbox_push_json(struct outbox *o, const char *method, const char *path, json_t *body,
                     int droppable)
{
    struct entry *e = calloc(1, sizeof(*e));
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!e || (body && !text) || !(e->path = strdup(path))) {
        free(text);
        entry_free(e);
        return -1;
    }
    strncpy(e->method, method, sizeof(e->method) - 1);
    e->data = text;
    e->len = text ? strlen(text) : 0;
    e->droppable = droppable;
    return append(o, e);
}

int outbox_push_raw(struct outbox *o, const char *method, const char *path,
                    const char *content_type, const char *data, size_t len)
{
    struct entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->path = strdup(path)) || !(e->ctype = strdup(content_type)) ||
        !(e->data = malloc(len ? len : 1))) {
        entry_free(e);
        return -1;
    }
    strncpy(e->method, method, sizeof(e->method) - 1);
    memcpy(e->data, data, len);
    e->len = len;
    return append(o, e);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sends e: 1 taken (2xx or 4xx), 0 not (no answer, 5xx). */
static int send_one(struct httpc *c, const struct entry *e, int *unreachable)
{
    long status;
    json_t *ans = NULL;
    char err[256];
    int rc = httpc_request_raw(c, e->method, e->path, e->ctype ? e->ctype : "application/json",
                               e->data, e->len, NULL, &status, &ans, err, sizeof(err));
    if (rc < 0) {
        *unreachable = 1;
        return 0;
    }
    if (status >= 400 && status < 500)
        log_warn("%s %s: %ld %s", e->method, e->path, status,
                 json_string_value(json_object_get(ans, "detail")) ?: "");
    json_decref(ans);
    return status < 500;
}

size_t outbox_flush(struct outbox *o, struct httpc *c, double budget_s, int *unreachable)
{
    double end = mono_s() + budget_s;
    *unreachable = 0;
    while (o->head && mono_s() < end) {
        struct entry *e = o->head;
        if (!send_one(c, e, unreachable))
            break;
        o->head = e->next;
        if (!o->head)
            o->tail = NULL;
        o->n--;
        entry_free(e);
    }
    return o->n;
}

size_t outbox_len(const struct outbox *o)
{
    return o->n;
}

unsigned long outbox_dropped(const struct outbox *o)
{
    return o->dropped;
}

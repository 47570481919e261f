/* ringmaster-loadgen: many worker nodes from one process, for `make bench-scale`
 * (bench/bench-scale.sh). A bench tool, not part of the product: it speaks the worker's
 * protocol (docs/api.md: register, heartbeat, long-poll for actions, answer them, report
 * job states and minibatches, one post of all a node's jobs' reports each period as the
 * worker sends them, or one per job with --per-job-posts 1) for N simulated nodes of G GPUs each, and runs no job: a
 * started job "runs" by posting reports of a fixed step time until it is stopped.
 *
 *   ringmaster-loadgen --server URL --token-file F [--nodes N] [--gpus G] [--heartbeat S]
 *                      [--metrics-every S] [--step-s S] [--duration S] [--prefix NAME]
 *                      [--report-every S] [--queue-max N] [--per-job-posts 0|1]
 *
 * Each node has its own source address (127.0.1.0 + its index on loopback), as real nodes
 * have their own, so that the server's per-address limits see 512 hosts, not one; one
 * long-poll at a time, its posts one at a time in order (as the worker's outbox sends
 * them), and its heartbeat beside them (as the worker's main thread does). A node holds at
 * most --queue-max (64) posts: when the server is slower than the reports come, the oldest
 * minibatch report waiting is dropped, as the worker's outbox drops its oldest droppable
 * entry when full (worker/daemon/outbox.c), so that the load stays what a cluster sends.
 * Prints, every --report-every seconds and at the end, one line: nodes registered, jobs
 * running, actions answered, posts done, minibatch reports delivered (the server answered
 * 2xx), dropped and still queued, requests failed, and the heartbeats' latency (p50, p99);
 * its last line is "heartbeat_p99_ms=X". Each heartbeat's time is also split by curl's timers
 * (the server's part: request sent to its answer's first byte; the TCP connect), and the
 * loop's own period is kept, so that the loadgen's delays show apart from the server's.
 * SIGUSR1 starts a window (the bench's measured minute): the last lines give it apart.
 * Two threads, each over its own libcurl multi handle: the heartbeats on one, everything
 * else on the other, as a worker sends its heartbeat from its main thread beside its
 * outbox's posts. On one thread, a heartbeat due waited for the loop's pass over 512 nodes'
 * reports and long-poll answers (27 ms at p99), which no real node's heartbeat does. */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_WAIT_S 20
#define REGISTER_AT_ONCE 32

enum rkind { R_REGISTER, R_HEARTBEAT, R_POLL, R_POST };

struct buf {
    char *p;
    size_t n;
};

struct req {
    struct node *node;
    enum rkind kind;
    char path[128];
    char *body; /* owned; NULL: GET */
    double t0;
    struct buf resp;
    struct curl_slist *hdrs;
    CURLM *multi; /* the thread's that runs it */
    CURL *h;
    int rows;         /* minibatch reports it carries (a metrics post) */
    struct req *next; /* in the node's post queue */
};

struct simjob {
    long long id;
    int world;
    long step;
    double next_report;
    struct simjob *next;
};

#define SEEN_MAX 64 /* the actions a node remembers answering (a poll may repeat them) */

/* A node: the main thread's but for mu's fields, which the heartbeat thread reads too. */
struct node {
    pthread_mutex_t mu; /* guards id, hb_busy, next_hb and jobs */
    int idx;
    long long seen[SEEN_MAX];
    int seen_next;
    long long id;
    char src[24];
    int reg_busy, hb_busy, poll_busy, post_busy;
    double next_hb;
    double next_report; /* the node's next metrics post (not --per-job-posts); 0: not set */
    struct req *qhead, *qtail;
    int queued; /* posts in the queue */
    struct simjob *jobs;
};

static struct {
    const char *server;
    char token[256];
    int nodes, gpus;
    double heartbeat_s, metrics_s, step_s, duration_s, report_s;
    int queue_max;
    int per_job; /* --per-job-posts 1: one metrics post per job, as workers did before */
    const char *prefix;
} cfg = {.nodes = 512,
         .gpus = 8,
         .heartbeat_s = 5,
         .metrics_s = 10,
         .step_s = 0.5,
         .duration_s = 60,
         .report_s = 10,
         .queue_max = 64,
         .prefix = "lg"};

/* A growing series of seconds, for percentiles. */
struct series {
    double *x;
    size_t n, cap;
};

static struct {
    long registered, actions, posts;
    _Atomic long running, failed;
    long rows_delivered, rows_dropped, rows_queued; /* minibatch reports */
    long hb_connects;                               /* heartbeats that opened a connection */
    struct series hb;                               /* heartbeats, request made to answer read */
    struct series hb_server; /* of which: request sent to its answer's first byte (curl's) */
    struct series hb_connect; /* of which: the TCP connect, when the heartbeat made one */
    struct series loop;       /* the loadgen's own loop: seconds from one pass to the next */
    /* the same since SIGUSR1 (the bench's measured window), when window is set */
    struct series w_hb, w_hb_server, w_loop;
    struct series hb_loop, w_hb_loop; /* the heartbeat thread's loop */
} st;

/* Guards the heartbeats' series (the heartbeat thread adds, the main thread prints). */
static pthread_mutex_t hb_mu = PTHREAD_MUTEX_INITIALIZER;

static CURLM *multi;    /* the main thread's */
static CURLM *hb_multi; /* the heartbeat thread's */
static volatile sig_atomic_t hb_stop;

static void add(struct series *s, double v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->x = realloc(s->x, s->cap * sizeof(double));
        if (!s->x) {
            perror("loadgen");
            exit(1);
        }
    }
    s->x[s->n++] = v;
}
static volatile sig_atomic_t stop_now, window;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct buf *b = arg;
    size_t len = size * n;
    char *q = realloc(b->p, b->n + len + 1);
    if (!q)
        return 0;
    memcpy(q + b->n, p, len);
    b->n += len;
    q[b->n] = '\0';
    b->p = q;
    return len;
}

static void start_on(CURLM *m, struct req *r)
{
    char url[512], auth[300];
    snprintf(url, sizeof(url), "%s%s", cfg.server, r->path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", cfg.token);
    r->hdrs = curl_slist_append(NULL, auth);
    if (r->body)
        r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/json");
    r->h = curl_easy_init();
    curl_easy_setopt(r->h, CURLOPT_URL, url);
    curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
    curl_easy_setopt(r->h, CURLOPT_INTERFACE, r->node->src);
    curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(r->h, CURLOPT_WRITEDATA, &r->resp);
    curl_easy_setopt(r->h, CURLOPT_TIMEOUT, (long)POLL_WAIT_S + 30);
    curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
    if (r->body)
        curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, r->body);
    else if (r->kind == R_HEARTBEAT)
        curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, "");
    r->t0 = mono();
    r->multi = m;
    curl_multi_add_handle(m, r->h);
}

static void start(struct req *r)
{
    start_on(multi, r);
}

static struct req *make(struct node *n, enum rkind kind, const char *path, json_t *body)
{
    struct req *r = calloc(1, sizeof(*r));
    if (!r) {
        perror("loadgen");
        exit(1);
    }
    r->node = n;
    r->kind = kind;
    snprintf(r->path, sizeof(r->path), "%s", path);
    if (body) {
        r->body = json_dumps(body, JSON_COMPACT);
        json_decref(body);
    }
    return r;
}

static void release(struct req *r);

/* Drops the node's oldest queued minibatch report; 0, or -1 when none waits. */
static int drop_oldest_report(struct node *n)
{
    struct req **pp = &n->qhead, *prev = NULL;
    while (*pp && (*pp)->rows == 0) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    struct req *r = *pp;
    if (!r)
        return -1;
    *pp = r->next;
    if (n->qtail == r)
        n->qtail = prev;
    n->queued--;
    st.rows_dropped += r->rows;
    st.rows_queued -= r->rows;
    release(r);
    return 0;
}

/* Queues a post of the node's, sent after those before it (rows: the minibatch reports it
 * carries; a full queue drops the oldest such post, or this one). */
static void post(struct node *n, const char *path, json_t *body, int rows)
{
    struct req *r = make(n, R_POST, path, body);
    r->rows = rows;
    if (n->queued >= cfg.queue_max && rows > 0 && drop_oldest_report(n) < 0) {
        st.rows_dropped += rows;
        release(r);
        return;
    }
    st.rows_queued += rows;
    n->queued++;
    if (n->qtail)
        n->qtail->next = r;
    else
        n->qhead = r;
    n->qtail = r;
}

static void post_state(struct node *n, long long job, const char *state)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", job);
    post(n, path, json_pack("{s:s, s:s}", "state", state, "detail", "loadgen"), 0);
}

static void post_result(struct node *n, long long action)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/actions/%lld/result", action);
    post(n, path, json_pack("{s:s, s:s}", "outcome", "ok", "detail", "loadgen"), 0);
}

static struct simjob *find_job(struct node *n, long long id, int unlink)
{
    for (struct simjob **p = &n->jobs; *p; p = &(*p)->next)
        if ((*p)->id == id) {
            struct simjob *j = *p;
            if (unlink) {
                *p = j->next;
                st.running--;
            }
            return j;
        }
    return NULL;
}

static void run_job(struct node *n, long long id, int world)
{
    struct simjob *j = find_job(n, id, 0);
    if (!j) {
        j = calloc(1, sizeof(*j));
        if (!j)
            return;
        j->id = id;
        j->next = n->jobs;
        n->jobs = j;
        st.running++;
        /* spread the reports of jobs started together over the period */
        j->next_report = mono() + cfg.metrics_s * (double)(rand() % 1000) / 1000.0;
    }
    j->world = world > 0 ? world : 1;
}

/* Does what a worker would, as if every action went well at once. */
static void on_action(struct node *n, const json_t *a)
{
    long long act = json_integer_value(json_object_get(a, "id"));
    long long job = json_integer_value(json_object_get(a, "job_id"));
    const char *kind = json_string_value(json_object_get(a, "kind"));
    const json_t *spec = json_object_get(a, "spec");
    int world = (int)json_integer_value(json_object_get(spec, "world_size"));
    const json_t *slot0 = json_array_get(json_object_get(spec, "slots"), 0);
    long long target = json_integer_value(json_object_get(slot0, "node_id"));
    for (int i = 0; i < SEEN_MAX; i++)
        if (n->seen[i] == act)
            return; /* answered; its result is on its way */
    n->seen[n->seen_next] = act;
    n->seen_next = (n->seen_next + 1) % SEEN_MAX;
    st.actions++;
    if (!kind)
        return;
    if (!strcmp(kind, "start")) {
        if (!json_object_get(spec, "follows"))
            post_state(n, job, "STARTING");
        post_result(n, act);
        post_state(n, job, "RUNNING");
        run_job(n, job, world);
    } else if (!strcmp(kind, "resize") ||
               (!strcmp(kind, "migrate") && (!target || target == n->id))) {
        post_result(n, act);
        post_state(n, job, "RUNNING");
        run_job(n, job, world);
    } else if (!strcmp(kind, "migrate")) { /* its target's start follows */
        free(find_job(n, job, 1));
        post_result(n, act);
    } else if (!strcmp(kind, "suspend")) {
        post_state(n, job, "SUSPENDED");
        post_result(n, act);
        free(find_job(n, job, 1));
    } else if (!strcmp(kind, "resume")) {
        post_state(n, job, "RUNNING");
        post_result(n, act);
        run_job(n, job, world);
    } else if (!strcmp(kind, "cancel")) {
        post_state(n, job, "CANCELLED");
        post_result(n, act);
        free(find_job(n, job, 1));
    } else {
        post_result(n, act);
    }
}

/* The heartbeat's time split by curl's timers: the server's part (request sent to the
 * answer's first byte) and the TCP connect, so that the loadgen's own delays show. */
static void time_heartbeat(struct req *r)
{
    curl_off_t pre = 0, first = 0, conn = 0;
    long connects = 0;
    curl_easy_getinfo(r->h, CURLINFO_PRETRANSFER_TIME_T, &pre);
    curl_easy_getinfo(r->h, CURLINFO_STARTTRANSFER_TIME_T, &first);
    curl_easy_getinfo(r->h, CURLINFO_CONNECT_TIME_T, &conn);
    curl_easy_getinfo(r->h, CURLINFO_NUM_CONNECTS, &connects);
    pthread_mutex_lock(&hb_mu);
    add(&st.hb, mono() - r->t0);
    add(&st.hb_server, (double)(first - pre) / 1e6);
    if (window) {
        add(&st.w_hb, mono() - r->t0);
        add(&st.w_hb_server, (double)(first - pre) / 1e6);
    }
    if (connects > 0) {
        st.hb_connects++;
        add(&st.hb_connect, (double)conn / 1e6);
    }
    pthread_mutex_unlock(&hb_mu);
}

/* The requests that failed, by kind and by status class (0: no answer, the transfer's
 * curl error; 1..5: 1xx..5xx), with the first of each: its path, status or curl error, and
 * the start of its answer, so that a run says which requests failed and why. */
static const char *const kind_name[] = {"register", "heartbeat", "poll", "post"};
static struct {
    pthread_mutex_t mu;
    long n[4][6];
    char first[4][6][200];
} fails = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void note_failure(const struct req *r, long status, int curl_rc)
{
    int cls = status >= 100 && status < 600 ? (int)(status / 100) : 0;
    pthread_mutex_lock(&fails.mu);
    if (fails.n[r->kind][cls]++ == 0)
        snprintf(fails.first[r->kind][cls], sizeof(fails.first[r->kind][cls]),
                 "%s %ld%s%s: %.100s", r->path, status, cls ? "" : " ",
                 cls ? "" : curl_easy_strerror((CURLcode)curl_rc),
                 r->resp.p ? r->resp.p : "");
    pthread_mutex_unlock(&fails.mu);
}

static void print_failures(void)
{
    pthread_mutex_lock(&fails.mu);
    for (int k = 0; k < 4; k++)
        for (int c = 0; c < 6; c++)
            if (fails.n[k][c])
                printf("loadgen: failed %s requests, %s: %ld; the first: %s\n", kind_name[k],
                       c ? (const char *[]){"", "1xx", "2xx", "3xx", "4xx", "5xx"}[c]
                         : "no answer",
                       fails.n[k][c], fails.first[k][c]);
    pthread_mutex_unlock(&fails.mu);
}

static void on_done(struct req *r, long status, int curl_rc)
{
    struct node *n = r->node;
    int ok = status >= 200 && status < 300;
    if (!ok && !(r->kind == R_POST && status == 409)) { /* a job the server moved meanwhile */
        st.failed++;
        note_failure(r, status, curl_rc);
    }
    json_t *j = ok && r->resp.p ? json_loads(r->resp.p, 0, NULL) : NULL;
    pthread_mutex_lock(&n->mu);
    switch (r->kind) {
    case R_REGISTER:
        n->reg_busy = 0;
        if (j && json_integer_value(json_object_get(j, "id")) > 0) {
            n->id = json_integer_value(json_object_get(j, "id"));
            st.registered++;
            n->next_hb = mono() + cfg.heartbeat_s * (double)(rand() % 1000) / 1000.0;
        }
        break;
    case R_HEARTBEAT: {
        n->hb_busy = 0;
        const json_t *stop = json_object_get(j, "stop"); /* jobs no longer this node's */
        for (size_t i = 0; i < json_array_size(stop); i++)
            free(find_job(n, json_integer_value(json_array_get(stop, i)), 1));
        if (ok)
            time_heartbeat(r);
        break;
    }
    case R_POLL: {
        n->poll_busy = 0;
        const json_t *items = json_object_get(j, "items");
        for (size_t i = 0; i < json_array_size(items); i++)
            on_action(n, json_array_get(items, i));
        break;
    }
    case R_POST:
        n->post_busy = 0;
        st.posts++;
        st.rows_queued -= r->rows;
        if (ok)
            st.rows_delivered += r->rows;
        break;
    }
    pthread_mutex_unlock(&n->mu);
    json_decref(j);
}

static void release(struct req *r)
{
    if (r->h) {
        curl_multi_remove_handle(r->multi, r->h);
        curl_easy_cleanup(r->h);
    }
    curl_slist_free_all(r->hdrs);
    free(r->resp.p);
    free(r->body);
    free(r);
}

/* Job j's reports of one period: the steps of metrics_s at step_s. */
static json_t *job_items(struct simjob *j, int k)
{
    json_t *items = json_array();
    for (int i = 0; i < k; i++, j->step++)
        json_array_append_new(
            items, json_pack("{s:I, s:f, s:I, s:f, s:i}", "step", (json_int_t)j->step, "loss",
                             2.0 / (1.0 + 0.001 * (double)j->step) + 0.1, "samples",
                             (json_int_t)64 * j->world, "seconds", cfg.step_s, "world_size",
                             j->world));
    return items;
}

/* The node's reports when due: as the worker sends them, one post of all its jobs' each
 * period (POST /api/v1/nodes/{id}/metrics, at most 64 jobs a post); with --per-job-posts,
 * one post per job, each job on its own phase. */
static void report(struct node *n, double now)
{
    int k = (int)ceil(cfg.metrics_s / cfg.step_s);
    char path[96];
    if (cfg.per_job) {
        for (struct simjob *j = n->jobs; j; j = j->next) {
            if (now < j->next_report)
                continue;
            j->next_report = now + cfg.metrics_s;
            snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics", j->id);
            post(n, path, json_pack("{s:o}", "items", job_items(j, k)), k);
        }
        return;
    }
    if (n->next_report == 0) /* spread the nodes' posts over the period */
        n->next_report = now + cfg.metrics_s * (double)(rand() % 1000) / 1000.0;
    if (now < n->next_report || !n->jobs || !n->id)
        return;
    n->next_report = now + cfg.metrics_s;
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/metrics", n->id);
    json_t *entries = json_array();
    int rows = 0;
    for (struct simjob *j = n->jobs; j; j = j->next) {
        if (json_array_size(entries) == 64) {
            post(n, path, json_pack("{s:o}", "jobs", entries), rows);
            entries = json_array();
            rows = 0;
        }
        json_array_append_new(entries, json_pack("{s:I, s:o}", "job_id", (json_int_t)j->id,
                                                 "items", job_items(j, k)));
        rows += k;
    }
    post(n, path, json_pack("{s:o}", "jobs", entries), rows);
}

/* The node's heartbeat when due (on the heartbeat thread): the jobs it runs. */
static void heartbeat(struct node *n, double now)
{
    char path[128];
    pthread_mutex_lock(&n->mu);
    if (!n->id || n->hb_busy || now < n->next_hb) {
        pthread_mutex_unlock(&n->mu);
        return;
    }
    json_t *run = json_array();
    for (struct simjob *j = n->jobs; j; j = j->next)
        json_array_append_new(run, json_pack("{s:I, s:i, s:i}", "job_id", (json_int_t)j->id,
                                             "pid", 1, "world_size", j->world));
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat", n->id);
    n->hb_busy = 1;
    n->next_hb = now + cfg.heartbeat_s;
    pthread_mutex_unlock(&n->mu);
    start_on(hb_multi, make(n, R_HEARTBEAT, path, json_pack("{s:o}", "running", run)));
}

/* Runs the multi handle m once and hands each transfer done to on_done. */
static void run_multi(CURLM *m, int *registering)
{
    int running;
    curl_multi_perform(m, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct req *r;
        long status = 0;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (msg->data.result == CURLE_OK)
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        if (r->kind == R_REGISTER)
            --*registering;
        on_done(r, status, (int)msg->data.result);
        release(r);
    }
}

/* The heartbeat thread: each node's heartbeat when due, and their answers. */
static void *hb_main(void *arg)
{
    struct node *nodes = arg;
    int none = 0;
    double prev = 0;
    while (!hb_stop) {
        double now = mono();
        pthread_mutex_lock(&hb_mu);
        if (prev > 0)
            add(&st.hb_loop, now - prev);
        if (prev > 0 && window)
            add(&st.w_hb_loop, now - prev);
        pthread_mutex_unlock(&hb_mu);
        prev = now;
        for (int i = 0; i < cfg.nodes; i++)
            heartbeat(&nodes[i], now);
        run_multi(hb_multi, &none);
        curl_multi_poll(hb_multi, NULL, 0, 5, NULL);
    }
    return NULL;
}

static void tick_node(struct node *n, double now, int *registering)
{
    char path[128];
    if (!n->id) {
        if (!n->reg_busy && *registering < REGISTER_AT_ONCE) {
            json_t *gpus = json_array();
            for (int g = 0; g < cfg.gpus; g++)
                json_array_append_new(gpus, json_pack("{s:i, s:s, s:I}", "index", g, "model",
                                                      "sim", "memory_bytes",
                                                      (json_int_t)80 << 30));
            char name[64];
            snprintf(name, sizeof(name), "%s-%d", cfg.prefix, n->idx);
            struct req *r = make(n, R_REGISTER, "/api/v1/nodes",
                                 json_pack("{s:s, s:i, s:I, s:o}", "name", name, "cpus", 64,
                                           "memory_bytes", (json_int_t)512 << 30, "gpus",
                                           gpus));
            n->reg_busy = 1;
            ++*registering;
            start(r);
        }
        return;
    }
    if (!n->poll_busy) {
        snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=%d", n->id,
                 POLL_WAIT_S);
        n->poll_busy = 1;
        start(make(n, R_POLL, path, NULL));
    }
    report(n, now);
    if (!n->post_busy && n->qhead) {
        struct req *r = n->qhead;
        n->qhead = r->next;
        if (!n->qhead)
            n->qtail = NULL;
        r->next = NULL;
        n->queued--;
        n->post_busy = 1;
        start(r);
    }
}

static void tick(struct node *nodes, double now, int *registering)
{
    for (int i = 0; i < cfg.nodes; i++) {
        struct node *n = &nodes[i];
        pthread_mutex_lock(&n->mu);
        tick_node(n, now, registering);
        pthread_mutex_unlock(&n->mu);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The p-th percentile of s, in ms. */
static double pct(struct series *s, double p)
{
    if (!s->n)
        return 0;
    qsort(s->x, s->n, sizeof(double), cmp_double);
    size_t i = (size_t)llround(p / 100.0 * (double)(s->n - 1));
    return s->x[i] * 1000.0;
}

static void print_line(double elapsed)
{
    pthread_mutex_lock(&hb_mu);
    printf("loadgen: %.0f s: %ld nodes, %ld jobs running, %ld actions answered, %ld posts; "
           "minibatch reports %ld delivered, %ld dropped, %ld queued; %ld failed; heartbeats %zu,"
           " p50 %.1f ms, p99 %.1f ms (server's part p50 %.1f, p99 %.1f; %ld connects, p99"
           " %.1f ms); loop p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
           elapsed, st.registered, st.running, st.actions, st.posts, st.rows_delivered,
           st.rows_dropped, st.rows_queued, st.failed, st.hb.n, pct(&st.hb, 50), pct(&st.hb, 99),
           pct(&st.hb_server, 50), pct(&st.hb_server, 99), st.hb_connects,
           pct(&st.hb_connect, 99), pct(&st.loop, 50), pct(&st.loop, 99), pct(&st.loop, 100));
    printf("loadgen: heartbeat thread loop p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
           pct(&st.hb_loop, 50), pct(&st.hb_loop, 99), pct(&st.hb_loop, 100));
    pthread_mutex_unlock(&hb_mu);
    fflush(stdout);
}

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        window = 1;
    else
        stop_now = 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: ringmaster-loadgen --server URL --token-file F [--nodes N] [--gpus G]"
                    " [--heartbeat S] [--metrics-every S] [--step-s S] [--duration S]"
                    " [--prefix NAME] [--report-every S] [--queue-max N] [--per-job-posts 0|1]\n");
    exit(2);
}

static void parse(int argc, char **argv)
{
    const char *token_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--server"))
            cfg.server = v;
        else if (!strcmp(a, "--token-file"))
            token_file = v;
        else if (!strcmp(a, "--nodes"))
            cfg.nodes = atoi(v);
        else if (!strcmp(a, "--gpus"))
            cfg.gpus = atoi(v);
        else if (!strcmp(a, "--heartbeat"))
            cfg.heartbeat_s = atof(v);
        else if (!strcmp(a, "--metrics-every"))
            cfg.metrics_s = atof(v);
        else if (!strcmp(a, "--step-s"))
            cfg.step_s = atof(v);
        else if (!strcmp(a, "--duration"))
            cfg.duration_s = atof(v);
        else if (!strcmp(a, "--report-every"))
            cfg.report_s = atof(v);
        else if (!strcmp(a, "--prefix"))
            cfg.prefix = v;
        else if (!strcmp(a, "--queue-max"))
            cfg.queue_max = atoi(v);
        else if (!strcmp(a, "--per-job-posts"))
            cfg.per_job = atoi(v) != 0;
        else
            usage();
    }
    FILE *f = token_file ? fopen(token_file, "r") : NULL;
    if (!cfg.server || !f || !fgets(cfg.token, sizeof(cfg.token), f) || cfg.nodes < 1 ||
        cfg.nodes > 60000 || cfg.gpus < 1 || cfg.heartbeat_s <= 0 || cfg.metrics_s <= 0 ||
        cfg.step_s <= 0 || cfg.report_s <= 0 || cfg.queue_max < 1)
        usage();
    fclose(f);
    cfg.token[strcspn(cfg.token, "\r\n")] = '\0';
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGUSR1, on_signal);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)(2 * cfg.nodes));
    hb_multi = curl_multi_init();
    curl_multi_setopt(hb_multi, CURLMOPT_MAXCONNECTS, (long)cfg.nodes);
    struct node *nodes = calloc((size_t)cfg.nodes, sizeof(*nodes));
    if (!nodes)
        return 1;
    for (int i = 0; i < cfg.nodes; i++) {
        pthread_mutex_init(&nodes[i].mu, NULL);
        nodes[i].idx = i;
        snprintf(nodes[i].src, sizeof(nodes[i].src), "127.0.%d.%d", 1 + (i + 1) / 254,
                 1 + (i + 1) % 254);
    }
    double t0 = mono(), next_report = t0 + cfg.report_s;
    int registering = 0;
    double prev = 0;
    pthread_t hb_thread;
    if (pthread_create(&hb_thread, NULL, hb_main, nodes) != 0) {
        perror("loadgen: heartbeat thread");
        return 1;
    }
    while (!stop_now && mono() - t0 < cfg.duration_s) {
        double now = mono();
        if (prev > 0)
            add(&st.loop, now - prev);
        if (prev > 0 && window)
            add(&st.w_loop, now - prev);
        prev = now;
        tick(nodes, now, &registering);
        run_multi(multi, &registering);
        if (now >= next_report) {
            print_line(now - t0);
            next_report = now + cfg.report_s;
        }
        curl_multi_poll(multi, NULL, 0, 20, NULL);
    }
    hb_stop = 1;
    pthread_join(hb_thread, NULL);
    print_line(mono() - t0);
    print_failures();
    if (window)
        printf("loadgen: since SIGUSR1: heartbeats %zu, p50 %.1f ms, p99 %.1f ms (server's part"
               " p50 %.1f, p99 %.1f); loop p50 %.1f ms, p99 %.1f ms, max %.1f ms; heartbeat"
               " thread loop p99 %.1f ms\n",
               st.w_hb.n, pct(&st.w_hb, 50), pct(&st.w_hb, 99), pct(&st.w_hb_server, 50),
               pct(&st.w_hb_server, 99), pct(&st.w_loop, 50), pct(&st.w_loop, 99),
               pct(&st.w_loop, 100), pct(&st.w_hb_loop, 99));
    printf("heartbeat_p99_ms=%.1f\n", pct(&st.hb, 99));
    return 0;
}

/* ringmaster-worker: the daemon of one GPU host (docs/worker-protocol.md). Registers the
 * host's inventory, heartbeats, long-polls its actions on a thread of its own, and carries
 * them out on the main thread (wjob.c), whose loop also watches the jobs' channels and
 * processes and sends every report through an outbox that outlives a server restart.
 *
 *   ringmaster-worker --server URL[,URL2...] --token-file F [--name NAME] [--state-dir DIR]
 *                     [--simulate-gpus N [--simulate-gpu-model NAME] [--simulate-topology AxB]]
 *                     [--heartbeat S]
 *                     [--action-timeout S]
 *   ringmaster-worker --rank-exec -- CMD...   (internal: the per-rank wrapper of mpirun)
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "gpuhealth.h"
#include "doneset.h"
#include "httpc.h"
#include "inventory.h"
#include "launch.h"
#include "log.h"
#include "outbox.h"
#include "pidfile.h"
#include "rsh.h"
#include "wjob.h"

#define POLL_WAIT_S 5
#define OUTBOX_MAX 20000
#define MAX_FDS 256

struct config {
    const char *server, *token_file, *name, *state_dir;
    const char *simulate_model; /* NULL: "simulated" */
    const char *simulate_topology; /* NULL: unknown; "AxB": A NVLink islands of B GPUs */
    int simulate_gpus;
    double heartbeat_s;
    double action_timeout_s; /* a suspend or resume not done by then fails */
    const char *fault_file;  /* NULL: none (gpuhealth.h) */
};

/* Actions fetched by the poller thread, waiting for the main thread. */
struct inbox {
    pthread_mutex_t lock;
    json_t *items; /* guarded by lock */
    long long *seen;
    size_t nseen, capseen; /* poller thread only */
    int wake[2];
};

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    got_signal = sig;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: ringmaster-worker --server URL[,URL...] --token-file F [--name NAME]"
                 " [--state-dir DIR] [--simulate-gpus N [--simulate-gpu-model NAME]"
                 " [--simulate-topology AxB]]"
                 " [--heartbeat SECONDS] [--action-timeout SECONDS] [--fault-file PATH]\n"
                 "  defaults: the host name, ./var-worker, real GPUs through CUDA, 5 s, 60 s;\n"
                 "  simulated GPUs are of model \"simulated\" unless NAME (e.g. a100, v100);\n"
                 "  --simulate-topology 2x4: two NVLink islands of 4 (A x B = N);\n"
                 "  --fault-file: GPU faults to report, read at each heartbeat (lines\n"
                 "  'gpu N xid K', 'gpu N ecc', 'gpu N lost', 'gpu N ok')\n");
}

static int parse_args(int argc, char **argv, struct config *c)
{
    static const struct option opts[] = {{"server", required_argument, NULL, 's'},
                                         {"token-file", required_argument, NULL, 't'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"state-dir", required_argument, NULL, 'd'},
                                         {"simulate-gpus", required_argument, NULL, 'g'},
                                         {"simulate-gpu-model", required_argument, NULL, 'm'},
                                         {"simulate-topology", required_argument, NULL, 'T'},
                                         {"heartbeat", required_argument, NULL, 'b'},
                                         {"action-timeout", required_argument, NULL, 'a'},
                                         {"fault-file", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *c = (struct config){.state_dir = "./var-worker", .heartbeat_s = 5.0, .action_timeout_s = 60.0};
    int o;
    while ((o = getopt_long(argc, argv, "s:t:n:d:g:m:T:b:a:f:h", opts, NULL)) != -1) {
        if (o == 's')
            c->server = optarg;
        else if (o == 't')
            c->token_file = optarg;
        else if (o == 'n')
            c->name = optarg;
        else if (o == 'd')
            c->state_dir = optarg;
        else if (o == 'g')
            c->simulate_gpus = atoi(optarg);
        else if (o == 'm')
            c->simulate_model = optarg;
        else if (o == 'T')
            c->simulate_topology = optarg;
        else if (o == 'b')
            c->heartbeat_s = atof(optarg);
        else if (o == 'a')
            c->action_timeout_s = atof(optarg);
        else if (o == 'f')
            c->fault_file = optarg;
        else
            return usage(o == 'h' ? stdout : stderr), o == 'h' ? 1 : -1;
    }
    if (optind != argc || !c->server || !c->token_file || c->simulate_gpus < 0 ||
        c->simulate_gpus > INVENTORY_MAX_GPUS || c->heartbeat_s < 0.1 ||
        !(c->action_timeout_s >= 0.1 && c->action_timeout_s <= 86400) ||
        (c->simulate_model && c->simulate_gpus == 0))
        return usage(stderr), -1;
    return 0;
}

static int read_token(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f || !fgets(out, (int)len, f)) {
        log_error("token file %s: %s", path, f ? "empty" : strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    out[strcspn(out, " \r\n")] = '\0';
    return out[0] ? 0 : -1;
}

static void sleep_s(struct agent *a, double s)
{
    double end = agent_now() + s;
    while (!atomic_load(&a->stopping) && agent_now() < end)
        usleep(50000);
}

/* ---- registration and heartbeat (main thread) ---- */

static int register_node(struct agent *a, const struct inventory *inv)
{
    long status;
    json_t *ans = NULL, *body = inventory_json(inv, a->name);
    char err[256];
    int rc = httpc_request(a->http, "POST", "/api/v1/nodes", body, NULL, &status, &ans, err,
                           sizeof(err));
    json_decref(body);
    long long id = json_integer_value(json_object_get(ans, "id"));
    if (rc == 0 && (status == 200 || status == 201) && id > 0) {
        if (atomic_exchange(&a->node_id, id) != id)
            log_info("registered as node %lld (%s, %d GPUs%s)", id, a->name, inv->ngpus,
                     inv->simulated ? ", simulated" : "");
        atomic_store(&a->need_register, 0);
    } else {
        log_warn("registration failed: %s", rc < 0 ? err : "the server refused it");
        id = 0;
    }
    json_decref(ans);
    return id > 0 ? 0 : -1;
}

static void heartbeat(struct agent *a)
{
    char path[96], err[256];
    long status;
    json_t *ans = NULL, *body = wjob_heartbeat_json(a);
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/heartbeat",
             (long long)atomic_load(&a->node_id));
    int rc = httpc_request(a->http, "POST", path, body, NULL, &status, &ans, err, sizeof(err));
    json_decref(body);
    if (rc == 0 && status == 200)
        wjob_stop_stale(a, json_object_get(ans, "stop"));
    json_decref(ans);
    if (rc < 0 || status == 404 || status >= 500) {
        log_warn("heartbeat: %s", rc < 0 ? err : "refused");
        atomic_store(&a->need_register, 1);
    }
}

/* Sends the GPUs' faults when they differ from what the server has (h->sent), or all of them
 * after a registration (the server's rows of the GPUs are new then). */
static void report_health(struct agent *a, const struct inventory *inv, struct health *h)
{
    static char now[INVENTORY_MAX_GPUS][HEALTH_FAULT_MAX];
    char bad[256];
    if (!h->fault_file)
        return;
    if (health_read(h->fault_file, inv, now, bad, sizeof(bad)) < 0) {
        log_warn("fault file %s: %s", h->fault_file, strerror(errno));
        return;
    }
    if (bad[0] && strcmp(bad, h->warned)) {
        log_warn("fault file %s: line '%s' skipped (gpu N xid K | ecc | lost | ok)", h->fault_file,
                 bad);
        snprintf(h->warned, sizeof(h->warned), "%s", bad);
    }
    if (h->synced && !memcmp(now, h->sent, sizeof(h->sent[0]) * (size_t)inv->ngpus))
        return;
    char path[96], err[256];
    long status;
    json_t *ans = NULL, *body = health_json(inv, now);
    snprintf(path, sizeof(path), "/api/v1/nodes/%lld/health", (long long)atomic_load(&a->node_id));
    int rc = httpc_request(a->http, "POST", path, body, NULL, &status, &ans, err, sizeof(err));
    json_decref(body);
    json_decref(ans);
    if (rc < 0 || status != 200) {
        log_warn("health report: %s", rc < 0 ? err : "refused");
        return;
    }
    for (int k = 0; k < inv->ngpus; k++) {
        if (strcmp(now[k], h->sent[k]))
            log_info("GPU %d: %s", inv->gpus[k].index, now[k][0] ? now[k] : "healthy again");
        memcpy(h->sent[k], now[k], sizeof(now[k]));
    }
    h->synced = 1;
}

/* ---- the action poller (its own thread and connection) ---- */

struct poller {
    struct agent *a;
    struct inbox *in;
};

static int seen_before(struct inbox *in, long long id)
{
    for (size_t i = 0; i < in->nseen; i++)
        if (in->seen[i] == id)
            return 1;
    if (in->nseen == in->capseen) {
        size_t cap = in->capseen ? 2 * in->capseen : 256;
        long long *s = realloc(in->seen, cap * sizeof(*s));
        if (!s)
            return 0;
        in->seen = s;
        in->capseen = cap;
    }
    in->seen[in->nseen++] = id;
    return 0;
}

static void take_items(struct inbox *in, const json_t *items)
{
    int added = 0;
    pthread_mutex_lock(&in->lock);
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *it = json_array_get(items, i);
        if (!seen_before(in, json_integer_value(json_object_get(it, "id")))) {
            json_array_append(in->items, it);
            added = 1;
        }
    }
    pthread_mutex_unlock(&in->lock);
    if (added && write(in->wake[1], "x", 1) < 0)
        log_warn("cannot wake the main loop: %s", strerror(errno));
}

static void *poller_main(void *arg)
{
    struct poller *p = arg;
    struct agent *a = p->a;
    struct httpc *c = httpc_create(a->server, a->token);
    double backoff = 0.2;
    httpc_set_timeout(c, POLL_WAIT_S + 10);
    while (c && !atomic_load(&a->stopping)) {
        long long id = atomic_load(&a->node_id);
        char path[96], err[256];
        long status;
        json_t *ans = NULL;
        if (!id || atomic_load(&a->need_register)) {
            sleep_s(a, 0.2);
            continue;
        }
        snprintf(path, sizeof(path), "/api/v1/nodes/%lld/actions?wait=%d", id, POLL_WAIT_S);
        int rc = httpc_request(c, "GET", path, NULL, NULL, &status, &ans, err, sizeof(err));
        if (rc == 0 && status == 200) {
            take_items(p->in, json_object_get(ans, "items"));
            backoff = 0.2;
        } else {
            if (rc == 0 && status == 404)
                atomic_store(&a->need_register, 1);
            if (rc == 0 && status == 403 && backoff < 5)
                log_error("the server refuses this worker's token for node %lld (another"
                          " worker user registered it): check --token-file",
                          id);
            sleep_s(a, backoff);
            backoff = backoff * 2 > 5 ? 5 : backoff * 2;
        }
        json_decref(ans);
    }
    httpc_destroy(c);
    return NULL;
}

/* ---- the main loop ---- */

/* Runs the queued actions in order; one whose job is busy stays for a later turn. */
static void run_actions(struct agent *a, json_t *todo)
{
    for (size_t i = 0; i < json_array_size(todo);) {
        if (wjob_exec_action(a, json_array_get(todo, i)) == 0)
            json_array_remove(todo, i);
        else
            i++;
    }
}

static void drain_inbox(struct inbox *in, json_t *todo, const struct pollfd *wake)
{
    char buf[64];
    if (wake->revents & POLLIN)
        while (read(in->wake[0], buf, sizeof(buf)) > 0)
            ;
    pthread_mutex_lock(&in->lock);
    json_array_extend(todo, in->items);
    json_array_clear(in->items);
    pthread_mutex_unlock(&in->lock);
}

struct timers {
    double heartbeat, flush, reg, backoff;
};

static void periodic(struct agent *a, const struct config *cfg, const struct inventory *inv,
                     struct timers *t, struct health *h)
{
    double now = agent_now();
    int unreachable = 0;
    if (atomic_load(&a->need_register) && now >= t->reg) {
        if (register_node(a, inv) < 0) {
            t->backoff = t->backoff * 2 > 5 ? 5 : t->backoff * 2;
            t->reg = now + t->backoff;
            return;
        }
        t->backoff = 0.2;
        h->synced = 0;
    }
    if (atomic_load(&a->need_register))
        return;
    if (now >= t->heartbeat) {
        heartbeat(a);
        report_health(a, inv, h);
        t->heartbeat = now + cfg->heartbeat_s;
    }
    if (outbox_len(a->out) && now >= t->flush && !atomic_load(&a->need_register)) {
        outbox_flush(a->out, a->http, 0.3, &unreachable);
        t->flush = unreachable ? now + 0.5 : now;
        if (unreachable)
            atomic_store(&a->need_register, 1);
    }
}

static void loop(struct agent *a, const struct config *cfg, const struct inventory *inv,
                 struct inbox *in)
{
    struct timers t = {.backoff = 0.2};
    static struct health h;
    h.fault_file = cfg->fault_file;
    json_t *todo = json_array();
    struct pollfd fds[MAX_FDS];
    while (!got_signal) {
        fds[0] = (struct pollfd){.fd = in->wake[0], .events = POLLIN};
        int n = 1 + wjob_pollfds(a, fds + 1, MAX_FDS - 1);
        if (poll(fds, (nfds_t)n, 50) < 0 && errno != EINTR)
            break;
        wjob_handle(a, fds + 1, n - 1);
        drain_inbox(in, todo, &fds[0]);
        run_actions(a, todo);
        wjob_tick(a);
        periodic(a, cfg, inv, &t, &h);
    }
    log_info("signal %d: stopping", (int)got_signal);
    json_decref(todo);
}

static int setup_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    signal(SIGPIPE, SIG_IGN);
    return sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0 ? -1 : 0;
}

static int open_agent(struct agent *a, const struct config *cfg, struct inbox *in)
{
    char path[4200], host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    a->server = cfg->server;
    a->token_file = cfg->token_file;
    a->name = cfg->name ? cfg->name : strdup(host);
    a->state_dir = cfg->state_dir;
    a->control_s = cfg->action_timeout_s;
    atomic_store(&a->need_register, 1);
    ssize_t n = readlink("/proc/self/exe", a->self, sizeof(a->self) - 1);
    if (n <= 0 || read_token(cfg->token_file, a->token, sizeof(a->token)) < 0)
        return -1;
    a->self[n] = '\0';
    mkdir(cfg->state_dir, 0700);
    launch_note_session_dir(cfg->state_dir, a->simulated);
    snprintf(path, sizeof(path), "%s/actions.done", cfg->state_dir);
    a->http = httpc_create(cfg->server, a->token);
    a->out = outbox_create(OUTBOX_MAX);
    a->done = doneset_open(path);
    in->items = json_array();
    pthread_mutex_init(&in->lock, NULL);
    if (!a->done)
        log_error("%s: %s", path, strerror(errno));
    if (!a->http || !a->out || !a->done || !in->items || pipe(in->wake) < 0)
        return -1;
    httpc_set_timeout(a->http, 10);
    fcntl(in->wake[0], F_SETFL, O_NONBLOCK);
    return 0;
}

static void close_agent(struct agent *a, const struct config *cfg, struct inbox *in)
{
    if (!cfg->name)
        free((char *)a->name);
    httpc_destroy(a->http);
    outbox_destroy(a->out);
    doneset_close(a->done);
    json_decref(in->items);
    free(in->seen);
    if (in->wake[0] > 0) {
        close(in->wake[0]);
        close(in->wake[1]);
    }
    pthread_mutex_destroy(&in->lock);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--rank-exec") == 0)
        return launch_rank_exec(argc, argv);
    if (argc > 1 && strcmp(argv[1], "--rsh-agent") == 0)
        return rsh_agent_main(argc, argv);
    struct config cfg;
    struct agent a = {0};
    struct inbox in = {0};
    struct inventory inv;
    log_set_ident("ringmaster-worker");
    int rc = parse_args(argc, argv, &cfg);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    json_object_seed(0);
    inventory_probe(&inv, cfg.simulate_gpus);
    if (cfg.simulate_model && inventory_simulate_model(&inv, cfg.simulate_model) < 0) {
        log_error("--simulate-gpu-model: expected 1..127 printable characters");
        return 2;
    }
    char terr[160];
    if (cfg.simulate_topology &&
        inventory_simulate_topology(&inv, cfg.simulate_topology, terr, sizeof(terr)) < 0) {
        log_error("%s", terr);
        return 2;
    }
    if (inv.ngpus > 0 && inv.topology_note[0])
        log_info("GPU topology unknown (%s): the node is one domain", inv.topology_note);
    if (inv.ngpus == 0)
        log_info("no GPU: %s", inv.cuda_note);
    launch_note_host_gpus(inv.simulated);
    launch_note_gpu_model(inv.ngpus > 0 ? inv.gpus[0].model : NULL);
    pthread_t th;
    struct poller p = {&a, &in};
    a.simulated = inv.simulated;
    rc = setup_signals() < 0 || open_agent(&a, &cfg, &in) < 0 ||
         pthread_create(&th, NULL, poller_main, &p) != 0;
    if (!rc) {
        pidfile_end_orphans(a.state_dir);
        loop(&a, &cfg, &inv, &in);
        atomic_store(&a.stopping, 1);
        wjob_stop_all(&a, 5.0);
        int unreachable = 0;
        outbox_flush(a.out, a.http, 2.0, &unreachable);
        pthread_join(th, NULL);
    }
    close_agent(&a, &cfg, &in);
    curl_global_cleanup();
    return rc ? 1 : 0;
}

#include "wtest.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#ifndef WORKER_PATH
#define WORKER_PATH "build/ringmaster-worker"
#endif

long long wt_submit_mlp(long steps, const char *sizes, int seed)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"name\":\"mlp\",\"command\":[\"%s\",\"--steps\",\"%ld\",\"--seed\",\"%d\","
             "\"--print-every\",\"500\"],%s,\"env\":{\"ASAN_OPTIONS\":"
             "\"detect_leaks=0:protect_shadow_gap=0\"}}",
             TRAIN_MLP_PATH, steps, seed, sizes);
    json_t *j = hx_expect_json(hx_json("POST", "/api/v1/jobs", hx.admin, body), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

const char *wt_job_state(long long job)
{
    static char state[32];
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", job);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    snprintf(state, sizeof(state), "%s", json_string_value(json_object_get(j, "state")));
    json_decref(j);
    return state;
}

int wt_await_state(long long job, const char *want, double timeout_s)
{
    double end = hx_now() + timeout_s;
    while (strcmp(wt_job_state(job), want) != 0) {
        if (hx_now() > end)
            return -1;
        usleep(100000);
    }
    return 0;
}

pid_t wt_spawn_worker(const char *name, int gpus)
{
    char token[128], tfile[320], user[64], url[64], log[320], dir[320], ngpus[8];
    snprintf(user, sizeof(user), "%s-worker", name);
    snprintf(tfile, sizeof(tfile), "%s/%s.token", hx.dir, name);
    if (access(tfile, F_OK) != 0) {
        hx_user(user, "worker", token);
        FILE *f = fopen(tfile, "w");
        cr_assert_not_null(f);
        fprintf(f, "%s\n", token);
        fclose(f);
    }
    snprintf(dir, sizeof(dir), "%s/%s", hx.dir, name);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    snprintf(log, sizeof(log), "%s/worker.log", hx.dir);
    snprintf(ngpus, sizeof(ngpus), "%d", gpus);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        FILE *o = freopen(log, "a", stdout);
        dup2(fileno(o), 2);
        setenv("OMPI_MCA_btl", "self,vader", 1);
        setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
        setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
        execl(WORKER_PATH, "ringmaster-worker", "--server", url, "--token-file", tfile, "--name",
              name, "--state-dir", dir, "--simulate-gpus", ngpus, "--heartbeat", "1", (char *)NULL);
        _exit(127);
    }
    return pid;
}

int wt_stop_worker(pid_t *pid)
{
    int status = 0;
    if (*pid <= 0)
        return 0;
    kill(*pid, SIGTERM);
    double end = hx_now() + 20;
    while (waitpid(*pid, &status, WNOHANG) == 0) {
        if (hx_now() > end) {
            kill(*pid, SIGKILL);
            waitpid(*pid, &status, 0);
            *pid = 0;
            return -1;
        }
        usleep(20000);
    }
    *pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

long long wt_wait_node(const char *name)
{
    double end = hx_now() + 30;
    for (;;) {
        json_t *l = hx_expect_json(hx_json("GET", "/api/v1/nodes", hx.admin, NULL), 200);
        json_t *items = json_object_get(l, "items");
        long long id = 0;
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *n = json_array_get(items, i);
            if (!strcmp(json_string_value(json_object_get(n, "name")), name))
                id = json_integer_value(json_object_get(n, "id"));
        }
        json_decref(l);
        if (id)
            return id;
        cr_assert(hx_now() < end, "worker %s did not register in 30 s", name);
        usleep(100000);
    }
}

json_t *wt_job(long long job)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", job);
    return hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
}

json_t *wt_metrics(long long job)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/metrics?limit=100000", job);
    json_t *j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
    json_t *items = json_incref(json_object_get(j, "items"));
    json_decref(j);
    return items;
}

void wt_dump_logs(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "tail -n 80 '%s/worker.log' >&2; tail -n 30 '%s/server.log' >&2;"
             " tail -n 5 %s/sim-*/jobs/*/log >&2",
             hx.dir, hx.dir, hx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "no worker log\n");
}

/* jobstart: a job's start spec (docs/worker-protocol.md) made into the launch of its mpirun:
 * the ranks' GPUs and hosts, the checkpoint folder (a new generation restored from the one
 * before), the command and env. */
#include "jobstart.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "ckptgen.h"
#include "fsutil.h"
#include "launch.h"
#include "log.h"
#include "pidfile.h"
#include "wjob_int.h"

/* The most ranks one start may ask for: far above any node, and bounds the work a bad spec
 * can cause. */
#define MAX_WORLD 4096

/* The spec's command and env as NULL-terminated string arrays (free with free_strv). */
static char **strv_of(const json_t *arr)
{
    size_t n = json_array_size(arr);
    char **v = calloc(n + 1, sizeof(*v));
    for (size_t i = 0; v && i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        v[i] = strdup(s ? s : "");
    }
    return v;
}

static char **env_of(const json_t *obj)
{
    char **v = calloc(json_object_size(obj) + 1, sizeof(*v));
    const char *k;
    json_t *val;
    size_t i = 0;
    json_object_foreach((json_t *)obj, k, val)
    {
        if (v && json_is_string(val) && asprintf(&v[i], "%s=%s", k, json_string_value(val)) >= 0)
            i++;
    }
    return v;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* The GPUs of the spec's slots, in order (rank k gets the k-th), as "0,1,0,1"; their count
 * in *n, and in *remote how many are on other nodes. */
static int slot_gpus(struct agent *a, const json_t *slots, char *out, size_t len, int *n,
                     int *remote)
{
    size_t used = 0;
    *n = *remote = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(slots); i++) {
        const json_t *s = json_array_get(slots, i);
        const json_t *node = json_object_get(s, "node_id");
        *remote += node && json_integer_value(node) != atomic_load(&a->node_id);
        used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%lld", used ? "," : "",
                                 (long long)json_integer_value(json_object_get(s, "gpu")));
        (*n)++;
    }
    return used < len ? 0 : -1;
}

/* mpirun's --host of a job on several nodes, from spec.hosts: "a:2,b:2". 0 or -1. */
static int host_list(const json_t *hosts, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(hosts); i++) {
        const json_t *h = json_array_get(hosts, i);
        const char *name = json_string_value(json_object_get(h, "name"));
        if (!name || !*name || strchr(name, ',') || strchr(name, ':'))
            return -1;
        used +=
            (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%s:%lld", used ? "," : "",
                             name, (long long)json_integer_value(json_object_get(h, "slots")));
    }
    return json_array_size(hosts) >= 2 && used < len ? 0 : -1;
}

/* A launch into a new checkpoint generation (the job was requeued) starts from the newest
 * older one's checkpoint, copied in (ckptgen.h). Returns 0, or -1 with err. */
static int restore_generation(const struct wjob *j, const char *ckpt, char *err, size_t errlen)
{
    int from = 0, n = ckptgen_restore(ckpt, &from, err, errlen); /* err names the file */
    if (n < 0)
        return -1;
    char src[24] = "the folder above";
    if (from >= 0)
        snprintf(src, sizeof(src), "g%d", from);
    if (n > 0)
        log_info("job %lld: new checkpoint generation %s: %d file(s) copied from %s", j->id, ckpt,
                 n, src);
    return 0;
}

int jobstart_launch(struct agent *a, struct wjob *j, const json_t *spec, char *err, size_t errlen)
{
    char gpus[1024], ckpt[WJOB_PATH_LEN], ids[24], hosts[2048];
    int nslots, remote;
    if (slot_gpus(a, json_object_get(spec, "slots"), gpus, sizeof(gpus), &nslots, &remote) < 0) {
        snprintf(err, errlen, "slots: more than this worker can pass to its ranks");
        return -1;
    }
    if (remote && host_list(json_object_get(spec, "hosts"), hosts, sizeof(hosts)) < 0) {
        snprintf(err, errlen, "slots on other nodes but no usable hosts list");
        return -1;
    }
    const json_t *ws = json_object_get(spec, "world_size");
    json_int_t wsv = json_is_integer(ws) ? json_integer_value(ws) : (nslots ? nslots : 1);
    if (wsv < 1 || wsv > MAX_WORLD) {
        snprintf(err, errlen, "world_size: expected 1..%d, got %lld", MAX_WORLD, (long long)wsv);
        return -1;
    }
    int world = (int)wsv;
    if (!nslots)
        for (int i = 0; i < world; i++)
            snprintf(gpus + strlen(gpus), sizeof(gpus) - strlen(gpus), "%s%d", i ? "," : "", i);
    const char *cd = json_string_value(json_object_get(spec, "checkpoint_dir"));
    if (cd && *cd)
        snprintf(ckpt, sizeof(ckpt), "%s", cd);
    else
        snprintf(ckpt, sizeof(ckpt), "%s/checkpoints/%lld", a->state_dir, j->id);
    if (fsutil_mkdir_p(ckpt, 0755) < 0) {
        snprintf(err, errlen, "checkpoint dir %.300s: %s", ckpt, strerror(errno));
        return -1;
    }
    if (restore_generation(j, ckpt, err, errlen) < 0)
        return -1;
    snprintf(ids, sizeof(ids), "%lld", j->id);
    const json_t *lr = json_object_get(spec, "lr_scale");
    const json_t *batch = json_object_get(spec, "batch");
    const json_t *init_batch = json_object_get(spec, "init_batch");
    const json_t *max_local = json_object_get(spec, "max_local_batch");
    char **cmd = strv_of(json_object_get(spec, "command"));
    char **env = env_of(json_object_get(spec, "env"));
    struct launch_req r = {
        .job_id = ids,
        .command = (const char *const *)cmd,
        .env = (const char *const *)env,
        .world_size = world,
        .gpus = gpus,
        .hosts = remote ? hosts : NULL,
        .server = a->server,
        .token_file = a->token_file,
        .socket = j->sock,
        .ckpt_dir = ckpt,
        .plan = json_string_value(json_object_get(spec, "plan")),
        .lr_scale = json_is_number(lr) ? json_number_value(lr) : -1,
        .batch = json_is_integer(batch) ? (long)json_integer_value(batch) : 0,
        .init_batch = json_is_integer(init_batch) ? (long)json_integer_value(init_batch) : 0,
        .max_local = json_is_integer(max_local) ? (long)json_integer_value(max_local) : 0,
        .log_path = j->log,
        .self = a->self,
        .simulated = a->simulated};
    pid_t pid = cmd && env ? launch_start(&r, err, errlen) : -1;
    free_strv(cmd);
    free_strv(env);
    if (pid < 0)
        return -1;
    j->pid = pid;
    j->world = world;
    pidfile_write(j->dir, j->pid);
    j->posted_running = 0;
    log_info("job %lld: launched mpirun pid %d, %d ranks on GPUs %s", j->id, (int)pid, world, gpus);
    return 0;
}

/* ctl: the Criterion suite ringctl, and the real ringctl run for its tests (ctl.h): forked with
 * its environment, bounded, its output read back from files; a node and a running job. */
#include "ctl.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Declared once for both files of its tests (a second TestSuite() would define its symbols
 * twice); Criterion gives each Test(ringctl, ...) this setup, teardown and timeout by name. */
TestSuite(ringctl, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

void ctl_read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

pid_t ctl_spawn(const char *url, const char *token, char **argv)
{
    char outp[300], errp[300];
    snprintf(outp, sizeof(outp), "%s/ctl.out", hx.dir);
    snprintf(errp, sizeof(errp), "%s/ctl.err", hx.dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        url ? setenv("RINGMASTER_URL", url, 1) : unsetenv("RINGMASTER_URL");
        token ? setenv("RINGMASTER_TOKEN", token, 1) : unsetenv("RINGMASTER_TOKEN");
        execv(RINGCTL_PATH, argv);
        _exit(127);
    }
    return pid;
}

void ctl_reap(struct ctl_run *r, pid_t pid)
{
    char outp[300], errp[300];
    snprintf(outp, sizeof(outp), "%s/ctl.out", hx.dir);
    snprintf(errp, sizeof(errp), "%s/ctl.err", hx.dir);
    int st = 0;
    for (int i = 0; i < 12000 && waitpid(pid, &st, WNOHANG) == 0; i++)
        usleep(10000);
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    r->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    ctl_read_file(outp, r->out, sizeof(r->out));
    ctl_read_file(errp, r->err, sizeof(r->err));
}

void ctl_argv(struct ctl_run *r, const char *url, const char *token, char **argv)
{
    ctl_reap(r, ctl_spawn(url, token, argv));
}

struct ctl_run *ctl_as(const char *token, ...)
{
    static struct ctl_run r;
    char *argv[32] = {"ringctl"};
    int n = 1;
    va_list ap;
    va_start(ap, token);
    for (char *a; n < 31 && (a = va_arg(ap, char *)); n++)
        argv[n] = a;
    va_end(ap);
    argv[n] = NULL;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    ctl_argv(&r, url, token, argv);
    return &r;
}

json_t *ctl_out_json(const struct ctl_run *r)
{
    json_error_t e;
    json_t *j = json_loads(r->out, 0, &e);
    cr_assert_not_null(j, "not JSON (%s): %s", e.text, r->out);
    return j;
}

void ctl_one_node(char *w)
{
    hx_user("w1", "worker", w);
    json_decref(hx_expect_json(
        hx_json("POST", "/api/v1/nodes", w,
                "{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":1,\"gpus\":[{\"index\":0,"
                "\"model\":\"V100\",\"memory_bytes\":1},{\"index\":1,\"model\":\"V100\","
                "\"memory_bytes\":1}]}"),
        201));
}

json_t *ctl_wait_state(long long id, const char *state)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld", id);
    json_t *j = NULL;
    for (int i = 0; i < 150; i++) {
        json_decref(j);
        j = hx_expect_json(hx_json("GET", path, hx.admin, NULL), 200);
        if (!strcmp(json_string_value(json_object_get(j, "state")), state))
            return j;
        usleep(100000);
    }
    cr_assert_fail("job %lld never reached %s: %s", id, state,
                   json_string_value(json_object_get(j, "state")));
    return NULL;
}

long long ctl_running_job(const char *worker, const char *name)
{
    long long id = hx_submit(hx.admin, name, 1);
    json_decref(ctl_wait_state(id, "STARTING"));
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", id);
    json_decref(hx_expect_json(hx_json("POST", path, worker, "{\"state\":\"RUNNING\"}"), 200));
    return id;
}

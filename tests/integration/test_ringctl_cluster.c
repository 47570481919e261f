/* The real ringctl against a real ringmasterd, beyond one job: policy (and watch's bound),
 * user, nodes, health, whatif; global options, help, exit codes (0 ok, 1 refused with the
 * problem printed, 2 usage, 3 unreachable), RINGMASTER_URL and RINGMASTER_TOKEN; the bash
 * completion and the man page. Suite ringctl (declared in ctl.c), as test_ringctl_jobs.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "harness.h"

Test(ringctl, watch_is_bounded_and_policy_reads_and_sets)
{
    long long id = hx_submit(hx.admin, "waits", 4);
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    time_t t0 = time(NULL);
    struct ctl_run *r = ctl("watch", ids, "--timeout", "1", "--interval", "0.2");
    cr_assert_eq(r->code, 1, "the job did not end: %s", r->err);
    cr_assert_leq(time(NULL) - t0, 10);
    cr_assert(strstr(r->out, "PENDING"), "%s", r->out);
    r = ctl("watch", "--timeout", "0.5");
    cr_assert_eq(r->code, 0);
    cr_assert(strstr(r->out, "waits"), "%s", r->out);

    r = ctl("policy");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "POLICY"), "%s", r->out);
    cr_assert(strstr(r->out, "exploring stage 150 s"), "%s", r->out);
    r = ctl("--json", "policy");
    json_t *j = ctl_out_json(r);
    const char *name =
        json_string_value(json_object_get(json_array_get(json_object_get(j, "policies"), 0), "name"));
    char pol[64];
    snprintf(pol, sizeof(pol), "%s", name);
    json_decref(j);
    cr_assert(!strstr(r->out, "no preemption within"), "min_runtime_s 0: %s", r->out);
    r = ctl("policy", pol, "--interval", "7", "--explore-stage", "30", "--min-runtime", "600");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "exploring stage 30 s, no preemption within 600 s of a start"), "%s",
              r->out);
    j = hx_expect_json(hx_json("GET", "/api/v1/scheduler", hx.admin, NULL), 200);
    cr_assert_str_eq(json_string_value(json_object_get(j, "policy")), pol);
    cr_assert_float_eq(json_number_value(json_object_get(j, "interval_s")), 7.0, 1e-9);
    cr_assert_float_eq(json_number_value(json_object_get(j, "explore_stage_s")), 30.0, 1e-9);
    cr_assert_float_eq(json_number_value(json_object_get(j, "min_runtime_s")), 600.0, 1e-9);
    json_decref(j);
    r = ctl("policy", "--explore-stage", "0.5");
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "explore_stage_s"), "the problem names the field: %s", r->err);
    r = ctl("policy", "no-such-policy");
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "400"), "%s", r->err);
    hx_finish();
}

Test(ringctl, users_nodes_tokens_and_exit_codes)
{
    struct ctl_run *r = ctl("user", "create", "carol", "--role", "user");
    cr_assert_eq(r->code, 0, "%s", r->err);
    char carol[128];
    snprintf(carol, sizeof(carol), "%.*s", (int)strcspn(r->out, "\n"), r->out);
    r = ctl_as(carol, "--json", "submit", "--gpus", "1", "--", "sleep", "1", NULL);
    cr_assert_eq(r->code, 0, "RINGMASTER_TOKEN is used: %s", r->err);
    json_t *j = ctl_out_json(r);
    cr_assert_str_eq(json_string_value(json_object_get(j, "user")), "carol");
    json_decref(j);
    r = ctl_as(carol, "user", "create", "dave", NULL);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "403"), "%s", r->err);

    /* an admin sets carol's fair share and quota; the answer is one line */
    r = ctl("user", "set", "carol", "--share", "2.5", "--max-gpus", "16");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "carol (user): share 2.5, quota 16 GPUs"), "%s", r->out);
    r = ctl("user", "set", "carol", "--max-gpus", "none", "--json");
    cr_assert_eq(r->code, 0, "%s", r->err);
    j = ctl_out_json(r);
    cr_assert(json_is_null(json_object_get(j, "max_gpus")));
    cr_assert_float_eq(json_number_value(json_object_get(j, "share")), 2.5, 1e-12);
    json_decref(j);
    r = ctl("user", "list");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "carol (user): share 2.5, no quota, holds 0 GPUs, 1 jobs waiting"),
              "%s", r->out);
    r = ctl("user", "set", "carol", "--share", "lots");
    cr_assert_eq(r->code, 2, "%s", r->err);
    r = ctl("user", "set", "carol", "--share", "0");
    cr_assert_eq(r->code, 1, "the server refuses it: %s", r->err);
    r = ctl_as(carol, "user", "set", "carol", "--share", "100", NULL);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "403"), "%s", r->err);

    r = ctl("nodes");
    cr_assert_eq(r->code, 0, "%s", r->err);
    r = ctl("--json", "nodes");
    json_decref(ctl_out_json(r));
    char w[128];
    ctl_one_node(w);
    r = ctl("nodes", "1");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "LAST_HEARTBEAT") && strstr(r->out, "h1"), "a table: %s", r->out);
    r = ctl("nodes", "1", "--json");
    json_t *n = ctl_out_json(r);
    cr_assert_str_eq(json_string_value(json_object_get(n, "name")), "h1");
    json_decref(n);
    /* drain by name, shown by nodes; undrain by id */
    r = ctl("node", "drain", "h1", "--reason", "fan failing", "--gpus", "0", "--evacuate");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "node 1 (h1): drained, GPUs 0, to evacuate: fan failing"), "%s",
              r->out);
    r = ctl("nodes");
    cr_assert(strstr(r->out, "GPUs 0 evacuate: fan failing"), "the DRAIN column: %s", r->out);
    cr_assert(strstr(r->out, "HEALTH") && strstr(r->out, " ok "), "the HEALTH column: %s",
              r->out);
    cr_assert_eq(ctl("node", "drain", "h1")->code, 2, "--reason is required");
    cr_assert_eq(ctl("node", "drain", "h1", "--reason", "x", "--gpus", "a")->code, 2);
    r = ctl("node", "drain", "nope", "--reason", "x");
    cr_assert_eq(r->code, 1, "%s", r->err);
    cr_assert(strstr(r->err, "no node named 'nope'"), "%s", r->err);
    r = ctl_as(carol, "node", "drain", "h1", "--reason", "x", NULL);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "403"), "admins only: %s", r->err);
    r = ctl("node", "undrain", "1");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "node 1 (h1): not drained"), "%s", r->out);
    /* labels: set two, remove one; the LABELS column */
    r = ctl("node", "label", "h1", "switch=s1", "rack=r1");
    cr_assert_eq(r->code, 0, "%s", r->err);
    r = ctl("node", "label", "h1", "rack-");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "node 1 (h1): switch=s1\n"), "%s", r->out);
    r = ctl("nodes");
    cr_assert(strstr(r->out, "LABELS") && strstr(r->out, "switch=s1"), "%s", r->out);
    cr_assert_eq(ctl("node", "label", "h1", "nonsense")->code, 2);

    r = ctl_as("not-a-token", "list", NULL);
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "401"), "%s", r->err);
    cr_assert_eq(ctl("show", "nope")->code, 2);
    cr_assert_eq(ctl("resize", "1")->code, 2);
    cr_assert_eq(ctl("no-such-command")->code, 2);
    cr_assert_eq(ctl("watch", "1", "--timeout", "x")->code, 2);
    cr_assert_eq(ctl_as(hx.admin, NULL)->code, 2);
    r = ctl("show", "999");
    cr_assert_eq(r->code, 1);
    cr_assert(strstr(r->err, "404"), "%s", r->err);

    char *argv[] = {"ringctl", "health", NULL};
    struct ctl_run u;
    ctl_argv(&u, "http://127.0.0.1:1", hx.admin, argv);
    cr_assert_eq(u.code, 3, "RINGMASTER_URL is used; nothing listens there: %s", u.err);
    hx_finish();
}

Test(ringctl, global_options_anywhere_and_help)
{
    long long id = hx_submit(hx.admin, "anywhere", 1);
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *forms[][4] = {{"list", "--json", NULL},
                              {"--json", "list", NULL},
                              {"list", "-o", "json", NULL},
                              {"-o", "json", "list", NULL},
                              {"list", "-o=json", NULL}};
    for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
        struct ctl_run *r = ctl_as(hx.admin, forms[k][0], forms[k][1], forms[k][2], NULL);
        cr_assert_eq(r->code, 0, "form %zu: %s", k, r->err);
        json_t *j = ctl_out_json(r);
        cr_assert_eq(json_array_size(j), 1, "form %zu", k);
        json_decref(j);
    }
    struct ctl_run *r = ctl("show", ids, "--json");
    json_t *j = ctl_out_json(r);
    cr_assert_eq(json_integer_value(json_object_get(j, "id")), id);
    json_decref(j);
    cr_assert_eq(ctl("list", "-o", "xml")->code, 2);
    r = ctl("list", "-o", "id");
    cr_assert_eq(r->code, 0, "%s", r->err);
    char want[40];
    snprintf(want, sizeof(want), "%lld\n", id);
    cr_assert_str_eq(r->out, want, "-o id: the ids alone");

    /* --server after the command wins over RINGMASTER_URL (which points nowhere). */
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", hx.port);
    char *argv[] = {"ringctl", "health", "--server", url, NULL};
    struct ctl_run u;
    ctl_argv(&u, "http://127.0.0.1:1", hx.admin, argv);
    cr_assert_eq(u.code, 0, "%s", u.err);
    cr_assert(strstr(u.out, "status ok"), "%s", u.out);

    /* Help needs no server, goes to stdout, shows the usage and an example, and exits 0. */
    const char *helps[][3] = {{"help", NULL}, {"--help", NULL}, {"help", "list"},
                              {"list", "--help"}, {"cancel", "-h"}, {"--help", "resize"}};
    for (size_t k = 0; k < sizeof(helps) / sizeof(helps[0]); k++) {
        char *hv[] = {"ringctl", (char *)helps[k][0], (char *)helps[k][1], NULL};
        ctl_argv(&u, "http://127.0.0.1:1", NULL, hv);
        cr_assert_eq(u.code, 0, "help form %zu: %s", k, u.err);
        cr_assert(strstr(u.out, "usage: ringctl") && strstr(u.out, "example: ringctl"),
                  "help form %zu: %s", k, u.out);
    }
    char *hv[] = {"ringctl", "help", "resize", NULL};
    ctl_argv(&u, "http://127.0.0.1:1", NULL, hv);
    cr_assert(strstr(u.out, "usage: ringctl resize JOB_ID GPUS"), "%s", u.out);
    char *bad[] = {"ringctl", "help", "nope", NULL};
    ctl_argv(&u, "http://127.0.0.1:1", NULL, bad);
    cr_assert_eq(u.code, 2);
    hx_finish();
}

/* What the bash completion offers for the words (the last one being completed), with the test
 * server as RINGMASTER_URL and the built ringctl first on PATH. Into out. */
static void complete_words(const char *words, char *out, size_t len)
{
    char dir[512], cmd[2048];
    snprintf(dir, sizeof(dir), "%s", RINGCTL_PATH);
    *strrchr(dir, '/') = '\0';
    snprintf(cmd, sizeof(cmd),
             "PATH='%s':\"$PATH\" RINGMASTER_URL=http://127.0.0.1:%d RINGMASTER_TOKEN='%s'"
             " RINGCTL_COMPLETION_TIMEOUT=30 bash -c '"
             "source %s; COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _ringctl;"
             " echo \"${COMPREPLY[*]}\"'",
             dir, hx.port, hx.admin, RINGCTL_COMPLETION, words);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    pclose(p);
}

Test(ringctl, bash_completion_offers_commands_options_and_job_ids)
{
    char out[4096];
    long long a = hx_submit(hx.admin, "a", 1), b = hx_submit(hx.admin, "b", 1);
    complete_words("ringctl li", out, sizeof(out));
    cr_assert_str_eq(out, "list\n");
    complete_words("ringctl list --st", out, sizeof(out));
    cr_assert_str_eq(out, "--state\n");
    complete_words("ringctl list -o w", out, sizeof(out));
    cr_assert_str_eq(out, "wide\n");
    complete_words("ringctl --json resize 1 --wa", out, sizeof(out));
    cr_assert_str_eq(out, "--wait\n");
    complete_words("ringctl help sub", out, sizeof(out));
    cr_assert_str_eq(out, "submit\n");
    complete_words("ringctl show \"\"", out, sizeof(out));
    char want[64];
    snprintf(want, sizeof(want), "%lld %lld\n", a, b);
    cr_assert_str_eq(out, want, "the job ids from the server");
    hx_finish();
}

/* Every command and every option that ringctl's help names is in the man page and in the
 * bash completion (the man page's "\-" read as "-"). */
Test(ringctl, man_page_and_completion_name_every_command_and_option)
{
    static char man[65536], comp[16384], help[16384];
    ctl_read_file(RINGCTL_MAN, man, sizeof(man));
    ctl_read_file(RINGCTL_COMPLETION, comp, sizeof(comp));
    char *w = man;
    for (const char *r = man; *r; r++)
        if (!(r[0] == '\\' && r[1] == '-'))
            *w++ = *r;
    *w = '\0';
    struct ctl_run u;
    char *hv[] = {"ringctl", "help", NULL};
    ctl_argv(&u, "http://127.0.0.1:1", NULL, hv);
    snprintf(help, sizeof(help), "%s", u.out);
    const char *cmds[] = {"submit", "list",   "show",   "suspend", "resume", "resize", "migrate",
                          "watch",  "policy", "cancel", "events",  "nodes",  "node",   "user",
                          "health", "help"};
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
        char line[64], word[64];
        snprintf(line, sizeof(line), "\n  %s", cmds[k]);
        cr_assert(strstr(help, line), "help lists %s", cmds[k]);
        snprintf(line, sizeof(line), "\n\\fB%s", cmds[k]);
        snprintf(word, sizeof(word), ".BI %s", cmds[k]);
        cr_assert(strstr(man, line) || strstr(man, word) || strstr(man, cmds[k]),
                  "the man page names %s", cmds[k]);
        snprintf(word, sizeof(word), " %s", cmds[k]);
        cr_assert(strstr(comp, word), "the completion offers %s", cmds[k]);
        char *cv[] = {"ringctl", "help", (char *)cmds[k], NULL};
        ctl_argv(&u, "http://127.0.0.1:1", NULL, cv);
        size_t n = strlen(help);
        snprintf(help + n, sizeof(help) - n, "%s", u.out);
    }
    for (const char *p = help; (p = strstr(p, "--")); p += 2) {
        char opt[64];
        size_t n = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
        if (n == 2 || n >= sizeof(opt))
            continue;
        snprintf(opt, sizeof(opt), "%.*s", (int)n, p);
        cr_assert(strstr(man, opt), "the man page names %s", opt);
        cr_assert(strstr(comp, opt), "the completion offers %s", opt);
    }
    hx_finish();
}

/* ringctl whatif: the completed jobs replayed on the server's simulator, followed to the end,
 * a row per policy beside the measured figures; list and show; a bad period is a usage
 * error. */
Test(ringctl, whatif_replays_and_prints_a_row_per_policy)
{
    char w[128], path[64];
    ctl_one_node(w);
    for (int k = 0; k < 2; k++) {
        long long id = ctl_running_job(w, k ? "second" : "first");
        usleep(300000);
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld/state", id);
        json_decref(hx_expect_json(hx_json("POST", path, w, "{\"state\":\"COMPLETED\"}"), 200));
    }
    struct ctl_run *r = ctl("whatif", "--since", "5x");
    cr_assert_eq(r->code, 2, "%s", r->err);
    cr_assert(strstr(r->err, "--since"), "%s", r->err);
    r = ctl("whatif", "--since", "1h", "--policies", "fifo,ringmaster", "--timeout", "120");
    cr_assert_eq(r->code, 0, "%s%s", r->out, r->err);
    cr_assert(strstr(r->out, "2 jobs completed since") && strstr(r->out, "1x2:v100"), "%s",
              r->out);
    cr_assert(strstr(r->out, "measured: mean JCT"), "%s", r->out);
    cr_assert(strstr(r->out, "models: 0 of 2 jobs replayed at their own fitted speed model"),
              "nothing measured of jobs that reported nothing: %s", r->out);
    cr_assert(strstr(r->out, "POLICY") && strstr(r->out, "VS MEASURED"), "%s", r->out);
    const char *fifo = strstr(r->out, "\nfifo "), *rm = strstr(r->out, "\nringmaster (in force)");
    cr_assert(fifo && rm && fifo < rm, "a row each, in order, ringmaster in force: %s", r->out);
    cr_assert(strstr(r->err, "replaying:"), "progress on stderr: %s", r->err);

    r = ctl("whatif", "list");
    cr_assert_eq(r->code, 0, "%s", r->err);
    cr_assert(strstr(r->out, "done") && strstr(r->out, "2/2"), "%s", r->out);
    json_t *runs = hx_expect_json(hx_json("GET", "/api/v1/whatif", hx.admin, NULL), 200);
    char id[24];
    snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(json_array_get(json_object_get(runs, "items"), 0),
                                                "id")));
    json_decref(runs);
    r = ctl("whatif", "show", id, "--json");
    cr_assert_eq(r->code, 0, "%s", r->err);
    json_t *j = ctl_out_json(r);
    cr_assert_eq(json_array_size(json_object_get(j, "results")), 2);
    json_decref(j);
    hx_finish();
}

/* `ringmaster-sim decide`: a JSON snapshot in, a JSON decision out, and bad
 * input refused with a clear message; plus the CLI's exit codes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide_cmd.h"
#include "decide_input.h"
#include "report.h"

static const char snapshot[] =
    "{\"now\": 3600, \"seed\": 7, \"policy\": \"precompute\",\n"
    " \"nodes\": [{\"id\": 10, \"gpus\": 8}, {\"id\": 11, \"gpus\": 8, \"up\": true}],\n"
    " \"jobs\": [\n"
    "  {\"id\": 1, \"requested_gpus\": 4, \"max_gpus\": 8, \"submit_time\": 0,\n"
    "   \"allocation\": [{\"node\": 0, \"gpu\": 0}, {\"node\": 0, \"gpu\": 1}],\n"
    "   \"run_time\": 3000, \"epochs_done\": 40, \"remaining_epochs\": 100,\n"
    "   \"batch_per_gpu\": 128, \"dataset_size\": 50000,\n"
    "   \"speed_observations\": [{\"w\": 1, \"step_s\": 0.4025}, {\"w\": 2, \"step_s\": 0.4272},\n"
    "                            {\"w\": 4, \"step_s\": 0.4443}, {\"w\": 8, \"step_s\": "
    "0.4702}]},\n"
    "  {\"id\": 2, \"requested_gpus\": 2, \"submit_time\": 3500,\n"
    "   \"batch_per_gpu\": 128, \"dataset_size\": 50000,\n"
    "   \"speed_observations\": [{\"w\": 1, \"step_s\": 0.40}, {\"w\": 2, \"step_s\": 0.43}],\n"
    "   \"loss_observations\": [{\"step\": 100, \"loss\": 2.0}, {\"step\": 200, \"loss\": 1.5},\n"
    "                           {\"step\": 400, \"loss\": 1.1}, {\"step\": 800, \"loss\": 0.8}],\n"
    "   \"target_loss\": 0.5}\n"
    " ]}\n";

Test(decide, round_trip)
{
    char *out = NULL, err[256];
    cr_assert_eq(decide_cmd_json(snapshot, strlen(snapshot), NULL, &out, err, sizeof(err)), 0, "%s",
                 err);
    json_error_t jerr;
    json_t *d = json_loads(out, 0, &jerr);
    cr_assert_not_null(d, "output is not JSON: %s", jerr.text);
    cr_assert_str_eq(json_string_value(json_object_get(d, "policy")), "precompute");
    json_t *frag = json_object_get(d, "fragmentation");
    cr_assert(json_is_number(frag) && json_number_value(frag) >= 0 && json_number_value(frag) <= 1);
    json_t *jobs = json_object_get(d, "jobs");
    cr_assert_eq(json_array_size(jobs), 2);
    int total = 0;
    unsigned char used[2][8] = {{0}};
    for (size_t i = 0; i < 2; i++) {
        json_t *j = json_array_get(jobs, i);
        cr_assert_eq(json_integer_value(json_object_get(j, "id")), (json_int_t)i + 1);
        int gpus = (int)json_integer_value(json_object_get(j, "gpus"));
        json_t *slots = json_object_get(j, "slots");
        cr_assert_eq(json_array_size(slots), (size_t)gpus);
        cr_assert(json_is_boolean(json_object_get(j, "changed")));
        cr_assert(json_is_string(json_object_get(j, "reason")));
        for (int g = 0; g < gpus; g++) {
            json_t *s = json_array_get(slots, (size_t)g);
            int node = (int)json_integer_value(json_object_get(s, "node"));
            int gpu = (int)json_integer_value(json_object_get(s, "gpu"));
            cr_assert(node >= 0 && node < 2 && gpu >= 0 && gpu < 8);
            cr_assert_eq(used[node][gpu]++, 0, "GPU given twice");
        }
        total += gpus;
        cr_assert_gt(gpus, 0, "both jobs run on an idle 16-GPU cluster");
    }
    cr_assert_leq(total, 16);
    json_decref(d);
    free(out);
}

Test(decide, policy_argument_overrides_the_snapshot)
{
    char *out = NULL, err[256];
    cr_assert_eq(decide_cmd_json(snapshot, strlen(snapshot), sched_policy_find("one"), &out, err,
                                 sizeof(err)),
                 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(d, "policy")), "one");
    json_t *jobs = json_object_get(d, "jobs");
    for (size_t i = 0; i < 2; i++)
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(jobs, i), "gpus")), 1);
    json_decref(d);
    free(out);
}

/* Job 1 has held all 4 GPUs for 1,000 s: 4,000 GPU-seconds. */
static const char tiresias_fmt[] =
    "{\"now\": 2000, \"policy\": \"tiresias\", %s\"nodes\": [{\"id\": 1, \"gpus\": 4}],\n"
    " \"jobs\": [{\"id\": 1, \"requested_gpus\": 4, \"submit_time\": 0, \"run_time\": 1000,\n"
    "   \"last_change_time\": 1000, \"allocation\": [{\"node\": 0, \"gpu\": 0},\n"
    "   {\"node\": 0, \"gpu\": 1}, {\"node\": 0, \"gpu\": 2}, {\"node\": 0, \"gpu\": 3}]},\n"
    "  {\"id\": 2, \"requested_gpus\": 4, \"submit_time\": 10}]}\n";

static int tiresias_gpus_of_first(const char *settings)
{
    char text[1024], *out = NULL, err[256];
    snprintf(text, sizeof(text), tiresias_fmt, settings);
    cr_assert_eq(decide_cmd_json(text, strlen(text), NULL, &out, err, sizeof(err)), 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    int gpus = (int)json_integer_value(
        json_object_get(json_array_get(json_object_get(d, "jobs"), 0), "gpus"));
    json_decref(d);
    free(out);
    return gpus;
}

Test(decide, tiresias_threshold_from_the_snapshot)
{
    cr_assert_eq(tiresias_gpus_of_first(""), 4, "below 16 GPU-hours: keeps its GPUs");
    cr_assert_eq(tiresias_gpus_of_first("\"queue_threshold_gpu_s\": 3600, "), 0,
                 "past a 1 GPU-hour threshold: demoted behind job 2");
    cr_assert_eq(tiresias_gpus_of_first("\"queue_threshold_gpu_s\": 3600, "
                                        "\"starvation_knob\": 1, "),
                 0, "running: never promoted");
}

static void expect_refused(const char *text, const char *needle)
{
    char *out = NULL, err[256];
    errno = 0;
    cr_assert_eq(decide_cmd_json(text, strlen(text), NULL, &out, err, sizeof(err)), -1, "%s", text);
    cr_assert_eq(errno, EINVAL, "%s", text);
    cr_assert_null(out);
    cr_assert(strstr(err, needle), "expected '%s' in: %s", needle, err);
}

Test(decide, bad_input_is_refused_with_the_path)
{
    expect_refused("{\"nodes\": [", "bad JSON");
    expect_refused("[1, 2]", "$: expected an object");
    expect_refused("{\"jobs\": []}", "$.nodes");
    expect_refused("{\"nodes\": [{\"gpus\": -1}]}", "$.nodes[0].gpus");
    expect_refused("{\"nodes\": [{\"gpus\": 8}], \"nodes\": []}", "duplicate");
    expect_refused("{\"nodes\": [{\"gpus\": 8}], \"jobs\": [{\"id\": 1}]}",
                   "requested_gpus are required");
    expect_refused("{\"nodes\": [{\"gpus\": 8}], \"jobs\": [{\"id\": 1, \"requested_gpus\": 1,"
                   " \"allocation\": [{\"node\": 0, \"gpu\": 8}]}]}",
                   "$.jobs[0].allocation[0].gpu");
    expect_refused("{\"nodes\": [{\"gpus\": 8}], \"jobs\": [{\"id\": 1, \"requested_gpus\": 1,"
                   " \"speed_observations\": [{\"w\": 0, \"step_s\": 1}]}]}",
                   "speed_observations[0].w");
    expect_refused("{\"nodes\": [{\"gpus\": 8}], \"policy\": \"nope\"}", "unknown policy");
    expect_refused("{\"nodes\": [{\"gpus\": 8}], \"jobs\": [{\"id\": 1, \"requested_gpus\": 1,"
                   " \"model_source\": \"magic\"}]}",
                   "model_source");
}

/* ---- the CLI itself (the binary beside the test binary) ------------------- */

static char sim_path[512];

static void find_sim(void)
{
    const char *build = getenv("BUILD");
    snprintf(sim_path, sizeof(sim_path), "%s/ringmaster-sim", build ? build : "build");
    FILE *f = fopen(sim_path, "r");
    if (!f)
        cr_skip_test("%s not built", sim_path);
    fclose(f);
}

/* Runs the simulator with args and stdin from input; returns the exit code
 * and the first line of stdout in line. */
static int run_sim(const char *args, const char *input, char *line, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "printf '%%s' '%s' | %s %s 2>/dev/null", input, sim_path, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    line[0] = '\0';
    char buf[4096];
    int first = 1;
    while (fgets(buf, sizeof(buf), p))
        if (first-- > 0)
            snprintf(line, len, "%s", buf);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(cli, exit_codes_and_csv_header, .timeout = 60)
{
    char line[4096];
    find_sim();
    cr_assert_eq(run_sim("decide", "{bad", line, sizeof(line)), 2);
    cr_assert_eq(run_sim("decide --policy one", "{\"nodes\":[{\"gpus\":2}],\"jobs\":[]}", line,
                         sizeof(line)),
                 0);
    cr_assert_eq(run_sim("run --cluster 2x", "", line, sizeof(line)), 2);
    cr_assert_eq(
        run_sim("run --cluster 2x8 --poisson 100,5 --policies nope", "", line, sizeof(line)), 2);
    cr_assert_eq(run_sim("nonsense", "", line, sizeof(line)), 2);
    cr_assert_eq(run_sim("run --help", "", line, sizeof(line)), 0);
    cr_assert_eq(run_sim("run --cluster 2x8 --poisson 300,10 --policies one,precompute "
                         "--format csv",
                         "", line, sizeof(line)),
                 0);
    cr_assert_eq(strncmp(line, REPORT_CSV_HEADER "\n", strlen(REPORT_CSV_HEADER) + 1), 0,
                 "header: %s", line);
}

/* Plans, host resources and GPU models in and out (docs/plans.md). */
static const char plan_snapshot[] =
    "{\"policy\": \"ringmaster\",\n"
    " \"nodes\": [{\"gpus\": 8, \"gpu_model\": 1, \"gpu_speed\": 1, \"gpu_mem_gb\": 32,\n"
    "             \"cpu_cores\": 40, \"host_mem_gb\": 512},\n"
    "            {\"gpus\": 8, \"gpu_model\": 2, \"gpu_speed\": 2, \"gpu_mem_gb\": 80,\n"
    "             \"cpu_cores\": 128, \"host_mem_gb\": 1024}],\n"
    " \"jobs\": [{\"id\": 1, \"requested_gpus\": 8, \"max_gpus\": 8, \"remaining_epochs\": 10,\n"
    "   \"batch_per_gpu\": 8, \"dataset_size\": 32000,\n"
    "   \"speed_observations\": [{\"w\": 1, \"step_s\": 2.0}, {\"w\": 2, \"step_s\": 2.1},\n"
    "                            {\"w\": 4, \"step_s\": 2.2}, {\"w\": 8, \"step_s\": 2.4}],\n"
    "   \"plan\": {\"params_b\": 13, \"act_gb\": 4, \"max_tp\": 8,\n"
    "            \"supported\": [\"dp\", \"zero2\", \"zero3\", \"offload\"],\n"
    "            \"requested\": {\"kind\": \"offload\", \"cpu_cores\": 8}}}]}\n";

Test(decide, plans_and_gpu_models)
{
    char *out = NULL, err[256];
    cr_assert_eq(
        decide_cmd_json(plan_snapshot, strlen(plan_snapshot), NULL, &out, err, sizeof(err)), 0,
        "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    json_t *j = json_array_get(json_object_get(d, "jobs"), 0);
    cr_assert_eq(json_integer_value(json_object_get(j, "gpu_model")), 2, "the faster GPUs");
    json_t *plan = json_object_get(j, "plan");
    cr_assert_not_null(plan);
    cr_assert_str_neq(json_string_value(json_object_get(plan, "kind")), "dp",
                      "13B does not fit data parallel");
    json_decref(d);
    free(out);
    char bad[sizeof(plan_snapshot) + 16];
    snprintf(bad, sizeof(bad), "%s", plan_snapshot);
    memcpy(strstr(bad, "\"offload\", \"cpu"), "\"offlaod\"", 9);
    cr_assert_neq(decide_cmd_json(bad, strlen(bad), NULL, &out, err, sizeof(err)), 0);
    cr_assert(strstr(err, "plan"), "%s", err);
}

Test(decide, gandiva_members_round_trip)
{
    static const char in[] =
        "{\"now\": 120, \"quantum_s\": 60, \"nodes\": [{\"gpus\": 1}], \"jobs\": [\n"
        " {\"id\": 1, \"requested_gpus\": 1, \"elastic\": false, \"gpu_util\": 0.5,\n"
        "  \"allocation\": [{\"node\": 0, \"gpu\": 0}], \"packed_with\": 2, \"rate_alone\": 10,\n"
        "  \"rate_packed\": 8, \"last_change_time\": 100},\n"
        " {\"id\": 2, \"requested_gpus\": 1, \"elastic\": false, \"gpu_util\": 0.5,\n"
        "  \"allocation\": [{\"node\": 0, \"gpu\": 0}], \"packed_with\": 1, \"rate_alone\": 10,\n"
        "  \"rate_packed\": 8, \"last_change_time\": 100},\n"
        " {\"id\": 3, \"requested_gpus\": 1, \"elastic\": false, \"suspended\": true,\n"
        "  \"home_node\": 0, \"last_change_time\": 30}]}";
    char *out = NULL, err[256];

    cr_assert_eq(decide_cmd_json(in, strlen(in), sched_policy_find("gandiva"), &out, err,
                             sizeof(err)), 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    json_t *jobs = json_object_get(d, "jobs");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(jobs, 0), "pack")), "keep");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(jobs, 1), "packed_with")), 1);
    cr_assert(json_is_false(json_object_get(json_array_get(jobs, 2), "resumed")));
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(jobs, 2), "gpus")), 0,
                 "the pair is inside its quantum: job 3 waits");
    json_decref(d);
    free(out);
}

/* Issue 17's members: max_wait_s, users, finished_run_s, and per job user,
 * declared_epochs, stops_at_convergence; out: forced, remaining_source and
 * the explanation of a waiting job. */
static const char guard_snapshot[] =
    "{\"now\": 10000, \"policy\": \"fifo\", \"max_wait_s\": 3600,\n"
    " \"users\": [{\"id\": 7, \"share\": 1, \"max_gpus\": 9}],\n"
    " \"finished_run_s\": [600, 3600, 7200],\n"
    " \"nodes\": [{\"gpus\": 8}],\n"
    " \"jobs\": [\n"
    "  {\"id\": 1, \"requested_gpus\": 8, \"elastic\": false, \"submit_time\": 0, \"user\": 7,\n"
    "   \"allocation\": [{\"node\": 0, \"gpu\": 0}, {\"node\": 0, \"gpu\": 1},\n"
    "                  {\"node\": 0, \"gpu\": 2}, {\"node\": 0, \"gpu\": 3},\n"
    "                  {\"node\": 0, \"gpu\": 4}, {\"node\": 0, \"gpu\": 5},\n"
    "                  {\"node\": 0, \"gpu\": 6}, {\"node\": 0, \"gpu\": 7}],\n"
    "   \"run_time\": 1800, \"epochs_done\": 18, \"stops_at_convergence\": true},\n"
    "  {\"id\": 2, \"requested_gpus\": 1, \"elastic\": false, \"submit_time\": 5000,\n"
    "   \"declared_epochs\": 10, \"user\": 7},\n"
    "  {\"id\": 3, \"requested_gpus\": 1, \"elastic\": false, \"submit_time\": 9000,\n"
    "   \"user\": 7}\n"
    " ]}\n";

Test(decide, guarantees_estimates_and_explanations)
{
    char *out = NULL, err[256];
    cr_assert_eq(decide_cmd_json(guard_snapshot, strlen(guard_snapshot), NULL, &out, err,
                             sizeof(err)),
                 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    cr_assert_not_null(d);
    json_t *jobs = json_object_get(d, "jobs");
    json_t *j1 = json_array_get(jobs, 0), *j2 = json_array_get(jobs, 1),
           *j3 = json_array_get(jobs, 2);
    /* Job 2 waited 5,000 s > 3,600: served, job 1 yields (rigid, no other way). */
    cr_assert_eq(json_integer_value(json_object_get(j2, "gpus")), 1, "%s", out);
    cr_assert_str_eq(json_string_value(json_object_get(j2, "forced")), "max_wait");
    cr_assert_str_eq(json_string_value(json_object_get(j2, "remaining_source")), "declared");
    /* Job 1: no fit, prior of the finished jobs longer than its 1,800 s. */
    cr_assert_str_eq(json_string_value(json_object_get(j1, "remaining_source")), "prior");
    cr_assert_str_eq(json_string_value(json_object_get(j3, "remaining_source")), "none",
                     "no remaining_epochs, no length declared: unknown");
    const char *why = json_string_value(json_object_get(j3, "explanation"));
    cr_assert_not_null(why, "%s", out);
    cr_assert(strstr(why, "needs 1 GPU"), "%s", why);
    json_decref(d);
    free(out);
    /* Bad members are refused with their path. */
    expect_refused("{\"nodes\": [{\"gpus\": 1}], \"jobs\": [], \"users\": [{\"share\": 1}]}",
                   "$.users[0]");
    expect_refused("{\"nodes\": [{\"gpus\": 1}], \"jobs\": [], \"finished_run_s\": [-1]}",
                   "$.finished_run_s[0]");
}

/* Issue 33 item 6's members: each job's last_checkpoint_time (and step), min_runtime_s. Two
 * rigid 4-GPU jobs; job 3 waited past max_wait_s and takes 4 GPUs from the one that loses
 * least since its checkpoint: job 2 (100 s x 4) rather than job 1 (1,000 s x 4), unless job 2
 * started within min_runtime_s. */
static const char ckpt_snapshot[] =
    "{\"now\": 10000, \"policy\": \"fifo\", \"max_wait_s\": 3600, %s\n"
    " \"nodes\": [{\"gpus\": 8}],\n"
    " \"jobs\": [\n"
    "  {\"id\": 1, \"requested_gpus\": 4, \"elastic\": false, \"submit_time\": 0,\n"
    "   \"allocation\": [{\"node\": 0, \"gpu\": 0}, {\"node\": 0, \"gpu\": 1},\n"
    "                  {\"node\": 0, \"gpu\": 2}, {\"node\": 0, \"gpu\": 3}],\n"
    "   \"run_time\": 5000, \"last_change_time\": 5000, \"last_checkpoint_time\": 9000,\n"
    "   \"last_checkpoint_step\": 900},\n"
    "  {\"id\": 2, \"requested_gpus\": 4, \"elastic\": false, \"submit_time\": 1,\n"
    "   \"allocation\": [{\"node\": 0, \"gpu\": 4}, {\"node\": 0, \"gpu\": 5},\n"
    "                  {\"node\": 0, \"gpu\": 6}, {\"node\": 0, \"gpu\": 7}],\n"
    "   \"run_time\": 300, \"last_change_time\": 9700, \"last_checkpoint_time\": 9900},\n"
    "  {\"id\": 3, \"requested_gpus\": 4, \"elastic\": false, \"submit_time\": 5000}\n"
    " ]}\n";

static int gpus_of(const char *extra, int job)
{
    char in[2048], *out = NULL, err[256];
    snprintf(in, sizeof(in), ckpt_snapshot, extra);
    cr_assert_eq(decide_cmd_json(in, strlen(in), NULL, &out, err, sizeof(err)), 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    cr_assert_not_null(d);
    int g = (int)json_integer_value(
        json_object_get(json_array_get(json_object_get(d, "jobs"), (size_t)job), "gpus"));
    json_decref(d);
    free(out);
    return g;
}

Test(decide, the_checkpoint_and_min_runtime_choose_who_yields)
{
    cr_assert_eq(gpus_of("", 2), 4, "job 3 is served");
    cr_assert_eq(gpus_of("", 1), 0, "job 2 yields: 100 s lost since its checkpoint");
    cr_assert_eq(gpus_of("", 0), 4);
    cr_assert_eq(gpus_of("\"min_runtime_s\": 600,", 1), 4, "started 300 s ago: kept");
    cr_assert_eq(gpus_of("\"min_runtime_s\": 600,", 0), 0, "job 1 yields instead");
    expect_refused("{\"nodes\": [{\"gpus\": 1}], \"min_runtime_s\": -1, \"jobs\": []}",
                   "min_runtime_s");
}

/* A fixed-batch job as an outside simulator gives it: step times measured at (w, nodes,
 * examples per GPU), 4 GPUs per node, and its batch model with its gradient statistics. */
static const char goodput_snapshot[] =
    "{\"nodes\": [{\"gpus\": 4}, {\"gpus\": 4}],\n"
    " \"jobs\": [{\"id\": 1, \"requested_gpus\": 8, \"remaining_epochs\": 10,\n"
    "   \"batch_per_gpu\": 20, \"dataset_size\": 7140, \"gpus_per_node\": 4,\n"
    "   \"speed_observations\": [{\"w\": 1, \"nodes\": 1, \"m\": 80, \"step_s\": 2.54},\n"
    "     {\"w\": 2, \"nodes\": 1, \"m\": 80, \"step_s\": 2.63},\n"
    "     {\"w\": 4, \"nodes\": 1, \"m\": 80, \"step_s\": 2.62},\n"
    "     {\"w\": 8, \"nodes\": 2, \"m\": 80, \"step_s\": 2.73},\n"
    "     {\"w\": 16, \"nodes\": 4, \"m\": 40, \"step_s\": 1.48}],\n"
    "   \"batch\": {\"init\": 20, \"batch\": 640, \"max\": 640, \"min_local\": 10,\n"
    "             \"max_local\": 80, \"grad_sqr\": 0.16, \"grad_var\": 2.0}}]}\n";

Test(decide, batch_model_and_placed_observations)
{
    char err[256];
    struct decide_input *in =
        decide_input_read(goodput_snapshot, strlen(goodput_snapshot), err, sizeof(err));
    cr_assert_not_null(in, "%s", err);
    const struct sched_job *j = &decide_input_snapshot(in)->jobs[0];
    cr_expect_float_eq(j->batch.init_batch, 20, 1e-12);
    cr_expect_float_eq(j->batch.batch, 640, 1e-12);
    cr_expect_float_eq(j->batch.max_local, 80, 1e-12);
    cr_expect_float_eq(j->batch.grad_var, 2.0, 1e-12);
    cr_expect_eq(j->batch.adaptive, 0);
    cr_expect_eq(j->speed.gpus_per_node, 4);
    cr_assert(j->speed.fitted);
    /* the fit follows the observations at their own placement and local batch */
    const int ws[2] = {8, 16};
    const double want[2] = {2.73, 1.48};
    for (int k = 0; k < 2; k++) {
        double t = goodput_step_time(&j->speed, &j->batch, ws[k], ws[k] / 4, 640, NULL);
        cr_expect_lt(fabs(t - want[k]) / want[k], 0.25, "w %d: %g s, measured %g s", ws[k], t,
                     want[k]);
    }
    /* fixed at 640: 8 GPUs do a step (80 per GPU) far sooner than 1 GPU (8 micro-steps) */
    double r1 = sched_job_rate(j, 1, NULL), r8 = sched_job_rate(j, 8, NULL);
    cr_expect_gt(r8, 4 * r1, "rate %g on 1 GPU, %g on 8", r1, r8);
    decide_input_destroy(in);
    expect_refused("{\"nodes\": [{\"gpus\": 8}], \"jobs\": [{\"id\": 1, \"requested_gpus\": 1,"
                   " \"batch\": {\"batch\": 64}}]}",
                   "$.jobs[0].batch: member init is required");
    expect_refused("{\"nodes\": [{\"gpus\": 8}], \"jobs\": [{\"id\": 1, \"requested_gpus\": 1,"
                   " \"speed_observations\": [{\"w\": 2, \"nodes\": 3, \"step_s\": 1}]}]}",
                   "nodes: at most w");
}

/* Nodes that name their GPU type: a known name (a word of it: "NVIDIA A100-SXM4-80GB" is a100)
 * takes the simulator's model, speed and memory; an unknown one a model of its own (100 on).
 * The decision names each job's type, its remaining work in epochs and in seconds at its rate
 * on the GPUs it gets, with the source, and the batch chosen for an adaptive job. */
static const char typed_snapshot[] =
    "{\"policy\": \"ringmaster\",\n"
    " \"nodes\": [{\"gpus\": 4, \"gpu_type\": \"NVIDIA A100-SXM4-80GB\"},\n"
    "           {\"gpus\": 4, \"gpu_type\": \"Tesla T4\"},\n"
    "           {\"gpus\": 2, \"gpu_type\": \"mi300\"}],\n"
    " \"jobs\": [\n"
    "  {\"id\": 1, \"requested_gpus\": 4, \"max_gpus\": 4, \"remaining_epochs\": 20,\n"
    "   \"speed_observations\": [{\"w\": 1, \"step_s\": 0.40}, {\"w\": 2, \"step_s\": 0.43},\n"
    "                            {\"w\": 4, \"step_s\": 0.45}]},\n"
    "  {\"id\": 2, \"requested_gpus\": 1, \"max_gpus\": 4, \"declared_epochs\": 30,\n"
    "   \"epochs_done\": 5, \"dataset_size\": 50000, \"batch_per_gpu\": 128,\n"
    "   \"speed_observations\": [{\"w\": 1, \"step_s\": 0.40}, {\"w\": 2, \"step_s\": 0.43}],\n"
    "   \"batch\": {\"init\": 128, \"max\": 4096, \"max_local\": 256, \"adaptive\": true,\n"
    "             \"grad_sqr\": 1, \"grad_var\": 200}}]}\n";

Test(decide, nodes_name_their_gpu_type_and_the_decision_names_each_job_s)
{
    char err[256], *out = NULL;
    struct decide_input *in =
        decide_input_read(typed_snapshot, strlen(typed_snapshot), err, sizeof(err));
    cr_assert_not_null(in, "%s", err);
    const struct sched_snapshot *snap = decide_input_snapshot(in);
    cr_assert_eq(snap->nodes[0].gpu_model, 2, "a100");
    cr_assert_float_eq(snap->nodes[0].gpu_speed, 2.0, 1e-12);
    cr_assert_float_eq(snap->nodes[0].gpu_mem_gb, 80, 1e-12);
    cr_assert_eq(snap->nodes[1].gpu_model, 4, "t4");
    cr_assert_float_eq(snap->nodes[1].gpu_speed, 0.4, 1e-12);
    cr_assert_eq(snap->nodes[2].gpu_model, 100, "an unknown type: a model of its own");
    cr_assert_float_eq(snap->nodes[2].gpu_speed, 0, 1e-12, "its factor: the default (1)");
    cr_assert_str_eq(decide_input_gpu_type(in, 4), "Tesla T4");
    cr_assert_null(decide_input_gpu_type(in, 1), "no node of v100");
    decide_input_destroy(in);

    cr_assert_eq(decide_cmd_json(typed_snapshot, strlen(typed_snapshot), NULL, &out, err,
                                 sizeof(err)),
                 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    json_t *jobs = json_object_get(d, "jobs");
    json_t *j1 = json_array_get(jobs, 0), *j2 = json_array_get(jobs, 1);
    cr_assert_str_eq(json_string_value(json_object_get(j1, "gpu_type")), "NVIDIA A100-SXM4-80GB",
                     "%s", out);
    cr_assert_eq(json_integer_value(json_object_get(j1, "gpu_model")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(j1, "remaining_source")), "given");
    cr_assert_float_eq(json_number_value(json_object_get(j1, "remaining_epochs")), 20, 1e-9);
    /* 4 GPUs of a100: 4 x 128 examples a step of about 0.45 s at v100 speed, compute twice as
     * fast: 50000 / 512 steps an epoch, each at most 0.45 s */
    double s1 = json_number_value(json_object_get(j1, "remaining_s"));
    double epoch_s = 50000.0 / 512 * 0.45;
    cr_assert(s1 > 20 * epoch_s / 2.5 && s1 < 20 * epoch_s, "remaining_s %g", s1);
    cr_assert_null(json_object_get(j1, "batch"), "no batch model: no batch");
    cr_assert_null(json_object_get(j1, "types"), "no type observed: no models per type");
    cr_assert_str_eq(json_string_value(json_object_get(j2, "remaining_source")), "declared");
    cr_assert_float_eq(json_number_value(json_object_get(j2, "remaining_epochs")), 25, 1e-9);
    int gpus2 = (int)json_integer_value(json_object_get(j2, "gpus"));
    cr_assert_gt(gpus2, 0, "%s", out);
    cr_assert(json_is_string(json_object_get(j2, "gpu_type")), "%s", out);
    double batch = json_number_value(json_object_get(j2, "batch"));
    cr_assert(batch >= 128 && batch <= 4096, "ringmaster chose its batch: %g (%s)", batch, out);
    cr_assert_gt(json_number_value(json_object_get(j2, "remaining_s")), 0);
    json_decref(d);
    free(out);
}

Test(decide, gpu_types_are_refused_when_they_contradict)
{
    expect_refused("{\"nodes\": [{\"gpus\": 1, \"gpu_type\": \"\"}]}", "$.nodes[0].gpu_type");
    expect_refused("{\"nodes\": [{\"gpus\": 1, \"gpu_type\": 4}]}", "$.nodes[0].gpu_type");
    expect_refused("{\"nodes\": [{\"gpus\": 1, \"gpu_type\": \"a100\"},"
                   " {\"gpus\": 1, \"gpu_type\": \"a100\", \"gpu_model\": 3}]}",
                   "$.nodes[1].gpu_type: another node of this gpu_type has another gpu_model");
    expect_refused("{\"nodes\": [{\"gpus\": 1, \"gpu_type\": \"a100\"},"
                   " {\"gpus\": 1, \"gpu_type\": \"x1\", \"gpu_model\": 2}]}",
                   "$.nodes[1].gpu_type: another node of its gpu_model has another gpu_type");
}

/* Observations that name the GPU type they were measured on are learned as the server learns
 * them (the core's learn_fit and learn_round): each job's model on each type it measured, an
 * estimate with its uncertainty on the others from the ratios the jobs measured between
 * types, and its reference model from all its steps. Job 1 measured both types (a100 4x as
 * fast as t4 in compute), job 2 only t4, job 3 one size on a100. */
static const char learned_snapshot[] =
    "{\"policy\": \"ringmaster\", \"explore_stage_s\": 30,\n"
    " \"nodes\": [{\"gpus\": 4, \"gpu_type\": \"a100\"}, {\"gpus\": 4, \"gpu_type\": \"t4\"}],\n"
    " \"jobs\": [\n"
    "  {\"id\": 1, \"requested_gpus\": 1, \"max_gpus\": 2, \"remaining_epochs\": 5,\n"
    "   \"speed_observations\": [\n"
    "     {\"w\": 1, \"step_s\": 0.80, \"gpu_type\": \"t4\"}, {\"w\": 2, \"step_s\": 0.83, \"gpu_type\": \"t4\"},\n"
    "     {\"w\": 1, \"step_s\": 0.20, \"gpu_type\": \"A100\"}, {\"w\": 2, \"step_s\": 0.23, \"gpu_type\": \"a100\"}]},\n"
    "  {\"id\": 2, \"requested_gpus\": 1, \"max_gpus\": 4, \"remaining_epochs\": 5,\n"
    "   \"speed_observations\": [\n"
    "     {\"w\": 1, \"step_s\": 0.40, \"gpu_type\": \"t4\"}, {\"w\": 2, \"step_s\": 0.43, \"gpu_type\": \"t4\"},\n"
    "     {\"w\": 4, \"step_s\": 0.45, \"gpu_type\": \"t4\"}]},\n"
    "  {\"id\": 3, \"requested_gpus\": 2, \"max_gpus\": 4, \"remaining_epochs\": 5,\n"
    "   \"speed_observations\": [{\"w\": 2, \"step_s\": 0.30, \"gpu_type\": \"a100\"}]}]}\n";

static const struct sched_type_speed *entry_of(const struct sched_job *j, int gpu_model)
{
    for (size_t k = 0; k < j->ntype_speeds; k++)
        if (j->type_speeds[k].gpu_model == gpu_model)
            return &j->type_speeds[k];
    return NULL;
}

Test(decide, observations_with_gpu_types_fit_per_type)
{
    char err[256], *out = NULL;
    struct decide_input *in =
        decide_input_read(learned_snapshot, strlen(learned_snapshot), err, sizeof(err));
    cr_assert_not_null(in, "%s", err);
    const struct sched_snapshot *snap = decide_input_snapshot(in);
    cr_assert_float_eq(snap->explore_stage_s, 30, 1e-12);
    const struct sched_job *j1 = &snap->jobs[0], *j2 = &snap->jobs[1], *j3 = &snap->jobs[2];
    /* job 1: measured on both, each its own fit, absolute */
    const struct sched_type_speed *a = entry_of(j1, 2), *t = entry_of(j1, 4);
    cr_assert(a && t, "job 1 has a model on a100 and t4");
    cr_assert_eq(a->source, SCHED_TYPE_MEASURED);
    cr_assert_eq(t->source, SCHED_TYPE_MEASURED);
    cr_assert_eq(a->measured_sizes, 2);
    cr_assert_float_eq(speed_step_time(&a->speed, 1), 0.20, 0.01);
    cr_assert_float_eq(speed_step_time(&t->speed, 2), 0.83, 0.02);
    cr_assert_eq(j1->model_source, SCHED_MODEL_FITTED);
    cr_assert_eq(j1->measured_sizes, 2);
    /* job 2: measured on t4 only; on a100 an estimate from job 1's ratio, with its width */
    t = entry_of(j2, 4);
    a = entry_of(j2, 2);
    cr_assert(t && a, "job 2 has its t4 model and an a100 estimate");
    cr_assert_eq(t->source, SCHED_TYPE_MEASURED);
    cr_assert_eq(t->measured_sizes, 3);
    cr_assert_float_eq(speed_step_time(&t->speed, 1), 0.40, 0.02);
    cr_assert_eq(a->source, SCHED_TYPE_ESTIMATED);
    cr_assert_gt(a->uncertainty, 0, "an estimate states its uncertainty");
    double est = speed_step_time(&a->speed, 1);
    cr_assert(est > 0 && est < 0.2, "a100 estimated faster than its 0.40 s on t4: %g", est);
    /* its reference model (v100, factor 1) from the t4 steps: compute 0.4 x faster */
    cr_assert_eq(j2->model_source, SCHED_MODEL_FITTED);
    cr_assert_lt(speed_step_time(&j2->speed, 1), 0.40, "the reference is faster than a t4");
    /* job 3: one size on a100: its model from the prior, its a100 entry measured at 1 size */
    cr_assert_eq(j3->measured_sizes, 1);
    cr_assert_eq(j3->measured_max_gpus, 2);
    cr_assert_eq(j3->model_source, SCHED_MODEL_FITTED, "learned from one size and the prior");
    a = entry_of(j3, 2);
    cr_assert(a && a->source == SCHED_TYPE_MEASURED && a->measured_sizes == 1);
    cr_assert_float_eq(speed_step_time(&a->speed, 2), 0.30, 0.01);
    cr_assert_not_null(entry_of(j3, 4), "and an estimate on t4");
    decide_input_destroy(in);

    cr_assert_eq(decide_cmd_json(learned_snapshot, strlen(learned_snapshot), NULL, &out, err,
                                 sizeof(err)),
                 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    json_t *types = json_object_get(json_array_get(json_object_get(d, "jobs"), 1), "types");
    cr_assert_eq(json_array_size(types), 2, "%s", out);
    int seen = 0;
    for (size_t k = 0; k < 2; k++) {
        json_t *e = json_array_get(types, k);
        const char *name = json_string_value(json_object_get(e, "gpu_type"));
        const char *src = json_string_value(json_object_get(e, "source"));
        cr_assert(name && src, "%s", out);
        if (!strcmp(name, "t4")) {
            cr_assert_str_eq(src, "measured");
            cr_assert_eq(json_integer_value(json_object_get(e, "measured_sizes")), 3);
            seen |= 1;
        } else {
            cr_assert_str_eq(name, "a100");
            cr_assert_str_eq(src, "estimated");
            cr_assert_gt(json_number_value(json_object_get(e, "uncertainty")), 0);
            seen |= 2;
        }
        cr_assert_gt(json_number_value(json_object_get(e, "epochs_per_s")), 0);
    }
    cr_assert_eq(seen, 3);
    json_decref(d);
    free(out);

    expect_refused("{\"nodes\": [{\"gpus\": 2, \"gpu_type\": \"a100\"}], \"jobs\": [{\"id\": 1,"
                   " \"requested_gpus\": 1, \"speed_observations\": [{\"w\": 1, \"step_s\": 1,"
                   " \"gpu_type\": \"t4\"}]}]}",
                   "$.jobs[0].speed_observations[0]: gpu_type: no node has this gpu_type");
    expect_refused("{\"nodes\": [{\"gpus\": 2, \"gpu_type\": \"a100\"}], \"jobs\": [{\"id\": 1,"
                   " \"requested_gpus\": 1, \"speed_observations\": [{\"w\": 1, \"step_s\": 1,"
                   " \"gpu_type\": \"a100\"}, {\"w\": 2, \"step_s\": 1.1}]}]}",
                   "a gpu_type on every observation or on none");
}

/* A node's drain in the snapshot: drained GPUs get no new job, and evacuate moves a job off;
 * bad drains are refused with the path. */
Test(decide, drained_gpus_and_evacuation)
{
    static const char text[] =
        "{\"policy\": \"ringmaster\", \"nodes\": [{\"gpus\": 4, \"drained\": [2, 3]},"
        " {\"gpus\": 4, \"drained\": true, \"evacuate\": true}],"
        " \"jobs\": [{\"id\": 1, \"requested_gpus\": 2, \"allocation\": [{\"node\": 1, \"gpu\": 0},"
        " {\"node\": 1, \"gpu\": 1}]}, {\"id\": 2, \"requested_gpus\": 2}]}";
    char *out = NULL, err[256];
    cr_assert_eq(decide_cmd_json(text, strlen(text), NULL, &out, err, sizeof(err)), 0, "%s", err);
    json_t *d = json_loads(out, 0, NULL);
    cr_assert_not_null(d);
    size_t i;
    json_t *j;
    int used = 0;
    json_array_foreach(json_object_get(d, "jobs"), i, j)
    {
        size_t k;
        json_t *s;
        json_array_foreach(json_object_get(j, "slots"), k, s)
        {
            cr_expect_eq(json_integer_value(json_object_get(s, "node")), 0,
                         "off the evacuated node");
            cr_expect_lt(json_integer_value(json_object_get(s, "gpu")), 2, "not a drained GPU");
            used++;
        }
    }
    cr_expect_eq(used, 2, "one of the two jobs runs, on GPUs 0-1 of node 0");
    json_t *first = json_array_get(json_object_get(d, "jobs"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(first, "reason")),
                     "migrated: off GPUs drained to be evacuated");
    json_decref(d);
    free(out);
    expect_refused("{\"nodes\": [{\"gpus\": 4, \"drained\": [4]}]}", "$.nodes[0]");
    expect_refused("{\"nodes\": [{\"gpus\": 4, \"drained\": \"all\"}]}", "member drained");
    expect_refused("{\"nodes\": [{\"gpus\": 4, \"evacuate\": 1}]}", "evacuate");
    expect_refused("{\"nodes\": [{\"gpus\": 4, \"failed\": [9]}]}", "member failed");
    static const char failed[] =
        "{\"policy\": \"fifo\", \"nodes\": [{\"gpus\": 2, \"failed\": [0]}],"
        " \"jobs\": [{\"id\": 1, \"requested_gpus\": 1, \"allocation\": [{\"node\": 0,"
        " \"gpu\": 0}]}]}";
    cr_assert_eq(decide_cmd_json(failed, strlen(failed), NULL, &out, err, sizeof(err)), 0, "%s",
                 err);
    d = json_loads(out, 0, NULL);
    first = json_array_get(json_object_get(d, "jobs"), 0);
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(json_object_get(first, "slots"),
                                                                   0),
                                                    "gpu")),
                 1, "off the failed GPU 0");
    cr_expect_str_eq(json_string_value(json_object_get(first, "reason")),
                     "migrated: off a failed GPU");
    json_decref(d);
    free(out);
}

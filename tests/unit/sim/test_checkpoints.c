/* Checkpoints in the engine (simulate_config.checkpoint_every_s): a preempted job goes back to
 * its last checkpoint and redoes what it made since; the run counts what preemptions lost;
 * the policies see each job's last checkpoint, and min_runtime_s holds a job that has just
 * started. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "options.h"
#include "simulate/simulate.h"
#include "template.h"

#define MAX_WAIT 100.0

static struct options_cluster cluster;
static struct simulate_job_spec specs[2];

/* Job 1 (4 GPUs, rigid, 20 epochs) from t = 0; job 2 (4 GPUs, rigid, 1 epoch: about a
 * minute) from t = 10, which reaches max_wait_s at t = 110, takes job 1's GPUs and ends before
 * job 1 has waited as long. */
static void setup(struct simulate_config *cfg)
{
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    options_cluster_free(&cluster);
    cr_assert_eq(options_cluster_make(&cluster, 1, 4), 0);
    for (int k = 0; k < 2; k++)
        specs[k] = (struct simulate_job_spec){.id = k + 1,
                                              .submit_time = 10.0 * k,
                                              .requested_gpus = 4,
                                              .min_gpus = 4,
                                              .max_gpus = 4,
                                              .epochs = k ? 1.0 : 20.0,
                                              .speed = t.speed};
    simulate_config_init(cfg);
    cfg->nodes = cluster.nodes;
    cfg->nnodes = cluster.nnodes;
    cfg->policy = sched_policy_find("fifo");
    cfg->max_wait_s = MAX_WAIT;
    cfg->interval_s = 1000;
}

struct seen {
    double ckpt_at_preemption; /* job 1's last checkpoint as the round that took it saw */
    int rounds_with_both;
};

static void watch(const struct sched_snapshot *s, const struct sched_decision *d, void *arg)
{
    struct seen *v = arg;
    if (s->njobs < 2 || s->jobs[0].cur_gpus == 0)
        return;
    v->rounds_with_both++;
    if (d->assign[0].gpus == 0)
        v->ckpt_at_preemption = s->jobs[0].last_checkpoint_time;
}

static struct simulate_result *run(const struct simulate_config *cfg, struct seen *v)
{
    char err[256];
    struct simulate_result *r = simulate_run(cfg, specs, 2, watch, v, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    return r;
}

Test(sim_checkpoints, a_preempted_job_redoes_its_work_since_the_last_checkpoint)
{
    struct simulate_config cfg;
    struct seen v = {0}, v0 = {0};
    setup(&cfg);
    struct simulate_result *none = run(&cfg, &v0); /* as before: the stop checkpoints */
    cfg.checkpoint_every_s = 60;
    struct simulate_result *r = run(&cfg, &v);
    cr_assert_eq(none->preemptions, 1);
    cr_assert_eq(r->preemptions, 1, "job 2 waited past max_wait_s: job 1 yields once");
    cr_assert_float_eq(none->lost_redo_gpu_s, 0, 1e-9);
    cr_assert_float_eq(none->lost_preemption_gpu_s, 4 * cfg.resize_cost_s, 1e-6,
                       "its restart's delay on 4 GPUs");
    /* taken at t = 110, its checkpoint at 60: 50 s on 4 GPUs to redo */
    cr_assert_float_eq(v.ckpt_at_preemption, 60, 1e-6, "the policy saw its checkpoint");
    cr_assert_float_eq(r->lost_redo_gpu_s, 4 * 50.0, 1e-6);
    cr_assert_float_eq(r->lost_preemption_gpu_s, 4 * 50.0 + 4 * cfg.resize_cost_s, 1e-6);
    cr_assert_float_eq(r->jobs[0].finish_time - none->jobs[0].finish_time, 50, 1e-6,
                       "job 1 ends 50 s later: the work it redid");
    cr_assert_float_eq(r->jobs[1].finish_time, none->jobs[1].finish_time, 1e-6);
    simulate_result_destroy(none);
    simulate_result_destroy(r);
}

Test(sim_checkpoints, min_runtime_keeps_a_job_that_has_just_started)
{
    struct simulate_config cfg;
    struct seen v = {0};
    setup(&cfg);
    cfg.checkpoint_every_s = 60;
    cfg.min_runtime_s = 300; /* job 1 started at 0: not before t = 300 */
    cfg.interval_s = 60;     /* the round after 300 takes it */
    struct simulate_result *r = run(&cfg, &v);
    double t = r->jobs[1].start_time;
    cr_assert_eq(r->preemptions, 1);
    cr_assert(t >= 300 && t <= 360, "it waits until job 1 may yield: started at %.1f", t);
    cr_assert_float_eq(v.ckpt_at_preemption, 300, 1e-6, "checkpointed at 60, ..., 300");
    cr_assert_float_eq(r->lost_redo_gpu_s, 4 * (t - 300), 1e-6, "since its checkpoint at 300");
    simulate_result_destroy(r);
}

/* Forecasts by simulating forward (outlook.h): a waiting job behind a running one starts when
 * that one ends; a running job keeps its GPUs with no restart; a wider spread widens the band;
 * P90 >= P50 always; the same seed gives the same forecast; a job that can never fit has no
 * forecast. And the engine's start from a state (simulate_config.start_time). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "simulate/outlook.h"
#include "simulate/simulate.h"

#define NOW 1.0e6 /* the snapshot's clock: the caller's, far from 0 */

/* One step time at every size: a job with this model trains `epoch_s` seconds per epoch at
 * w GPUs (m 1, D w). */
static struct speed_model flat(double epoch_s, int w)
{
    struct speed_model m;
    memset(&m, 0, sizeof(m));
    m.batch_per_gpu = 1;
    m.dataset_size = w;
    m.theta[0] = epoch_s;
    m.fitted = 1;
    return m;
}

static struct sched_node node4 = {.id = 1, .ngpus = 4, .up = 1};
static struct sched_slot all4[4] = {{0, 0}, {0, 1}, {0, 2}, {0, 3}};

/* Job 1 runs on all 4 GPUs with 3600 s left (36 epochs of 100 s); job 2 waits for 4 GPUs,
 * 7200 s of work (longer: the policy's shortest-remaining order does not put it first); both
 * declared (or, with fit, from a fit). */
static void two_jobs(struct sched_job j[2], enum sched_estimate_source src)
{
    memset(j, 0, 2 * sizeof(*j));
    j[0] = (struct sched_job){.id = 1,
                              .submit_time = NOW - 7200,
                              .requested_gpus = 4,
                              .min_gpus = 4,
                              .max_gpus = 4,
                              .cur_gpus = 4,
                              .slots = all4,
                              .last_change_time = NOW - 600,
                              .run_time = 600,
                              .epochs_done = 6,
                              .remaining_epochs = 36,
                              .remaining_source = src,
                              .model_source = SCHED_MODEL_FITTED,
                              .speed = flat(100, 4)};
    j[1] = (struct sched_job){.id = 2,
                              .submit_time = NOW - 60,
                              .requested_gpus = 4,
                              .min_gpus = 4,
                              .max_gpus = 4,
                              .remaining_epochs = 72,
                              .remaining_source = src,
                              .model_source = SCHED_MODEL_FITTED,
                              .speed = flat(100, 4)};
}

static struct sched_snapshot snap_of(struct sched_job *j, size_t n)
{
    return (struct sched_snapshot){.now = NOW,
                                   .nodes = &node4,
                                   .nnodes = 1,
                                   .jobs = j,
                                   .njobs = n,
                                   .resize_cost_s = 30,
                                   .min_resize_interval_s = 300};
}

static struct outlook *forecast(const struct sched_snapshot *s, double spread, int runs,
                                uint64_t seed)
{
    struct outlook_config c;
    outlook_config_init(&c);
    c.policy = sched_policy_find("ringmaster");
    c.spread = c.declared_spread = spread;
    c.runs = runs;
    c.seed = seed;
    char err[256];
    struct outlook *o = outlook_run(s, &c, err, sizeof(err));
    cr_assert_not_null(o, "%s", err);
    return o;
}

Test(outlook, waiting_job_starts_when_the_running_one_ends)
{
    struct sched_job j[2];
    two_jobs(j, SCHED_EST_DECLARED);
    struct sched_snapshot s = snap_of(j, 2);
    struct outlook *o = forecast(&s, 0, 8, 1);
    const struct outlook_job *a = outlook_find(o, 1), *b = outlook_find(o, 2);
    cr_assert(a && b);
    cr_assert_lt(a->start_p50, 0, "a running job has no start forecast");
    /* no restart at t = 0: it keeps its GPUs and ends its 3600 s */
    cr_assert_float_eq(a->finish_p50, NOW + 3600, 1.0, "finish %f", a->finish_p50 - NOW);
    cr_assert_float_eq(b->start_p50, a->finish_p50, 1.0, "start %f", b->start_p50 - NOW);
    cr_assert_float_eq(b->finish_p50, b->start_p50 + 7200, 1.0);
    cr_assert_float_eq(b->start_p90, b->start_p50, 1.0, "no spread, no band");
    double p50, p90;
    cr_assert_eq(outlook_finish(o, 2, &p50, &p90), 0);
    cr_assert_float_eq(p50, b->finish_p50, 1e-9);
    cr_assert_eq(outlook_finish(o, 99, &p50, &p90), -1);
    outlook_destroy(o);
}

Test(outlook, wider_spread_wider_band)
{
    struct sched_job j[2];
    two_jobs(j, SCHED_EST_FIT);
    struct sched_snapshot s = snap_of(j, 2);
    struct outlook *narrow = forecast(&s, 0.1, 20, 3), *wide = forecast(&s, 0.8, 20, 3);
    const struct outlook_job *n = outlook_find(narrow, 2), *w = outlook_find(wide, 2);
    double bn = n->start_p90 - n->start_p50, bw = w->start_p90 - w->start_p50;
    cr_assert_gt(bn, 0, "a spread gives a band: %f", bn);
    cr_assert_gt(bw, 2 * bn, "narrow %f, wide %f", bn, bw);
    cr_assert_gt(w->finish_p90 - w->finish_p50, n->finish_p90 - n->finish_p50);
    outlook_destroy(narrow);
    outlook_destroy(wide);
}

/* Twelve jobs of 1..4 GPUs on two 4-GPU nodes, some running: P90 >= P50, a start before its
 * finish, and the same seed gives the same forecast (another seed another). */
Test(outlook, bands_ordered_and_deterministic)
{
    struct sched_node nodes[2] = {{.id = 1, .ngpus = 4, .up = 1}, {.id = 2, .ngpus = 4, .up = 1}};
    static struct sched_slot run_slots[2][2] = {{{0, 0}, {0, 1}}, {{1, 0}, {1, 1}}};
    struct sched_job j[12];
    memset(j, 0, sizeof(j));
    for (int i = 0; i < 12; i++) {
        int w = 1 + i % 4;
        j[i] = (struct sched_job){.id = 100 + i,
                                  .submit_time = NOW - 1000 + 10 * i,
                                  .requested_gpus = w,
                                  .min_gpus = 1,
                                  .max_gpus = 4,
                                  .elastic = i % 3 == 0,
                                  .remaining_epochs = 5 + 3 * i,
                                  .remaining_source = i % 2 ? SCHED_EST_FIT : SCHED_EST_DECLARED,
                                  .model_source = SCHED_MODEL_FITTED,
                                  .speed = flat(60 + 10 * i, w)};
    }
    for (int i = 0; i < 2; i++) {
        j[i].requested_gpus = 2;
        j[i].cur_gpus = 2;
        j[i].slots = run_slots[i];
        j[i].last_change_time = NOW - 100;
        j[i].run_time = 100;
        j[i].epochs_done = 1;
    }
    struct sched_snapshot s = snap_of(j, 12);
    s.nodes = nodes;
    s.nnodes = 2;
    struct outlook *a = forecast(&s, 0.5, 12, 7), *b = forecast(&s, 0.5, 12, 7);
    struct outlook *c = forecast(&s, 0.5, 12, 8);
    int differs = 0;
    for (size_t i = 0; i < 12; i++) {
        const struct outlook_job *x = &a->jobs[i];
        cr_assert_geq(x->finish_p50, 0, "job %lld has a finish", (long long)x->id);
        cr_assert_geq(x->finish_p90, x->finish_p50);
        if (i >= 2) {
            cr_assert_geq(x->start_p50, NOW - 1e-6);
            cr_assert_geq(x->start_p90, x->start_p50);
            cr_assert_leq(x->start_p50, x->finish_p50);
        }
        cr_assert_eq(memcmp(x, &b->jobs[i], sizeof(*x)), 0, "same seed, same forecast");
        differs |= memcmp(x, &c->jobs[i], sizeof(*x)) != 0;
    }
    cr_assert(differs, "another seed draws other lengths");
    outlook_destroy(a);
    outlook_destroy(b);
    outlook_destroy(c);
}

Test(outlook, job_that_never_fits_is_unknown)
{
    struct sched_job j[2];
    two_jobs(j, SCHED_EST_DECLARED);
    j[1].requested_gpus = j[1].min_gpus = j[1].max_gpus = 8; /* the cluster has 4 */
    struct sched_snapshot s = snap_of(j, 2);
    struct outlook *o = forecast(&s, 0.2, 4, 1);
    cr_assert_lt(outlook_find(o, 2)->start_p50, 0);
    cr_assert_lt(outlook_find(o, 2)->finish_p50, 0);
    cr_assert_gt(outlook_find(o, 1)->finish_p50, NOW);
    outlook_destroy(o);
}

/* A job expected to arrive in 10 minutes, shorter than b: the policy's shortest-remaining
 * order runs it first when a ends, so b starts half an hour later; it gets no forecast. */
Test(outlook, expected_arrivals_go_ahead)
{
    struct sched_job j[2];
    two_jobs(j, SCHED_EST_DECLARED);
    struct sched_snapshot s = snap_of(j, 2);
    struct sched_job c = j[1];
    c.id = -1;
    c.submit_time = NOW + 600;
    c.remaining_epochs = 18; /* 1800 s */
    struct outlook_config cfg;
    outlook_config_init(&cfg);
    cfg.policy = sched_policy_find("ringmaster");
    cfg.spread = cfg.declared_spread = 0;
    cfg.runs = 4;
    cfg.future = &c;
    cfg.nfuture = 1;
    char err[256];
    struct outlook *o = outlook_run(&s, &cfg, err, sizeof(err));
    cr_assert_not_null(o, "%s", err);
    cr_assert_eq(o->njobs, 2);
    cr_assert_null(outlook_find(o, -1));
    cr_assert_float_eq(outlook_find(o, 2)->start_p50, NOW + 3600 + 1800, 2.0, "%f",
                       outlook_find(o, 2)->start_p50 - NOW);
    outlook_destroy(o);
}

/* Two jobs on the same GPUs (a packed pair, or a snapshot caught mid-change): the first runs
 * on them, the second waits in the runs, and the forecast is made. */
Test(outlook, jobs_sharing_gpus_do_not_fail_it)
{
    struct sched_job j[2];
    two_jobs(j, SCHED_EST_DECLARED);
    j[1].cur_gpus = 4;
    j[1].slots = all4;
    j[1].last_change_time = NOW - 600;
    struct sched_snapshot s = snap_of(j, 2);
    struct outlook *o = forecast(&s, 0, 2, 1);
    cr_assert_float_eq(outlook_find(o, 1)->finish_p50, NOW + 3600, 1.0);
    cr_assert_gt(outlook_find(o, 2)->finish_p50, NOW + 3600 + 7000);
    outlook_destroy(o);
}

Test(outlook, quantile)
{
    double v[] = {3, 1, 2, 4, -1};
    cr_assert_float_eq(outlook_quantile(v, 4, 0.5), 2.5, 1e-12);
    double w[] = {3, 1, 2, 4, -1};
    cr_assert_float_eq(outlook_quantile(w, 5, 0.5), 3, 1e-12, "unknown ranks last");
    double t[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    cr_assert_float_eq(outlook_quantile(t, 10, 0.9), 9.9, 1e-12, "rank 0.9 x 11");
    cr_assert_float_eq(outlook_quantile(t, 10, 0.99), 10, 1e-12, "no further than the last");
    cr_assert_float_eq(outlook_quantile(t, 10, 0.01), 1, 1e-12);
    double u[] = {-1, -1, 5};
    cr_assert_lt(outlook_quantile(u, 3, 0.5), 0);
    cr_assert_lt(outlook_quantile(u, 0, 0.5), 0);
}

Test(outlook, spread_from_the_finished_jobs_errors)
{
    cr_assert_float_eq(outlook_spread(100, 0.4, 0.6), 0.4 * sqrt(M_PI / 2), 1e-12);
    cr_assert_float_eq(outlook_spread(19, 0.4, 0.6), 0.6, 1e-12, "too few jobs: the default");
    cr_assert_float_eq(outlook_spread(100, NAN, 0.6), 0.6, 1e-12);
    cr_assert_float_eq(outlook_spread(100, 0, 0.6), 0.02, 1e-12, "never no spread");
    cr_assert_float_eq(outlook_spread(100, 50, 0.6), 3, 1e-12);
}

Test(outlook, bad_configuration)
{
    struct sched_job j[2];
    two_jobs(j, SCHED_EST_DECLARED);
    struct sched_snapshot s = snap_of(j, 2);
    struct outlook_config c;
    outlook_config_init(&c);
    char err[128];
    cr_assert_null(outlook_run(&s, &c, err, sizeof(err)), "no policy");
    c.policy = sched_policy_find("fifo");
    c.runs = OUTLOOK_MAX_RUNS + 1;
    cr_assert_null(outlook_run(&s, &c, err, sizeof(err)));
}

/* The engine from a state: a running job resumes its progress on its GPUs at start_time, no
 * restart, and ends when its work left is done. */
Test(engine_start, running_job_from_a_state)
{
    struct simulate_job_spec sp = {.id = 5,
                                   .submit_time = 10,
                                   .requested_gpus = 4,
                                   .min_gpus = 4,
                                   .max_gpus = 4,
                                   .epochs = 10,
                                   .speed = flat(100, 4),
                                   .start_slots = all4,
                                   .start_gpus = 4,
                                   .start_epochs_done = 4,
                                   .start_run_s = 400,
                                   .start_last_change = 50};
    struct simulate_config cfg;
    simulate_config_init(&cfg);
    cfg.nodes = &node4;
    cfg.nnodes = 1;
    cfg.policy = sched_policy_find("precompute");
    cfg.start_time = 500;
    char err[256];
    struct simulate_result *r = simulate_run(&cfg, &sp, 1, NULL, NULL, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    cr_assert_float_eq(r->jobs[0].finish_time, 500 + 600, 1e-6, "%f", r->jobs[0].finish_time);
    cr_assert_eq(r->jobs[0].resizes, 0);
    simulate_result_destroy(r);
    sp.start_epochs_done = 10; /* nothing left: refused */
    cr_assert_null(simulate_run(&cfg, &sp, 1, NULL, NULL, err, sizeof(err)));
}

/* plan: the execution-plan performance model (see plan.h, docs/plans.md). */
#include "plan.h"

#include <math.h>
#include <string.h>

static const char *const kind_names[PLAN_NKINDS] = {"dp", "zero1", "zero2", "zero3", "offload"};

/* Offload core counts the model chooses between, per GPU. */
static const int offload_cores[] = {4, 8, 16};
#define NOFFLOAD_CORES 3

const char *plan_kind_name(int kind)
{
    return kind >= 0 && kind < PLAN_NKINDS ? kind_names[kind] : "unknown";
}

int plan_has_info(const struct plan_spec *ps)
{
    return ps && ps->params_b > 0.0 && isfinite(ps->params_b);
}

static int degree(int d)
{
    return d > 1 ? d : 1;
}

int plan_same(const struct plan_choice *a, const struct plan_choice *b)
{
    return a->kind == b->kind && degree(a->tp) == degree(b->tp) && degree(a->pp) == degree(b->pp);
}

/* Data-parallel degree of c on w GPUs, or 0 if w is not a multiple of tp * pp. */
static int dp_degree(const struct plan_choice *c, int w)
{
    int mp = degree(c->tp) * degree(c->pp);

    if (w < 1 || w % mp != 0)
        return 0;
    return w / mp;
}

static int offload_cores_ok(int cores)
{
    for (int k = 0; k < NOFFLOAD_CORES; k++)
        if (cores == offload_cores[k])
            return 1;
    return 0;
}

void plan_demand(const struct plan_spec *ps, struct plan_choice *c, int w)
{
    int d = dp_degree(c, w), cores = c->cpu_cores;

    c->host_mem_gb = plan_has_info(ps) ? PLAN_BASE_HOST_GB : 0.0;
    c->cpu_cores = plan_has_info(ps) ? PLAN_BASE_CORES : 0;
    if (c->kind != PLAN_OFFLOAD || !plan_has_info(ps))
        return;
    c->cpu_cores = offload_cores_ok(cores) ? cores : 8;
    double shard = ps->params_b / (double)(degree(c->tp) * degree(c->pp));
    c->host_mem_gb += d > 0 ? 16.0 * shard / d : INFINITY;
}

double plan_gpu_mem_gb(const struct plan_spec *ps, const struct plan_choice *c, int w)
{
    int d = dp_degree(c, w);
    double p, states;

    if (d == 0)
        return INFINITY;
    if (!plan_has_info(ps))
        return 0.0;
    p = ps->params_b / (double)(degree(c->tp) * degree(c->pp));
    switch (c->kind) {
    case PLAN_ZERO1:
        states = 4.0 * p + 12.0 * p / d;
        break;
    case PLAN_ZERO2:
        states = 2.0 * p + 14.0 * p / d;
        break;
    case PLAN_ZERO3:
        states = 16.0 * p / d;
        break;
    case PLAN_OFFLOAD:
        states = 2.0 * p;
        break;
    default:
        states = 16.0 * p;
    }
    return states + (ps->act_gb > 0 ? ps->act_gb / degree(c->tp) : 0.0);
}

/* Host-side seconds per step of an offloading plan: PCIe traffic and Adam. */
static double offload_s(const struct plan_spec *ps, const struct plan_choice *c, int d)
{
    double shard = ps->params_b / (double)(degree(c->tp) * degree(c->pp)) / d;
    int cores = c->cpu_cores > 0 ? c->cpu_cores : 8;

    return 4.0 * shard / PLAN_PCIE_GBPS + shard / (cores * PLAN_ADAM_GPARAMS_PER_CORE_S);
}

/* Seconds per step of plan c at data-parallel degree d, whose features are f. */
static double step_model_features(const struct speed_model *sp, const struct plan_spec *ps,
                                  const struct plan_choice *c, int d,
                                  const double f[SPEED_NFEATURES], double speed)
{
    int tp = degree(c->tp), pp = degree(c->pp);
    const double *th = sp->theta;

    double compute = (th[0] * f[0] + th[1] * f[1]) / speed;
    compute *= (1.0 + PLAN_TP_OVERHEAD * (tp - 1)) * (1.0 + (pp - 1) / PLAN_MICROBATCHES);
    double zf = c->kind == PLAN_ZERO3 ? 1.5 : 1.0;
    double comm = th[2] * f[2] + zf * (th[3] * f[3] + th[4] * f[4]) / (tp * pp) + th[5] * f[5] +
                  th[6] * f[6] + th[7] * f[7];
    double t = compute + comm;
    if (c->kind == PLAN_OFFLOAD && plan_has_info(ps))
        t += offload_s(ps, c, d);
    return t;
}

static double plan_step_model(const struct speed_model *sp, const struct plan_spec *ps,
                              const struct plan_choice *c, int w, int nodes, double speed)
{
    int d = dp_degree(c, w);
    double f[SPEED_NFEATURES];

    nodes = nodes < 1 ? 1 : nodes;
    speed_features_linked(d, nodes, speed_placed_link(sp, d, nodes), sp->batch_per_gpu, f);
    return step_model_features(sp, ps, c, d, f, speed);
}

double plan_step_time(const struct speed_model *sp, const struct plan_spec *ps,
                      const struct plan_choice *c, int w, int nodes, double gpu_speed,
                      double gpu_mem_gb)
{
    double speed = gpu_speed > 0 && isfinite(gpu_speed) ? gpu_speed : 1.0;
    double mem = gpu_mem_gb > 0 ? gpu_mem_gb : PLAN_DEFAULT_GPU_MEM_GB;

    if (!sp || !sp->fitted || w < 1 || dp_degree(c, w) == 0)
        return INFINITY;
    if (!plan_has_info(ps) && speed == 1.0 && c->kind == PLAN_DP && degree(c->tp) == 1 &&
        degree(c->pp) == 1)
        return speed_step_time_placed(sp, w, nodes, sp->batch_per_gpu);
    if (plan_has_info(ps) && plan_gpu_mem_gb(ps, c, w) > mem)
        return INFINITY;
    return plan_step_model(sp, ps, c, w, nodes, speed);
}

/* Epochs per second of w GPUs at t seconds a step. */
static double per_second(const struct speed_model *sp, int w, double t)
{
    if (!isfinite(t) || t <= 0.0 || !(sp->dataset_size > 0.0))
        return 0.0;
    return (double)w * sp->batch_per_gpu / (t * sp->dataset_size);
}

double plan_epochs_per_second(const struct speed_model *sp, const struct plan_spec *ps,
                              const struct plan_choice *c, int w, int nodes, double gpu_speed,
                              double gpu_mem_gb)
{
    return per_second(sp, w, plan_step_time(sp, ps, c, w, nodes, gpu_speed, gpu_mem_gb));
}

double plan_dp_rate(const struct speed_model *sp, int w, const double f[SPEED_NFEATURES],
                    double gpu_speed)
{
    double speed = gpu_speed > 0 && isfinite(gpu_speed) ? gpu_speed : 1.0;
    struct plan_choice dp = {0};

    if (!sp || !sp->fitted || w < 1)
        return 0.0;
    /* plan_step_time()'s two ways for plain data parallel without plan information */
    if (speed == 1.0)
        return plan_dp_rate_unit(sp, w, f);
    return per_second(sp, w, step_model_features(sp, NULL, &dp, w, f, speed));
}

/* Whether kind k (with degrees tp, pp) is one the job accepts. */
static int supported(const struct plan_spec *ps, const struct plan_choice *c)
{
    if (!plan_has_info(ps) || ps->supported == 0)
        return plan_same(c, &ps->requested);
    if (!(ps->supported & (1u << c->kind)))
        return 0;
    return degree(c->tp) <= degree(ps->max_tp) && degree(c->pp) <= degree(ps->max_pp);
}

struct best {
    double rate;
    struct plan_choice c;
    int requested; /* the best so far is the requested plan */
};

static void consider(const struct speed_model *sp, const struct plan_spec *ps, int w,
                     double speed, double mem, int max_cores, double max_host,
                     struct plan_choice c, struct best *b)
{
    if (!supported(ps, &c))
        return;
    plan_demand(ps, &c, w);
    if ((max_cores > 0 && c.cpu_cores > max_cores) || (max_host > 0 && c.host_mem_gb > max_host))
        return;
    double r = plan_epochs_per_second(sp, ps, &c, w, speed_packed_nodes(sp, w), speed, mem);
    int req = plan_same(&c, &ps->requested);
    /* Strictly faster wins; an equal rate goes to the requested plan. */
    if (r > b->rate * (1.0 + 1e-12) || (r > 0 && r >= b->rate && req && !b->requested)) {
        b->rate = r;
        b->c = c;
        b->requested = req;
    }
}

double plan_best(const struct speed_model *sp, const struct plan_spec *ps, int w,
                 double gpu_speed, double gpu_mem_gb, int max_cores, double max_host_gb,
                 struct plan_choice *out)
{
    struct best b = {0.0, ps ? ps->requested : (struct plan_choice){0}, 0};

    if (!plan_has_info(ps)) {
        double f[SPEED_NFEATURES];
        speed_features_linked(w, speed_packed_nodes(sp, w), speed_packed_link(sp, w),
                              sp->batch_per_gpu, f);
        *out = (struct plan_choice){0};
        return plan_dp_rate(sp, w, f, gpu_speed);
    }
    for (int k = 0; k < PLAN_NKINDS; k++)
        for (int tp = 1; tp <= PLAN_MAX_DEGREE; tp *= 2)
            for (int pp = 1; pp <= PLAN_MAX_DEGREE; pp *= 2)
                for (int ci = 0; ci < (k == PLAN_OFFLOAD ? NOFFLOAD_CORES : 1); ci++) {
                    struct plan_choice c = {k, tp, pp, offload_cores[ci], 0};
                    consider(sp, ps, w, gpu_speed, gpu_mem_gb, max_cores, max_host_gb, c, &b);
                }
    *out = b.c;
    if (b.rate <= 0)
        plan_demand(ps, out, w);
    return b.rate;
}

double plan_requested_rate(const struct speed_model *sp, const struct plan_spec *ps,
                           int requested_gpus, double gpu_mem_gb)
{
    struct plan_choice c = ps ? ps->requested : (struct plan_choice){0};

    if (!ps)
        return speed_epochs_per_second(sp, requested_gpus);
    plan_demand(ps, &c, requested_gpus);
    return plan_epochs_per_second(sp, ps, &c, requested_gpus, speed_packed_nodes(sp, requested_gpus), 1.0,
                                  gpu_mem_gb);
}

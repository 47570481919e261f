/* apply: a round's decision applied to the simulated cluster: each job's new slots and
 * their cost (resize, suspension, migration), packed pairs, and the true speed each running
 * job then trains at (its plan, GPU model, batch model and packing partner). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "simulate_int.h"

static int slot_cmp(const void *a, const void *b)
{
    const struct sched_slot *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

void simulate__sort_slots(struct sched_slot *sl, int n)
{
    if (n > 1)
        qsort(sl, (size_t)n, sizeof(*sl), slot_cmp);
}

double simulate_pack_factor(double util_a, double util_b, double kappa)
{
    double u = (util_a > 0.0 ? util_a : 1.0) + (util_b > 0.0 ? util_b : 1.0);

    return 1.0 / (fmax(1.0, u) * (1.0 + kappa * u));
}

static int same_slots(const struct sim_job *j, const struct sched_slot *sorted, int n)
{
    if (j->gpus != n)
        return 0;
    for (int g = 0; g < n; g++)
        if (slot_cmp(&j->slots[g], &sorted[g]) != 0)
            return 0;
    return 1;
}

/* The delay and counters of a change after the first start: a suspension
 * (time-slicing) frees the GPUs; a resume on the node it left pays
 * suspend_cost_s, elsewhere a migration through its checkpoint (resize_cost_s);
 * any other change is a resize (resize_cost_s). */
static void charge_change(struct sim *s, struct sim_job *j, const struct sched_assignment *as,
                          const struct sched_slot *ns)
{
    if (as->suspended) {
        j->suspended = 1;
        j->susp_node = j->gpus > 0 ? j->slots[0].node : -1;
        j->suspends++;
        s->suspends++;
        return;
    }
    if (as->resumed && as->gpus > 0) {
        int home = ns[0].node == j->susp_node;
        j->busy_until = s->now + (home ? s->cfg->suspend_cost_s : s->cfg->resize_cost_s);
        j->migrations += !home;
        s->migrations += !home;
        return;
    }
    j->resizes++;
    s->resizes++;
    if (as->gpus > 0)
        j->busy_until = s->now + s->cfg->resize_cost_s;
    j->migrations += as->migrated;
    s->migrations += as->migrated;
}

void simulate__checkpoints(struct sim *s, struct sim_job *j, double from, double t,
                           double epochs_before, double steps_before)
{
    double c = s->cfg->checkpoint_every_s, run = t - from;
    if (!(c > 0) || !(run > 0))
        return;
    double total = j->since_ckpt_s + run, n = floor(total / c);
    if (n < 1) {
        j->since_ckpt_s = total;
        return;
    }
    double at = n * c - j->since_ckpt_s; /* the last checkpoint, into this stretch */
    j->ckpt_epochs = epochs_before + at * j->rate;
    j->ckpt_steps = steps_before + at * j->step_rate;
    j->ckpt_time = from + at;
    j->since_ckpt_s = total - n * c;
}

/* Checkpoints at a change of job j's GPUs (to as->gpus) after its first start: a preemption
 * (no GPUs, not suspended) goes back to its last checkpoint and loses what it made since
 * (checkpoint_every_s > 0), and the delay of its next start; a resize or a migration writes a
 * checkpoint at the change; a suspension keeps its state in host memory, a resume in place
 * takes it back, and one elsewhere goes through a checkpoint. */
static void checkpoint_change(struct sim *s, struct sim_job *j, const struct sched_assignment *as,
                              const struct sched_slot *ns)
{
    if (j->gpus > 0 && as->gpus == 0 && !as->suspended) {
        s->preemptions++;
        j->preempted = 1;
        if (s->cfg->checkpoint_every_s > 0) {
            double redo = j->since_ckpt_s * j->gpus;
            s->lost_redo_gpu_s += redo;
            s->lost_preempt_gpu_s += redo;
            j->epochs_done = j->ckpt_epochs;
        }
        j->since_ckpt_s = 0;
        return;
    }
    if (as->gpus <= 0)
        return;
    if (j->preempted) {
        s->lost_preempt_gpu_s += as->gpus * s->cfg->resize_cost_s;
        j->preempted = 0;
    }
    if (as->resumed && ns[0].node == j->susp_node)
        return;
    if (j->gpus > 0 || as->resumed) {
        j->ckpt_time = s->now;
        j->ckpt_steps = j->steps_done;
    }
    j->ckpt_epochs = j->epochs_done;
    j->since_ckpt_s = 0;
}

/* The cluster's largest node and NVLink island, in GPUs (once). */
static void size_domains(struct sim *s)
{
    for (size_t n = 0; n < s->cfg->nnodes; n++) {
        const struct sched_node *nd = &s->cfg->nodes[n];
        if (nd->ngpus > s->biggest_node)
            s->biggest_node = nd->ngpus;
        for (int k = 1; k <= SCHED_MAX_GPUS_PER_NODE && domain_node_has_islands(nd); k++) {
            int c = __builtin_popcountll(domain_island_mask(nd, k));
            if (c > s->biggest_island)
                s->biggest_island = c;
        }
    }
}

/* Counts a new placement of n > 1 sorted slots: did it fit one node (one island), and did it
 * get one. */
static void count_compact(struct sim *s, const struct sched_slot *ns, int n)
{
    if (n < 2)
        return;
    if (!s->biggest_node)
        size_domains(s);
    int one_node = ns[0].node == ns[n - 1].node, one_island = one_node;
    const struct sched_node *nd = &s->cfg->nodes[ns[0].node];
    for (int g = 1; g < n && one_island; g++)
        one_island = nd->island[ns[g].gpu] && nd->island[ns[g].gpu] == nd->island[ns[0].gpu];
    if (n <= s->biggest_node) {
        s->fit_node++;
        s->on_node += one_node;
    }
    if (n <= s->biggest_island) {
        s->fit_island++;
        s->on_island += one_island;
    }
}

int simulate__apply_assignment(struct sim *s, struct sim_job *j, const struct sched_assignment *as)
{
    struct sched_slot *ns = NULL;
    if (as->gpus > 0) {
        ns = malloc((size_t)as->gpus * sizeof(*ns));
        if (!ns)
            return simulate__fail(s, ENOMEM, "out of memory", -1);
        memcpy(ns, as->slots, (size_t)as->gpus * sizeof(*ns));
        simulate__sort_slots(ns, as->gpus);
    }
    int replan = as->gpus > 0 && plan_has_info(&j->spec->plan) && !plan_same(&as->plan, &j->plan);
    if (as->gpus > 0)
        j->plan = as->plan;
    if (same_slots(j, ns, as->gpus) && !replan) {
        /* a batch changed in place (sched_batch_in_place): no restart, it runs the new batch
         * from now on (simulate__update_use sets its rate) */
        if (as->gpus > 0 && as->batch > 0 && goodput_has_model(&j->spec->batch) &&
            fabs(as->batch - j->batch) >= 0.5) {
            j->batch = as->batch;
            s->batch_changes++;
        }
        free(ns);
        return 0;
    }
    count_compact(s, ns, as->gpus);
    if (j->gpus == 0 && as->gpus > 0)
        j->max_wait = fmax(j->max_wait, s->now - j->wait_since);
    else if (j->gpus > 0 && as->gpus == 0)
        j->wait_since = s->now;
    if (j->started) {
        checkpoint_change(s, j, as, ns);
        charge_change(s, j, as, ns);
    } else if (as->gpus > 0) {
        j->started = 1;
        j->start_time = s->now;
    }
    if (as->gpus > 0)
        j->suspended = 0;
    if (as->gpus > 0 && as->batch > 0 && goodput_has_model(&j->spec->batch))
        j->batch = as->batch; /* a new batch comes with the restart */
    free(j->slots);
    j->slots = ns;
    j->gpus = as->gpus;
    j->last_change = s->now;
    j->use = 0;
    j->rate = 0.0;
    return 0;
}

/* Links packed pairs after a round: PACK and KEEP join the two jobs, REVERT
 * parts them for good, anything else parts them. */
void simulate__apply_packs(struct sim *s, const struct sched_decision *d)
{
    for (size_t a = 0; a < d->njobs; a++) {
        struct sim_job *j = &s->jobs[s->active[a]];
        const struct sched_assignment *as = &d->assign[a];
        long was = j->partner;
        j->partner = -1;
        if (as->pack == SCHED_PACK_REVERT) {
            j->pack_reverted = 1;
            s->pack_reverts += d->assign[a].job_id < as->packed_with;
        }
        if (!simulate__is_shared(as))
            continue;
        for (size_t b = 0; b < d->njobs; b++)
            if (d->assign[b].job_id == as->packed_with)
                j->partner = (long)s->active[b];
        if (as->pack == SCHED_PACK_PACK) {
            j->packs++;
            s->packs += as->job_id < as->packed_with;
        }
        if (j->partner != was)
            j->packed_run = 0.0;
    }
}

/* The GPUs job j runs on among the j->gpus it holds. Outside exploring, all of
 * them. An exploring job (VIEW_EXPLORED, not done) runs its first unfinished
 * stage of 1, 2, 4, 8 that fits in what it holds (the policy reserves 8 for
 * the whole exploration and the job uses 1, 2, 4, then 8 of them); if none
 * fits, all it holds. */
static int working_gpus(const struct sim *s, const struct sim_job *j)
{
    if (s->cfg->view != SIMULATE_VIEW_EXPLORED || j->gpus == 0)
        return j->gpus;
    for (int k = 0; k < 4; k++) {
        int w = 1 << k;
        if (w < j->spec->min_gpus || w > j->spec->max_gpus || w > s->total_gpus)
            continue;
        if (j->explored_s[k] < s->cfg->explore_slice_s)
            return w <= j->gpus ? w : j->gpus;
    }
    return j->gpus;
}

int simulate__nodes_held(const struct sim_job *j)
{
    int n = 0;
    for (int g = 0; g < j->gpus; g++)
        n += g == 0 || j->slots[g].node != j->slots[g - 1].node;
    return n > 0 ? n : 1;
}

/* The job's true model on the GPU model of node nd (simulate_job_spec.types), or NULL. */
static const struct sched_type_speed *type_on(const struct sim *s, const struct sim_job *j,
                                              size_t nd)
{
    int g = s->cfg->nodes[nd].gpu_model;
    for (size_t k = 0; k < j->spec->ntypes; k++)
        if (j->spec->types[k].gpu_model == g)
            return &j->spec->types[k];
    return NULL;
}

/* The job's true model on the GPU model of its GPUs, or NULL. */
static const struct sched_type_speed *true_type(const struct sim *s, const struct sim_job *j)
{
    return type_on(s, j, (size_t)j->slots[0].node);
}

double simulate__rate_on(const struct sim *s, const struct sim_job *j, size_t node, int u,
                         int nodes)
{
    const struct simulate_job_spec *sp = j->spec;
    const struct sched_node *nd = &s->cfg->nodes[node];
    const struct sched_type_speed *ty = type_on(s, j, node);
    if (ty && goodput_has_model(&sp->batch))
        return simulate__batch_rate_on(j, ty, u, nodes, NULL);
    if (ty)
        return speed_epochs_per_second(&ty->speed, u);
    int hetero = nd->gpu_speed > 0 && nd->gpu_speed != 1.0;
    if (goodput_has_model(&sp->batch) && !plan_has_info(&sp->plan))
        return simulate__batch_rate(j, u, nodes, NULL) * (hetero ? nd->gpu_speed : 1.0);
    if (!plan_has_info(&sp->plan) && !hetero)
        return speed_epochs_per_second(&sp->speed, u);
    int packed = speed_packed_nodes(&sp->speed, u);
    struct plan_choice dp = {0};
    const struct plan_choice *c = plan_has_info(&sp->plan) ? &j->plan : &dp;
    double r = plan_epochs_per_second(&sp->speed, &sp->plan, c, u, packed, nd->gpu_speed,
                                      nd->gpu_mem_gb);
    /* An exploring job runs a stage of u < gpus GPUs: with the plan that fits. */
    if (r <= 0 && u != j->gpus) {
        struct plan_choice b;
        r = plan_best(&sp->speed, &sp->plan, u, nd->gpu_speed, nd->gpu_mem_gb, 0, 0, &b);
    }
    return r;
}

/* Epochs per second of job j on u of its GPUs: its true model of its GPUs' model when its
 * spec has one (types); else its plan on its GPUs' model when it has plan info or the model
 * is not the reference, else (exactly as before plans existed) speed_epochs_per_second(). */
static double true_rate(const struct sim *s, const struct sim_job *j, int u)
{
    return simulate__rate_on(s, j, (size_t)j->slots[0].node, u, simulate__nodes_held(j));
}

/* The seconds a step of job j on its first u GPUs loses to the link classes they span beyond
 * what its model's nodes charge (issue 32): theta[6] of its spec over PCIe (two NVLink islands
 * of a node), theta[7] across switches. The truth of the cluster's topology: charged whatever
 * the policies see (simulate_config.topology_blind). */
static double link_extra_s(const struct sim *s, const struct sim_job *j, int u)
{
    const struct speed_model *sp = &j->spec->speed;
    if (u < 2 || !(sp->theta[6] > 0 || sp->theta[7] > 0))
        return 0;
    switch (domain_link(s->cfg->nodes, s->cfg->nnodes, j->slots, u)) {
    case SPEED_LINK_PCIE:
        return sp->theta[6];
    case SPEED_LINK_CROSS:
        return sp->theta[7];
    default:
        return 0;
    }
}

/* Sets each running job's working size and speed after a round. A job that
 * moves to its next exploring stage inside the GPUs it holds restarts at the
 * new world size: it pays the resize delay (not counted as a resize, since its
 * allocation did not change). */
void simulate__update_use(struct sim *s, int grad_only)
{
    for (size_t a = 0; a < s->nactive; a++) {
        struct sim_job *j = &s->jobs[s->active[a]];
        if (grad_only && (!j->spec->grad || j->use <= 0))
            continue;
        int u = working_gpus(s, j);
        if (u != j->use && j->use > 0 && u > 0)
            j->busy_until = s->now + s->cfg->resize_cost_s;
        j->use = u;
        double f = 1.0;
        if (j->partner >= 0)
            f = simulate_pack_factor(j->spec->gpu_util, s->jobs[j->partner].spec->gpu_util,
                                     s->cfg->pack_kappa);
        double r = u > 0 ? true_rate(s, j, u) : 0.0;
        j->rate = r * f;
        double step_s;
        const struct sched_type_speed *ty = u > 0 ? true_type(s, j) : NULL;
        if (ty && r > 0)
            j->step_rate = goodput_has_model(&j->spec->batch)
                               ? (simulate__batch_rate_on(j, ty, u, simulate__nodes_held(j), &step_s) > 0
                                      ? f / step_s
                                      : 0.0)
                               : f / speed_step_time(&ty->speed, u);
        else if (r > 0 && goodput_has_model(&j->spec->batch) && !plan_has_info(&j->spec->plan) &&
            simulate__batch_rate(j, u, simulate__nodes_held(j), &step_s) > 0)
            j->step_rate = f / step_s;
        else if (plan_has_info(&j->spec->plan) || r <= 0)
            j->step_rate = r > 0 ? f * r * j->spec->speed.dataset_size /
                                       ((double)u * j->spec->speed.batch_per_gpu)
                                 : 0.0;
        else
            j->step_rate = f / speed_step_time(&j->spec->speed, u) *
                           (r / speed_epochs_per_second(&j->spec->speed, u));
        double extra = j->step_rate > 0.0 ? link_extra_s(s, j, u) : 0.0;
        if (extra > 0) {
            double t = f / j->step_rate, k = t / (t + extra);
            j->rate *= k;
            j->step_rate *= k;
        }
        if (j->step_rate > 0.0)
            j->alone_rate = j->step_rate / f;
        j->true_step_s = j->step_rate > 0.0 ? f / j->step_rate : 0.0;
    }
}

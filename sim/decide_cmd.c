/* decide_cmd: `ringmaster-sim decide`, one scheduling round on a JSON snapshot read by
 * decide_input.c, the decision written as JSON (docs/decide.md). */
#include "decide_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide_input.h"

#define DECIDE_MAX_INPUT (64u << 20)

static const char *const pack_names[] = { "none", "pack", "keep", "revert" };

static const char *const forced_names[] = {NULL, "max_wait", "fair_share", "deadline"};

/* The guarantee that served job i, its estimate's source, and why it waits. */
static void add_guarantees(json_t *o, const struct sched_snapshot *snap,
                           const struct sched_decision *d, size_t i)
{
    const struct sched_assignment *a = &d->assign[i];
    char why[512];

    if (!o)
        return;
    const struct sched_job *j = &snap->jobs[i];
    json_object_set_new(o, "remaining_source",
                        json_string(j->remaining_epochs >= 0
                                        ? sched_estimate_source_name(j->remaining_source)
                                        : "none"));
    if (a->forced > 0 && a->forced < 4)
        json_object_set_new(o, "forced", json_string(forced_names[a->forced]));
    if (a->has_room_for)
        json_object_set_new(o, "room_for", json_integer((json_int_t)a->room_for));
    if (a->gpus == 0) {
        sched_explain(snap, d, i, why, sizeof(why));
        json_object_set_new(o, "explanation", json_string(why));
    }
}

static json_t *num_or_null(double v)
{
    return v >= 0 && isfinite(v) ? json_real(v) : json_null();
}

/* The one factor of the GPUs of assignment a (its first slot's node; 1 when it waits). */
static double gpu_speed_of(const struct sched_snapshot *snap, const struct sched_assignment *a)
{
    double s = a->gpus > 0 ? snap->nodes[a->slots[0].node].gpu_speed : 1;
    return s > 0 && isfinite(s) ? s : 1;
}

static const char *const type_source_names[] = {"given", "measured", "estimated"};

/* Job i's GPU type, the batch chosen, its remaining work (epochs, and seconds at what the
 * decision gives it: its rate on those GPUs, sched_job_rate_on()) and its models per GPU type
 * (type_speeds: source, uncertainty, sizes measured, and its rate on them at the GPUs it gets,
 * 1 when it waits). */
static void add_types_and_work(json_t *o, const struct decide_input *in,
                               const struct sched_snapshot *snap, const struct sched_decision *d,
                               size_t i)
{
    const struct sched_assignment *a = &d->assign[i];
    const struct sched_job *j = &snap->jobs[i];
    if (!o)
        return;
    const char *type = a->gpus > 0 ? decide_input_gpu_type(in, a->gpu_model) : NULL;
    json_object_set_new(o, "gpu_type", type ? json_string(type) : json_null());
    if (a->batch > 0)
        json_object_set_new(o, "batch", json_real(a->batch));
    if (sched_batch_in_place(j, a))
        json_object_set_new(o, "batch_in_place", json_true());
    double rate = a->gpus > 0 ? sched_job_rate_on(j, a->gpus, a->gpu_model, gpu_speed_of(snap, a),
                                                  NULL)
                              : 0;
    double epochs = j->remaining_epochs;
    json_object_set_new(o, "remaining_epochs", num_or_null(epochs));
    json_object_set_new(o, "remaining_s",
                        num_or_null(epochs >= 0 && rate > 0 ? epochs / rate : -1));
    if (j->ntype_speeds == 0)
        return;
    json_t *types = json_array();
    int w = a->gpus > 0 ? a->gpus : 1;
    for (size_t k = 0; types && k < j->ntype_speeds; k++) {
        const struct sched_type_speed *t = &j->type_speeds[k];
        const char *name = decide_input_gpu_type(in, t->gpu_model);
        unsigned src = (unsigned)t->source < 3 ? (unsigned)t->source : 0;
        double r = sched_job_rate_on(j, w, t->gpu_model, 1, NULL);
        json_array_append_new(
            types, json_pack("{s:o, s:i, s:s, s:f, s:i, s:o}", "gpu_type",
                             name ? json_string(name) : json_null(), "gpu_model", t->gpu_model,
                             "source", type_source_names[src], "uncertainty", t->uncertainty,
                             "measured_sizes", t->measured_sizes, "epochs_per_s",
                             num_or_null(r > 0 ? r : -1)));
    }
    json_object_set_new(o, "types", types);
}

/* A new JSON text for the decision. */
static char *decision_text(const struct sched_policy_ops *p, const struct decide_input *in,
                           const struct sched_decision *d)
{
    const struct sched_snapshot *snap = decide_input_snapshot(in);
    json_t *jobs = json_array();
    for (size_t i = 0; jobs && i < d->njobs; i++) {
        const struct sched_assignment *a = &d->assign[i];
        json_t *slots = json_array();
        for (int g = 0; slots && g < a->gpus; g++)
            json_array_append_new(
                slots, json_pack("{s:i, s:i}", "node", a->slots[g].node, "gpu", a->slots[g].gpu));
        json_t *o = json_pack("{s:I, s:i, s:o, s:b, s:s?, s:b, s:b, s:b}", "id",
                              (json_int_t)a->job_id, "gpus", a->gpus, "slots", slots, "changed",
                              a->changed, "reason", a->reason, "suspended", a->suspended,
                              "resumed", a->resumed, "migrated", a->migrated);
        if (o && a->pack != SCHED_PACK_NONE)
            json_object_update_new(o, json_pack("{s:s, s:I}", "pack", pack_names[a->pack],
                                                "packed_with", (json_int_t)a->packed_with));
        json_t *plan = json_pack("{s:s, s:i, s:i, s:i, s:f}", "kind", plan_kind_name(a->plan.kind),
                                 "tp", a->plan.tp > 1 ? a->plan.tp : 1, "pp",
                                 a->plan.pp > 1 ? a->plan.pp : 1, "cpu_cores", a->plan.cpu_cores,
                                 "host_mem_gb", a->plan.host_mem_gb);
        if (o)
            json_object_update_new(o, json_pack("{s:o, s:i, s:b}", "plan", plan, "gpu_model",
                                                a->gpu_model, "plan_changed", a->plan_changed));
        else
            json_decref(plan);
        add_guarantees(o, snap, d, i);
        add_types_and_work(o, in, snap, d, i);
        json_array_append_new(jobs, o);
    }
    json_t *root = json_pack("{s:s, s:f, s:o}", "policy", p->name, "fragmentation",
                             d->fragmentation, "jobs", jobs);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
    json_decref(root);
    return text;
}

int decide_cmd_json(const char *text, size_t len, const struct sched_policy_ops *p, char **out,
                    char *err, size_t errlen)
{
    int rc = -1;
    *out = NULL;
    struct decide_input *in = decide_input_read(text, len, err, errlen);
    if (!in)
        return -1;
    const char *policy = decide_input_policy(in);
    const struct sched_snapshot *snap = decide_input_snapshot(in);
    if (!p && !(p = sched_policy_find(policy ? policy : "precompute"))) {
        snprintf(err, errlen, "$.policy: unknown policy");
        errno = EINVAL;
        goto done;
    }
    struct sched_decision *d = sched_decide(p, snap);
    if (!d) {
        snprintf(err, errlen, "the core refused the snapshot: %s", strerror(errno));
        goto done;
    }
    *out = decision_text(p, in, d);
    sched_decision_destroy(d);
    rc = *out ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "out of memory");
done:
    decide_input_destroy(in);
    return rc;
}

static const char usage[] =
    "usage: ringmaster-sim decide [--policy P] < snapshot.json > decision.json\n"
    "\n"
    "Reads one snapshot (cluster nodes; jobs with requests, current allocation,\n"
    "(w, step_s) and (step, loss) observations, progress) as JSON on stdin, fits\n"
    "the models from the observations, runs one scheduling round and writes the\n"
    "decision as JSON on stdout. Format: docs/decide.md. Bad input: exit 2.\n"
    "  --policy P   overrides the snapshot's \"policy\" (default precompute)\n";

/* Reads all of f into a new buffer; NULL when too big or unreadable. */
static char *slurp(FILE *f, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = cap < DECIDE_MAX_INPUT ? realloc(buf, cap * 2) : NULL;
        if (!nb)
            free(buf);
        buf = nb;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    *len = n;
    return buf;
}

int decide_cmd_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"policy", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const struct sched_policy_ops *p = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        }
        if (c != 'p' || !(p = sched_policy_find(optarg))) {
            fprintf(stderr, "ringmaster-sim decide: %s\n",
                    c == 'p' ? "--policy: unknown policy" : "unknown option (see --help)");
            return 2;
        }
    }
    size_t len;
    char *text = slurp(stdin, &len), *out = NULL, err[512];
    if (!text) {
        fprintf(stderr, "ringmaster-sim decide: cannot read stdin (or over 64 MiB)\n");
        return 2;
    }
    int rc = decide_cmd_json(text, len, p, &out, err, sizeof(err));
    free(text);
    if (rc) {
        fprintf(stderr, "ringmaster-sim decide: %s\n", err);
        return errno == EINVAL ? 2 : 1;
    }
    printf("%s\n", out);
    free(out);
    return 0;
}

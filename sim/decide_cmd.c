/* decide_cmd: `ringmaster-sim decide`, one scheduling round on a JSON snapshot read by
 * decide_input.c, the decision written as JSON (docs/decide.md). */
#include "decide_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide_input.h"

#define DECIDE_MAX_INPUT (64u << 20)

static const char *const pack_names[] = { "none", "pack", "keep", "revert" };

static const char *const forced_names[] = {NULL, "max_wait", "fair_share"};

/* The guarantee that served job i, its estimate's source, and why it waits. */
static void add_guarantees(json_t *o, const struct sched_snapshot *snap,
                           const struct sched_decision *d, size_t i)
{
    const struct sched_assignment *a = &d->assign[i];
    char why[512];

    if (!o)
        return;
    json_object_set_new(o, "remaining_source",
                        json_string(sched_estimate_source_name(snap->jobs[i].remaining_source)));
    if (a->forced > 0 && a->forced < 3)
        json_object_set_new(o, "forced", json_string(forced_names[a->forced]));
    if (a->gpus == 0) {
        sched_explain(snap, d, i, why, sizeof(why));
        json_object_set_new(o, "explanation", json_string(why));
    }
}

/* A new JSON text for the decision. */
static char *decision_text(const struct sched_policy_ops *p, const struct sched_snapshot *snap,
                           const struct sched_decision *d)
{
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
    *out = decision_text(p, snap, d);
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

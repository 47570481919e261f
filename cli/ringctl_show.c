/* ringctl's human views of one job: show (a summary) and events (a table). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ringctl.h"
#include "table.h"
#include "timefmt.h"

static const char *str_or(json_t *o, const char *k, const char *def)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : def;
}

/* A number (integer or real) as text into buf, or def when absent or null. */
static const char *num(json_t *o, const char *k, char *buf, size_t len, const char *def)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v))
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, len, "%.6g", json_real_value(v));
    else
        return def;
    return buf;
}

static void print_command(json_t *job)
{
    size_t i;
    json_t *a;
    printf("  command:   ");
    json_array_foreach(json_object_get(job, "command"), i, a)
        printf("%s%s", i ? " " : "", json_string_value(a));
    printf("\n");
}

/* The server's timestamp k of o for people ("in 3m12s", "13:02:03"), or def. */
static const char *when(json_t *o, const char *k, char *buf, size_t len, const char *def)
{
    return timefmt_when_text(json_string_value(json_object_get(o, k)), time(NULL), buf, len,
                             def);
}

/* Whose the job's predicted start and finish are (the API's one figure, docs/forecast.md):
 * the forecast's P50, or until the first forecast pass the last round's prediction. */
static const char *predicted_by(json_t *job)
{
    return json_is_object(json_object_get(job, "forecast")) ? " (forecast P50)"
                                                            : " (last round's; no forecast yet)";
}

static void print_pending(json_t *job)
{
    char pos[32], at[64];
    if (json_is_null(json_object_get(job, "pending_reason")) ||
        !json_object_get(job, "pending_reason"))
        return;
    printf("  pending:   %s\n", str_or(job, "pending_reason", ""));
    printf("  queue:     position %s, predicted start %s%s\n",
           num(job, "queue_position", pos, sizeof(pos), "?"),
           when(job, "predicted_start", at, sizeof(at), "unknown"), predicted_by(job));
}

/* "start 14:10:05 to 14:40:00" of the forecast's P50 and P90 of which, or "" when unknown. */
static void band_text(json_t *f, const char *which, char *buf, size_t len)
{
    char k50[16], k90[16], a[64], b[64];
    snprintf(k50, sizeof(k50), "%s_p50", which);
    snprintf(k90, sizeof(k90), "%s_p90", which);
    buf[0] = '\0';
    if (when(f, k50, a, sizeof(a), NULL))
        snprintf(buf, len, "%s %s (P50) to %s (P90)", which, a,
                 when(f, k90, b, sizeof(b), "unknown"));
}

/* "forecast:  start in 7m12s (P50) to in 9m (P90), finish ...; as of 13:02:03" from the job's
 * forecast (docs/forecast.md: simulated forward, without jobs still to come). */
static void print_forecast(json_t *job)
{
    json_t *f = json_object_get(job, "forecast");
    char st[160], fin[160], as_of[64];
    if (!json_is_object(f))
        return;
    band_text(f, "start", st, sizeof(st));
    band_text(f, "finish", fin, sizeof(fin));
    if (!st[0] && !fin[0])
        return;
    printf("  forecast:  %s%s%s; as of %s, if nothing more is submitted\n", st,
           st[0] && fin[0] ? ", " : "", fin, when(f, "as_of", as_of, sizeof(as_of), "?"));
}

/* "after:     job 12 (ok), array 41 (any)" for a job with dependencies. */
static void print_after(json_t *job)
{
    size_t i;
    json_t *d;
    json_t *after = json_object_get(job, "after");
    if (!json_array_size(after))
        return;
    printf("  after:    ");
    json_array_foreach(after, i, d)
    {
        json_t *id = json_object_get(d, "job");
        printf("%s %s %" JSON_INTEGER_FORMAT " (%s)", i ? "," : "", id ? "job" : "array",
               json_integer_value(id ? id : json_object_get(d, "array")), str_or(d, "when", "ok"));
    }
    printf("\n");
}

static void print_allocation(json_t *job)
{
    json_t *alloc = json_object_get(job, "allocation");
    char ws[32];
    if (!json_array_size(alloc))
        return;
    printf("  allocation (world size %s):", num(job, "world_size", ws, sizeof(ws), "?"));
    size_t i, k;
    json_t *a, *g;
    json_array_foreach(alloc, i, a)
    {
        char node[32];
        printf(" node %s GPUs", num(a, "node", node, sizeof(node), "?"));
        json_array_foreach(json_object_get(a, "gpus"), k, g)
            printf("%s%" JSON_INTEGER_FORMAT, k ? "," : " ", json_integer_value(g));
        printf(";");
    }
    printf("\n");
}

/* "progress:  4500 of 10000 steps (45.0%, declared)" when the job's length is known. */
static void print_progress(json_t *job)
{
    json_t *p = json_object_get(job, "progress");
    char done[32], total[32];
    if (!json_is_object(p))
        return;
    printf("  progress:  %s of %s steps (%.1f%%, %s)\n", num(p, "steps_done", done, 32, "?"),
           num(p, "total_steps", total, 32, "?"),
           json_number_value(json_object_get(p, "percent")), str_or(p, "of", "?"));
}

/* "checkpoint: step 1200, 3m05s ago": the last checkpoint the job's program reported
 * (libringjob), which the scheduler counts a preemption's loss from; "none reported" while
 * it runs without one. */
static void print_checkpoint(json_t *job)
{
    json_t *c = json_object_get(job, "checkpoint");
    char step[32], at[64];
    if (!json_is_object(c)) {
        if (!strcmp(str_or(job, "state", ""), "RUNNING"))
            printf("  checkpoint: none reported\n");
        return;
    }
    printf("  checkpoint: step %s, %s\n", num(c, "step", step, sizeof(step), "?"),
           when(c, "at", at, sizeof(at), "?"));
}

/* "batch:     16 global (adaptive to 256), runs 46; noise scale 93 examples" for a job with
 * a batch model (the noise scale var / sqr * batch, from its last gradient statistics), then
 * "chosen:    batch 46 on 2 GPUs: goodput 1.29x of batch 16; statistical efficiency 0.83"
 * while it runs. */
static void print_batch(json_t *job)
{
    char m0[32], mx[32], cur[32];
    if (!num(job, "batch", m0, sizeof(m0), NULL))
        return;
    json_t *a = json_object_get(job, "adaptive_batch"), *g = json_object_get(job, "grad");
    printf("  batch:     %s global", m0);
    if (num(a, "max", mx, sizeof(mx), NULL))
        printf(" (adaptive to %s)", mx);
    printf(", runs %s", num(job, "current_batch", cur, sizeof(cur), "-"));
    double sqr = json_number_value(json_object_get(g, "sqr"));
    double var = json_number_value(json_object_get(g, "var"));
    if (sqr > 0)
        printf("; noise scale %.0f examples",
               var / sqr * (double)json_integer_value(json_object_get(job, "batch")));
    printf("\n");
    /* why the scheduler runs it at that batch (the model's batch_choice, docs/api.md) */
    json_t *c = json_object_get(json_object_get(job, "model"), "batch_choice");
    if (json_is_object(c))
        printf("  chosen:    %s; statistical efficiency %.2f\n", str_or(c, "why", "?"),
               json_number_value(json_object_get(c, "efficiency")));
}

/* n (>= 0) with thousands separated: "56,000". */
static void grouped(long long n, char *buf, size_t len)
{
    char digits[32];
    int nd = snprintf(digits, sizeof(digits), "%lld", n < 0 ? 0 : n);
    size_t o = 0;
    for (int i = 0; i < nd && o + 2 < len; i++) {
        if (i > 0 && (nd - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

/* "remaining: 56,000 steps, 33.6 epochs (declared), about 9 min": the remaining work the
 * scheduler plans with (the model's "remaining", docs/api.md), with why a part is unknown. */
static void print_remaining(json_t *m)
{
    json_t *r = json_object_get(m, "remaining");
    if (!json_is_object(r))
        return;
    const char *src = str_or(r, "source", "none"), *why = str_or(r, "reason", NULL);
    json_t *steps = json_object_get(r, "steps"), *ep = json_object_get(r, "epochs");
    json_t *sec = json_object_get(r, "seconds");
    if (!strcmp(src, "ended")) {
        printf("  remaining: none (the job has ended)\n");
        return;
    }
    if (!json_is_number(ep)) {
        printf("  remaining: not estimated yet (%s)\n", why ? why : "no estimate");
        return;
    }
    char st[40] = "", about[48];
    if (json_is_number(steps)) {
        grouped((long long)json_number_value(steps), st, sizeof(st));
        printf("  remaining: %s steps, ", st);
    } else {
        printf("  remaining: ");
    }
    printf("%.1f epochs (%s)", json_number_value(ep), src);
    if (json_is_number(sec)) {
        timefmt_about(json_number_value(sec), about, sizeof(about));
        printf(", %s", about);
    } else {
        printf(", time unknown: %s", why ? why : "no speed model yet");
    }
    /* the round counted from this step; the progress line above is the latest report's */
    json_t *at = json_object_get(r, "as_of_step");
    if (json_is_integer(at) && json_integer_value(at) > 0) {
        grouped((long long)json_integer_value(at), st, sizeof(st));
        printf(" (counted at step %s)", st);
    }
    printf("\n");
}

/* "fit:       the losses alone say 0.0 epochs to go (loss floor 0.31); evidence, not used" */
static void print_fit(json_t *m)
{
    json_t *f = json_object_get(m, "fit");
    if (!json_is_object(f))
        return;
    json_t *ep = json_object_get(f, "remaining_epochs");
    if (json_is_number(ep))
        printf("  fit:       the losses alone say %.1f epochs to go", json_number_value(ep));
    else
        printf("  fit:       the losses alone never converge");
    printf(" (loss floor %.4g); %s\n", json_number_value(json_object_get(f, "loss_floor")),
           json_is_true(json_object_get(f, "used")) ? "the estimate" : "evidence, not used");
}

/* Where one GPU type's figures come from: "measured (2 sizes)", "estimated +-30 %", "given",
 * "one factor (2x the reference)". */
static void type_source_text(json_t *e, char *buf, size_t len)
{
    const char *src = str_or(e, "source", "?");
    json_t *u = json_object_get(e, "uncertainty");
    long long sizes = json_integer_value(json_object_get(e, "measured_sizes"));
    if (!strcmp(src, "measured"))
        snprintf(buf, len, "measured (%lld size%s)", sizes, sizes == 1 ? "" : "s");
    else if (!strcmp(src, "estimated") && json_is_number(u))
        snprintf(buf, len, "estimated +-%.0f %%", 100 * json_number_value(u));
    else if (!strcmp(src, "factor"))
        snprintf(buf, len, "one factor (%.3gx the reference)",
                 json_number_value(json_object_get(e, "speed")));
    else
        snprintf(buf, len, "%s", src);
}

/* "speed by GPU type, at 4 GPUs:" then per type of the cluster its step time, samples per
 * second and time to finish there, and where the figures come from (speed.by_gpu_model). */
static void print_types(json_t *m)
{
    json_t *a = json_object_get(json_object_get(m, "speed"), "by_gpu_model");
    if (!json_is_array(a) || json_array_size(a) == 0)
        return;
    json_t *first = json_array_get(a, 0);
    printf("  speed by GPU type, at %" JSON_INTEGER_FORMAT " GPU%s:\n",
           json_integer_value(json_object_get(first, "gpus")),
           json_integer_value(json_object_get(first, "gpus")) == 1 ? "" : "s");
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e)
    {
        json_t *t = json_object_get(e, "step_time_s"), *r = json_object_get(e, "samples_per_second");
        json_t *left = json_object_get(e, "remaining_s");
        char step[32] = "?", rate[32] = "?", about[48] = "time unknown", src[64];
        if (json_is_number(t))
            snprintf(step, sizeof(step), "%.3g s/step", json_number_value(t));
        if (json_is_number(r))
            snprintf(rate, sizeof(rate), "%.4g samples/s", json_number_value(r));
        if (json_is_number(left))
            timefmt_about(json_number_value(left), about, sizeof(about));
        type_source_text(e, src, sizeof(src));
        printf("    %-24s %-14s %-18s %-16s %s\n", str_or(e, "gpu_model", "?"), step, rate, about,
               src);
    }
}

static void print_model(json_t *job)
{
    json_t *m = json_object_get(job, "model");
    char a[32], b[32];
    if (!json_is_object(m) || !json_object_get(m, "source"))
        return;
    print_remaining(m);
    printf("  model:     speed source %s, epochs done %s, GPU counts measured: %s\n",
           str_or(m, "source", "?"), num(m, "epochs_done", a, sizeof(a), "?"),
           num(m, "world_sizes_measured", b, sizeof(b), "?"));
    print_types(m);
    print_fit(m);
}

/* "deadline: 2026-12-05 18:00:00 (forecast finish ~Thu 14:10, before the deadline)": the
 * server's verdict on its forecast while the job has not ended; once it completed, whether it
 * finished by it ("met", "missed by 3m10s"). */
static void print_deadline(json_t *job)
{
    char at[64];
    const char *verdict =
        json_string_value(json_object_get(json_object_get(job, "deadline_forecast"), "text"));
    if (!when(job, "deadline", at, sizeof(at), NULL))
        return;
    time_t due, done;
    const char *fin = json_string_value(json_object_get(job, "finished_at"));
    if (fin && !strcmp(str_or(job, "state", ""), "COMPLETED") &&
        timefmt_parse(json_string_value(json_object_get(job, "deadline")), &due) == 0 &&
        timefmt_parse(fin, &done) == 0) {
        char late[32];
        timefmt_about((double)(done - due), late, sizeof(late));
        if (done <= due)
            printf("  deadline:  %s (met)\n", at);
        else
            printf("  deadline:  %s (missed by %s)\n", at, late);
        return;
    }
    if (verdict)
        printf("  deadline:  %s (%s)\n", at, verdict);
    else
        printf("  deadline:  %s\n", at);
}

static void print_job(json_t *job)
{
    char id[32], g[32], lo[32], hi[32], prio[32];
    printf("job %s  %s  %s\n", num(job, "id", id, sizeof(id), "?"), str_or(job, "name", ""),
           str_or(job, "state", "?"));
    printf("  user:      %s, priority %s\n", str_or(job, "user", "?"),
           num(job, "priority", prio, sizeof(prio), "0"));
    printf("  gpus:      %s (min %s, max %s%s)\n", num(job, "gpus", g, sizeof(g), "?"),
           num(job, "min_gpus", lo, sizeof(lo), "?"), num(job, "max_gpus", hi, sizeof(hi), "?"),
           json_is_true(json_object_get(job, "elastic")) ? ", elastic" : "");
    print_command(job);
    char sub[64], upd[64], fin[64];
    printf("  submitted: %s, updated %s, finished %s\n", when(job, "submitted_at", sub, 64, "?"),
           when(job, "updated_at", upd, 64, "?"), when(job, "finished_at", fin, 64, "-"));
    if (when(job, "predicted_finish", fin, sizeof(fin), NULL))
        printf("  finish:    predicted %s%s\n", fin, predicted_by(job));
    print_deadline(job);
    print_progress(job);
    print_after(job);
    print_pending(job);
    print_forecast(job);
    print_allocation(job);
    print_checkpoint(job);
    print_batch(job);
    print_model(job);
}

/* GET path of the job named by argv[0] (argc must be 1). */
static int get_job_thing(struct ringctl *ctl, int argc, char **argv, const char *suffix,
                         const char *usage, json_t **out)
{
    char path[128];
    *out = NULL;
    if (argc != 1) {
        return ringctl_usage(usage);
    }
    if (ringctl_job_path(argv[0], suffix, path, sizeof(path)) < 0)
        return RINGCTL_USAGE;
    return ringctl_call(ctl, "GET", path, NULL, NULL, out);
}

int ringctl_cmd_show(struct ringctl *ctl, int argc, char **argv)
{
    json_t *out;
    int rc = get_job_thing(ctl, argc, argv, "", "show JOB_ID", &out);
    if (rc == RINGCTL_OK)
        ctl->json ? ringctl_print_json(out) : print_job(out);
    json_decref(out);
    return rc;
}

static void print_events(json_t *items)
{
    static const char *const head[] = {"ID", "AT", "FROM", "TO", "EVENT", "ACTOR", "DETAIL"};
    struct table *t = table_create(7, head);
    size_t i;
    json_t *e;
    json_array_foreach(items, i, e)
    {
        char id[32], at[64];
        const char *row[] = {num(e, "id", id, sizeof(id), ""), when(e, "at", at, sizeof(at), ""),
                             str_or(e, "from", "-"),           str_or(e, "to", ""),
                             str_or(e, "event", ""),           str_or(e, "actor", ""),
                             str_or(e, "detail", "")};
        table_add(t, row);
    }
    table_print(t, stdout);
    table_destroy(t);
}

int ringctl_cmd_events(struct ringctl *ctl, int argc, char **argv)
{
    json_t *out;
    int rc = get_job_thing(ctl, argc, argv, "/events", "events JOB_ID", &out);
    if (rc == RINGCTL_OK)
        ctl->json ? ringctl_print_json(out) : print_events(json_object_get(out, "items"));
    json_decref(out);
    return rc;
}

/* Fuzz target: the trace CSV reader of `ringmaster-sim run --trace` (sim/workload.c),
 * with the resnet110 template on 64 GPUs, strict and with bad rows skipped. A workload it
 * returns must meet simulate_job_spec's contract (submit times >= 0 from 0 in order,
 * 1 <= min <= requested <= max <= 64, a finite positive run time); a refusal must say
 * why; the strict reader accepts nothing that the lenient one would not. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "workload.h"

#define CLUSTER_GPUS 64

static void check_workload(const struct workload *w)
{
    FUZZ_CHECK(w->njobs >= 1, "no jobs");
    for (size_t i = 0; i < w->njobs; i++) {
        const struct simulate_job_spec *j = &w->jobs[i];
        FUZZ_CHECK(isfinite(j->submit_time) && j->submit_time >= 0, "job %zu submit %g", i,
                   j->submit_time);
        FUZZ_CHECK(i > 0 || j->submit_time == 0, "the first job arrives at %g", j->submit_time);
        FUZZ_CHECK(i == 0 || j->submit_time >= w->jobs[i - 1].submit_time, "out of order");
        FUZZ_CHECK(1 <= j->min_gpus && j->min_gpus <= j->requested_gpus &&
                       j->requested_gpus <= j->max_gpus && j->max_gpus <= CLUSTER_GPUS,
                   "job %zu gpus %d <= %d <= %d", i, j->min_gpus, j->requested_gpus,
                   j->max_gpus);
        FUZZ_CHECK(j->epochs > 0, "epochs %g", j->epochs);
        double eps = speed_epochs_per_second(&j->speed, j->requested_gpus);
        double run = j->epochs / eps;
        FUZZ_CHECK(isfinite(run) && run > 0, "job %zu runs %g s", i, run);
    }
}

static struct workload *read_trace(const uint8_t *data, size_t size, const struct template *t,
                                   int skip, char *err, size_t errlen)
{
    struct workload_trace_opts o = {.skip_bad_rows = skip};
    FILE *f = fmemopen((void *)data, size, "r");
    FUZZ_CHECK(f, "fmemopen");
    err[0] = '\0';
    struct workload *w = workload_trace_read(f, "fuzz", &o, t, CLUSTER_GPUS, NULL, err, errlen);
    fclose(f);
    if (w)
        check_workload(w);
    else
        FUZZ_CHECK(err[0], "refused without a message");
    return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct template t;
    static int have_template;
    char err[512];
    if (!have_template) {
        FUZZ_CHECK(template_get("resnet110", &t, err, sizeof(err)) == 0, "template: %s", err);
        have_template = 1;
    }
    if (size == 0)
        return 0; /* fmemopen refuses a zero size */
    struct workload *strict = read_trace(data, size, &t, 0, err, sizeof(err));
    struct workload *lenient = read_trace(data, size, &t, 1, err, sizeof(err));
    FUZZ_CHECK(!strict || (lenient && lenient->njobs == strict->njobs),
               "strict read %zu jobs, lenient %zu", strict->njobs,
               lenient ? lenient->njobs : 0);
    workload_destroy(strict);
    workload_destroy(lenient);
    return 0;
}

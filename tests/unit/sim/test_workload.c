/* Workloads: trace parsing (good rows, bad rows with line numbers, slicing,
 * the duration-preserving speed model) and Poisson determinism. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "template.h"
#include "workload.h"

static struct template resnet(void)
{
    struct template t;
    char err[256];
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    return t;
}

static struct workload *read_text(const char *text, const struct workload_trace_opts *o, char *err,
                                  size_t errlen, FILE *bad)
{
    struct template t = resnet();
    FILE *in = fmemopen((void *)text, strlen(text), "r");
    cr_assert_not_null(in);
    struct workload *w = workload_trace_read(in, "t", o, &t, 64, bad, err, errlen);
    fclose(in);
    return w;
}

Test(trace, good_rows_in_any_column_order)
{
    const char *csv = "user,duration_s,num_gpus,submit_time_s,job_id,status\n"
                      "u1,3600,8,100,a,ok\n"
                      "u2,600,1,160,b,ok\r\n"
                      "\n"
                      "u3,1200,4,130,c,\n";
    struct workload_trace_opts o = {0};
    char err[256];
    struct workload *w = read_text(csv, &o, err, sizeof(err), NULL);
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(w->njobs, 3);
    cr_assert_str_eq(w->name, "t");
    /* Sorted by submit time and shifted to start at 0. */
    cr_assert_eq(w->jobs[0].submit_time, 0);
    cr_assert_eq(w->jobs[1].submit_time, 30);
    cr_assert_eq(w->jobs[2].submit_time, 60);
    cr_assert_eq(w->jobs[0].requested_gpus, 8);
    cr_assert_eq(w->jobs[1].requested_gpus, 4);
    /* The run time at num_gpus is the trace's duration. */
    static const double dur[] = {3600, 1200, 600};
    for (int i = 0; i < 3; i++) {
        const struct simulate_job_spec *j = &w->jobs[i];
        double t = j->epochs / speed_epochs_per_second(&j->speed, j->requested_gpus);
        cr_assert_float_eq(t, dur[i], 1e-6 * dur[i], "job %d: %f s", i, t);
        cr_assert_eq(j->min_gpus, 1);
        cr_assert_geq(j->max_gpus, j->requested_gpus);
    }
    workload_destroy(w);
}

/* The optional columns of ringmasterd's what-if export: a rigid job runs on exactly its
 * GPUs, an elastic one within its own bounds; empty cells keep the defaults. */
Test(trace, elastic_and_bounds_columns)
{
    const char *csv = "job_id,submit_time_s,num_gpus,duration_s,elastic,min_gpus,max_gpus\n"
                      "r,0,2,100,0,,\n"
                      "e,1,2,100,1,2,4\n"
                      "d,2,2,100,,,\n";
    struct workload_trace_opts o = {0};
    char err[256];
    struct workload *w = read_text(csv, &o, err, sizeof(err), NULL);
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(w->njobs, 3);
    cr_assert_eq(w->jobs[0].elastic, 0);
    cr_assert_eq(w->jobs[0].min_gpus, 2);
    cr_assert_eq(w->jobs[0].max_gpus, 2);
    cr_assert_eq(w->jobs[1].elastic, 1);
    cr_assert_eq(w->jobs[1].min_gpus, 2);
    cr_assert_eq(w->jobs[1].max_gpus, 4);
    cr_assert_eq(w->jobs[2].elastic, 1);
    cr_assert_eq(w->jobs[2].min_gpus, 1, "the default bounds");
    workload_destroy(w);

    const char *bad[] = {
        "job_id,submit_time_s,num_gpus,duration_s,elastic\na,0,1,100,yes\n",
        "job_id,submit_time_s,num_gpus,duration_s,min_gpus\na,0,1,100,2\n",
        "job_id,submit_time_s,num_gpus,duration_s,max_gpus\na,0,4,100,2\n",
        "job_id,submit_time_s,num_gpus,duration_s,max_gpus\na,0,1,100,1.5\n",
    };
    static const char *const says[] = {"elastic", "outside", "outside", "max_gpus"};
    for (size_t k = 0; k < 4; k++) {
        cr_assert_null(read_text(bad[k], &o, err, sizeof(err), NULL), "row %zu", k);
        cr_assert(strstr(err, "t:2:") && strstr(err, says[k]), "%s", err);
    }
}

/* What ringmasterd measured of each job (docs/whatif.md): a job with its own speed model
 * (speed_theta) keeps that model's shape, its work is its course's examples, and its course
 * takes its measured run time; a job with a course only keeps the template's shape; one with
 * neither is as before. */
Test(trace, measured_models_and_course)
{
    const char *csv = "job_id,submit_time_s,num_gpus,duration_s,elastic,min_gpus,max_gpus,"
                      "speed_theta,batch_per_gpu,dataset_size,course\n"
                      "own,0,1,30,1,1,4,0.05;0.001;0.02;0;0;0.1,32,1000,1:100:0.08;2:50:0.1\n"
                      "course,1,1,20,1,1,4,,,,1:60:0.3\n"
                      "none,2,2,40,0,,,,,,\n";
    struct workload_trace_opts o = {0};
    char err[256];
    struct workload *w = read_text(csv, &o, err, sizeof(err), NULL);
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(w->njobs, 3);
    cr_assert_eq(w->own_speed, 1, "one job at its own measured speed");
    cr_assert_eq(w->with_course, 2);

    const struct simulate_job_spec *own = &w->jobs[0];
    cr_assert_float_eq(own->speed.batch_per_gpu, 32, 1e-9);
    cr_assert_float_eq(own->speed.dataset_size, 1000, 1e-9);
    /* its work: 100 steps of 32 examples on 1 GPU and 50 of 64 on 2, over 1000 examples */
    cr_assert_float_eq(own->epochs, (100 * 32 + 50 * 64) / 1000.0, 1e-9);
    double t1 = speed_step_time(&own->speed, 1), t2 = speed_step_time(&own->speed, 2);
    cr_assert_float_eq(100 * t1 + 50 * t2, 30, 1e-6, "its course takes its run time");
    struct speed_model raw = {.theta = {0.05, 0.001, 0.02, 0, 0, 0.1}, .batch_per_gpu = 32,
                              .fitted = 1};
    cr_assert_float_eq(t2 / t1, speed_step_time(&raw, 2) / speed_step_time(&raw, 1), 1e-9,
                       "its own speed-up from 1 to 2 GPUs");

    struct template t = resnet();
    const struct simulate_job_spec *course = &w->jobs[1];
    cr_assert_float_eq(course->speed.batch_per_gpu, t.speed.batch_per_gpu, 1e-9);
    cr_assert_float_eq(60 * speed_step_time(&course->speed, 1), 20, 1e-6);
    cr_assert_float_eq(speed_step_time(&course->speed, 4) / speed_step_time(&course->speed, 1),
                       speed_step_time(&t.speed, 4) / speed_step_time(&t.speed, 1), 1e-9,
                       "the template's speed-up");

    const struct simulate_job_spec *none = &w->jobs[2];
    cr_assert_float_eq(none->epochs / speed_epochs_per_second(&none->speed, 2), 40, 1e-6);
    workload_destroy(w);

    const char *bad[] = {
        "job_id,submit_time_s,num_gpus,duration_s,speed_theta\na,0,1,100,1;2;3\n",
        "job_id,submit_time_s,num_gpus,duration_s,speed_theta\na,0,1,100,0;0;0;0;0;0\n",
        "job_id,submit_time_s,num_gpus,duration_s,speed_theta\na,0,1,100,1;1;1;1;1;-1\n",
        "job_id,submit_time_s,num_gpus,duration_s,speed_theta\na,0,1,100,1;1;1;1;1;1;1\n",
        "job_id,submit_time_s,num_gpus,duration_s,course\na,0,1,100,2\n",
        "job_id,submit_time_s,num_gpus,duration_s,course\na,0,1,100,0:5\n",
        "job_id,submit_time_s,num_gpus,duration_s,course\na,0,1,100,1:0\n",
        "job_id,submit_time_s,num_gpus,duration_s,batch_per_gpu\na,0,1,100,0\n",
    };
    static const char *const says[] = {"speed_theta", "speed_theta", "speed_theta",
                                       "speed_theta", "course",      "course",
                                       "course",      "batch_per_gpu"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        cr_assert_null(read_text(bad[k], &o, err, sizeof(err), NULL), "row %zu", k);
        cr_assert(strstr(err, "t:2:") && strstr(err, says[k]), "%s", err);
    }
}

Test(trace, bad_row_is_an_error_with_its_line)
{
    const char *csv = "job_id,submit_time_s,num_gpus,duration_s\n"
                      "a,0,1,100\n"
                      "b,10,zero,100\n";
    struct workload_trace_opts o = {0};
    char err[256];
    cr_assert_null(read_text(csv, &o, err, sizeof(err), NULL));
    cr_assert(strstr(err, "t:3:") && strstr(err, "num_gpus"), "%s", err);

    const char *neg = "job_id,submit_time_s,num_gpus,duration_s\na,-5,1,100\n";
    cr_assert_null(read_text(neg, &o, err, sizeof(err), NULL));
    cr_assert(strstr(err, "t:2:") && strstr(err, "submit_time_s"), "%s", err);

    const char *short_row = "job_id,submit_time_s,num_gpus,duration_s\na,5,1\n";
    cr_assert_null(read_text(short_row, &o, err, sizeof(err), NULL));
    cr_assert(strstr(err, "t:2:"), "%s", err);
}

Test(trace, skip_bad_rows_reports_and_goes_on)
{
    const char *csv = "job_id,submit_time_s,num_gpus,duration_s\n"
                      "a,0,1,100\n"
                      "b,10,2,-4\n"
                      "c,20,1,\n"
                      "d,30,2.5,100\n"
                      "e,40,2,50\n";
    struct workload_trace_opts o = {.skip_bad_rows = 1};
    char err[256], *msgs = NULL;
    size_t len = 0;
    FILE *bad = open_memstream(&msgs, &len);
    struct workload *w = read_text(csv, &o, err, sizeof(err), bad);
    fclose(bad);
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(w->njobs, 2, "a and e are kept");
    cr_assert_eq(w->skipped, 3, "b, d bad; c never ran");
    cr_assert(strstr(msgs, "t:3:") && strstr(msgs, "t:5:") && !strstr(msgs, "t:4:"), "%s", msgs);
    free(msgs);
    workload_destroy(w);
}

Test(trace, header_is_required)
{
    struct workload_trace_opts o = {0};
    char err[256];
    cr_assert_null(read_text("a,0,1,100\n", &o, err, sizeof(err), NULL));
    cr_assert(strstr(err, "header") && strstr(err, "job_id"), "%s", err);
    cr_assert_null(read_text("", &o, err, sizeof(err), NULL));
    cr_assert(strstr(err, "header"), "%s", err);
    cr_assert_null(
        read_text("job_id,submit_time_s,num_gpus,duration_s\n", &o, err, sizeof(err), NULL));
    cr_assert(strstr(err, "no job"), "%s", err);
}

Test(trace, slicing_options)
{
    const char *csv = "job_id,submit_time_s,num_gpus,duration_s\n"
                      "a,0,1,100\n"
                      "b,100,16,100\n"
                      "c,200,1,30\n"
                      "d,300,2,100\n"
                      "e,400,4,100\n"
                      "f,500,1,100\n"
                      "g,900,1,100\n"
                      "h,950,128,100\n";
    char err[256];
    struct workload_trace_opts o = {
        .start_s = 100, .window_s = 500, .min_duration_s = 60, .max_gpus = 8};
    struct workload *w = read_text(csv, &o, err, sizeof(err), NULL);
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(w->njobs, 3, "d, e, f");
    cr_assert_eq(w->jobs[0].requested_gpus, 2);
    cr_assert_eq(w->jobs[2].submit_time, 200);
    workload_destroy(w);

    struct workload_trace_opts o2 = {.max_jobs = 2};
    w = read_text(csv, &o2, err, sizeof(err), NULL);
    cr_assert_eq(w->njobs, 2);
    workload_destroy(w);

    /* A job over the cluster's 64 GPUs is left out, not an error. */
    struct workload_trace_opts o3 = {.start_s = 940};
    cr_assert_null(read_text(csv, &o3, err, sizeof(err), NULL));
}

Test(trace, real_philly_slice)
{
    const char *path = "../shared/traces/philly_pollux.csv";
    if (access(path, R_OK) != 0)
        cr_skip_test("no %s", path);
    struct template t = resnet();
    struct workload_trace_opts o = {.max_jobs = 300, .min_duration_s = 60, .max_gpus = 16};
    char err[256];
    struct workload *w = workload_trace_load(path, &o, &t, 64, NULL, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    cr_assert_str_eq(w->name, "philly_pollux");
    cr_assert_eq(w->njobs, 300);
    for (size_t i = 1; i < w->njobs; i++)
        cr_assert_geq(w->jobs[i].submit_time, w->jobs[i - 1].submit_time);
    workload_destroy(w);
}

Test(poisson, deterministic_and_exponential)
{
    struct template t = resnet();
    char err[256];
    struct workload *a = workload_poisson(&t, 1, 500, 4000, 42, 64, err, sizeof(err));
    struct workload *b = workload_poisson(&t, 1, 500, 4000, 42, 64, err, sizeof(err));
    struct workload *c = workload_poisson(&t, 1, 500, 4000, 43, 64, err, sizeof(err));
    cr_assert(a && b && c, "%s", err);
    cr_assert_str_eq(a->name, "poisson-500-4000");
    cr_assert_eq(memcmp(a->jobs, b->jobs, a->njobs * sizeof(*a->jobs)), 0);
    cr_assert_neq(a->jobs[1].submit_time, c->jobs[1].submit_time);
    cr_assert_eq(a->jobs[0].submit_time, 0);
    double mean_gap = a->jobs[a->njobs - 1].submit_time / (double)(a->njobs - 1);
    cr_assert_float_eq(mean_gap, 500, 25, "mean inter-arrival %f", mean_gap);
    double epochs = 0;
    for (size_t i = 0; i < a->njobs; i++) {
        cr_assert_eq(a->jobs[i].id, (int64_t)i + 1);
        cr_assert_geq(a->jobs[i].epochs, 1);
        epochs += a->jobs[i].epochs;
    }
    cr_assert_float_eq(epochs / 4000, TEMPLATE_RESNET_EPOCHS, 0.05 * TEMPLATE_RESNET_EPOCHS);
    workload_destroy(a);
    workload_destroy(b);
    workload_destroy(c);
}

Test(poisson, bad_arguments)
{
    struct template t = resnet();
    char err[256];
    cr_assert_null(workload_poisson(&t, 1, 0, 10, 1, 64, err, sizeof(err)));
    cr_assert_null(workload_poisson(&t, 1, 10, 0, 1, 64, err, sizeof(err)));
    cr_assert(strstr(err, "poisson"), "%s", err);
}

Test(templates, measured_apps_and_the_paper_job)
{
    char err[256];
    struct template t;
    cr_assert_eq(template_get("resnet110-steps", &t, err, sizeof(err)), 0, "%s", err);
    /* Table 1: 402.5 ms on 1 GPU, 470.2 ms on 8. */
    cr_assert_float_eq(speed_step_time(&t.speed, 1), 0.4025, 0.005);
    cr_assert_float_eq(speed_step_time(&t.speed, 8), 0.4702, 0.005);
    cr_assert_eq(template_get("resnet110", &t, err, sizeof(err)), 0, "%s", err);
    /* Calibrated: a 146-epoch job alone takes about 6.37 h on 1 GPU and 1.40 h on 8. */
    cr_assert_float_eq(146 / speed_epochs_per_second(&t.speed, 1) / 3600, 6.37, 0.2);
    cr_assert_float_eq(146 / speed_epochs_per_second(&t.speed, 8) / 3600, 1.40, 0.1);
    cr_assert_neq(template_get("nope", &t, err, sizeof(err)), 0);
    cr_assert(strstr(err, "unknown template"), "%s", err);

    if (access("../shared/profiles/cifar10/placements.csv", R_OK) != 0 &&
        !getenv("RINGMASTER_SHARED_DIR"))
        cr_skip_test("no measured profiles");
    for (const char *const *n = template_names(); *n; n++) {
        cr_assert_eq(template_get(*n, &t, err, sizeof(err)), 0, "%s: %s", *n, err);
        cr_assert_gt(t.speed.dataset_size, 0, "%s", *n);
        cr_assert_gt(t.epochs, 0, "%s", *n);
        double e1 = speed_epochs_per_second(&t.speed, 1), e8 = speed_epochs_per_second(&t.speed, 8);
        cr_assert(e1 > 0 && e8 > e1, "%s: 8 GPUs must be faster than 1", *n);
    }
    cr_assert_eq(template_get("cifar10", &t, err, sizeof(err)), 0);
    cr_assert_float_eq(t.speed.dataset_size, 50000, 200, "CIFAR-10 has 50,000 images");
    cr_assert_eq(t.epochs, 100);
}

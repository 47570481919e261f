/* pollux: the Pollux paper's evaluation setting (Qiao et al., OSDI 2021, section 5.2) in
 * our simulator: `ringmaster-sim pollux`.
 *
 * A workload is drawn as the paper describes its synthetic workloads: JOBS jobs (160) whose
 * submission times and sizes are sampled from the Philly trace (shared/traces/
 * philly_pollux.csv, jobs of at least 60 s and under 1,000 GPU-hours) within an 8-hour
 * window of the day, every day of the trace folded onto one window. A job's GPU-time in the
 * trace picks its application: under 1 GPU-hour cifar10 or ncf (one of the two at random),
 * under 10 deepspeech2 (half of them turned into bert), under 100 yolov3, else imagenet.
 * Its requested GPUs and batch size are one of the application's configurations drawn at
 * random (pollux_app.h). The trace's clock has no time of day: the window is taken from
 * second START of each 86,400 s day counted from its first submission.
 *
 * Jobs keep their global batch (fixed) or may choose one up to the largest validated
 * (adaptive); they run on nodes of 4 GPUs, each reallocation costs 30 s, and rounds run
 * every 60 s, as in the paper's simulator. */
#ifndef RINGMASTER_SIM_POLLUX_H
#define RINGMASTER_SIM_POLLUX_H

#include <stddef.h>
#include <stdint.h>

#include "pollux_app.h"
#include "profile.h"
#include "workload.h"

struct pollux_opts {
    size_t jobs;       /* 160 */
    double start_s;    /* the window's start in the day (7,200: hour 2) */
    double window_s;   /* 28,800 */
    uint64_t seed;
    int adaptive;      /* 1: jobs may change their batch */
    int cluster_gpus;  /* a job's most GPUs: the most of one GPU model (its request too) */
    int hetero;        /* 1: jobs carry their true speed per node type (pollux_app.types) and
                        * show ref_speed, the T4 model as a v100 model, as their speed */
};

/* Sia's published mean JCTs in its heterogeneous setting (SOSP'23, Table 3, Philly
 * workload; 6 x 4 T4, 3 x 8 RTX 2080Ti, 2 x 8 A100). */
#define POLLUX_SIA_PUBLISHED_SIA_S (0.6 * 3600.0)
#define POLLUX_SIA_PUBLISHED_POLLUX_S (1.0 * 3600.0)
#define POLLUX_SIA_PUBLISHED_GAVEL_S (1.9 * 3600.0)
#define POLLUX_HETERO_CLUSTER "6x4:t4,3x8:rtx,2x8:a100"

/* The published mean JCTs on this setting (Pollux, Table 3/Figure 6; 16 nodes x 4 GPUs). */
#define POLLUX_PUBLISHED_POLLUX_S 2751.0
#define POLLUX_PUBLISHED_TIRESIAS_S 4038.0
#define POLLUX_PUBLISHED_OPTIMUS_S 5682.0

/* Draws one workload from the trace at path (apps in profile_app_name() order). Returns NULL
 * with a message in err. */
struct workload *pollux_workload(const char *trace_path, const struct pollux_app *apps,
                                 const struct pollux_opts *o, char *err, size_t errlen);

/* Reads one workload in the Pollux artifact's format (a header name,time,application,
 * num_replicas,batch_size, then a job a line: its submission second, one of the six
 * applications, its GPUs and global batch), the jobs built as pollux_workload() builds them.
 * Returns NULL with a message in err. */
struct workload *pollux_workload_csv(const char *path, const struct pollux_app *apps,
                                     const struct pollux_opts *o, char *err, size_t errlen);

/* The application index of job j of a workload drawn by pollux_workload() (its id's low
 * byte), and its name. */
const char *pollux_job_app(const struct simulate_job_spec *j);

/* The Philly trace beside the profiles: <shared>/traces/philly_pollux.csv (profile.h). */
void pollux_default_trace(char *buf, size_t len);

/* pollux_app_load_types() of app on the GPU models of options_gpu_models() that the node
 * types are named after (aws = t4, rtx, quad, dgx-ext = a100), nodes of 4, 8, 4, 8 GPUs,
 * ref_speed the T4 model over the t4's factor. Returns 0, or -1 with err. */
int pollux_load_types(struct pollux_app *app, char *err, size_t errlen);

/* `ringmaster-sim pollux ...`; returns the exit code. */
int pollux_main(int argc, char **argv);

#endif

/* jobspec: validation of a job submission and its JSON mapping. Pure (jansson only): every
 * rule a submission must meet lives here, and each broken rule names its field. */
#ifndef RINGMASTER_JOBSPEC_H
#define RINGMASTER_JOBSPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "goodput.h"
#include "jobspec_deadline.h"
#include "jobspec_topology.h"
#include "plan.h"

#define JOBSPEC_MAX_GPUS 1024
#define JOBSPEC_MAX_NAME 128 /* characters (code points) */
#define JOBSPEC_MAX_ARGS 256
#define JOBSPEC_MAX_ARG 4096 /* bytes per argument or environment value */
#define JOBSPEC_MAX_ENV 256
#define JOBSPEC_MIN_PRIORITY -1000
#define JOBSPEC_MAX_PRIORITY 1000
#define JOBSPEC_MAX_BATCH 65536
#define JOBSPEC_DEFAULT_BATCH 128
#define JOBSPEC_MAX_MODEL 65536         /* bytes of the model object as compact JSON */
#define JOBSPEC_MAX_MODEL_DEPTH 32      /* nesting levels of the model object */
#define JOBSPEC_MAX_MODEL_SIZE 100000.0 /* billions of parameters */
#define JOBSPEC_MAX_ACTIVATION_GB 100000.0
#define JOBSPEC_PLAN_MAX 32 /* bytes of a plan's name, NUL included */
#define JOBSPEC_MAX_STEPS 1000000000000LL /* total_steps */
#define JOBSPEC_MAX_EPOCHS 1000000.0
#define JOBSPEC_MAX_GLOBAL_BATCH 16777216 /* batch and adaptive_batch.max (2^24 examples) */

struct jobspec {
    char *name;
    json_t *command;              /* array of strings (owned) */
    json_t *env;                  /* object of strings (owned), {} when not given */
    json_t *model;                /* object (owned) or NULL */
    int gpus, min_gpus, max_gpus; /* min and max default to gpus */
    bool elastic;                 /* default false */
    int priority;                 /* default 0 */
    int batch_per_gpu;            /* default JOBSPEC_DEFAULT_BATCH */
    /* Execution plans (docs/plans.md), all or nothing: model_size > 0 when declared. */
    double model_size;           /* billions of parameters; 0: no plan information */
    double activation_gb;        /* activation memory per GPU, GB (default 0) */
    unsigned plans;              /* bit (1u << enum plan_kind) per plan it supports */
    char plan[JOBSPEC_PLAN_MAX]; /* the plan it asks for (default: the first of plans) */
    int max_tp, max_pp;          /* largest degrees it accepts (default: the plan's) */
    /* Its length, when declared (docs/scheduler.md, "Estimates"): steps or epochs it runs
     * (0: not declared), whether it stops once its loss converges (the fit may then shorten
     * the declared length), the loss it stops at (has_stop_loss). */
    long long total_steps;
    double epochs;
    bool stop_at_convergence;
    bool has_stop_loss;
    double stop_at_loss;
    bool hold; /* accepted even when it cannot fit the cluster registered now */
    /* Its batch model (docs/scheduler.md "Goodput"), when batch > 0: the initial global batch
     * M0 (examples per step over all GPUs, at least gpus), the largest global batch the
     * scheduler may choose when adaptive_batch is given (max_batch >= batch; 0: fixed at
     * batch) and the largest examples per GPU per micro-step before the job accumulates
     * gradients (max_local_batch; 0: no limit). */
    int batch, max_batch, max_local_batch;
    /* The jobs it runs after (jobafter.h; issue 33 item 4): an array (owned) of {"job": ID,
     * "when"} or {"array": ID, "when"} with when filled in, or NULL: none. */
    json_t *after;
    /* Its topology bound (jobspec_topology.c), as Slurm's --switches=N@T: at most
     * max_switches switches (0: no bound) while it has waited less than max_switches_wait_s. */
    int max_switches;
    double max_switches_wait_s;
    /* How it rescales its learning rate when the batch changes ("lr_scaling": "sqrt", the
     * default, "linear" or "none"; enum batch_lr_scaling). */
    int lr_scaling;
    /* Its deadline (jobspec_deadline.h; issue 33 item 3): epoch seconds by which it should be
     * finished; 0: none. */
    double deadline;
};

/* Validates body (a JSON object; borrowed) and fills *spec. Returns 0, or -1 with *errors
 * set to a new array of {"field", "detail"} (every broken rule, unknown fields included) and
 * the first message ("gpus: expected 1..1024, got -3") in detail. On -1, *spec holds nothing
 * to free. */
int jobspec_parse(const json_t *body, struct jobspec *spec, json_t **errors, char *detail,
                  size_t len);

/* Frees what spec owns and zeroes it. */
void jobspec_clear(struct jobspec *spec);

/* The spec's fields as a new object (name, command, gpus, min_gpus, max_gpus, elastic,
 * priority, batch_per_gpu, env, model when set, the plan fields when model_size is set, and
 * total_steps, epochs, stop_at_convergence, stop_at_loss and hold when declared, and the
 * batch fields when batch is set): the form jobspec_parse() accepts. */
json_t *jobspec_to_json(const struct jobspec *spec);

/* The plan declaration as a new object {model_size, activation_gb, plans, plan, max_tp,
 * max_pp} with every default filled in (what the jobs table stores), or NULL when the spec
 * has no model_size. */
json_t *jobspec_plans_json(const struct jobspec *spec);

/* Reads a stored plan declaration (borrowed; NULL or malformed: none) into the core's
 * form; *ps is zeroed when there is none. Returns 1 when it holds plan information. */
int jobspec_plans_read(const json_t *decl, struct plan_spec *ps);

/* The batch declaration as a new object {batch, adaptive_batch: {min, max} or null,
 * max_local_batch or null, and lr_scaling when it is not "sqrt"} (what the jobs table stores
 * in batch_spec), or NULL when the spec has no batch. */
json_t *jobspec_batch_json(const struct jobspec *spec);

/* The learning-rate rule of a stored batch declaration (borrowed; its "lr_scaling", absent or
 * unknown: sqrt), an enum batch_lr_scaling. */
int jobspec_batch_lr_scaling(const json_t *decl);

/* Reads a stored batch declaration (borrowed; NULL or malformed: none) into the core's form
 * with the job's gradient statistics (grad_sqr, grad_var: 0 when none reported) and its
 * current global batch (cur <= 0: its initial one); *b is zeroed when there is none.
 * Returns 1 when it holds a batch model. */
int jobspec_batch_read(const json_t *decl, double grad_sqr, double grad_var, long cur,
                       struct batch_spec *b);

/* Parses a plan name "KIND[-tpN][-ppN]" (KIND: dp, zero1, zero2, zero3, offload; N: 1, 2,
 * 4 or 8) into c (no host resources). Returns 0, or -1 when it is not one. */
int jobspec_plan_parse(const char *s, struct plan_choice *c);

/* Writes c's name in that form ("zero2", "dp-tp2-pp2") into buf (len bytes). */
void jobspec_plan_name(const struct plan_choice *c, char *buf, size_t len);

#endif

/* jobspec: validation of a job submission and its JSON mapping. Pure (jansson only): every
 * rule a submission must meet lives here, and each broken rule names its field. */
#ifndef RINGMASTER_JOBSPEC_H
#define RINGMASTER_JOBSPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JOBSPEC_MAX_GPUS 1024
#define JOBSPEC_MAX_NAME 128 /* characters (code points) */
#define JOBSPEC_MAX_ARGS 256
#define JOBSPEC_MAX_ARG 4096 /* bytes per argument or environment value */
#define JOBSPEC_MAX_ENV 256
#define JOBSPEC_MIN_PRIORITY -1000
#define JOBSPEC_MAX_PRIORITY 1000
#define JOBSPEC_MAX_BATCH 65536
#define JOBSPEC_DEFAULT_BATCH 128
#define JOBSPEC_MAX_MODEL 65536    /* bytes of the model object as compact JSON */
#define JOBSPEC_MAX_MODEL_DEPTH 32 /* nesting levels of the model object */

struct jobspec {
    char *name;
    json_t *command;              /* array of strings (owned) */
    json_t *env;                  /* object of strings (owned), {} when not given */
    json_t *model;                /* object (owned) or NULL */
    int gpus, min_gpus, max_gpus; /* min and max default to gpus */
    bool elastic;                 /* default false */
    int priority;                 /* default 0 */
    int batch_per_gpu;            /* default JOBSPEC_DEFAULT_BATCH */
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
 * priority, batch_per_gpu, env, and model when set): the form jobspec_parse() accepts. */
json_t *jobspec_to_json(const struct jobspec *spec);

#endif

/* Property test of the request parsers: thousands of mutated submissions (fixed seed) never
 * crash the validators, and whatever they accept meets every documented bound. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "spec/jobspec.h"
#include "spec/nodespec.h"

static uint64_t state = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static const char *const seeds[] = {
    "{\"name\":\"r\",\"command\":[\"python\",\"t.py\"],\"gpus\":4,\"min_gpus\":2,"
    "\"max_gpus\":8,\"elastic\":true,\"priority\":3,\"batch_per_gpu\":64,"
    "\"env\":{\"A\":\"1\"},\"model\":{\"bytes\":10}}",
    "{\"name\":\"h1\",\"cpus\":8,\"memory_bytes\":100,\"gpus\":[{\"index\":0,\"model\":\"A\","
    "\"memory_bytes\":5},{\"index\":1,\"model\":\"B\",\"memory_bytes\":6}]}",
};

static const char alphabet[] = "{}[]\",:0123456789-+.eE truefalsnul\\u00a";

static void mutate(char *buf, size_t len)
{
    int edits = 1 + (int)(next_rand() % 4);
    for (int i = 0; i < edits; i++)
        buf[next_rand() % len] = alphabet[next_rand() % (sizeof(alphabet) - 1)];
}

static void check_accepted_job(const struct jobspec *s)
{
    cr_assert(s->gpus >= 1 && s->gpus <= JOBSPEC_MAX_GPUS);
    cr_assert(s->min_gpus >= 1 && s->min_gpus <= s->gpus && s->gpus <= s->max_gpus);
    cr_assert(s->max_gpus <= JOBSPEC_MAX_GPUS);
    cr_assert(s->priority >= JOBSPEC_MIN_PRIORITY && s->priority <= JOBSPEC_MAX_PRIORITY);
    cr_assert(s->batch_per_gpu >= 1 && s->batch_per_gpu <= JOBSPEC_MAX_BATCH);
    cr_assert(s->name && s->name[0]);
    cr_assert(json_is_array(s->command) && json_array_size(s->command) >= 1);
    cr_assert(json_is_object(s->env));
    cr_assert(!s->model || json_is_object(s->model));
}

Test(mutations, validators_never_crash_and_accept_only_valid_input)
{
    int parsed = 0, accepted = 0;
    for (int round = 0; round < 20000; round++) {
        const char *seed = seeds[round % 2];
        char buf[512];
        size_t len = strlen(seed);
        memcpy(buf, seed, len + 1);
        mutate(buf, len);
        json_t *body = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(body)) {
            json_decref(body);
            continue;
        }
        parsed++;
        json_t *errors = NULL;
        char detail[256];
        if (round % 2 == 0) {
            struct jobspec s;
            if (jobspec_parse(body, &s, &errors, detail, sizeof(detail)) == 0) {
                accepted++;
                check_accepted_job(&s);
                jobspec_clear(&s);
            } else {
                cr_assert(json_array_size(errors) >= 1 && detail[0]);
            }
        } else if (nodespec_check(body, &errors, detail, sizeof(detail)) == 0) {
            accepted++;
        } else {
            cr_assert(json_array_size(errors) >= 1 && detail[0]);
        }
        json_decref(errors);
        json_decref(body);
    }
    cr_assert(parsed > 1000, "the mutations reach the validators (%d)", parsed);
    cr_assert(accepted > 100 && accepted < parsed, "both outcomes happen (%d of %d)", accepted,
              parsed);
}

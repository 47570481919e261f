/* The goodput model against the measured profiles (shared/profiles): each epoch of each
 * validation-<batch>.csv was trained at that global batch, and its progress per step (in steps
 * at the app's smallest batch) is what goodput_gain() predicts from that epoch's gradient
 * statistics. The first epoch is left out: its statistics change most within it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "goodput.h"
#include "profile.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(goodput_profiles, the_gain_of_every_epoch_matches_its_statistics)
{
    for (size_t a = 0; a < PROFILE_NAPPS; a++) {
        char err[256];
        struct profile *p = profile_load(profile_app_name(a), err, sizeof(err));
        cr_assert(p, "%s", err);
        double m0 = p->validations[0].global_bsz;
        size_t n = 0, cap = 0, large = 0;
        for (size_t v = 0; v < p->nvalidations; v++)
            cap += p->validations[v].n;
        double *rel = calloc(cap, sizeof(*rel));
        cr_assert(rel);
        for (size_t v = 0; v < p->nvalidations; v++) {
            const struct profile_validation *val = &p->validations[v];
            for (size_t e = 1; e < val->n; e++) {
                double steps = val->iteration[e] - val->iteration[e - 1];
                if (!(steps > 0))
                    continue;
                double seen = (val->progress[e] - val->progress[e - 1]) / steps;
                struct batch_spec b = {.init_batch = m0,
                                       .grad_sqr = val->grad_sqr[e],
                                       .grad_var = val->grad_var[e]};
                double want = goodput_gain(&b, val->global_bsz);
                rel[n] = fabs(want - seen) / seen;
                large += rel[n] > 0.05;
                n++;
            }
        }
        cr_assert_geq(n, 5, "%s: %zu epochs", p->app, n);
        qsort(rel, n, sizeof(*rel), cmp_double);
        cr_expect_lt(rel[n / 2], 0.01, "%s: median relative error %.4f", p->app, rel[n / 2]);
        cr_expect_leq(large, n / 10, "%s: %zu of %zu epochs off by more than 5 %%", p->app, large,
                      n);
        free(rel);
        profile_destroy(p);
    }
}

Test(goodput_profiles, the_efficiency_falls_as_training_noise_grows)
{
    /* cifar10 at 32x its first batch: early epochs gain less than late ones (the noise scale
     * grows as training goes on), which is why an adaptive batch grows over a run */
    char err[256];
    struct profile *p = profile_load("cifar10", err, sizeof(err));
    cr_assert(p, "%s", err);
    const struct profile_validation *big = &p->validations[p->nvalidations - 1];
    double m0 = p->validations[0].global_bsz;
    struct batch_spec early = {.init_batch = m0, .grad_sqr = big->grad_sqr[1],
                               .grad_var = big->grad_var[1]};
    struct batch_spec late = {.init_batch = m0, .grad_sqr = big->grad_sqr[big->n - 1],
                              .grad_var = big->grad_var[big->n - 1]};
    cr_expect_lt(goodput_efficiency(&early, big->global_bsz),
                 goodput_efficiency(&late, big->global_bsz));
    profile_destroy(p);
}

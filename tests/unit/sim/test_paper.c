/* The paper's Table 3 reproduced with our core must keep the paper's shape:
 * Precompute best or tied (within 5%) in every column, Eight far behind it
 * under extreme contention and behind it under moderate, One far worst without
 * contention. The paper has Eight at twice Precompute under moderate contention
 * too; ours is not (docs/simulator.md says why), so that is not asserted.
 * (Where our figures differ from the paper's: docs/simulator.md.) */
#include <criterion/criterion.h>
#include <string.h>

#include "paper.h"

static const char *const names[] = {"precompute", "exploratory", "eight", "four", "two", "one"};
#define NP 6
#define NSEEDS 3

enum { EXTREME, MODERATE, NONE };

static double at(const double *h, int policy, int scenario)
{
    return h[policy * PAPER_NSCENARIOS + scenario];
}

Test(paper, table3_has_the_papers_shape, .timeout = 120)
{
    const struct sched_policy_ops *pol[NP];
    for (int i = 0; i < NP; i++) {
        pol[i] = sched_policy_find(names[i]);
        cr_assert_not_null(pol[i], "policy %s missing", names[i]);
    }
    /* The mean over three seeds, so that one lucky draw of arrivals decides nothing. */
    double h[NP * PAPER_NSCENARIOS] = {0}, one[NP * PAPER_NSCENARIOS];
    char err[256];
    for (uint64_t seed = 1; seed <= NSEEDS; seed++) {
        cr_assert_eq(paper_compute(pol, NP, seed, 1.0, one, err, sizeof(err)), 0, "%s", err);
        for (int i = 0; i < NP * PAPER_NSCENARIOS; i++)
            h[i] += one[i] / NSEEDS;
    }
    for (int s = 0; s < PAPER_NSCENARIOS; s++) {
        double pre = at(h, 0, s);
        cr_assert_gt(pre, 0.5, "%s: %f h", paper_scenario(s)->name, pre);
        for (int p = 1; p < NP; p++)
            cr_assert_leq(pre, 1.05 * at(h, p, s), "%s: precompute %.2f h, %s %.2f h",
                          paper_scenario(s)->name, pre, names[p], at(h, p, s));
    }
    /* The no-contention figure is the calibration point, 1.40 h. */
    cr_assert_float_eq(at(h, 0, NONE), 1.40, 0.2, "precompute none %.2f h", at(h, 0, NONE));
    cr_assert_geq(at(h, 2, EXTREME), 1.8 * at(h, 0, EXTREME), "eight extreme %.2f vs %.2f",
                  at(h, 2, EXTREME), at(h, 0, EXTREME));
    cr_assert_gt(at(h, 2, MODERATE), 1.08 * at(h, 0, MODERATE), "eight moderate %.2f vs %.2f",
                 at(h, 2, MODERATE), at(h, 0, MODERATE));
    for (int p = 0; p < NP - 1; p++)
        cr_assert_gt(at(h, 5, NONE), 1.5 * at(h, p, NONE), "one is far worst without contention");
    cr_assert_geq(at(h, 5, NONE), 3.0 * at(h, 0, NONE));
}

Test(paper, published_figures)
{
    cr_assert_float_eq(paper_published_h("precompute", 0), 7.63, 1e-9);
    cr_assert_float_eq(paper_published_h("one", 2), 6.37, 1e-9);
    cr_assert_lt(paper_published_h("optimus", 0), 0);
    cr_assert_str_eq(paper_scenario(1)->name, "moderate");
    cr_assert_eq(paper_scenario(0)->jobs, 206);
    cr_assert_null(paper_scenario(3));
}

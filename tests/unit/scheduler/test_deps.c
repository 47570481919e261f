/* deps: whether a job's dependencies are met, can still be met, and the reason (deps.h). */
#include <string.h>

#include "deps.h"
#include "sched_fixture.h"

static struct deps_target job(int64_t id, enum deps_when when, const char *state)
{
    int ok = !strcmp(state, "COMPLETED");
    int notok = !strcmp(state, "FAILED") || !strcmp(state, "CANCELLED");
    return (struct deps_target){id, 0, when, 1, ok, notok, state};
}

static struct deps_target array(int64_t id, enum deps_when when, int total, int ok, int notok)
{
    return (struct deps_target){id, 1, when, total, ok, notok, NULL};
}

/* Each dependency and the verdict it must get. */
static void expect_verdicts(const struct deps_target *t, const enum deps_verdict *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(deps_check(&t[i]), want[i], "case %zu", i);
}

Test(deps, a_job_ok_notok_and_any)
{
    const struct deps_target t[] = {
        job(12, DEPS_OK, "RUNNING"),     job(12, DEPS_OK, "COMPLETED"),
        job(12, DEPS_OK, "FAILED"),      job(12, DEPS_OK, "CANCELLED"),
        job(3, DEPS_NOTOK, "COMPLETED"), job(3, DEPS_NOTOK, "FAILED"),
        job(3, DEPS_NOTOK, "PENDING"),   job(3, DEPS_ANY, "SUSPENDED"),
        job(3, DEPS_ANY, "CANCELLED"),   job(3, DEPS_ANY, "COMPLETED"),
    };
    const enum deps_verdict want[] = {DEPS_WAIT, DEPS_MET,  DEPS_NEVER, DEPS_NEVER, DEPS_NEVER,
                                      DEPS_MET,  DEPS_WAIT, DEPS_WAIT,  DEPS_MET,   DEPS_MET};
    expect_verdicts(t, want, sizeof(want) / sizeof(want[0]));
}

/* An array waits for all its elements; ok is out of reach as soon as one did not complete;
 * notok waits for every element too, and is met when one failed. */
Test(deps, an_array_waits_for_all_its_elements)
{
    const struct deps_target t[] = {
        array(7, DEPS_OK, 4, 3, 0),    array(7, DEPS_OK, 4, 4, 0),    array(7, DEPS_OK, 4, 1, 1),
        array(7, DEPS_NOTOK, 4, 2, 1), array(7, DEPS_NOTOK, 4, 3, 1), array(7, DEPS_NOTOK, 4, 4, 0),
        array(7, DEPS_ANY, 4, 2, 2),
    };
    const enum deps_verdict want[] = {DEPS_WAIT, DEPS_MET,   DEPS_NEVER, DEPS_WAIT,
                                      DEPS_MET,  DEPS_NEVER, DEPS_MET};
    expect_verdicts(t, want, sizeof(want) / sizeof(want[0]));
}

Test(deps, jobs_that_are_gone_can_never_be_met)
{
    struct deps_target t = array(7, DEPS_ANY, 0, 0, 0);
    cr_assert_eq(deps_check(&t), DEPS_NEVER);
}

Test(deps, never_wins_over_wait_and_names_the_first)
{
    struct deps_target t[3] = {job(1, DEPS_OK, "COMPLETED"), job(2, DEPS_OK, "RUNNING"),
                               job(3, DEPS_OK, "FAILED")};
    size_t at = 99;
    cr_assert_eq(deps_check_all(t, 3, &at), DEPS_NEVER);
    cr_assert_eq(at, 2);
    cr_assert_eq(deps_check_all(t, 2, &at), DEPS_WAIT);
    cr_assert_eq(at, 1);
    cr_assert_eq(deps_check_all(t, 1, &at), DEPS_MET);
    cr_assert_eq(at, 1);
    cr_assert_eq(deps_check_all(NULL, 0, NULL), DEPS_MET);
}

Test(deps, the_reason_names_what_it_waits_for)
{
    struct deps_target t[3] = {job(12, DEPS_OK, "RUNNING"), job(4, DEPS_ANY, "COMPLETED"),
                               array(7, DEPS_OK, 8, 3, 0)};
    char buf[128];
    size_t n = deps_reason(t, 3, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "waiting for job 12, RUNNING; array 7, 3 of 8 ended");
    cr_assert_eq(n, strlen(buf));
    cr_assert_eq(deps_reason(&t[1], 1, 0, buf, sizeof(buf)), 0, "met: no reason");
    cr_assert_str_eq(buf, "");
}

Test(deps, the_reason_of_one_that_cannot_be_met)
{
    struct deps_target t[2] = {job(12, DEPS_OK, "RUNNING"), job(13, DEPS_OK, "FAILED")};
    char buf[128];
    deps_reason(t, 2, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "dependency on job 13 can no longer be met: it FAILED (after ok)");
    deps_reason(t, 2, 1, buf, sizeof(buf));
    cr_assert_str_eq(buf, "held: dependency on job 13 can no longer be met: it FAILED (after ok)");
    struct deps_target a = array(7, DEPS_NOTOK, 2, 2, 0);
    deps_reason(&a, 1, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf,
                     "dependency on array 7 can no longer be met: all 2 completed (after notok)");
}

Test(deps, a_short_buffer_is_cut_and_the_length_told)
{
    struct deps_target t = job(12, DEPS_OK, "RUNNING");
    char buf[8];
    size_t n = deps_reason(&t, 1, 0, buf, sizeof(buf));
    cr_assert_eq(n, strlen("waiting for job 12, RUNNING"));
    cr_assert_str_eq(buf, "waiting");
}

Test(deps, when_names)
{
    enum deps_when w = DEPS_OK;
    cr_assert_eq(deps_when_parse("notok", &w), 0);
    cr_assert_eq(w, DEPS_NOTOK);
    cr_assert_eq(deps_when_parse("never", &w), -1);
    cr_assert_eq(w, DEPS_NOTOK);
    cr_assert_str_eq(deps_when_name(DEPS_ANY), "any");
}

/* The job state machine: every legal move, and the refusal of every other one. */
#include <criterion/criterion.h>

#include "job_state.h"

Test(job_state, names_round_trip)
{
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        enum job_state back;
        cr_assert_not_null(job_state_name((enum job_state)s));
        cr_assert_eq(job_state_parse(job_state_name((enum job_state)s), &back), 0);
        cr_assert_eq((int)back, s);
    }
    enum job_state x;
    cr_assert_eq(job_state_parse("pending", &x), -1, "names are upper case");
    cr_assert_eq(job_state_parse("", &x), -1);
    cr_assert_eq(job_state_parse(NULL, &x), -1);
    cr_assert_null(job_state_name(JOB_STATE_COUNT));
}

Test(job_state, the_life_of_a_job)
{
    enum job_state s = JOB_PENDING;
    const enum job_event path[] = {JOB_EV_START,   JOB_EV_RUNNING, JOB_EV_SUSPEND,
                                   JOB_EV_RESUME,  JOB_EV_RESIZE,  JOB_EV_RUNNING,
                                   JOB_EV_MIGRATE, JOB_EV_RUNNING, JOB_EV_COMPLETE};
    const enum job_state want[] = {JOB_STARTING,  JOB_RUNNING,  JOB_SUSPENDED,
                                   JOB_RUNNING,   JOB_RESIZING, JOB_RUNNING,
                                   JOB_MIGRATING, JOB_RUNNING,  JOB_COMPLETED};
    for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
        cr_assert_eq(job_state_next(s, path[i], &s), 0, "step %zu", i);
        cr_assert_eq(s, want[i], "step %zu", i);
    }
    cr_assert(job_state_is_terminal(s));
}

Test(job_state, terminal_states_refuse_every_event)
{
    const enum job_state terminal[] = {JOB_COMPLETED, JOB_FAILED, JOB_CANCELLED};
    for (size_t i = 0; i < 3; i++) {
        for (int ev = 0; ev < JOB_EVENT_COUNT; ev++) {
            enum job_state to = JOB_PENDING;
            cr_assert_eq(job_state_next(terminal[i], (enum job_event)ev, &to), -1);
            cr_assert_eq(to, JOB_PENDING, "a refused move leaves *to alone");
        }
    }
}

Test(job_state, cancel_from_every_live_state)
{
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        enum job_state to;
        int rc = job_state_next((enum job_state)s, JOB_EV_CANCEL, &to);
        if (job_state_is_terminal((enum job_state)s)) {
            cr_assert_eq(rc, -1);
        } else {
            cr_assert_eq(rc, 0, "cancel from %s", job_state_name((enum job_state)s));
            cr_assert_eq(to, JOB_CANCELLED);
        }
    }
}

Test(job_state, illegal_moves_and_bad_values)
{
    enum job_state to;
    cr_assert_eq(job_state_next(JOB_PENDING, JOB_EV_COMPLETE, &to), -1);
    cr_assert_eq(job_state_next(JOB_PENDING, JOB_EV_FAIL, &to), -1);
    cr_assert_eq(job_state_next(JOB_PENDING, JOB_EV_REQUEUE, &to), -1);
    cr_assert_eq(job_state_next(JOB_SUSPENDED, JOB_EV_RESIZE, &to), -1);
    cr_assert_eq(job_state_next(JOB_STATE_COUNT, JOB_EV_CANCEL, &to), -1);
    cr_assert_eq(job_state_next(JOB_RUNNING, JOB_EVENT_COUNT, &to), -1);
    cr_assert_eq(job_state_next(JOB_RESIZING, JOB_EV_REQUEUE, &to), 0);
    cr_assert_eq(to, JOB_PENDING);
    cr_assert_str_eq(job_event_name(JOB_EV_CANCEL), "cancel");
}

/* pollux_apps: the Pollux applications as a suite fixture (pollux_apps.h). */
#include "pollux_apps.h"

#include <criterion/criterion.h>

struct pollux_app pollux_apps[PROFILE_NAPPS];

void pollux_apps_load(void)
{
    for (size_t k = 0; k < PROFILE_NAPPS; k++) {
        char err[256];
        cr_assert_eq(pollux_app_load(profile_app_name(k), &pollux_apps[k], err, sizeof(err)), 0,
                     "%s", err);
    }
}

void pollux_apps_free(void)
{
    for (size_t k = 0; k < PROFILE_NAPPS; k++)
        pollux_app_free(&pollux_apps[k]);
}

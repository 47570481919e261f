/* pollux_apps: the six Pollux applications loaded from ../shared/profiles once per suite, the
 * fixture of the suites that run the Pollux setting (test_pollux.c, test_pollux_estimate.c). */
#ifndef RINGMASTER_TEST_POLLUX_APPS_H
#define RINGMASTER_TEST_POLLUX_APPS_H

#include "pollux.h"

/* The applications, by profile_app_name() index; valid between the two calls below. */
extern struct pollux_app pollux_apps[PROFILE_NAPPS];

/* A suite's .init: loads every application (a failed load fails the test). */
void pollux_apps_load(void);

/* A suite's .fini: frees them. */
void pollux_apps_free(void);

#endif

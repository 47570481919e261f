/* settings_options: the scheduler's settings as ringmaster-sim run's options, by the core's
 * table: what-if's text of each value ("%.17g") parses back to the very value, within the
 * simulator's bounds, with the option's error text otherwise. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "settings.h"

Test(settings_options, what_if_values_round_trip)
{
    struct settings live, sim;
    settings_defaults(&live);
    settings_sim_defaults(&sim);
    int flags = 0;
    for (const struct settings_desc *d = settings_list(); d->name; d++) {
        if (!d->flag)
            continue;
        flags++;
        double values[] = {d->min, d->max, settings_seconds_of(d, &live),
                           d->min + (d->max - d->min) / 7};
        for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
            char text[40], err[256] = "";
            snprintf(text, sizeof(text), "%.17g", values[i]);
            cr_assert_eq(options_setting(d, text, &sim, err, sizeof(err)), 0, "%s %s: %s", d->flag,
                         text, err);
            cr_assert_eq(settings_seconds_of(d, &sim), values[i], "--%s %s", d->flag, text);
        }
    }
    cr_assert_eq(flags, 6); /* interval, min-resize-interval, resize-cost, quantum, max-wait,
                             * min-runtime */
}

Test(settings_options, bounds_and_errors)
{
    struct settings s, before;
    char err[256];
    settings_sim_defaults(&s);
    before = s;
    const struct settings_desc *iv = settings_find_flag("interval");
    cr_assert_eq(options_setting(iv, "0", &s, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "--interval: expected a number in 0.001..1e+09, got '0'");
    cr_assert_eq(options_setting(settings_find_flag("max-wait"), "-1", &s, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "--max-wait: expected a number in 0..1e+12, got '-1'");
    cr_assert_eq(options_setting(settings_find_flag("quantum"), "abc", &s, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "--quantum: expected a number in 1..1e+09, got 'abc'");
    cr_assert_eq(memcmp(&s, &before, sizeof(s)), 0, "a refused value changes nothing");
    cr_assert_eq(options_setting(settings_find_flag("max-wait"), "0", &s, err, sizeof(err)), 0);
    cr_assert_eq(s.max_wait_s, 0, "0: off, as the simulator always took it");
    cr_assert_eq(options_setting(settings_find("grace_s"), "5", &s, err, sizeof(err)), -1,
                 "a setting without an option of the simulator");
}

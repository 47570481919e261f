/* timefmt: the server's timestamps read back, and the human forms ringctl prints. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "timefmt.h"

static void utc(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
}

TestSuite(timefmt, .init = utc);

Test(timefmt, parses_the_servers_timestamps)
{
    time_t t;
    cr_assert_eq(timefmt_parse("2026-01-01T12:10:00.123456Z", &t), 0);
    cr_assert_eq((long long)t, 1767269400LL);
    cr_assert_eq(timefmt_parse("2026-01-01T12:10:00Z", &t), 0);
    cr_assert_eq((long long)t, 1767269400LL);
    cr_assert_eq(timefmt_parse("2026-01-01T12:10:00+00:00", &t), 0);
    cr_assert_eq(timefmt_parse(NULL, &t), -1);
    cr_assert_eq(timefmt_parse("", &t), -1);
    cr_assert_eq(timefmt_parse("2026-01-01 12:10:00", &t), -1);
    cr_assert_eq(timefmt_parse("2026-01-01T12:10:00.5", &t), -1, "no zone: not UTC");
}

Test(timefmt, near_times_are_relative_to_the_second)
{
    char b[64];
    time_t now = 1767269400;
    timefmt_when(now, now, b, sizeof(b));
    cr_assert_str_eq(b, "now");
    timefmt_when(now + 45, now, b, sizeof(b));
    cr_assert_str_eq(b, "in 45s");
    timefmt_when(now + 192, now, b, sizeof(b));
    cr_assert_str_eq(b, "in 3m12s");
    timefmt_when(now - 125, now, b, sizeof(b));
    cr_assert_str_eq(b, "2m05s ago");
    timefmt_when(now + 3599, now, b, sizeof(b));
    cr_assert_str_eq(b, "in 59m59s");
}

Test(timefmt, far_times_are_local_times)
{
    char b[64];
    time_t now = 1767269400; /* 2026-01-01 12:10:00 UTC */
    timefmt_when(now + 7200, now, b, sizeof(b));
    cr_assert_str_eq(b, "14:10:00");
    timefmt_when(now - 86400, now, b, sizeof(b));
    cr_assert_str_eq(b, "2025-12-31 12:10:00");
    cr_assert_str_eq(timefmt_when_text("2026-01-01T16:00:01Z", now, b, sizeof(b), "-"), "16:00:01");
    cr_assert_str_eq(timefmt_when_text(NULL, now, b, sizeof(b), "-"), "-");
}

Test(timefmt, elapsed_like_squeue)
{
    char b[64];
    timefmt_elapsed(0, b, sizeof(b));
    cr_assert_str_eq(b, "0:00");
    timefmt_elapsed(192, b, sizeof(b));
    cr_assert_str_eq(b, "3:12");
    timefmt_elapsed(3723, b, sizeof(b));
    cr_assert_str_eq(b, "1:02:03");
    timefmt_elapsed(93784, b, sizeof(b));
    cr_assert_str_eq(b, "1-02:03:04");
    timefmt_elapsed(-5, b, sizeof(b));
    cr_assert_str_eq(b, "0:00");
}

Test(timefmt, a_duration_to_go_for_people)
{
    char b[64];
    timefmt_about(45, b, sizeof(b));
    cr_assert_str_eq(b, "about 45 s");
    timefmt_about(540, b, sizeof(b));
    cr_assert_str_eq(b, "about 9 min");
    timefmt_about(3.5 * 3600, b, sizeof(b));
    cr_assert_str_eq(b, "about 3.5 h");
    timefmt_about(2.1 * 86400, b, sizeof(b));
    cr_assert_str_eq(b, "about 2.1 days");
    timefmt_about(0.2, b, sizeof(b));
    cr_assert_str_eq(b, "under a second");
    timefmt_about(-3, b, sizeof(b));
    cr_assert_str_eq(b, "under a second");
}

/* ringctl submit --deadline: local times, times with their zone, a day's end, +PERIOD. */
Test(timefmt, parses_a_time_a_person_gives)
{
    time_t t, now = 1796472000; /* 2026-12-05T12:00:00Z */
    cr_assert_eq(timefmt_parse_user("2026-12-05T18:00", now, &t), 0);
    cr_assert_eq((long long)t, 1796493600LL, "local (UTC here)");
    cr_assert_eq(timefmt_parse_user("2026-12-05 18:00:30", now, &t), 0);
    cr_assert_eq((long long)t, 1796493630LL);
    cr_assert_eq(timefmt_parse_user("2026-12-05T19:00+01:00", now, &t), 0);
    cr_assert_eq((long long)t, 1796493600LL, "its own zone");
    cr_assert_eq(timefmt_parse_user("2026-12-05T18:00:00Z", now, &t), 0);
    cr_assert_eq((long long)t, 1796493600LL);
    cr_assert_eq(timefmt_parse_user("2026-12-05", now, &t), 0);
    cr_assert_eq((long long)t, 1796515199LL, "the end of that day");
    cr_assert_eq(timefmt_parse_user("+6h", now, &t), 0);
    cr_assert_eq((long long)t, 1796493600LL);
    cr_assert_eq(timefmt_parse_user("+90m", now, &t), 0);
    cr_assert_eq((long long)t, now + 5400);
    setenv("TZ", "CET-1", 1);
    tzset();
    cr_assert_eq(timefmt_parse_user("2026-12-05T19:00", now, &t), 0);
    cr_assert_eq((long long)t, 1796493600LL, "local time east of UTC");
    utc();
    static const char *const bad[] = {"",
                                      "tomorrow",
                                      "2026-12-05T18",
                                      "+6",
                                      "+-1h",
                                      "2026-02-30T10:00",
                                      "2026-12-05T25:00",
                                      "2026-12-05T18:00+1",
                                      "2026-12-05T18:00Zx",
                                      "2026-12-05x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(timefmt_parse_user(bad[i], now, &t), -1, "accepted '%s'", bad[i]);
    cr_assert_eq(timefmt_parse_user(NULL, now, &t), -1);
}

Test(timefmt, forecasts_in_a_column)
{
    char b[32];
    time_t now = 1000000;
    timefmt_forecast(now + 180, now + 200, now, b, sizeof(b));
    cr_assert_str_eq(b, "in 3m", "a narrow band: sure");
    timefmt_forecast(now + 7800, now + 12000, now, b, sizeof(b));
    cr_assert_str_eq(b, "~2h10m", "a wide band: about");
    timefmt_forecast(now + 7800, now + 8000, now, b, sizeof(b));
    cr_assert_str_eq(b, "in 2h10m");
    timefmt_forecast(now + 45, -1, now, b, sizeof(b));
    cr_assert_str_eq(b, "~45s", "no P90: not sure");
    timefmt_forecast(now + 100000, now + 100000, now, b, sizeof(b));
    cr_assert_str_eq(b, "in 1d3h");
    timefmt_forecast(now - 5, now + 10, now, b, sizeof(b));
    cr_assert_str_eq(b, "now");
    timefmt_forecast(-1, -1, now, b, sizeof(b));
    cr_assert_str_eq(b, "-");
    timefmt_forecast_text("1970-01-12T13:49:40Z", "1970-01-12T13:50:00Z", now, b, sizeof(b));
    cr_assert_str_eq(b, "in 3m");
    timefmt_forecast_text(NULL, NULL, now, b, sizeof(b));
    cr_assert_str_eq(b, "-");
}

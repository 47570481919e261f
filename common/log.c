/* log: log_msg(), one line per event to stderr with a UTC timestamp, the level and the
 * program's name, written with one write(); the level from RINGMASTER_LOG. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static enum log_level min_level = LOG_INFO;
static int level_from_env_done;
static const char *ident = "ringmaster";

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    min_level = level;
    level_from_env_done = 1;
}

void log_set_ident(const char *name)
{
    ident = name;
}

static void level_from_env(void)
{
    const char *env = getenv("RINGMASTER_LOG");
    level_from_env_done = 1;
    if (!env)
        return;
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
        if (strcasecmp(env, level_names[i]) == 0)
            min_level = (enum log_level)i;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (!level_from_env_done)
        level_from_env();
    if (level < min_level)
        return;

    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, ident, level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

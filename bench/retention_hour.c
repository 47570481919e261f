/* ringmaster-retention-hour: what the database holds after hours of minibatch reports, with
 * the server's own retention (server/live/retention.c) bounding it; for `make
 * bench-retention` (bench/bench-retention.py, docs/benchmarks.md). A bench tool.
 *
 *   ringmaster-retention-hour --state-dir DIR [--seconds S] [--rows-per-s R] [--every S]
 *
 * Starts the embedded PostgreSQL under DIR (a ringmasterd state directory whose server is
 * stopped: its jobs table filled) and replays S simulated seconds (3,600) of reports at R
 * rows a second for every job of the table (2: bench-scale's 20 reports every 10 s at a
 * 0.5 s step), time-compressed: for each RETENTION_PERIOD_S (30 s) of simulated time, one
 * statement inserts that slice's rows of all jobs (the triggers that count and sum them run
 * as for the server's inserts), then one retention_pass() runs, as the server's retention
 * thread runs one every 30 s. So the thinning is neither more nor less frequent than in
 * the server; what the compression changes is autovacuum's time to run between the slices
 * (the sizes are printed before and after a VACUUM at the end). Prints, every --every
 * simulated seconds (600), the rows and bytes of job_metrics and its side tables, the
 * longest history and the jobs past the bound, and the real time each pass took; at the end,
 * the passes that thinned: their mean time and jobs. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "live/retention.h"
#include "pgcluster.h"
#include "store/db.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, PGconn *c)
{
    fprintf(stderr, "retention-hour: %s: %s\n", what, c ? PQerrorMessage(c) : "");
    exit(1);
}

/* One value of a one-row query, as text (static buffer). */
static const char *one(PGconn *c, const char *sql)
{
    static char out[256];
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        die(sql, c);
    snprintf(out, sizeof(out), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return out;
}

static void sizes(PGconn *c, const char *when, double sim_s, double pass_ms_max,
                  long long dropped)
{
    const char *q =
        "SELECT (SELECT count(*) FROM job_metrics) || ' ' ||"
        " pg_total_relation_size('job_metrics') || ' ' ||"
        " pg_total_relation_size('job_last_report') || ' ' ||"
        " pg_total_relation_size('job_metric_sums') || ' ' ||"
        " (SELECT COALESCE(max(rows), 0) FROM job_last_report) || ' ' ||"
        " (SELECT count(*) FROM job_last_report WHERE rows > " STR(RETENTION_ROWS_MAX) ") || ' ' ||"
        " COALESCE((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'job_metrics'),"
        " 0)";
    long long rows, mb, lr, sums, longest, over, dead;
    if (sscanf(one(c, q), "%lld %lld %lld %lld %lld %lld %lld", &rows, &mb, &lr, &sums, &longest,
               &over, &dead) != 7)
        die("sizes", c);
    printf("retention-hour: %s %6.0f s simulated: job_metrics %lld rows (%lld dead), %.1f MB;"
           " job_last_report %.1f MB, job_metric_sums %.1f MB; longest history %lld rows, %lld"
           " jobs past %d; rows thinned so far %lld; slowest pass %.0f ms\n",
           when, sim_s, rows, dead, (double)mb / 1e6, (double)lr / 1e6, (double)sums / 1e6,
           longest, over, RETENTION_ROWS_MAX, dropped, pass_ms_max);
    fflush(stdout);
}

static void usage(void)
{
    fprintf(stderr, "usage: ringmaster-retention-hour --state-dir DIR [--seconds S]"
                    " [--rows-per-s R] [--every S]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    double seconds = 3600, every = 600;
    int rate = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--state-dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows-per-s"))
            rate = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--every"))
            every = atof(argv[i + 1]);
        else
            usage();
    }
    if (!dir || argc % 2 == 0 || seconds <= 0 || rate < 1 || every <= 0)
        usage();
    char err[512];
    struct pgcluster *pg = pgcluster_create(dir, err, sizeof(err));
    if (!pg || pgcluster_start(pg, err, sizeof(err)) < 0) {
        fprintf(stderr, "retention-hour: %s\n", err);
        return 1;
    }
    PGconn *c = PQconnectdb(pgcluster_conninfo(pg));
    if (PQstatus(c) != CONNECTION_OK)
        die("connect", c);
    printf("retention-hour: %s jobs, %d reports a second each, %.0f s simulated\n",
           one(c, "SELECT count(*) FROM jobs"), rate, seconds);
    /* $1 the slice's first simulated second, $2 its length, $3 the rows a second, $4 the
     * simulated run's length: every job's reports of the slice, stamped at their simulated
     * time (the run ends now). */
    const char *insert =
        "INSERT INTO job_metrics (job_id, step, world_size, loss, samples, seconds, at)"
        " SELECT j.id, s.k, 1, 2.0 / (1 + 0.001 * s.k) + 0.1, 64, 1.0 / $3::int,"
        " now() - make_interval(secs => $4::float8 - s.k::float8 / $3::int)"
        " FROM jobs j, generate_series(($1::float8 * $3::int)::bigint,"
        " (($1::float8 + $2::float8) * $3::int)::bigint - 1) AS s(k)";
    double t_insert = 0, t_pass = 0, pass_max = 0, t_thin = 0, t0 = mono();
    long long dropped = 0, jobs = 0;
    int thinning = 0, jobs_max = 0, unfinished = 0;
    for (double t = 0; t < seconds; t += RETENTION_PERIOD_S) {
        char a[32], b[32], r[16], s[32];
        snprintf(a, sizeof(a), "%.0f", t);
        snprintf(b, sizeof(b), "%.0f",
                 t + RETENTION_PERIOD_S <= seconds ? RETENTION_PERIOD_S : seconds - t);
        snprintf(r, sizeof(r), "%d", rate);
        snprintf(s, sizeof(s), "%.0f", seconds);
        const char *p[] = {a, b, r, s};
        double t1 = mono();
        PGresult *res = PQexecParams(c, insert, 4, NULL, p, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            die("insert", c);
        PQclear(res);
        double t2 = mono();
        struct retention_result rr;
        if (retention_pass(c, RETENTION_PASS_BUDGET_S, NULL, &rr, err, sizeof(err)) < 0) {
            fprintf(stderr, "retention-hour: %s\n", err);
            return 1;
        }
        double t3 = mono();
        dropped += rr.rows_dropped;
        if (rr.jobs_thinned > 0) {
            thinning++;
            t_thin += t3 - t2;
            jobs += rr.jobs_thinned;
            jobs_max = rr.jobs_thinned > jobs_max ? rr.jobs_thinned : jobs_max;
        }
        unfinished += rr.unfinished;
        t_insert += t2 - t1;
        t_pass += t3 - t2;
        if ((t3 - t2) * 1e3 > pass_max)
            pass_max = (t3 - t2) * 1e3;
        double done = t + RETENTION_PERIOD_S;
        if (done >= seconds || (long long)(done / every) != (long long)(t / every)) {
            sizes(c, "at", done < seconds ? done : seconds, pass_max, dropped);
            pass_max = 0;
        }
    }
    printf("retention-hour: real time %.0f s: inserts %.0f s, retention passes %.0f s (%.0f ms"
           " a pass on average)\n",
           mono() - t0, t_insert, t_pass, 1e3 * t_pass / (seconds / RETENTION_PERIOD_S));
    printf("retention-hour: %d passes thinned: %.0f ms each on average, %.1f jobs (at most %d);"
           " %d passes left jobs past the bound to the next (budget %.0f s)\n",
           thinning, thinning ? 1e3 * t_thin / thinning : 0.0,
           thinning ? (double)jobs / thinning : 0.0, jobs_max, unfinished,
           RETENTION_PASS_BUDGET_S);
    PQclear(PQexec(c, "VACUUM ANALYZE job_metrics"));
    sizes(c, "after VACUUM,", seconds, 0, dropped);
    PQfinish(c);
    pgcluster_stop(pg);
    pgcluster_destroy(pg);
    return 0;
}

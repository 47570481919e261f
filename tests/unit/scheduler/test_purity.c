/* The core must stay pure: no I/O, threads, clock, SQL, HTTP or JSON. This test
 * reads every file of scheduler/ and fails on a forbidden include or call. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

static const char *const forbidden[] = {
    "<stdio.h>", "<pthread.h>", "<time.h>", "<sys/time.h>", "<unistd.h>", "<sys/socket.h>",
    "<libpq-fe.h>", "<microhttpd.h>", "<jansson.h>", "<curl/curl.h>", "<fcntl.h>",
    "clock_gettime", "gettimeofday", "fopen(", "printf(", "malloc_stats", "rand(", "srand(",
};

static void check_file(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++)
            cr_expect_null(strstr(line, forbidden[i]), "%s:%d uses %s", path, lineno,
                           forbidden[i]);
    }
    fclose(f);
}

Test(purity, scheduler_has_no_io_threads_clock_or_sql)
{
    DIR *d = opendir("scheduler");
    cr_assert_not_null(d, "run from the repository root");
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 3 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h")))
            continue;
        char path[512];
        snprintf(path, sizeof(path), "scheduler/%s", e->d_name);
        check_file(path);
        files++;
    }
    closedir(d);
    cr_assert_gt(files, 0);
}

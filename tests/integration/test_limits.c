/* Slow and hostile clients (docs/api.md, "Limits"): slowloris connections from several
 * addresses leave room for everyone else, a request that trickles in is cut at its
 * deadline, over-long targets and headers get problem documents. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(limits, .init = hx_setup, .fini = hx_teardown, .timeout = 120);

#define SLOW_CONNS 1000
#define SLOW_ADDRS 4 /* 127.0.0.2 .. 127.0.0.5 */
#define MEASURE_S 12.0
#define TICK_US 100000

/* A connection from 127.0.0.(2 + k % SLOW_ADDRS) that sent the start of a request; -1 when
 * it could not be made. */
static int slow_connect(int k)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {0, 200000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in src = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl(0x7f000002u + (unsigned)(k % SLOW_ADDRS));
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)hx.port)};
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char start[] = "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
        connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 ||
        send(fd, start, sizeof(start) - 1, MSG_NOSIGNAL) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

struct attack {
    int fds[SLOW_CONNS];
    atomic_int stop;
    atomic_int ramped; /* every slot was tried once */
    atomic_long made, cut;
};

/* Closes the connections the server ended (readable: end of stream or an answer). */
static void reap(struct attack *a, struct pollfd *p)
{
    int n = 0;
    for (int i = 0; i < SLOW_CONNS; i++)
        p[i] = (struct pollfd){.fd = a->fds[i], .events = POLLIN};
    n = poll(p, SLOW_CONNS, 0);
    for (int i = 0; n > 0 && i < SLOW_CONNS; i++) {
        if (a->fds[i] >= 0 && p[i].revents) {
            close(a->fds[i]);
            a->fds[i] = -1;
            atomic_fetch_add(&a->cut, 1);
        }
    }
}

/* Keeps SLOW_CONNS connections open, each sending one more header byte every 5 s, and
 * reconnects (up to 200 a tick) those the server closes. */
static void *attack_main(void *arg)
{
    struct attack *a = arg;
    struct pollfd *p = calloc(SLOW_CONNS, sizeof(*p));
    for (long tick = 0; !atomic_load(&a->stop); tick++) {
        int made = 0;
        for (int i = 0; i < SLOW_CONNS && made < 200; i++) {
            if (a->fds[i] < 0) {
                a->fds[i] = slow_connect(i);
                made++;
            } else if ((tick + i) % 50 == 0) {
                send(a->fds[i], "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            }
        }
        atomic_fetch_add(&a->made, made);
        if (made == 0 || tick * 200 >= SLOW_CONNS)
            atomic_store(&a->ramped, 1);
        reap(a, p);
        usleep(TICK_US);
    }
    for (int i = 0; i < SLOW_CONNS; i++)
        if (a->fds[i] >= 0)
            close(a->fds[i]);
    free(p);
    return NULL;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* One GET of health from 127.0.0.1 on a new connection: milliseconds, 1000 on failure. */
static double timed_health(void)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/health", hx.port);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    double t0 = hx_now();
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return rc == CURLE_OK && status == 200 ? (hx_now() - t0) * 1e3 : 1000.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(limits, slowloris_from_four_addresses_leaves_room_for_others)
{
    static struct attack a;
    for (int i = 0; i < SLOW_CONNS; i++)
        a.fds[i] = -1;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, attack_main, &a), 0);
    for (double t0 = hx_now(); !atomic_load(&a.ramped) && hx_now() - t0 < 10;)
        usleep(50000);
    usleep(500000);
    static double ms[2000];
    int n = 0, failed = 0;
    for (double t0 = hx_now(); hx_now() - t0 < MEASURE_S && n < 2000; n++) {
        ms[n] = timed_health();
        failed += ms[n] >= 1000.0;
        usleep(20000);
    }
    atomic_store(&a.stop, 1);
    pthread_join(th, NULL);
    qsort(ms, (size_t)n, sizeof(ms[0]), cmp_double);
    double p50 = ms[n / 2], p99 = ms[(n * 99 + 99) / 100 - 1];
    cr_log_info("slowloris: %ld connections made, %ld cut by the server; %d requests from "
                "127.0.0.1: p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d failed",
                atomic_load(&a.made), atomic_load(&a.cut), n, p50, p99, ms[n - 1], failed);
    cr_assert_geq(atomic_load(&a.made), SLOW_CONNS, "the attack opened its connections");
    cr_assert_eq(failed, 0, "%d of %d requests failed", failed, n);
    cr_assert_leq(p99, 100.0, "p99 %.1f ms over 100 ms", p99);
    double late = hx_metric("ringmaster_http_connections_cut_total{reason=\"deadline\"}");
    double room = hx_metric("ringmaster_http_connections_cut_total{reason=\"room\"}");
    cr_log_info("slowloris: the server counted %.0f cut at their deadline, %.0f for room", late,
                room);
    cr_assert_gt(late + room, 0);
    cr_assert_geq(hx_metric("ringmaster_http_connections"), 1);
    /* the scrape's own request is being handled, not waiting; nothing else is sent now */
    cr_assert_eq(hx_metric("ringmaster_http_requests_waiting"), 0);
    hx_finish();
}

Test(limits, a_request_trickling_in_is_cut_at_its_header_deadline)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)hx.port)};
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
    static const char start[] = "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    double t0 = hx_now();
    cr_assert_gt(send(fd, start, sizeof(start) - 1, MSG_NOSIGNAL), 0);
    /* one byte a second: never idle, so only a deadline on the whole header ends it */
    int closed = 0;
    while (!closed && hx_now() - t0 < 16) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 1000) > 0) {
            char buf[256];
            closed = recv(fd, buf, sizeof(buf), 0) <= 0;
        } else if (send(fd, "x", 1, MSG_NOSIGNAL) < 0) {
            closed = 1;
        }
    }
    double took = hx_now() - t0;
    close(fd);
    cr_assert(closed, "still open after %.1f s", took);
    cr_assert(took >= 9.5 && took <= 12.0, "cut after %.1f s, want the 10 s deadline", took);
    hx_finish();
}

/* Just over our bounds and far over them (the hostile-input corpus's 100 KB path, query and
 * header): each a problem document, not libmicrohttpd's HTML page. */
Test(limits, over_long_target_and_header_are_problem_documents)
{
    const size_t sizes[] = {9000, 100000};
    for (size_t k = 0; k < 2; k++) {
        size_t n = sizes[k];
        char *path = malloc(n + 32);
        memcpy(path, "/api/v1/jobs/", 13);
        memset(path + 13, 'a', n);
        path[13 + n] = '\0';
        hx_expect_problem(hx_json("GET", path, hx.admin, NULL), 414, NULL);
        memcpy(path, "/api/v1/jobs?q=", 15);
        memset(path + 15, 'b', n);
        path[15 + n] = '\0';
        hx_expect_problem(hx_json("GET", path, hx.admin, NULL), 414, NULL);
        size_t hn = n < 17000 ? 17000 : n; /* over our 16 KiB bound */
        char *header = malloc(hn + 32);
        snprintf(header, hn + 32, "X-Big: %0*d", (int)hn, 0);
        hx_expect_problem(hx_call("GET", "/api/v1/health", NULL, NULL, NULL, 0, header), 431,
                          NULL);
        free(header);
        free(path);
    }
    /* a request within the bounds is answered as before */
    json_decref(hx_expect_json(hx_json("GET", "/api/v1/health", NULL, NULL), 200));
    hx_finish();
}

/* The server's resident memory in KiB, from /proc. */
static long server_rss_kib(void)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)hx.pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

/* n requests of a mix (health, a job list with a token, a 404, a dashboard file, a 401),
 * kept alive on one connection and on a new one every 50th request. */
static void request_mix(long n)
{
    static const char *const paths[] = {"/api/v1/health", "/api/v1/jobs?limit=5", "/api/v1/nowhere",
                                        "/", "/api/v1/whoami"};
    char url[128], authz[160];
    snprintf(authz, sizeof(authz), "Authorization: Bearer %s", hx.admin);
    struct curl_slist *h = curl_slist_append(NULL, authz);
    CURL *c = NULL;
    for (long i = 0; i < n; i++) {
        if (i % 50 == 0) {
            curl_easy_cleanup(c);
            c = curl_easy_init();
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
            curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        }
        int k = (int)(i % 5);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", hx.port, paths[k]);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, k == 1 ? h : NULL);
        long status = 0;
        cr_assert_eq(curl_easy_perform(c), CURLE_OK, "request %ld", i);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        cr_assert_eq(status, k == 2 ? 404 : k == 4 ? 401 : 200, "%s: %ld", paths[k], status);
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
}

/* 30,000 requests keep the suite short on a shared machine; RINGMASTER_SOAK_REQUESTS=100000
 * gives the figure of docs/benchmarks.md. Under ASan, whose quarantine and shadow memory
 * make RSS meaningless, the figures are only logged and no bound on RSS is asserted: what the
 * soak checks there (every answer's status, no finding, a clean exit: ASan's leak check
 * reports a leak of one request as well as of thousands) 5,000 requests of the same mix
 * check as well as 30,000, which took 14-56 s of the suite under load. */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_DEFAULT 5000
#else
#define SOAK_DEFAULT 30000
#endif
static long soak_requests(void)
{
    const char *env = getenv("RINGMASTER_SOAK_REQUESTS");
    long n = env ? atol(env) : SOAK_DEFAULT;
    return n >= 1000 ? n : 1000;
}

Test(limits, memory_stays_flat_over_many_requests, .timeout = 600)
{
    const long SOAK_REQUESTS = soak_requests();
    long warm = SOAK_REQUESTS / 10;
    double t0 = hx_now();
    request_mix(warm);
    long before = server_rss_kib();
    request_mix(SOAK_REQUESTS - warm);
    long after = server_rss_kib();
    double took = hx_now() - t0;
    cr_log_info("soak: %ld requests in %.1f s (%.0f/s); RSS %ld KiB after %ld, %ld KiB after "
                "%ld (%+.1f%%)",
                SOAK_REQUESTS, took, (double)SOAK_REQUESTS / took, before, warm, after,
                SOAK_REQUESTS, 100.0 * (double)(after - before) / (double)before);
    cr_assert_gt(before, 0);
#if !defined(__SANITIZE_ADDRESS__)
    cr_assert_leq(after, before + before / 10, "RSS grew from %ld to %ld KiB", before, after);
#endif
    hx_finish();
}

/* A connection from 127.0.0.1 that sent a whole request (the caller reads or closes it). */
static int send_request(const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)hx.port)};
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
    cr_assert_eq(send(fd, request, strlen(request), MSG_NOSIGNAL), (ssize_t)strlen(request));
    return fd;
}

Test(limits, past_the_connection_limit_requests_get_503_with_retry_after)
{
    cr_assert_eq(hx_stop_server(SIGTERM, 10), 0);
    hx_server_args[0] = "--max-connections";
    hx_server_args[1] = "16";
    hx_start_server();
    json_t *node = hx_expect_json(
        hx_json("POST", "/api/v1/nodes", hx.admin,
                "{\"name\":\"n1\",\"cpus\":4,\"memory_bytes\":1073741824,\"gpus\":[]}"),
        201);
    long long id = json_integer_value(json_object_get(node, "id"));
    json_decref(node);
    /* 17 long-polls hold 17 connections busy (a handler has them: no deadline, no eviction) */
    char req[512];
    snprintf(req, sizeof(req),
             "GET /api/v1/nodes/%lld/actions?wait=5 HTTP/1.1\r\nHost: x\r\n"
             "Authorization: Bearer %s\r\n\r\n",
             id, hx.admin);
    int fds[17];
    for (int i = 0; i < 17; i++) {
        fds[i] = send_request(req);
        usleep(100000);
    }
    struct hx_resp *r = hx_json("GET", "/api/v1/health", NULL, NULL);
    char retry[16];
    cr_assert_not_null(hx_header(r, "Retry-After", retry, sizeof(retry)), "%ld %s", r->status,
                       r->body);
    cr_assert_str_eq(retry, "1");
    hx_expect_problem(r, 503, NULL);
    for (int i = 0; i < 17; i++)
        close(fds[i]);
    /* once the long-polls end, there is room again */
    long status = 0;
    for (double t0 = hx_now(); status != 200 && hx_now() - t0 < 15; usleep(200000)) {
        r = hx_json("GET", "/api/v1/health", NULL, NULL);
        status = r->status;
        hx_free(r);
    }
    cr_assert_eq(status, 200);
    hx_finish();
}

/* Seconds until the server ends fd's connection while fd sends a byte every half second
 * (so never idle); 0 when it is still open after limit_s. */
static double seconds_until_cut(int fd, double limit_s)
{
    double t0 = hx_now();
    while (hx_now() - t0 < limit_s) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char buf[512];
        if (poll(&p, 1, 500) > 0 && recv(fd, buf, sizeof(buf), 0) <= 0)
            return hx_now() - t0;
        if (send(fd, "x", 1, MSG_NOSIGNAL) < 0)
            return hx_now() - t0;
    }
    return 0;
}

Test(limits, a_body_trickling_in_is_cut_at_its_body_deadline)
{
    cr_assert_eq(hx_stop_server(SIGTERM, 10), 0);
    hx_server_args[0] = "--body-timeout";
    hx_server_args[1] = "3";
    hx_start_server();
    char req[512];
    snprintf(req, sizeof(req),
             "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
             hx.admin);
    int fd = send_request(req);
    double took = seconds_until_cut(fd, 10);
    close(fd);
    cr_assert(took >= 2.5 && took <= 5.0, "cut after %.1f s, want the 3 s body deadline", took);
    /* a body that arrives in time is taken */
    hx_submit(hx.admin, "in-time", 1);
    hx_finish();
}

/* http_req_retry_on and http_wake: a suspended request waiting on a key is called again when
 * that key is woken, also when the wake-up came while its handler still ran (the long-poll's
 * race between its look and its suspension), and not for another key. A real front door on a
 * loopback port, spoken to through a plain socket. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/http.h"

#define KEY 7

/* What the handler does on its first call (it answers on the second). */
enum first { WAKE_OWN_KEY_MEANWHILE, WAKE_OTHER_KEY_MEANWHILE, JUST_WAIT };

static struct http_server *server;
static enum first first;
static double retry_s;
static atomic_int calls;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void handler(void *arg, struct http_req *req)
{
    (void)arg;
    if (atomic_fetch_add(&calls, 1) > 0) {
        http_req_respond(req, 200, "text/plain", "ok", 2, NULL);
        return;
    }
    if (first == WAKE_OWN_KEY_MEANWHILE) /* news after the look, before the suspension */
        http_wake(server, KEY);
    else if (first == WAKE_OTHER_KEY_MEANWHILE)
        http_wake(server, KEY + 1);
    http_req_retry_on(req, retry_s, KEY);
}

static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int port;

static void start(enum first f, double retry)
{
    char listen[32], err[256];
    first = f;
    retry_s = retry;
    atomic_store(&calls, 0);
    port = free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    struct http_config cfg = {.listen = listen,
                              .threads = 2,
                              .conn_limit = 64,
                              .per_ip_limit = 64,
                              .timeout_s = 30,
                              .header_s = 10,
                              .body_s = 10,
                              .max_target = 1024,
                              .max_header = 4096,
                              .max_body = 1024};
    server = http_create(&cfg, handler, NULL, err, sizeof(err));
    cr_assert_not_null(server, "%s", err);
}

/* One GET; returns the seconds until its answer's status line came (-1: none within 5 s). */
static double get(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {.tv_sec = 5};
    const char req[] = "GET /poll HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char buf[256];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    double t0 = now_s();
    cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    double took = now_s() - t0;
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
    return took;
}

static void *wake_later(void *arg)
{
    (void)arg;
    usleep(200000);
    http_wake(server, KEY);
    return NULL;
}

static void stop(void)
{
    http_destroy(server);
    server = NULL;
}

TestSuite(http_wake, .fini = stop, .timeout = 30);

Test(http_wake, a_wake_of_its_key_resumes_a_suspended_request)
{
    start(JUST_WAIT, 10);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, wake_later, NULL), 0);
    double took = get();
    pthread_join(t, NULL);
    cr_assert(took >= 0 && took < 2, "answered on the wake-up, not after 10 s (%.2f s)", took);
    cr_assert_eq(atomic_load(&calls), 2);
}

Test(http_wake, a_wake_while_the_handler_ran_is_not_lost)
{
    start(WAKE_OWN_KEY_MEANWHILE, 10);
    double took = get();
    cr_assert(took >= 0 && took < 2, "called again at once, not after 10 s (%.2f s)", took);
    cr_assert_eq(atomic_load(&calls), 2);
}

Test(http_wake, a_wake_of_another_key_leaves_it_waiting)
{
    start(WAKE_OTHER_KEY_MEANWHILE, 0.5);
    double took = get();
    cr_assert(took >= 0.45, "waited its 0.5 s (%.2f s)", took);
    cr_assert_eq(atomic_load(&calls), 2);
}

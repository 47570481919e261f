#include "sched_wake.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int pending;
static int stopped;

void sched_wake_signal(void)
{
    pthread_mutex_lock(&lock);
    pending = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static struct timespec deadline_after(double s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)(s * 1e9) + ts.tv_nsec;
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

int sched_wake_wait(double timeout_s)
{
    struct timespec until = deadline_after(timeout_s > 0 ? timeout_s : 0);
    int rc = 0;
    pthread_mutex_lock(&lock);
    while (!pending && !stopped && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&cond, &lock, &until);
    int out = stopped ? -1 : pending ? 1 : 0;
    pending = 0;
    pthread_mutex_unlock(&lock);
    return out;
}

void sched_wake_stop(void)
{
    pthread_mutex_lock(&lock);
    stopped = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

void sched_wake_reset(void)
{
    pthread_mutex_lock(&lock);
    stopped = 0;
    pthread_mutex_unlock(&lock);
}

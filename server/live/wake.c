/* wake: the scheduler thread's wake-up channel (wake.h): one process-wide eventfd written once
 * per round's worth of signals, its wait (poll() with the LISTEN socket and a timeout), stop. */
#include "wake.h"

#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

static atomic_int wake_fd = -1;
static atomic_int stopped;
/* A signal was written and the round that answers it has not begun: later signals are that
 * round's too, and write nothing. In a burst of submissions (each signals) this spares a
 * write and a wake-up of the scheduler thread per submission while the round settles. */
static atomic_int pending;

static void write_signal(void)
{
    int fd = atomic_load(&wake_fd);
    uint64_t one = 1;
    if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is full, a wake-up is pending anyway */
    }
}

void live_wake_signal(void)
{
    if (!atomic_exchange(&pending, 1))
        write_signal();
}

void live_wake_rearm(void)
{
    atomic_store(&pending, 0);
}

int live_wake_open(void)
{
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
        return -1;
    atomic_store(&stopped, 0);
    atomic_store(&pending, 0);
    atomic_store(&wake_fd, fd);
    return 0;
}

int live_wake_wait(double timeout_s, int fd)
{
    struct pollfd p[2] = {{.fd = atomic_load(&wake_fd), .events = POLLIN},
                          {.fd = fd, .events = POLLIN}};
    int ms = timeout_s > 0 ? (int)(timeout_s * 1000 + 0.5) : 0;
    if (atomic_load(&stopped))
        return -1;
    int n = poll(p, fd >= 0 ? 2 : 1, ms);
    if (atomic_load(&stopped))
        return -1;
    if (n > 0 && (p[0].revents & POLLIN)) {
        uint64_t count;
        if (read(p[0].fd, &count, sizeof(count)) < 0) {
            /* EAGAIN: another reader took it; still a signal */
        }
        return 1;
    }
    return n > 0 && fd >= 0 && p[1].revents ? 2 : 0;
}

void live_wake_stop(void)
{
    atomic_store(&stopped, 1);
    write_signal(); /* even while a signal is pending: that one may have been read */
}

void live_wake_close(void)
{
    int fd = atomic_exchange(&wake_fd, -1);
    if (fd >= 0)
        close(fd);
}

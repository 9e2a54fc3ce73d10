/* The forwarding bench's sender: frames offered at a paced rate with sendmmsg(2), the
 * pacing in C (bench/sender.py builds this file at run time and calls blast() through
 * ctypes from a thread of its own; a Python pacing loop topped out near 60k frames/s). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

struct progress {            /* read by Python while blast() runs */
    volatile uint64_t sent;     /* frames the kernel took */
    volatile uint64_t refused;  /* calls refused for a full queue (ENOBUFS, EAGAIN) */
    volatile uint64_t cpu_ns;   /* CPU time of the sending thread, all blast() calls */
    volatile int stop;          /* set by Python: return at once */
};

static double now(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pause_s(double s)
{
    struct timespec t = {0, (long)(s * 1e9)};
    nanosleep(&t, NULL);
}

/* Offer `rate` frames/s for `seconds` on the packet socket `fd`: message headers msgs[0 ..
 * n + batch) hold a ring of n frames repeated (a batch of up to `batch` starts anywhere in
 * the ring without wrapping). Behind schedule it sends back to back, batch after batch;
 * ahead, it sleeps until the next frame is due (at most 200 us). 0, or -errno on an error
 * other than a full queue. */
int blast(int fd, struct mmsghdr *msgs, unsigned n, unsigned batch, double rate, double seconds,
          struct progress *p)
{
    double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    uint64_t base = p->sent;
    int rc = 0;
    while (!p->stop) {
        double el = now(CLOCK_MONOTONIC) - t0;
        if (el >= seconds)
            break;
        int64_t due = (int64_t)(rate * el) - (int64_t)(p->sent - base);
        if (due <= 0) {
            double wait = (double)(1 - due) / rate;
            pause_s(wait < 0.0002 ? wait : 0.0002);
            continue;
        }
        unsigned k = due > (int64_t)batch ? batch : (unsigned)due;
        int got = sendmmsg(fd, msgs + p->sent % n, k, MSG_DONTWAIT);
        if (got < 0) {
            if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
                rc = -errno;
                break;
            }
            p->refused++;
            pause_s(0.00002);
            continue;
        }
        p->sent += (uint64_t)got;
    }
    p->cpu_ns += (uint64_t)((now(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e9);
    return rc;
}

// The load governor behind threads_for: one thread while this thread waits for a core.
#include "core/detail/parallel.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace attograd::detail {
namespace {

using Clock = std::chrono::steady_clock;

// How often the run-queue wait is read (~3 µs a read), the share of wall time spent waiting
// for a core above which the cores count as contended, and how long one thread is kept then
// (doubling while each probe finds them contended again).
constexpr auto kSampleEvery = std::chrono::milliseconds(5);
constexpr double kContendedShare = 0.10;
constexpr int kContendedSamples = 2;
constexpr auto kFirstBackoff = std::chrono::milliseconds(200);
constexpr auto kMaxBackoff = std::chrono::milliseconds(6400);

// Nanoseconds the calling thread has spent runnable but waiting for a CPU (the second field of
// /proc/thread-self/schedstat, Linux's sched_info), or -1 when the kernel does not say.
std::int64_t run_queue_wait_ns() {
    const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[128];
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) return -1;
    text[n] = '\0';
    unsigned long long on_cpu = 0, waited = 0;
    if (std::sscanf(text, "%llu %llu", &on_cpu, &waited) != 2) return -1;
    return static_cast<std::int64_t>(waited);
}

// ATTOGRAD_LOAD_GOVERNOR=0 turns the governor off (every region on all threads, as before it
// existed): for measurements such as bench_threads_under_load.
bool governor_wanted() {
    const char* value = std::getenv("ATTOGRAD_LOAD_GOVERNOR");
    return value == nullptr || std::strcmp(value, "0") != 0;
}

// One per calling thread: each measures its own wait.
struct Governor {
    bool enabled = governor_wanted();  // false too when the kernel gives no schedstat
    bool single = false;               // one thread until `until`
    Clock::time_point sampled{}, until{};
    std::int64_t waited = -1;   // run-queue wait at `sampled`
    int contended_samples = 0;  // consecutive samples over kContendedShare
    Clock::duration backoff = kFirstBackoff;
};

}  // namespace

int available_threads() {
    const int max = omp_get_max_threads();
    if (max <= 1) return max;
    thread_local Governor g;
    if (!g.enabled) return max;
    const auto now = Clock::now();
    if (g.single) {
        if (now < g.until) return 1;
        g.single = false;  // probe: all threads again, measured from now
        g.sampled = now;
        g.waited = run_queue_wait_ns();
        return max;
    }
    if (g.waited >= 0 && now - g.sampled < kSampleEvery) return max;
    const std::int64_t waited = run_queue_wait_ns();
    if (waited < 0) {
        g.enabled = false;
        return max;
    }
    const bool contended =
        g.waited >= 0 &&
        static_cast<double>(waited - g.waited) >
            kContendedShare *
                static_cast<double>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now - g.sampled).count());
    g.sampled = now;
    g.waited = waited;
    if (!contended) {
        g.contended_samples = 0;
        g.backoff = kFirstBackoff;
        return max;
    }
    // One sample over the share is not yet contention: on an idle machine a daemon waking on one
    // of the cores the two threads hold makes the training thread wait ~0.5 ms now and then,
    // and one thread for the next 200 ms cost the large training step 8 % (median 13.2 against
    // 12.2 ms). A busy process beside us makes every sample wait ~30-50 %.
    if (++g.contended_samples < kContendedSamples) return max;
    g.contended_samples = 0;
    g.single = true;
    g.until = now + g.backoff;
    g.backoff = std::min<Clock::duration>(2 * g.backoff, kMaxBackoff);
    return 1;
}

}  // namespace attograd::detail

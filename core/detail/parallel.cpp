// The costs behind threads_for: the machine's fork/join round trip and element visit, measured
// once, and the load governor (one thread while the calling thread waits for a core).
#include "core/detail/parallel.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace attograd::detail {
namespace {

using Clock = std::chrono::steady_clock;

// libgomp's thread team does not survive fork(): a parallel region in the child of a process that
// has run one waits forever for workers that were never copied. A forked child therefore runs
// every op on its own thread (an exec'd program is a new process and splits again).
std::atomic<bool> in_forked_child{false};
[[maybe_unused]] const bool fork_handler_registered = [] {
    return ::pthread_atfork(nullptr, nullptr,
                            [] { in_forked_child.store(true, std::memory_order_relaxed); }) == 0;
}();

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

// ATTOGRAD_LOAD_GOVERNOR=0 turns the governor off (every region on all threads): for
// measurements such as bench_threads_under_load.
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

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// The median of `values` (the upper one of an even count).
double median(std::vector<double> values) {
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2),
                     values.end());
    return values[values.size() / 2];
}

// Median wall nanoseconds of a region on `threads` threads whose every thread adds to one
// counter (an empty region may be compiled away), after warm-up regions that start the team;
// stops after the first region that ends past `deadline` (the median of those timed, or that
// region's time when it was a warm-up).
double fork_join_ns(int threads, Clock::time_point deadline) {
    constexpr int kWarmUp = 8, kTimed = 31;
    std::atomic<int> arrivals{0};
    std::vector<double> times;
    for (int i = 0; i < kWarmUp + kTimed; ++i) {
        const auto start = Clock::now();
#pragma omp parallel num_threads(threads)
        arrivals.fetch_add(1, std::memory_order_relaxed);
        const double ns = 1e9 * seconds_since(start);
        if (i >= kWarmUp) times.push_back(ns);
        if (Clock::now() > deadline) return times.empty() ? ns : median(times);
    }
    return median(times);
}

// One pass of y = 0.999 y + x over [begin, end): the commonest loop the thresholds guard.
void visit(float* y, const float* x, std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) y[i] = 0.999f * y[i] + x[i];
}

// Best-of-kReps nanoseconds of one pass over n floats on the calling thread, its arrays warm in
// its own cache, and of the same pass split over `threads` threads from there (as an op's input
// usually sits in the cache of the thread that made it). The best of several keeps other
// processes' moments out: sustained load is the governor's to answer.
// Stops after the first pass that ends past `deadline`.
std::pair<double, double> serial_and_split_ns(std::int64_t n, int threads, Clock::time_point deadline) {
    // Nine passes up to the nominal split point, fewer above it (at least three): the largest
    // sizes leave the core's caches and take most of the time.
    const int kReps = static_cast<int>(std::clamp<std::int64_t>(9 * 2 * kMinParallelWork / n, 3, 9));
    std::vector<float> x(static_cast<std::size_t>(n), 1.0f), y(x.size(), 0.5f);
    double serial = 1e300, split = 1e300;
    for (int rep = 0; rep < kReps; ++rep) {
        visit(y.data(), x.data(), 0, n);  // warm on this thread
        auto start = Clock::now();
        visit(y.data(), x.data(), 0, n);
        serial = std::min(serial, 1e9 * seconds_since(start));
        start = Clock::now();
#pragma omp parallel num_threads(threads)
        {
            const std::int64_t t = omp_get_thread_num(), share = (n + threads - 1) / threads;
            visit(y.data(), x.data(), std::min(n, t * share), std::min(n, (t + 1) * share));
        }
        split = std::min(split, 1e9 * seconds_since(start));
        if (Clock::now() > deadline) break;
    }
    return {serial, split};
}

SplitCost measure_split_cost() {
    SplitCost cost;
    cost.threads = omp_get_max_threads();
    if (cost.threads <= 1) return cost;  // nothing is ever split
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(kMaxMeasureSeconds));
    cost.fork_join_ns = fork_join_ns(cost.threads, deadline);
    if (Clock::now() > deadline) {  // contended now: the nominal thresholds, and the governor
        cost.cut_short = true;
        return cost;
    }
    // The smallest size from which every measured size runs at most kSplitGain of its one-thread
    // time when split. Sizes from kMinScale to kMaxScale times the nominal split point.
    std::int64_t break_even = 0;
    const auto nominal = static_cast<double>(2 * kMinParallelWork);
    for (auto n = static_cast<std::int64_t>(kMinScale * nominal);
         n <= static_cast<std::int64_t>(kMaxScale * nominal); n *= 2) {
        const auto [serial, split] = serial_and_split_ns(n, cost.threads, deadline);
        if (n == static_cast<std::int64_t>(kMinScale * nominal))
            cost.visit_ns = serial / static_cast<double>(n);
        if (split > kSplitGain * serial)
            break_even = 0;
        else if (break_even == 0)
            break_even = n;
        if (Clock::now() > deadline) {  // contended now: the sizes not reached count as not paying
            if (n < static_cast<std::int64_t>(kMaxScale * nominal)) {
                cost.cut_short = true;
                break_even = 0;
            }
            break;
        }
    }
    cost.break_even = break_even;
    // No paying size is no reason to split less: a region's cost grows the longer its workers
    // have slept, so on a machine where no loop split pays, fewer regions (products only) made
    // the small training step slower than the nominal thresholds did (bench/README.md, "Two
    // threads against one").
    cost.scale =
        break_even == 0 ? 1.0 : std::clamp(static_cast<double>(break_even) / nominal, kMinScale, kMaxScale);
    return cost;
}

}  // namespace

const SplitCost& split_cost() {
    static std::once_flag once;
    static SplitCost cost;
    std::call_once(once, [] {
        if (!in_forked_child.load(std::memory_order_relaxed)) cost = measure_split_cost();
    });
    return cost;
}

double min_work_scale() {
    static std::atomic<double> scale{0.0};  // 0 until measured
    const double known = scale.load(std::memory_order_relaxed);
    if (known > 0.0) return known;
    if (omp_in_parallel()) return 1.0;  // a nested region runs on one thread: measure outside
    const double measured = split_cost().scale;
    scale.store(measured, std::memory_order_relaxed);
    return measured;
}

bool forked_child() { return in_forked_child.load(std::memory_order_relaxed); }

int available_threads() {
    if (in_forked_child.load(std::memory_order_relaxed)) return 1;
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

// Timing helpers shared by the benchmark programs (attograd's and the LibTorch peers').
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bench {

/// Which clock a measurement reads. This machine is shared by several processes on two cores,
/// so wall time counts the slices other processes run in; the calling thread's CPU time does
/// not, and is the honest clock for single-threaded work. Multi-threaded work needs Wall.
enum class Clock { Wall, ThreadCpu };

inline double now(Clock clock) {
    timespec ts{};
    clock_gettime(clock == Clock::Wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Multiply-add throughput of `threads` threads (GFLOP/s, float32), each running independent
/// chains in registers for about `seconds`: the cores' own speed, free of memory and of the
/// code under test. Two threads reaching less than twice one thread's figure means some other
/// load (another guest on the same physical core, say) is slowing a core down, which no steal
/// counter shows. With Clock::ThreadCpu (one thread only) the time is the thread's CPU time: the
/// core's peak however busy the machine is.
inline double fma_gflops(int threads, double seconds = 0.15, Clock clock = Clock::Wall) {
    constexpr int kLanes = 128;  // independent accumulators: enough to fill the FMA pipelines
    double total_flops = 0.0;
    const double start = now(clock);
#pragma omp parallel num_threads(threads) reduction(+ : total_flops)
    {
        float acc[kLanes];
        for (int i = 0; i < kLanes; ++i) acc[i] = 1.0f + static_cast<float>(i) * 1e-3f;
        long rounds = 0;
        while (now(clock) - start < seconds) {
            for (int r = 0; r < 4096; ++r) {
#pragma omp simd
                for (int i = 0; i < kLanes; ++i) acc[i] = std::fma(acc[i], 0.9999999f, 1e-7f);
            }
            ++rounds;
        }
        float sink = 0.0f;
        for (const float a : acc) sink += a;
        total_flops += 2.0 * kLanes * 4096.0 * static_cast<double>(rounds) + (sink == 0.0f ? 1.0 : 0.0);
    }
    return total_flops / (now(clock) - start) * 1e-9;
}

/// The median of `values` (the upper one of an even count); `values` must not be empty.
inline double median(std::vector<double> values) {
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2),
                     values.end());
    return values[values.size() / 2];
}

/// Seconds per call of `fn`: `warmup` untimed calls, then `repeats` timed runs of `iters`
/// calls each; returns the median over the runs of (run time / iters).
template <class Fn>
double median_seconds(Fn&& fn, int iters, int repeats, int warmup, Clock clock) {
    for (int i = 0; i < warmup; ++i) fn();
    std::vector<double> runs;
    runs.reserve(static_cast<std::size_t>(repeats));
    for (int r = 0; r < repeats; ++r) {
        const double start = now(clock);
        for (int i = 0; i < iters; ++i) fn();
        runs.push_back((now(clock) - start) / iters);
    }
    return median(std::move(runs));
}

/// Several contenders timed in alternation: round after round, each runs its `iters` calls
/// once, so a slow spell of the machine hits them all alike. Returns each one's median
/// seconds per call over `repeats` rounds, after one untimed warm-up round.
template <class Fn>
std::vector<double> interleaved_median_seconds(const std::vector<Fn>& fns, const std::vector<int>& iters,
                                               int repeats, Clock clock) {
    std::vector<std::vector<double>> runs(fns.size());
    for (int r = -1; r < repeats; ++r) {
        for (std::size_t k = 0; k < fns.size(); ++k) {
            const double start = now(clock);
            for (int i = 0; i < iters[k]; ++i) fns[k]();
            if (r >= 0) runs[k].push_back((now(clock) - start) / iters[k]);
        }
    }
    std::vector<double> medians;
    for (auto& v : runs) medians.push_back(median(std::move(v)));
    return medians;
}

/// The machine's CPU time counters from /proc/stat, in clock ticks: all of it, and the part
/// "stolen" (a virtual machine's CPUs waiting while the host runs other guests). Zero when
/// unreadable.
struct CpuTicks {
    unsigned long long total = 0, steal = 0;
};

inline CpuTicks cpu_ticks() {
    CpuTicks ticks;
    if (FILE* stat = std::fopen("/proc/stat", "r")) {
        unsigned long long field[8] = {};
        if (std::fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &field[0], &field[1], &field[2],
                        &field[3], &field[4], &field[5], &field[6], &field[7]) == 8) {
            for (const auto f : field) ticks.total += f;
            ticks.steal = field[7];
        }
        std::fclose(stat);
    }
    return ticks;
}

/// Percentage of the machine's CPU time stolen by the host since `start`.
inline double steal_percent_since(const CpuTicks& start) {
    const CpuTicks end = cpu_ticks();
    const auto total = end.total - start.total;
    return total == 0 ? 0.0
                      : 100.0 * static_cast<double>(end.steal - start.steal) / static_cast<double>(total);
}

/// Calls per timed run so that one run lasts about `target_seconds` (at least 1).
template <class Fn>
int calibrate(Fn&& fn, double target_seconds, Clock clock) {
    int iters = 1;
    for (;;) {
        const double start = now(clock);
        for (int i = 0; i < iters; ++i) fn();
        const double elapsed = now(clock) - start;
        if (elapsed >= target_seconds / 4 || iters >= (1 << 24))
            return std::max(1, static_cast<int>(iters * target_seconds / std::max(elapsed, 1e-9)));
        iters *= 4;
    }
}

/// The configuration named on the command line of a program taking `[--flag N ...] [name]`
/// (every `--flag` takes one value): "" when none is named. An unknown name ends the program
/// with a one-line message and exit code 2.
inline std::string chosen_config(int argc, char** argv, std::initializer_list<std::string_view> names) {
    std::string chosen;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]).starts_with("--"))
            ++i;
        else
            chosen = argv[i];
    }
    if (!chosen.empty() && std::find(names.begin(), names.end(), chosen) == names.end()) {
        std::fprintf(stderr, "%s: unknown configuration '%s'\n", argv[0], chosen.c_str());
        std::exit(2);
    }
    return chosen;
}

/// Value of `--name N` on the command line, or `fallback`.
inline int int_flag(int argc, char** argv, std::string_view name, int fallback) {
    for (int i = 1; i + 1 < argc; ++i)
        if (argv[i] == name) return std::atoi(argv[i + 1]);
    return fallback;
}

/// A child process that keeps one core busy from construction until destruction (or stop()):
/// the "beside one busy process" load of the threading benchmarks.
class BusyProcess {
public:
    BusyProcess() : pid_(::fork()) {
        if (pid_ == 0) {
            volatile double x = 1.0;
            for (;;) x = x * 1.0000001 + 1e-9;
        }
    }
    ~BusyProcess() { stop(); }
    BusyProcess(const BusyProcess&) = delete;
    BusyProcess& operator=(const BusyProcess&) = delete;
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

private:
    pid_t pid_;
};

}  // namespace bench

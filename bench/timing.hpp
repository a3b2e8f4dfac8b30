// Timing helpers shared by the benchmark programs (attograd's and the LibTorch peers').
#pragma once

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string_view>
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
    std::nth_element(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(runs.size() / 2), runs.end());
    return runs[runs.size() / 2];
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
    for (auto& v : runs) {
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        medians.push_back(v[v.size() / 2]);
    }
    return medians;
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

/// Value of `--name N` on the command line, or `fallback`.
inline int int_flag(int argc, char** argv, std::string_view name, int fallback) {
    for (int i = 1; i + 1 < argc; ++i)
        if (argv[i] == name) return std::atoi(argv[i + 1]);
    return fallback;
}

}  // namespace bench

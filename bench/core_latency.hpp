// How long one cache line takes to go from one core to another and back: two threads of the
// OpenMP team pass a counter back and forth. On a VM the host places the vCPUs, and this figure
// tells whether two of them share a cache (tens of ns) or talk across the chip (hundreds).
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

namespace bench {

/// Median nanoseconds of one round trip of a cache line between OpenMP threads 0 and 1 (each
/// waits for the other's increment, then increments), over 9 runs of 20,000 round trips; 0 when
/// fewer than two threads are available.
inline double core_round_trip_ns() {
    if (omp_get_max_threads() < 2) return 0.0;
    constexpr int kTrips = 20000, kRuns = 9;
    std::vector<double> runs;
    for (int run = 0; run < kRuns; ++run) {
        alignas(64) std::atomic<int> ball{0};
        double ns = 0.0;
#pragma omp parallel num_threads(2)
        {
            const int me = omp_get_thread_num();
            const auto start = std::chrono::steady_clock::now();
            for (int trip = 0; trip < kTrips; ++trip) {
                const int mine = 2 * trip + me;  // thread 0 moves on even values, thread 1 on odd ones
                while (ball.load(std::memory_order_acquire) != mine) {
                }
                ball.store(mine + 1, std::memory_order_release);
            }
            if (me == 0)
                ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                         .count() /
                     kTrips;
        }
        runs.push_back(ns);
    }
    std::nth_element(runs.begin(), runs.begin() + kRuns / 2, runs.end());
    return runs[kRuns / 2];
}

}  // namespace bench

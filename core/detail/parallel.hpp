// Internal: when an op splits its work over OpenMP threads (the framework's one threading policy).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace attograd::detail {

// When to split a loop over threads. A parallel region costs a fork/join round trip: a few
// microseconds on an idle machine, up to a scheduler time slice when other processes hold the
// cores. Splitting two ways saves half the loop's time and costs one round trip, so a loop is
// split only where that pays on this machine: split_cost() measures, once per process, the round
// trip and from which size a loop split over the threads beats one thread (its data pulled from
// the calling thread's cache included), and scales each kind's nominal threshold
// (kMinParallelWork and its kin, a few microseconds of one core's work) to it. Eigen's own GEMM threading is
// off (EIGEN_DONT_PARALLELIZE) so that GEMMs follow this policy.
//
// Under load, libgomp's idle workers spin (GOMP_SPINCOUNT, 300,000 polls) between regions, and a
// region cannot finish while a worker waits for a core, so beside other busy processes every
// region stalls. available_threads() answers that: when the calling thread itself spends over
// 10 % of its time waiting on a run queue, the cores are oversubscribed and every op runs on one
// thread for a while, re-probing all threads at growing intervals; the workers then sleep after
// one spell of spinning (bench/README.md, "Threads under load"). OMP_WAIT_POLICY=passive or a
// lower GOMP_SPINCOUNT cannot be set from the library: libgomp reads its environment when it is
// loaded, before any constructor of ours. Fixed-size blocks (blocks_for) keep results
// independent of the thread count either choice picks.

/// Element visits (adds, multiply-adds outside GEMM) below which a loop stays on one thread.
inline constexpr std::int64_t kMinParallelWork = std::int64_t{1} << 15;
/// The same for element visits that each evaluate exp, log or tanh (~8x an add).
inline constexpr std::int64_t kMinParallelTranscendentalWork = kMinParallelWork / 8;
/// The same for multiply-adds in cache-blocked GEMM kernels (~20x faster per unit).
inline constexpr std::int64_t kMinParallelGemmWork = std::int64_t{1} << 18;

/// Threads to use now: omp_get_max_threads(), or 1 while the cores are contended, and always 1
/// in a child made by fork() (OpenMP's threads are not copied by fork; a region there would hang). Every call
/// that looks (at most every 5 ms) reads how long the calling thread has waited on a run queue
/// (/proc/thread-self/schedstat); above 10 % of the wall time in two looks in a row, the cores
/// are taken by other processes and the framework runs on one thread for 200 ms, doubling up to
/// 6.4 s while each probe with all threads still finds them contended (core/detail/parallel.cpp).
int available_threads();

/// True in a child made by fork() (where OpenMP regions on several threads would hang).
bool forked_child();

/// This machine's threading costs, measured once per process (core/detail/parallel.cpp).
struct SplitCost {
    int threads = 1;            ///< omp_get_max_threads() when measured
    double fork_join_ns = 0.0;  ///< median round trip of a region on `threads` threads
    double visit_ns = 0.0;      ///< one element visit (y = a y + x over floats) on one thread
    /// Element visits from which a loop split over `threads` threads takes at most kSplitGain of
    /// its one-thread time (best of several passes at each size), or 0 when no measured size did.
    std::int64_t break_even = 0;
    /// Factor from a kind's nominal split point (twice kMinParallelWork element visits, or its
    /// kin) to this machine's: break_even over the nominal point, clamped to [kMinScale,
    /// kMaxScale]; 1 (the nominal thresholds) when no size paid.
    double scale = 1.0;
    /// True when measuring ran past kMaxMeasureSeconds (other processes held the cores, or the
    /// split regions were slow to wake their workers): the sizes not reached count as not
    /// paying, and scale is 1.
    bool cut_short = false;
};

/// The share of its one-thread time a split loop must come within to count as paying.
inline constexpr double kSplitGain = 0.8;
/// Bounds of SplitCost::scale (the sizes measured).
inline constexpr double kMinScale = 1.0 / 4.0, kMaxScale = 16.0;
/// Measuring stops after this long (a contended machine): the sizes not reached count as not paying.
inline constexpr double kMaxMeasureSeconds = 0.02;

/// The costs of this machine, measured by the first call outside a parallel region: 39 regions,
/// then three to nine passes at each of seven sizes, serial and split (a few milliseconds on an idle
/// machine; cut short past kMaxMeasureSeconds, plus at most one stalled region, on a busy one);
/// thread-safe.
const SplitCost& split_cost();

/// split_cost().scale, or 1 inside a parallel region (where nested regions run on one thread).
double min_work_scale();

/// Threads worth starting for `work` units of a kind whose nominal threshold is `min_work`: 1
/// below twice this machine's threshold (min_work x min_work_scale()), else one per threshold's
/// worth of units, at most available_threads().
inline int threads_for(std::int64_t work, std::int64_t min_work) {
    if (static_cast<double>(work) < 2.0 * kMinScale * static_cast<double>(min_work)) return 1;  // no lookup
    const double threshold = std::max(1.0, static_cast<double>(min_work) * min_work_scale());
    if (static_cast<double>(work) < 2.0 * threshold) return 1;
    return static_cast<int>(
        std::min<double>(available_threads(), std::floor(static_cast<double>(work) / threshold)));
}

/// True when `work` units are worth splitting over threads.
inline bool worth_parallel(std::int64_t work, std::int64_t min_work) {
    return threads_for(work, min_work) > 1;
}

/// How parallel_for hands out indices.
enum class Schedule {
    Static,   ///< one contiguous share per thread: items of equal cost
    Dynamic,  ///< one index at a time to whichever thread is free: items of uneven cost
};

/// Calls fn(i) for every i in [0, count) over min(threads, count) OpenMP threads, or on the
/// calling thread alone when that is 1 or less. Not an `omp parallel if (false)`: even entering
/// a serial region costs more than many of the small training step's ops. Callers pass
/// threads_for(work, min_work), and make fn(i)'s result independent of the thread that runs it
/// (blocks_for). fn must not throw: an exception cannot leave an OpenMP region.
template <class Fn>
void parallel_for(std::int64_t count, int threads, Fn&& fn, Schedule schedule = Schedule::Static) {
    threads = static_cast<int>(std::min<std::int64_t>(threads, count));
    if (threads <= 1) {
        for (std::int64_t i = 0; i < count; ++i) fn(i);
        return;
    }
    if (schedule == Schedule::Dynamic) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (std::int64_t i = 0; i < count; ++i) fn(i);
    } else {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (std::int64_t i = 0; i < count; ++i) fn(i);
    }
}

/// Most blocks a reduction is cut into (see blocks_for).
inline constexpr std::int64_t kMaxReductionBlocks = 4;

/// Fixed blocks a reduction over `work` units is cut into: 1 below twice `min_work`, else one
/// per `min_work` units, at most kMaxReductionBlocks. Unlike threads_for it never looks at the
/// thread count: each block's partial result is combined with the others in block order, on one
/// thread as on many, so the same inputs give the same bits on any thread count.
/// Threads then take whole blocks.
inline std::int64_t blocks_for(std::int64_t work, std::int64_t min_work) {
    if (work < 2 * min_work) return 1;
    return std::min(kMaxReductionBlocks, work / min_work);
}

}  // namespace attograd::detail

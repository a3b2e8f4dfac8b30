// Internal: when an op splits its work over OpenMP threads (the framework's one threading policy).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace attograd::detail {

// Starting an OpenMP region costs a few microseconds on an idle machine, but when other
// processes hold the cores each region may wait up to a scheduler time slice for a worker. So a
// loop is split only above roughly 20-50 microseconds of single-core work: enough that the split
// pays on an idle machine, few enough regions per step that a loaded one loses little.
// Measured on 2 cores (bench/README.md): the small training step takes ~2.4 ms on two threads
// against ~3.8 ms on one. A millisecond threshold (the policy before) kept small models on one
// thread, idle or not. Eigen's own GEMM threading is off (EIGEN_DONT_PARALLELIZE) so that GEMMs
// follow this policy.
//
// Under load: libgomp's idle workers spin (GOMP_SPINCOUNT, 300,000 polls)
// between regions, and a region cannot finish while a worker waits for a core, so beside other
// busy processes every region stalls: on 2 cores at a load average of ~16, 200 CLI steps took
// 11x (idle-ish) to 26x (one more busy process) one thread's time (bench_threads_under_load).
// The remedy chosen is available_threads(): when the calling thread itself spends over 10 % of
// its time waiting on a run queue, the cores are oversubscribed and every op runs on one thread
// for a while, re-probing all threads at growing intervals; the workers then sleep after one
// spell of spinning. Measured with it: within 3 % of one thread beside a busy process. The
// alternatives tried: OMP_WAIT_POLICY=passive or a lower GOMP_SPINCOUNT cannot be set from the
// library (libgomp reads its environment when it is loaded, before any constructor of ours), and
// passive alone still ran 2.2x one thread's time on the busy machine (workers still wait for
// cores at every region). Fixed-size blocks (blocks_for) keep results independent of whichever
// thread count the governor picks.

/// Element visits (adds, multiply-adds outside GEMM) below which a loop stays on one thread.
inline constexpr std::int64_t kMinParallelWork = std::int64_t{1} << 15;
/// The same for element visits that each evaluate exp, log or tanh (~8x an add).
inline constexpr std::int64_t kMinParallelTranscendentalWork = kMinParallelWork / 8;
/// The same for multiply-adds in cache-blocked GEMM kernels (~20x faster per unit).
inline constexpr std::int64_t kMinParallelGemmWork = std::int64_t{1} << 18;

/// Threads to use now: omp_get_max_threads(), or 1 while the cores are contended. Every call
/// that looks (at most every 5 ms) reads how long the calling thread has waited on a run queue
/// (/proc/thread-self/schedstat); above 10 % of the wall time in two looks in a row, the cores
/// are taken by other processes and the framework runs on one thread for 200 ms, doubling up to
/// 6.4 s while each probe with all threads still finds them contended (core/detail/parallel.cpp).
int available_threads();

/// Threads worth starting for `work` units: 1 below twice `min_work`, else one per `min_work`
/// units, at most available_threads().
inline int threads_for(std::int64_t work, std::int64_t min_work) {
    if (work < 2 * min_work) return 1;
    return static_cast<int>(std::min<std::int64_t>(available_threads(), work / min_work));
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

// Internal: when an op splits its work over OpenMP threads (the framework's one threading policy).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace attograd::detail {

// Starting an OpenMP region costs microseconds on an idle machine, but when other processes
// hold the cores each region waits up to a scheduler time slice (milliseconds) for a worker.
// So only loops that take roughly a millisecond on one core are split: small models run on one
// thread and keep their speed on a loaded machine; large ones use every core. Eigen's own GEMM
// threading is off (EIGEN_DONT_PARALLELIZE) so that GEMMs follow this policy too.

/// Element visits (adds, multiply-adds outside GEMM) below which a loop stays on one thread.
inline constexpr std::int64_t kMinParallelWork = std::int64_t{1} << 20;
/// The same for element visits that each evaluate exp, log or tanh (~8x an add).
inline constexpr std::int64_t kMinParallelTranscendentalWork = kMinParallelWork / 8;
/// The same for multiply-adds in cache-blocked GEMM kernels (~20x faster per unit).
inline constexpr std::int64_t kMinParallelGemmWork = std::int64_t{1} << 24;

/// Threads worth starting for `work` units: 1 below twice `min_work`, else one per `min_work`
/// units, at most omp_get_max_threads().
inline int threads_for(std::int64_t work, std::int64_t min_work) {
    if (work < 2 * min_work) return 1;
    return static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), work / min_work));
}

/// True when `work` units are worth splitting over threads.
inline bool worth_parallel(std::int64_t work, std::int64_t min_work) { return threads_for(work, min_work) > 1; }

}  // namespace attograd::detail

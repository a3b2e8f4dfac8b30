// Internal: a parallel loop over rows whose backward scatters into a shared gradient.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attograd::detail {

/// Runs `fn(row, acc)` for every row in [0, rows), in parallel when `parallel`. Rows of a
/// banded or all-pairs kernel scatter into overlapping parts of one gradient, so each thread
/// adds into its own zeroed copy of the `size` accumulators (thread 0 uses `acc` itself) and the
/// copies are summed into `acc` at the end: no atomics, deterministic for a fixed thread count.
template <class T, class Fn>
void for_rows_scattering(std::int64_t rows, bool parallel, T* acc, std::int64_t size, Fn&& fn) {
    const int threads = parallel ? std::min<int>(omp_get_max_threads(), static_cast<int>(rows)) : 1;
    if (threads <= 1) {
        for (std::int64_t row = 0; row < rows; ++row) fn(row, acc);
        return;
    }
    std::vector<std::vector<T>> copies(static_cast<std::size_t>(threads - 1));
#pragma omp parallel num_threads(threads)
    {
        const int id = omp_get_thread_num();
        T* mine = acc;
        if (id > 0) {
            auto& copy = copies[static_cast<std::size_t>(id - 1)];
            copy.assign(static_cast<std::size_t>(size), T(0));
            mine = copy.data();
        }
#pragma omp for schedule(static)
        for (std::int64_t row = 0; row < rows; ++row) fn(row, mine);
    }
    for (const auto& copy : copies) {
        if (copy.empty()) continue;  // the runtime started fewer threads than asked
        for (std::int64_t i = 0; i < size; ++i) acc[i] += copy[static_cast<std::size_t>(i)];
    }
}

}  // namespace attograd::detail

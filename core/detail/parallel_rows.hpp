// Internal: a parallel loop over rows whose backward scatters into a shared gradient.
#pragma once

#include "core/detail/parallel.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attograd::detail {

/// Runs `fn(row, acc)` for every row in [0, rows), with the rows cut into `blocks` contiguous
/// blocks (from blocks_for, core/detail/parallel.hpp) run in parallel. Rows of a banded or all-pairs
/// kernel scatter into overlapping parts of one gradient, so block 0 adds into `acc` itself and
/// every other block into its own zeroed copy of the `size` accumulators; the copies are then
/// added into `acc` in block order. The blocks depend on the work alone, never on the thread
/// count, so the sums are bit-identical on any number of threads (no atomics either).
template <class T, class Fn>
void for_rows_scattering(std::int64_t rows, std::int64_t blocks, T* acc, std::int64_t size, Fn&& fn) {
    blocks = std::clamp<std::int64_t>(blocks, 1, std::max<std::int64_t>(rows, 1));
    if (blocks == 1) {
        for (std::int64_t row = 0; row < rows; ++row) fn(row, acc);
        return;
    }
    std::vector<std::vector<T>> copies(static_cast<std::size_t>(blocks - 1));
    const auto run_block = [&](std::int64_t block) {
        T* mine = acc;
        if (block > 0) {
            auto& copy = copies[static_cast<std::size_t>(block - 1)];
            copy.assign(static_cast<std::size_t>(size), T(0));
            mine = copy.data();
        }
        for (std::int64_t row = rows * block / blocks; row < rows * (block + 1) / blocks; ++row)
            fn(row, mine);
    };
    parallel_for(blocks, available_threads(), run_block, Schedule::Dynamic);
    for (const auto& copy : copies)
        for (std::int64_t i = 0; i < size; ++i) acc[i] += copy[static_cast<std::size_t>(i)];
}

}  // namespace attograd::detail

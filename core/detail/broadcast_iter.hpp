// Internal: walks an output shape with per-operand strides (0 on broadcast dimensions).
#pragma once

#include "core/shape.hpp"

#include <array>
#include <cstdint>

namespace attograd::detail {

/// Calls `fn(out_offset, offsets, n, inner_strides)` once per run of the last dimension of
/// `out`: `offsets[k]` is operand k's offset at the start of the run and `inner_strides[k]`
/// its stride along the last dimension. Output is contiguous, so runs are consecutive.
template <std::size_t K, class Fn>
void for_each_run(const Shape& out, const std::array<Shape, K>& strides, Fn&& fn) {
    const std::int64_t rank = static_cast<std::int64_t>(out.size());
    const std::int64_t total = numel(out);
    if (total == 0) return;
    const std::int64_t inner = rank == 0 ? 1 : out.back();
    std::array<std::int64_t, K> inner_strides{};
    for (std::size_t k = 0; k < K; ++k) inner_strides[k] = rank == 0 ? 0 : strides[k].back();
    std::array<std::int64_t, K> offsets{};
    // The outer multi-index; inline for up to 8 outer dimensions (no allocation per op).
    std::array<std::int64_t, 8> small_counter{};
    Shape big_counter(out.size() > small_counter.size() + 1 ? out.size() - 1 : 0, 0);
    std::int64_t* counter = big_counter.empty() ? small_counter.data() : big_counter.data();
    for (std::int64_t out_offset = 0; out_offset < total; out_offset += inner) {
        fn(out_offset, offsets, inner, inner_strides);
        // Advance the outer multi-index (all dimensions but the last) like an odometer.
        for (std::int64_t d = rank - 2; d >= 0; --d) {
            const auto du = static_cast<std::size_t>(d);
            ++counter[du];
            for (std::size_t k = 0; k < K; ++k) offsets[k] += strides[k][du];
            if (counter[du] < out[du]) break;
            for (std::size_t k = 0; k < K; ++k) offsets[k] -= strides[k][du] * out[du];
            counter[du] = 0;
        }
    }
}

}  // namespace attograd::detail

// Internal: the keys each query row of a banded (local) kernel sees, and the band's input checks
// (core/ops_local_attention.cpp, core/ops_additive_score.cpp, core/ops_local_sdpa.cpp).
#pragma once

#include "core/tensor.hpp"

#include <cstdint>
#include <string_view>

namespace attograd {

namespace detail {
/// The keys query row `row` (= n * Tq + t) sees: all Tk of them (start == nullptr, width == Tk)
/// or `width` slots from start[row]; [lo, hi) is the in-range part, slot j = s - first.
struct KeyWindow {
    const std::int64_t* start = nullptr;
    std::int64_t width = 0;
    std::int64_t tk = 0;
    std::int64_t first(std::int64_t row) const { return start ? start[row] : 0; }
    std::int64_t lo(std::int64_t row) const {
        return first(row) < 0 ? 0 : (first(row) > tk ? tk : first(row));
    }
    std::int64_t hi(std::int64_t row) const {
        if (first(row) >= tk - width) return tk;  // compared this way round: no overflow
        const std::int64_t end = first(row) + width;
        return end < 0 ? 0 : end;
    }
};

/// Checks window_start is an int64 [n, tq] tensor and width >= 1; messages start with `op`.
void check_window(const Tensor& window_start, std::int64_t n, std::int64_t tq, std::int64_t width,
                  std::string_view op);
/// Checks a band about to be allocated: width <= 2 Tk - 1 (no window over Tk keys needs more
/// slots: a larger width only allocates slots outside the keys). Throws ValueError.
void check_band_width(std::int64_t width, std::int64_t tk, std::string_view op);
}  // namespace detail

}  // namespace attograd

// Internal: rows along an axis, and the stable log-softmax row shared by log_softmax and
// cross_entropy.
#pragma once

#include "core/detail/parallel.hpp"
#include "core/detail/scratch.hpp"
#include "core/shape.hpp"

#include <Eigen/Core>

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace attograd::detail {

/// A stride known at compile time to be 1: row kernels templated on the stride type compile to
/// contiguous (vectorisable) loops for the last axis.
using UnitStride = std::integral_constant<std::int64_t, 1>;

/// Calls fn(base, stride) once per row along the axis of the [outer, size, inner] view: element
/// k of the row sits at base + k * stride, stride = inner (a UnitStride when inner is 1). Rows
/// are independent, so large tensors split them over the OpenMP threads (same result).
template <class Fn>
void for_each_row(const AxisSplit& s, Fn&& fn) {
    const int threads = threads_for(s.outer * s.size * s.inner, kMinParallelTranscendentalWork);
    if (s.inner == 1) {
        parallel_for(s.outer, threads, [&](std::int64_t o) { fn(o * s.size, UnitStride{}); });
        return;
    }
    parallel_for(s.outer, threads, [&](std::int64_t o) {
        for (std::int64_t i = 0; i < s.inner; ++i) fn(o * s.size * s.inner + i, s.inner);
    });
}

/// The shift of a softmax row (n elements `stride` apart): its max, or 0 for an all -inf row
/// so that exp(-inf - 0) = 0 instead of NaN. NaN is skipped here; it reaches the row's sum of
/// exponentials and makes the whole row NaN.
template <class T, class Stride>
T softmax_shift(const T* x, std::int64_t n, Stride stride) {
    const T lowest = -std::numeric_limits<T>::infinity();
    T m = lowest;
    for (std::int64_t k = 0; k < n; ++k) m = x[k * stride] > m ? x[k * stride] : m;
    return m == lowest ? T(0) : m;
}

/// y = (x - shift) - log sum exp(x - shift) over one row (n elements `stride` apart). An all
/// -inf row gives -inf: log 0 is replaced by 0 so that -inf - log 0 is not NaN.
template <class T, class Stride>
void log_softmax_row(const T* x, T* y, std::int64_t n, Stride stride) {
    const T shift = softmax_shift(x, n, stride);
    // Eigen's vectorised exp (std::exp is a libm call per element), on a contiguous copy of a
    // strided row so that every layout gives the same bits. Its exp(-inf) is a denormal, not 0:
    // that perturbs the total of a row with finite entries by less than an ulp, and an all -inf
    // row still gives -inf.
    const T* row = x;
    if constexpr (!std::is_same_v<Stride, UnitStride>) {
        thread_local Scratch<T> gathered;
        T* copy = gathered.at_least(static_cast<std::size_t>(n));
        for (std::int64_t k = 0; k < n; ++k) copy[k] = x[k * stride];
        row = copy;
    }
    const T total = (Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(row, n) - shift).exp().sum();
    const T log_total = total == T(0) ? T(0) : std::log(total);
    for (std::int64_t k = 0; k < n; ++k) y[k * stride] = (x[k * stride] - shift) - log_total;
}

/// log_softmax_row over every row along the axis.
template <class T>
void log_softmax_rows(const T* x, T* y, const AxisSplit& s) {
    for_each_row(
        s, [&](std::int64_t base, auto stride) { log_softmax_row(x + base, y + base, s.size, stride); });
}

}  // namespace attograd::detail

// Internal: the stable log-softmax kernel shared by log_softmax and cross_entropy.
#pragma once

#include "core/shape.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attograd::detail {

/// For the block of `s.inner` rows starting at x (element (k, i) at x[k * s.inner + i]): each
/// row's shift, its max, or 0 for an all -inf row so that exp(-inf - 0) = 0 instead of NaN.
/// NaN is skipped here; it reaches the row's sum of exponentials and makes it NaN.
template <class T>
void softmax_row_shift(const T* x, const AxisSplit& s, T* shift) {
    const T lowest = -std::numeric_limits<T>::infinity();
    for (std::int64_t i = 0; i < s.inner; ++i) shift[i] = lowest;
    for (std::int64_t k = 0; k < s.size; ++k) {
        const T* xk = x + k * s.inner;
        for (std::int64_t i = 0; i < s.inner; ++i) shift[i] = xk[i] > shift[i] ? xk[i] : shift[i];
    }
    for (std::int64_t i = 0; i < s.inner; ++i)
        if (shift[i] == lowest) shift[i] = T(0);
}

/// y = (x - shift) - log sum exp(x - shift) along the axis of the [outer, size, inner] view.
/// An all -inf row gives -inf (log 0 is replaced by 0 so -inf - log 0 is not NaN).
template <class T>
void log_softmax_rows(const T* x, T* y, const AxisSplit& s) {
    std::vector<T> shift(static_cast<std::size_t>(s.inner)), log_total(static_cast<std::size_t>(s.inner));
    const std::int64_t block = s.size * s.inner;
    for (std::int64_t o = 0; o < s.outer; ++o) {
        const T* xo = x + o * block;
        T* yo = y + o * block;
        softmax_row_shift(xo, s, shift.data());
        std::fill(log_total.begin(), log_total.end(), T(0));
        for (std::int64_t k = 0; k < s.size; ++k)
            for (std::int64_t i = 0; i < s.inner; ++i)
                log_total[i] += std::exp(xo[k * s.inner + i] - shift[i]);
        for (auto& v : log_total) v = v == T(0) ? T(0) : std::log(v);
        for (std::int64_t k = 0; k < s.size; ++k)
            for (std::int64_t i = 0; i < s.inner; ++i)
                yo[k * s.inner + i] = (xo[k * s.inner + i] - shift[i]) - log_total[i];
    }
}

}  // namespace attograd::detail

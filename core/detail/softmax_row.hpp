// Internal: softmax rows and their backward on Eigen's SIMD packets, for the fused attention
// kernels' short rows (32 to a few hundred keys).
#pragma once

#include <cstdint>

namespace attograd::detail {

/// Each of `count` rows of n elements (row r at rows + r * n) becomes softmax(scale * row +
/// mask) in place. `mask` (may be null) holds row r's additive mask at mask + r * mask_row_stride,
/// its key k at k * mask_stride (0: one value for the row, or 1). Keys at -inf get exactly 0; a
/// row whose keys are all -inf becomes all 0 (no NaN); a NaN makes its row NaN. The sums add in
/// an order fixed by n alone, whichever buffer or thread holds a row.
template <class T>
void softmax_rows(T* rows, std::int64_t count, std::int64_t n, T scale, const T* mask,
                  std::int64_t mask_row_stride, std::int64_t mask_stride);

/// The backward of softmax_rows for `count` rows of n elements (weights p, upstream gradient dp,
/// row r at r * n), in place: dp = scale * p * (dp - sum_k dp_k p_k), the scores' scale folded in.
template <class T>
void softmax_rows_backward(const T* p, T* dp, std::int64_t count, std::int64_t n, T scale);

extern template void softmax_rows<float>(float*, std::int64_t, std::int64_t, float, const float*,
                                         std::int64_t, std::int64_t);
extern template void softmax_rows<double>(double*, std::int64_t, std::int64_t, double, const double*,
                                          std::int64_t, std::int64_t);
extern template void softmax_rows_backward<float>(const float*, float*, std::int64_t, std::int64_t, float);
extern template void softmax_rows_backward<double>(const double*, double*, std::int64_t, std::int64_t,
                                                   double);

}  // namespace attograd::detail

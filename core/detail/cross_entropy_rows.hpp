// Internal: cross-entropy over rows of contiguous classes ([N, C] logits), the loss of every row
// and the gradient's row factor in one pass on Eigen's SIMD packets (core/detail/cross_entropy_rows.cpp).
#pragma once

#include <cstdint>

namespace attograd::detail {

/// What cross_entropy_rows needs besides the data: C classes a row, the targets (one per row),
/// ignore_index and label_smoothing eps.
struct ClassRows {
    std::int64_t rows = 0, classes = 0;
    const std::int64_t* targets = nullptr;
    std::int64_t ignore_index = -100;
    double label_smoothing = 0.0;
};

/// Cross-entropy of every row of x [rows, classes] (contiguous) into losses [rows], and, when
/// grad is not null, each row's gradient factor softmax(x) - (1 - eps) onehot(t) - eps / C into
/// grad [rows, classes] (zero rows where the target is ignored): the backward then only scales
/// it by the upstream gradient. Rows are split over the threads in fixed groups (same bits on
/// any thread count).
template <class T>
void cross_entropy_rows(const T* x, const ClassRows& c, T* losses, T* grad);

extern template void cross_entropy_rows<float>(const float*, const ClassRows&, float*, float*);
extern template void cross_entropy_rows<double>(const double*, const ClassRows&, double*, double*);

}  // namespace attograd::detail

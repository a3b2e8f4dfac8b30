// Softmax and log-softmax over one axis (stable: the row max is subtracted first).
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// softmax(x)_i = exp(x_i - max x) / sum_j exp(x_j - max x) along `axis` (negative allowed).
/// x [..] -> same shape. Rows that are entirely -inf give all-zero rows (not NaN); their
/// gradient is zero. Backward: dx = y * (dy - sum(dy * y)). Throws IndexError on a bad axis.
Tensor softmax(const Tensor& x, std::int64_t axis);

/// log_softmax(x)_i = x_i - max x - log sum_j exp(x_j - max x) along `axis`; finite for logits
/// of magnitude 1e8. Backward: dx = dy - softmax(x) * sum(dy). Throws IndexError on a bad axis.
Tensor log_softmax(const Tensor& x, std::int64_t axis);

}  // namespace attograd

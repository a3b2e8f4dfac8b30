// Softmax and log-softmax over one axis (stable: the row max is subtracted first).
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// softmax(x)_i = exp(x_i - max x) / sum_j exp(x_j - max x) along `axis` (negative allowed;
/// PyTorch's `torch.softmax`). x [..] -> same shape, float32 or float64.
/// A row that is entirely -inf (every key masked) gives an all-zero row, not NaN, and its
/// gradient is zero: a documented difference from PyTorch, which returns NaN there.
/// Backward: dx = y * (dy - sum(dy * y)) along the axis.
/// Throws IndexError on a bad axis, DTypeError for a non-float tensor.
Tensor softmax(const Tensor& x, std::int64_t axis);

/// log_softmax(x)_i = x_i - max x - log sum_j exp(x_j - max x) along `axis` (PyTorch's
/// `torch.log_softmax`); finite and exact to rounding for logits of magnitude 1e8 and for very
/// negative logits. A row that is entirely -inf gives -inf (the log of softmax's zeros; PyTorch
/// gives NaN) with gradient dx = dy. Backward: dx = dy - softmax(x) * sum(dy) along the axis.
/// Throws IndexError on a bad axis, DTypeError for a non-float tensor.
Tensor log_softmax(const Tensor& x, std::int64_t axis);

}  // namespace attograd

// Joining, slicing and indexing: concat, stack, narrow, index_select, gather, embedding,
// masked_fill and where.
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attograd {

/// Joins tensors along an existing `axis`; all other sizes must agree. Throws ShapeError
/// (naming the first mismatching tensor and its shape), ValueError on an empty list.
Tensor concat(const std::vector<Tensor>& tensors, std::int64_t axis);
/// Joins equally shaped tensors along a new `axis` (0..rank). Throws ShapeError.
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t axis);
/// Elements [start, start + length) along `axis` (a copy). Negative start counts from the
/// end. Throws IndexError when the range leaves the dimension.
Tensor narrow(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t length);
/// Python-style slice [start, end) along `axis`, clamped to the dimension as in PyTorch.
Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end);
/// Rows of x chosen by a 1-D int64 `index` along `axis`: x [.., n, ..], index [k] ->
/// [.., k, ..]. Backward adds into repeated rows. Throws IndexError / DTypeError.
Tensor index_select(const Tensor& x, std::int64_t axis, const Tensor& index);
/// PyTorch's gather: out[i][j] = x[index[i][j]][j] for axis 0 (likewise for any axis);
/// index has x's rank and the output has index's shape. Backward scatter-adds (repeated
/// indices add). Throws IndexError / DTypeError / ShapeError.
Tensor gather(const Tensor& x, std::int64_t axis, const Tensor& index);
/// Embedding lookup: weight [V, E], int64 indices [...] -> [..., E]. Backward scatter-adds
/// into weight rows (repeated ids add). Throws IndexError naming the first id outside [0, V).
Tensor embedding(const Tensor& weight, const Tensor& indices);
/// x with `value` where the bool `mask` is true (mask broadcasts to x). The gradient is zero
/// at masked positions. Throws DTypeError when mask is not bool, ShapeError when it does not
/// broadcast to x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
/// Elementwise choice: `condition` (bool) ? a : b, all three broadcasting together.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

}  // namespace attograd

// Joining, slicing and indexing: concat, stack, narrow, slice, index_select, gather, embedding,
// masked_fill, where, triu and tril.
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attograd {

/// Joins tensors along an existing `axis` (negative allowed; PyTorch's `torch.cat`): all other
/// sizes and the dtype must agree; any dtype. [.., n_i, ..] -> [.., sum n_i, ..]. Backward hands
/// each input its slice of the gradient. Throws ValueError (empty list, undefined tensor),
/// ShapeError (naming the first mismatching tensor and its shape; 0-d inputs), DTypeError,
/// IndexError (bad axis).
Tensor concat(const std::vector<Tensor>& tensors, std::int64_t axis);
/// Joins equally shaped tensors along a new `axis` in [-(rank+1), rank] (PyTorch's
/// `torch.stack`): k tensors [a, b] and axis 1 -> [a, k, b]. Throws ValueError, ShapeError,
/// DTypeError, IndexError as concat.
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t axis);
/// Elements [start, start + length) along `axis` (a copy; PyTorch's `narrow`). A negative start
/// counts from the end. Backward writes the gradient into that range, zeros elsewhere. Throws
/// IndexError when the range leaves the dimension, ShapeError for a 0-d tensor.
Tensor narrow(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t length);
/// Python-style slice x[.., start:end, ..] along `axis`: negative bounds count from the end and
/// both are clamped to the dimension, so it never throws for a range (an empty result instead).
/// Throws IndexError on a bad axis, ShapeError for a 0-d tensor.
Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end);
/// Entries of x chosen by a 1-D int64 `index` along `axis` (PyTorch's `index_select`):
/// x [.., n, ..], index [k] -> [.., k, ..], out[.., j, ..] = x[.., index[j], ..]. Backward
/// scatter-adds, so rows picked several times get the sum. Throws IndexError (an index outside
/// [0, n), bad axis), DTypeError (index not int64), ShapeError (index not 1-D, x 0-d).
Tensor index_select(const Tensor& x, std::int64_t axis, const Tensor& index);
/// PyTorch's `gather`: out[i][j] = x[index[i][j]][j] for axis 0, out[i][j] = x[i][index[i][j]]
/// for axis 1 (likewise for any rank). index is int64 with x's rank and no larger than x outside
/// the axis; the output has index's shape. Backward scatter-adds (repeated indices add).
/// Throws IndexError (an index outside [0, x.size(axis)), bad axis), DTypeError, ShapeError.
Tensor gather(const Tensor& x, std::int64_t axis, const Tensor& index);
/// Embedding lookup (PyTorch's `F.embedding`): weight [V, E] (float), int64 indices [...] ->
/// [..., E]. Backward scatter-adds into weight rows (repeated ids add) and leaves the other
/// rows zero (a dense gradient). Throws IndexError naming the first id outside [0, V),
/// ShapeError (weight not 2-D), DTypeError (weight not float, indices not int64).
Tensor embedding(const Tensor& weight, const Tensor& indices);
/// x with `value` where the bool `mask` is true (PyTorch's `masked_fill`); mask broadcasts to
/// x's shape, x may have any dtype. The gradient is zero at masked positions. Throws DTypeError
/// when mask is not bool, ShapeError when it does not broadcast to x's shape, ValueError when
/// `value` does not fit an int64 or bool x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
/// Elementwise choice `condition ? a : b` (PyTorch's `torch.where`), all three broadcasting
/// together to the output shape; a and b share a dtype. Backward: da = dy where condition,
/// db = dy elsewhere, each summed back to its own shape. Throws DTypeError (condition not bool,
/// dtypes of a and b differ), ShapeError (shapes do not broadcast).
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

/// Upper triangle of the last two dimensions (PyTorch's `torch.triu`): x [..., m, n] keeps
/// x[..., i, j] where j - i >= diagonal and is 0 elsewhere. diagonal 0 keeps the main diagonal,
/// 1 starts above it, -1 below; any offset is allowed (beyond the matrix: all kept or all 0).
/// Any dtype. Backward: dx = triu(dy, diagonal). Throws ShapeError when x has fewer than 2
/// dimensions.
Tensor triu(const Tensor& x, std::int64_t diagonal = 0);
/// Lower triangle (PyTorch's `torch.tril`): keeps x[..., i, j] where j - i <= diagonal.
/// Backward: dx = tril(dy, diagonal). Throws ShapeError as triu.
Tensor tril(const Tensor& x, std::int64_t diagonal = 0);

}  // namespace attograd

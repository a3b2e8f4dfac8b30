// Joining, slicing and indexing: concat, stack, narrow, slice, index_select, gather, embedding,
// masked_fill, where, triu and tril.
#pragma once

#include "core/ops_elementwise.hpp"
#include "core/tensor.hpp"

#include <concepts>

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
/// Python-style slice x[.., start:end:step, ..] along `axis` (PyTorch's `x.slice` / `x[a:b:s]`):
/// negative bounds count from the end and both are clamped to the dimension, so it never throws
/// for a range (an empty result instead). step >= 1; step 1 is one contiguous copy, a larger step
/// gathers every step-th element. Backward writes the gradient back into the sliced positions,
/// zeros elsewhere. Throws IndexError on a bad axis, ShapeError for a 0-d tensor, ValueError
/// when step <= 0.
Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end, std::int64_t step = 1);
/// x[.., index, ..]: the entries at `index` along `axis`, that dimension removed (PyTorch's
/// `select`; negative index counts from the end): x [a, n, b], axis 1 -> [a, b]. Differentiable.
/// Throws IndexError (index outside [-n, n), bad axis), ShapeError for a 0-d tensor.
Tensor select(const Tensor& x, std::int64_t axis, std::int64_t index);
/// Python-style indexing with integers, Slice, Ellipsis and int64 index tensors
/// (core/tensor_index.hpp); the free form of Tensor::index: `index(x, {0, Slice(1, 3)})` is
/// PyTorch's `x[0, 1:3]`. Index tensors follow PyTorch's advanced indexing: integers select
/// first (as PyTorch, unlike NumPy: {1, Slice(), idx} is x[1][:, idx]); the index tensors
/// broadcast together to a shape S, each picks along its own dimension, and S replaces the
/// indexed dimensions where they stood when they are adjacent, else comes first: x [B, T, E],
/// `index(x, {arange(B), idx})` with idx [B] -> [B, E] (row b is x[b, idx[b]]); x [A, B, C],
/// {Slice(), idx [K, L]} -> [A, K, L, C]; {i [K], Slice(), j [K]} -> [K, B]. Negative indices count
/// from the end. Backward scatter-adds (index_select's), so repeated picks add. Throws
/// IndexError (an index out of range, naming it and the dimension; too many indices),
/// DTypeError (an index tensor not int64), ShapeError (index shapes that do not broadcast).
Tensor index(const Tensor& x, std::initializer_list<indexing::TensorIndex> indices);
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
/// together to the output shape. a and b of different dtypes promote as the arithmetic ops do
/// (core/ops_elementwise.hpp: int64 / bool with a float -> that float, bool with int64 -> int64).
/// Backward: da = dy where condition, db = dy elsewhere, each summed back to its own shape.
/// Throws DTypeError (condition not bool, float32 with float64), ShapeError (shapes do not
/// broadcast).
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
/// where with a plain number for b (`where(mask, x, 0.0)`) or a: the number takes the tensor's
/// dtype when it is float; a double with an int64 / bool tensor promotes to float32, an integer
/// keeps it int64 (PyTorch's rule for Python float and int).
Tensor where(const Tensor& condition, const Tensor& a, double b);
Tensor where(const Tensor& condition, double a, const Tensor& b);
template <std::integral I>
Tensor where(const Tensor& condition, const Tensor& a, I b) {
    return where(condition, a, detail::integer_operand(a, static_cast<std::int64_t>(b), "where"));
}
template <std::integral I>
Tensor where(const Tensor& condition, I a, const Tensor& b) {
    return where(condition, detail::integer_operand(b, static_cast<std::int64_t>(a), "where"), b);
}
/// where with two plain numbers (`where(mask, 1.0, 0.0)`): condition's shape, float32 for doubles
/// (PyTorch's default dtype; to_dtype for float64), int64 for two integers (`where(mask, 1, 0)`),
/// float32 for an integer with a double. Not differentiable (no tensor input).
Tensor where(const Tensor& condition, double a, double b);
Tensor where(const Tensor& condition, std::int64_t a, std::int64_t b);
template <std::integral I, std::integral J>
requires(!std::same_as<I, std::int64_t> || !std::same_as<J, std::int64_t>) Tensor
    where(const Tensor& condition, I a, J b) {
    return where(condition, static_cast<std::int64_t>(a), static_cast<std::int64_t>(b));
}

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

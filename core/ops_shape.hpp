// Shape ops: reshape, unsqueeze/squeeze, transpose/permute (joining and indexing live in ops_index).
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attograd {

/// Same elements in a new shape (shares storage; one -1 entry is inferred). Throws ShapeError
/// when the element counts differ.
Tensor reshape(const Tensor& x, const Shape& shape);
/// x with a dimension of size 1 inserted at `dim` (PyTorch's `torch.unsqueeze`): dim in
/// [-(rank + 1), rank], a negative dim counting from the end of the output (dim + rank + 1):
/// x [a, b], dim 1 or -2 -> [a, 1, b]. A view (shares storage); the gradient is dy reshaped
/// back. Throws IndexError naming the dim, the allowed range and the shape.
Tensor unsqueeze(const Tensor& x, std::int64_t dim);
/// x without its dimensions of size 1 (PyTorch's `torch.squeeze`): [a, 1, b, 1] -> [a, b]
/// (a tensor of one element becomes 0-d). A view; the gradient is dy reshaped back.
Tensor squeeze(const Tensor& x);
/// x without dimension `dim` when its size is 1, else x unchanged (PyTorch's
/// `torch.squeeze(x, dim)`): dim in [-rank, rank) (a 0-d tensor takes 0 or -1). Throws
/// IndexError naming the dim, the allowed range and the shape.
Tensor squeeze(const Tensor& x, std::int64_t dim);
/// Swaps two dimensions (negative axes allowed); returns a contiguous copy.
Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1);
/// Reorders dimensions: out.shape[i] = x.shape[dims[i]] (negative axes allowed). Throws
/// IndexError unless `dims` is a permutation of the axes.
Tensor permute(const Tensor& x, const std::vector<std::int64_t>& dims);

}  // namespace attograd

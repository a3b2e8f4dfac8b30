// Shape ops: reshape, transpose/permute (joining and indexing live in ops_index).
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attograd {

/// Same elements in a new shape (shares storage; one -1 entry is inferred). Throws ShapeError
/// when the element counts differ.
Tensor reshape(const Tensor& x, const Shape& shape);
/// Swaps two dimensions (negative axes allowed); returns a contiguous copy.
Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1);
/// Reorders dimensions: out.shape[i] = x.shape[dims[i]] (negative axes allowed). Throws
/// IndexError unless `dims` is a permutation of the axes.
Tensor permute(const Tensor& x, const std::vector<std::int64_t>& dims);

}  // namespace attograd

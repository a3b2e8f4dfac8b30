// Matrix multiplication: 2-D and batched, with batch-dimension broadcasting.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// Matrix product as PyTorch's `matmul` for operands of rank >= 2:
/// a [..., n, k] x b [..., k, m] -> [broadcast(...), n, m]. Batch dimensions broadcast
/// (NumPy rules); each product is one Eigen GEMM, batches run in parallel.
/// Backward: da = dy b^T, db = a^T dy, each summed over its broadcast batch dimensions.
/// Throws ShapeError (`matmul: inner dimensions differ: [2, 3] x [4, 5]`, rank < 2, batch
/// dimensions that do not broadcast) and DTypeError (dtypes differ or not float).
Tensor matmul(const Tensor& a, const Tensor& b);

namespace detail {
/// op(a) x op(b) for every batch, op = transpose when the flag is set; no tape entry.
/// a [..., n, k] (or [..., k, n] when transpose_a), b likewise -> [broadcast(...), n, m].
/// A defined `row_init` [m] (2-D operands only, same dtype) is added to every row of the
/// result, inside the GEMM's own pass: linear's bias.
Tensor matmul_kernel(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                     const Tensor& row_init = Tensor());
}  // namespace detail

}  // namespace attograd

// Matrix multiplication: 2-D and batched, with batch-dimension broadcasting.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// Matrix product as PyTorch's `matmul` for operands of rank >= 2:
/// a [..., n, k] x b [..., k, m] -> [broadcast(...), n, m]. Batch dimensions broadcast
/// (NumPy rules); each product goes through the GEMM layer (core/detail/gemm.hpp: LIBXSMM or Eigen),
/// large ones in row blocks over threads, batches in parallel.
/// Backward: da = dy b^T, db = a^T dy, each summed over its broadcast batch dimensions.
/// Throws ShapeError (`matmul: inner dimensions differ: [2, 3] x [4, 5]`, rank < 2, batch
/// dimensions that do not broadcast) and DTypeError (dtypes differ or not float).
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace attograd

// The affine map of a fully connected layer: y = x W^T + b (PyTorch's F.linear).
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// PyTorch's `F.linear`: y = x W^T + b with x [..., in], weight [out, in], bias [out]
/// (optional: pass an undefined Tensor for none) -> [..., out]. The leading dimensions of x
/// are folded into the rows of one GEMM against the weight (on LIBXSMM a transposed copy of it,
/// which its kernels need), the bias added after the product, as PyTorch's unfused x W^T + b
/// rounds. Backward: dx = dy W, dW = dy^T x, db = sum of dy over the rows. Throws
/// ShapeError (`linear: x [2, 3] does not match weight [5, 4] ...`, a 0-d x, a bias that is not
/// [out]), DTypeError (dtypes differ or not float).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

}  // namespace attograd

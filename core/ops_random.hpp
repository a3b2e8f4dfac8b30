// Random ops: dropout.
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"

namespace attograd {

/// Inverted dropout (PyTorch's `F.dropout`; Srivastava et al. 2014): while `training`, each
/// element of x [..] is zeroed with probability p and the rest are scaled by 1 / (1 - p), so
/// the expected value is unchanged; otherwise (or when p = 0) x itself is returned and the
/// generator is not used. One uniform draw per element from `generator`, in row-major order:
/// the same seed gives the same mask. p = 1 zeroes everything (also inf/NaN inputs, where
/// PyTorch's x * 0 gives NaN) with zero gradient. Backward: dx = dy * mask / (1 - p).
/// Throws ValueError unless 0 <= p <= 1, DTypeError for a non-float tensor.
Tensor dropout(const Tensor& x, double p, bool training, Generator& generator);

}  // namespace attograd

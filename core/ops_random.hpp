// Random ops: dropout.
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"

namespace attograd {

/// Inverted dropout (PyTorch's `F.dropout`): while `training`, each element is zeroed with
/// probability p and the rest are scaled by 1 / (1 - p); otherwise x is returned unchanged.
/// p = 1 zeroes everything. Throws ValueError unless 0 <= p <= 1.
Tensor dropout(const Tensor& x, double p, bool training, Generator& generator);

}  // namespace attograd

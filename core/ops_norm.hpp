// Normalisation: layer normalisation over the last dimensions.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// PyTorch's `F.layer_norm` (Ba, Kiros & Hinton 2016): each slice over the last dimensions
/// `normalized_shape` [d...] of x [..., d...] is normalised with its mean and biased variance,
/// y = (x - mean) / sqrt(var + eps) * weight + bias. `weight` and `bias` are [d...] or
/// undefined (then 1 and 0). Statistics are accumulated in double. Backward (hand-written):
/// with x^ = (x - mean) * rstd and g = dy * weight,
/// dx = rstd * (g - mean(g) - x^ * mean(g * x^)), dweight = sum(dy * x^), dbias = sum(dy),
/// sums over the leading dimensions. Throws ShapeError (normalized_shape empty or not the
/// trailing dimensions of x, weight/bias not [d...]), DTypeError (dtypes differ or not float),
/// ValueError (eps negative or not finite).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

}  // namespace attograd

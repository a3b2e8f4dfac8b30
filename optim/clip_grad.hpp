// Gradient clipping by the global norm over all parameters.
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attograd::optim {

/// Scales the gradients of `params` so that their global `norm_type`-norm (all gradients
/// seen as one vector) is at most `max_norm`; returns the norm before clipping. This is
/// PyTorch's `torch.nn.utils.clip_grad_norm_` with `error_if_nonfinite=True`:
///
///     total = (sum over every gradient element |g|^p)^(1/p)   (p = inf: max |g|)
///     g = g * min(1, max_norm / (total + 1e-6))
///
/// Parameters without a gradient are skipped; with no gradient at all, or all gradients
/// zero, the result is 0 and nothing changes. Sums are accumulated in double. A gradient
/// buffer that is shared with another tensor (e.g. one given to set_grad) is not written:
/// the parameter gets a new, scaled gradient instead.
/// Throws ValueError when max_norm is negative or not finite, when norm_type is not > 0
/// (infinity allowed), when a parameter is undefined, and when the total norm is NaN or
/// infinite (a gradient holds NaN or Inf); nothing changes when it throws.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);

}  // namespace attograd::optim

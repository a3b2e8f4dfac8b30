// Losses: cross-entropy over class logits, negative log-likelihood, mean squared error.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// How a loss reduces over elements (PyTorch's `reduction`).
enum class Reduction { Mean, Sum, None };

/// Options of cross_entropy and nll_loss, with PyTorch's defaults.
struct CrossEntropyOptions {
    Reduction reduction = Reduction::Mean;  ///< mean over the counted targets, sum, or none ([N] per target)
    std::int64_t ignore_index = -100;       ///< targets equal to this contribute nothing
    double label_smoothing = 0.0;           ///< in [0, 1]; mixes the target with the uniform distribution
};

/// PyTorch's `F.cross_entropy` with class-index targets: logits [N, C] (or [N, C, d...], or
/// unbatched [C]), int64 targets [N] (or [N, d...], or 0-d) -> scalar (Mean/Sum) or the
/// targets' shape (None). With log p = log_softmax(logits) over the class axis (log-sum-exp:
/// finite for logits of magnitude 1e8 and for very negative logits), eps = label_smoothing:
///     loss_i = (1 - eps) * (-log p[i, y_i]) + eps / C * sum_c (-log p[i, c])
/// and loss_i = 0 where y_i == ignore_index (the smoothing term too, as in PyTorch). Mean
/// divides the sum by the number of targets not ignored; when every target is ignored (or there
/// are none) the loss is 0 with zero gradient (PyTorch gives NaN, a documented difference).
/// Backward: dlogits[i, c] = dloss_i * (p[i, c] - (1 - eps) [c == y_i] - eps / C).
/// Throws DTypeError (logits not float, targets not int64), ShapeError (targets do not match
/// the logits without their class axis, no classes), IndexError (a target outside [0, C) that
/// is not ignore_index), ValueError (label_smoothing outside [0, 1]).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options = {});

/// PyTorch's `F.nll_loss`: log-probabilities [N, C] (or [N, C, d...], or [C]), int64 targets
/// [N] (or [N, d...], or 0-d): loss_i = -log_probs[i, y_i], 0 where y_i == ignore_index,
/// reduced as cross_entropy (Mean over targets not ignored; 0 when all are ignored). Throws as
/// cross_entropy; label_smoothing must be 0 (PyTorch's nll_loss has none): ValueError otherwise.
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, CrossEntropyOptions options = {});

/// Mean squared error (PyTorch's `F.mse_loss`): (input - target)^2 elementwise over two
/// same-shaped float tensors, reduced by `reduction`. Both inputs are differentiable:
/// dinput = 2 (input - target) * dloss, dtarget = -dinput. Unlike PyTorch, shapes must match
/// exactly (no broadcasting) and the mean of an empty tensor throws instead of giving NaN.
/// Throws ShapeError, DTypeError, ValueError.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace attograd

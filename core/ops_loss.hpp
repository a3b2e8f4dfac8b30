// Losses: cross-entropy over class logits, negative log-likelihood, mean squared error.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// How a loss reduces over elements (PyTorch's `reduction`).
enum class Reduction { Mean, Sum, None };

/// Options of cross_entropy and nll_loss, with PyTorch's defaults.
struct CrossEntropyOptions {
    Reduction reduction = Reduction::Mean;
    std::int64_t ignore_index = -100;  ///< targets equal to this contribute nothing
    double label_smoothing = 0.0;      ///< in [0, 1]; mixes the target with the uniform distribution
};

/// PyTorch's `F.cross_entropy` with class-index targets: logits [N, C] (or [N, C, d...]),
/// int64 targets [N] (or [N, d...]) -> scalar (Mean/Sum) or [N] / [N, d...] (None). Uses
/// log-sum-exp: finite for logits of magnitude 1e8. Mean divides by the number of targets
/// not ignored; when every target is ignored the loss is 0 with zero gradient (PyTorch gives
/// NaN, a documented difference). Throws ShapeError, DTypeError, IndexError (target outside [0, C)), ValueError.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options = {});
/// PyTorch's `F.nll_loss`: log-probabilities [N, C] (or [N, C, d...]), int64 targets.
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, CrossEntropyOptions options = {});
/// Mean squared error (PyTorch's `F.mse_loss`): same-shaped input and target.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace attograd

// Hard attention: one key per query, sampled while training (two estimators), argmax in eval.
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"

#include <string_view>

namespace attograd::nn {

/// How hard attention is trained (it picks one key, which has no gradient of its own).
/// - GumbelStraightThrough (Jang, Gu & Poole 2017, "Categorical Reparameterization with
///   Gumbel-Softmax", §2 and the straight-through variant of §3.1): the key is
///   argmax(scores + g), g ~ Gumbel(0, 1), an exact sample from softmax(scores) (the Gumbel-max
///   trick); the forward uses the one-hot of that key and the backward the gradient of
///   y = softmax((scores + g) / temperature).
/// - Reinforce (Williams 1992; Xu et al. 2015, "Show, Attend and Tell", §4.1): the key is
///   sampled from softmax(scores); the value path gets its ordinary gradient, and the scores
///   learn from the score-function estimator (reward - baseline) * grad log p(key), which the
///   caller adds to its loss through reinforce_loss() with a moving-average baseline.
enum class HardEstimator { GumbelStraightThrough, Reinforce };

/// Parses "gumbel" / "gumbel-st" or "reinforce". Throws ValueError listing the choices.
HardEstimator parse_hard_estimator(std::string_view name);
/// "gumbel-st" or "reinforce".
std::string_view to_string(HardEstimator estimator);

/// Weights of hard attention.
struct HardAttention {
    /// One-hot over the last axis [..., n]: exactly one 1 per row, or an all-zero row when every
    /// key of the row is masked (-inf). Carries the estimator's gradient (Gumbel straight-through)
    /// or none (eval, REINFORCE).
    Tensor weights;
    /// REINFORCE while training: log p(chosen key) [...] under softmax(scores), differentiable
    /// into the scores; 0 for fully masked rows. Undefined otherwise.
    Tensor log_prob;
};

/// Hard attention over the last axis of `scores` [..., n] (-inf = masked key). In training the
/// key is sampled with `generator` and trained by `estimator`; otherwise it is the argmax (the
/// first maximum). `temperature` (> 0) shapes the straight-through gradient only.
/// Throws ValueError (temperature <= 0, scores of rank 0 or holding NaN), DTypeError.
HardAttention hard_attention(const Tensor& scores, bool training, HardEstimator estimator, double temperature,
                             Generator& generator);

/// REINFORCE's surrogate loss: -sum((reward - baseline) * log_prob) / B, whose gradient is the
/// score-function estimator of Williams (1992) averaged over the batch. log_prob [B, Tq] from
/// hard_attention; reward [B] (one per sequence, shared by its queries) or [B, Tq], treated as
/// a constant (detached). Throws ShapeError / DTypeError.
Tensor reinforce_surrogate(const Tensor& log_prob, const Tensor& reward, double baseline);

/// The moving-average reward baseline of Xu et al. (2015, §4.1): b <- decay * b + (1 - decay) * mean(reward),
/// starting from the first batch's mean reward. Its state lives in two 0-d tensors that a module
/// registers as buffers (as PyTorch's BatchNorm keeps running_mean and num_batches_tracked), so
/// that a checkpoint holds it and a resumed run continues with the same baseline.
class RewardBaseline {
public:
    /// A baseline with `decay` in [0, 1) (ValueError otherwise).
    explicit RewardBaseline(double decay = 0.9);
    /// The current baseline (0 before the first update).
    double value() const { return value_.item(); }
    /// The baseline to use for a batch of rewards: the current value, or the batch's own mean
    /// reward before the first update.
    double baseline_for(const Tensor& reward) const;
    /// Folds in a batch of rewards (any shape); returns the updated baseline.
    double update(const Tensor& reward);
    /// The baseline, a float64 0-d tensor (a buffer: loading a state_dict into it sets it).
    const Tensor& value_buffer() const { return value_; }
    /// The number of update() calls so far, an int64 0-d tensor (0: not started).
    const Tensor& updates_buffer() const { return updates_; }

private:
    double decay_;
    Tensor value_, updates_;
};

}  // namespace attograd::nn

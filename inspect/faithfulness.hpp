// Faithfulness of attention as explanation: does a head's attention agree with other importance
// measures, and does the output depend on it? (Jain & Wallace 2019; Serrano & Smith 2019;
// Wiegreffe & Pinter 2019.)
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"
#include "nn/module.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attograd::inspect {

/// The model under study, as the measures see it.
/// - `model`: the module tree holding the attention layers (for naming them).
/// - `probabilities`: runs the model on a batch of inputs [B, T, E] (e.g. token embeddings; the
///   gradient measure differentiates with respect to them) and returns the output distribution
///   of the explained position [B, C] (rows sum to 1), differentiably. It must depend on the
///   inputs only through a forward pass in which each attention layer runs once.
/// - `query`: the query row of each head that explains that output (e.g. the output position
///   in a self-attention model; 0 for a single-query classifier attention).
/// The measures intervene on that query row of one head only (the head's other rows and every
/// other head keep their own weights) through AttentionIntervention.
struct ExplainedModel {
    const nn::Module* model = nullptr;  ///< the module tree holding the attention layers
    /// Inputs [B, T, E] -> output distribution [B, C], differentiable.
    std::function<Tensor(const Tensor& inputs)> probabilities{};
    std::int64_t query = 0;  ///< the head's query row that explains the output
};

/// How far a row of `probabilities` may sum from 1 (float32 softmax over many classes stays well
/// within it).
inline constexpr double probability_tolerance = 1e-4;

/// Checks that `y` [B, C] is what ExplainedModel::probabilities must return: finite values >= 0,
/// each row summing to 1 within probability_tolerance (logits or NaN would give the measures
/// numbers that mean nothing). Throws ShapeError when `y` is not 2-d, ValueError naming `op`,
/// the shape and the first row at fault otherwise. Every measure checks the model's output so.
void check_probabilities(const Tensor& y, const char* op);

/// One head of one attention layer.
struct HeadId {
    std::string layer{};    ///< the layer's dotted name under the model ("" for the root)
    std::int64_t head = 0;  ///< in [0, num_heads)
};

/// What one head attends with, and what the model outputs, for a batch of B examples (float64).
struct HeadObservation {
    std::vector<std::vector<double>> weights;  ///< [B][Tk]: the head's row `query`
    std::vector<std::vector<bool>> allowed;    ///< [B][Tk]: the keys not masked
    std::vector<std::vector<double>> output;   ///< [B][C]: the output distribution
};

/// Runs the model once on `inputs` [B, T, E] and reads the head's row `query`. Throws ValueError
/// when the model is null or has no attention layer, the head is not one of its heads (as
/// AttentionIntervention), the head's layer does not run, `query` is outside [0, Tq); ShapeError
/// when the output is not [B, C].
HeadObservation observe_head(const ExplainedModel& m, const Tensor& inputs, const HeadId& head);

/// The output distributions [B', C] when the head's row `query` attends with `rows` [B', Tk]
/// instead (one row per copy of `inputs` [B', T, E]); the rows must be distributions over the
/// allowed keys (as AttentionIntervention checks).
std::vector<std::vector<double>> output_with_rows(const ExplainedModel& m, const Tensor& inputs,
                                                  const HeadId& head,
                                                  const std::vector<std::vector<double>>& rows);

/// Importance of each key to the output by gradient, the attention held fixed (Jain & Wallace 2019
/// §4.1: the gradient flows through the values, every attention layer's weights detached):
/// g_s = |sum_e x[s, e] d y / d x[s, e]|, y = the probability of the predicted class, x the
/// inputs (input positions are the head's keys: Tk = T). Returns [B][T]. Local-p layers keep the
/// gradient through their Gaussian factor's centre p_t (only the normalised weights are held).
/// Throws ShapeError when the head's Tk differs from T, ValueError when the output does not depend
/// on the inputs.
std::vector<std::vector<double>> gradient_importance(const ExplainedModel& m, const Tensor& inputs,
                                                     const HeadId& head);

/// Importance of each key by leave-one-out (Jain & Wallace 2019 §4.1): TVD(y, y_{-s}) between the
/// output with the head's row and with key s removed from it (its weight zeroed, the others
/// renormalised). Returns [B][Tk]; masked keys, and the only allowed key of a row, get NaN.
std::vector<std::vector<double>> leave_one_out(const ExplainedModel& m, const Tensor& inputs,
                                               const HeadId& head);

/// Kendall tau-b between the head's weights and an importance over the allowed keys of each
/// example (NaN importances skipped); nullopt where undefined (see kendall_tau_b).
std::vector<std::optional<double>> attention_agreement(const HeadObservation& observed,
                                                       const std::vector<std::vector<double>>& importance);

/// Permuting the head's weights (Jain & Wallace 2019 §4.2, Algorithm 2): N random permutations of
/// each example's row over its allowed keys; the TVD of the output from the original per
/// permutation, their median and interquartile range (quantile, linear), against the row's max
/// weight.
struct PermutationResult {
    std::vector<double> tvd;  ///< the N TVDs
    /// median and interquartile range of the TVDs; the row's largest weight
    /// @{
    double median = 0, iqr = 0, max_weight = 0;
    /// @}
};
/// One result per example of `inputs` [B, T, E]. Throws ValueError when n < 1 (naming n).
std::vector<PermutationResult> permutation_test(const ExplainedModel& m, const Tensor& inputs,
                                                const HeadId& head, std::int64_t n, Generator& generator);

/// Options of adversarial_attention.
struct AdversarialOptions {
    double epsilon = 0.01;       ///< the largest TVD of the output allowed, in (0, 1)
    std::int64_t steps = 300;    ///< Adam steps (>= 1)
    double learning_rate = 0.3;  ///< Adam's step size (finite, > 0)
    double penalty = 100.0;      ///< lambda of the TVD constraint's hinge (finite, > 0)
    std::uint64_t seed = 0;      ///< the starting logits' noise
};
/// Throws ValueError naming `op` and the option when one is out of its range or not finite
/// (epsilon in (0, 1), steps >= 1, learning_rate and penalty finite and > 0).
void check_options(const AdversarialOptions& options, const char* op);

/// The adversarial weights of one example and their divergence.
struct AdversarialResult {
    std::vector<double> weights;  ///< [Tk], the feasible weights farthest found (the head's own if none)
    double jsd = 0;               ///< JSD(weights, own), the epsilon-max JSD found
    double tvd = 0;               ///< TVD of the output with `weights` (<= epsilon)
};
/// Adversarial attention (Jain & Wallace 2019 §4.2.1, eq. 2): the weights alpha farthest from the
/// head's own alpha0, max JSD(alpha, alpha0) subject to TVD(y(alpha), y(alpha0)) <= epsilon,
/// searched by gradient ascent through the intervention on alpha = softmax(z) over the allowed
/// keys, maximising JSD(alpha, alpha0) - penalty * max(0, TVD - epsilon) with Adam (Kingma & Ba
/// 2015), z starting at log alpha0 plus N(0, 1) noise; the feasible iterate of largest JSD is
/// kept. Throws ValueError naming an option out of range (check_options).
std::vector<AdversarialResult> adversarial_attention(const ExplainedModel& m, const Tensor& inputs,
                                                     const HeadId& head,
                                                     const AdversarialOptions& options = {});

/// Erasure (Serrano & Smith 2019 §3-4): the top-weighted key removed (weight zeroed, the rest
/// renormalised) against a random allowed key, by JSD of the outputs and whether the decision
/// (argmax) flips; and, for rankings by attention, gradient, attention x gradient and at random,
/// the fraction k / n of the n allowed keys removed, top first, before the decision flips
/// (nullopt when it does not flip with n - 1 removed).
struct ErasureResult {
    /// JSD of the output with the top-weighted key, or a random allowed key, removed
    /// @{
    double jsd_top = 0, jsd_random = 0;
    /// @}
    /// whether the decision flips with that key removed
    /// @{
    bool flip_top = false, flip_random = false;
    /// @}
    /// fraction of keys removed, by each ranking, before the decision flips
    /// @{
    std::optional<double> fraction_attention{}, fraction_gradient{}, fraction_product{}, fraction_random{};
    /// @}
};
/// One result per example. Rows with one allowed key get no removal (jsd 0, no flip, nullopt).
std::vector<ErasureResult> erasure(const ExplainedModel& m, const Tensor& inputs, const HeadId& head,
                                   Generator& generator);

}  // namespace attograd::inspect

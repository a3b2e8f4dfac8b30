// Single-head attention: any score, soft / sparse / hard weights, global or local (Luong) windows.
#pragma once

#include "core/generator.hpp"
#include "nn/attention_mask.hpp"
#include "nn/attention_scores.hpp"
#include "nn/hard_attention.hpp"
#include "nn/local_window.hpp"
#include "nn/module.hpp"
#include "nn/scoring_options.hpp"

#include <memory>
#include <string_view>
#include <vector>

namespace attograd::nn {

class Linear;

/// How scores become weights over the keys.
/// - Soft: softmax (Bahdanau et al. 2015); every allowed key gets a positive weight.
/// - Sparse: sparsemax (Martins & Astudillo 2016); low-scoring keys get exactly 0.
/// - Hard: one key per query (Xu et al. 2015 "hard" attention): sampled while training, argmax
///   in eval; trained by the HardEstimator chosen in the options.
enum class Normalizer { Soft, Sparse, Hard };

/// Parses "soft", "sparse" (or "sparsemax") or "hard". Throws ValueError listing the choices.
Normalizer parse_normalizer(std::string_view name);
/// "soft", "sparse" or "hard".
std::string_view to_string(Normalizer normalizer);

/// Options of Attention. Widths of 0 default as noted; the others take PyTorch-like defaults.
struct AttentionOptions {
    std::int64_t query_dim = 0;  ///< Dq, width of the query input (> 0)
    std::int64_t key_dim = 0;    ///< Dk, width of the key input; 0 = query_dim
    std::int64_t value_dim = 0;  ///< Dv, width of the value input; 0 = key_dim
    /// The score s(key, query), global or local attention and its window D. positional must be
    /// None (relative positions are MultiHeadAttention's).
    ScoringOptions scoring{};
    /// H: hidden width of the additive score and of local-p's position predictor; 0 = the
    /// (projected) query width.
    std::int64_t hidden = 0;
    /// Learned projections (nn::Linear, named q_proj / k_proj / v_proj) applied to the query,
    /// key and value inputs before scoring; each maps its input to embed_dim.
    bool project_query = false;
    bool project_key = false;                  ///< learn k_proj (see project_query)
    bool project_value = false;                ///< learn v_proj (see project_query)
    std::int64_t embed_dim = 0;                ///< output width of the projections; 0 = query_dim
    bool bias = true;                          ///< whether the projections learn a bias
    Normalizer normalizer = Normalizer::Soft;  ///< softmax, sparsemax or hard weights
    HardEstimator estimator = HardEstimator::GumbelStraightThrough;  ///< hard attention's training
    double temperature = 1.0;     ///< Gumbel-softmax temperature (> 0) of the straight-through gradient
    double baseline_decay = 0.9;  ///< REINFORCE's moving-average baseline decay, in [0, 1)
    double dropout = 0.0;         ///< dropout on the weights while training, in [0, 1]
    /// Parameter dtype (float32 or float64), as MultiHeadAttentionOptions. Inputs must match it
    /// when the layer has parameters (a parameter-free layer computes in its inputs' dtype).
    DType dtype = DType::Float32;
};

/// What Attention::forward returns.
struct AttentionOutput {
    /// [B, Tq, Dv'] with Dv' the value width after projection.
    Tensor output;
    /// [B, Tq, Tk] ([B, 1, Tq, Tk] with average_attn_weights = false, as MultiHeadAttention's
    /// per-head weights), the normalised weights BEFORE dropout (PyTorch's MultiheadAttention returns
    /// them after dropout; here they are the distribution the layer attended with, which is what
    /// inspection wants). For local attention every entry outside a query's window is exactly 0;
    /// local-p's weights include the Gaussian factor. Undefined unless need_weights.
    Tensor weights;
    /// Local attention only: the band [B, Tq, 2D + 1] (2 (Tk - 1) + 1 when D >= Tk) (slot j of query t is key
    /// window_start + j; slots outside [0, Tk) hold 0) and the int64 window starts [B, Tq].
    Tensor band_weights;
    Tensor window_start;  ///< int64 [B, Tq], local attention only (see band_weights)
    /// Local-p only: the predicted real centres p_t [B, Tq].
    Tensor centre;
    /// Hard attention with REINFORCE while training: log p(chosen key) [B, Tq], for reinforce_loss().
    Tensor log_prob;
};

/// Single-head attention (Bahdanau et al. 2015; Luong et al. 2015): scores s(key, query) with any
/// Score (nn/attention_scores.hpp), normalised over the keys into weights, which average the
/// values. Forms:
/// - key-value: forward(query [B, Tq, Dq], key [B, Tk, Dk], value [B, Tk, Dv]);
/// - plain: forward(query, inputs [B, Tk, Dk]) uses the inputs as keys and values (Dv = Dk).
/// Self-attention with the dot or scaled-dot score needs the projections (project_query /
/// project_key / project_value): without them every position scores h_t . h_s and mostly
/// attends to itself. Pass the arguments by type, `forward(x, x, AttentionArgs{...})`: a bare
/// `{}` is ambiguous between the two forms.
///
/// Global attention scores every key. Local attention (Luong, Pham & Manning 2015, §3.2) scores
/// only the window [c_t - D, c_t + D] of each query, clipped to the keys, computing only that
/// band (time and memory linear in Tq * (2D + 1), never a [Tq, Tk] matrix):
/// - local-m: c_t = floor(t * Tk / Tq) (= t when the lengths agree);
/// - local-p: p_t = Tk * sigmoid(v_p^T tanh(W_p q_t)) (parameters "W_p" [H, Dq'], "v_p" [H], q_t
///   the projected query), c_t = min(floor(p_t + 1/2), Tk - 1), the key nearest p_t; the weights
///   are multiplied by exp(-(s - p_t)^2 / (2 sigma^2)), sigma = D / 2, and NOT renormalised
///   (as in the paper); the gradient reaches p_t, hence W_p and v_p, through this factor only
///   (the rounding to c_t is piecewise constant). With hard attention the factor multiplies the
///   sampling distribution instead (its log is added to the scores), so one key still gets
///   weight 1, and p_t learns through the estimator.
///
/// Arguments (AttentionArgs, MultiHeadAttention's and PyTorch's, masks with their semantics:
/// bool true = not allowed, float masks added): attn_mask [Tq, Tk] or [B, Tq, Tk],
/// key_padding_mask [B, Tk], is_causal, need_weights, average_attn_weights. Local attention
/// applies them inside the band. A query whose keys are all masked gets zero weights and a zero
/// output (PyTorch gives NaN), with finite gradients everywhere, on every path.
///
/// Parameters: "q_proj.*", "k_proj.*", "v_proj.*" (when projecting; nn::Linear's weight and bias),
/// "score.*" (the score's W, U, v), "W_p", "v_p" (local-p).
/// train() samples hard attention and enables dropout; eval() takes the argmax and disables it.
class Attention : public Module {
public:
    /// Draws the initial parameters from `generator`, which must outlive the module: dropout and
    /// hard attention's sampling draw from it too. Throws ValueError (bad widths, window < 0,
    /// local-p with window 0, dropout outside [0, 1], temperature <= 0, decay outside [0, 1)) and
    /// ShapeError (dot / scaled-dot score with different query and key widths), ResourceError
    /// naming the widths when a projection or score parameter would be too large.
    explicit Attention(AttentionOptions options, Generator& generator = default_generator());
    ~Attention() override;

    /// Key-value attention: query [B, Tq, Dq], key [B, Tk, Dk], value [B, Tk, Dv] -> output
    /// [B, Tq, Dv'] and, when args.need_weights, weights [B, Tq, Tk] (see AttentionOutput::weights). Reports
    /// the weights to an active AttentionRecorder. Throws ShapeError naming the shapes (wrong ranks, widths,
    /// batch or key counts, Tk = 0), DTypeError (inputs' dtypes differ from the parameters'),
    /// and the errors of check_attention_masks for bad masks. Unbatched inputs (as PyTorch's
    /// attention layers take them): query [Tq, Dq], key [Tk, Dk], value [Tk, Dv] with
    /// key_padding_mask [Tk] -> output [Tq, Dv'], weights [Tq, Tk] (every AttentionOutput field
    /// loses its batch dimension).
    AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                            const AttentionArgs& args = {}) const;
    /// Plain attention: keys = values = inputs [B, Tk, Dk].
    AttentionOutput forward(const Tensor& query, const Tensor& inputs, const AttentionArgs& args = {}) const;

    /// REINFORCE's surrogate loss for hard attention (Williams 1992; Xu et al. 2015 §4.1): add it
    /// to the task loss. log_prob [B, Tq] from forward's output (defined only in training mode);
    /// reward [B] or [B, Tq] of log_prob's dtype (higher is better, e.g. minus the per-token or
    /// per-sequence loss; treated as a constant). Uses, then updates, the moving-average baseline
    /// (the first call starts it at that batch's mean reward), hence not const. For example:
    ///     Tensor per_token = reshape(cross_entropy(logits, y, {.reduction = Reduction::None}), {B, T});
    ///     Tensor loss = mean(per_token) + attention.reinforce_loss(out.log_prob, -per_token.detach());
    /// Throws ValueError when the layer is not hard attention with REINFORCE or log_prob is
    /// undefined, ShapeError on bad shapes, DTypeError when the dtypes differ.
    Tensor reinforce_loss(const Tensor& log_prob, const Tensor& reward);
    /// The current REINFORCE baseline. With hard attention and REINFORCE it is training state in
    /// the state_dict: buffers "reward_baseline" (float64 0-d) and "reward_baseline_updates"
    /// (int64 0-d, 0 = unset), as PyTorch's BatchNorm keeps running_mean / num_batches_tracked.
    double reward_baseline() const { return baseline_.value(); }

    std::string type_name() const override { return "Attention"; }
    std::string extra_repr() const override;

    const AttentionOptions& options() const { return options_; }  ///< the options it was built with
    /// The score module (registered as "score").
    const AttentionScore& score() const { return *score_; }

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }
    /// Refuses a negative "reward_baseline_updates" (ValueError naming the key): it counts updates.
    void check_loaded_state(const StateDict& state, const std::string& prefix) const override;

private:
    struct Normalised {
        Tensor weights, log_prob;
    };
    Normalised normalise(const Tensor& scores) const;
    AttentionOutput forward_global(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const AttentionMasks& masks, bool need_weights) const;
    AttentionOutput forward_local(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionMasks& masks, bool need_weights) const;
    Tensor attention_dropout(const Tensor& weights) const;

    AttentionOptions options_;
    bool has_parameters_ = false;  // whether inputs must match options_.dtype
    Generator* generator_;
    std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_;
    std::shared_ptr<AttentionScore> score_;
    Tensor W_p_, v_p_;
    RewardBaseline baseline_;
};

/// The REINFORCE log-probabilities of the hard attentions that ran in one forward pass, each
/// with the Attention whose baseline it uses. Layers composing Attention collect them (the
/// Transformer layers with LayerAttention::Single, through their args' `reinforce` pointer), so
/// a caller trains every such layer with one call:
///     nn::ReinforceTrace trace;
///     Tensor h = decoder.forward(tgt, memory, {.memory_key_padding_mask = pad, .reinforce = &trace});
///     Tensor loss = task_loss + trace.loss(-per_sequence_loss.detach());
struct ReinforceTrace {
    /// One hard-attention layer's forward.
    struct Entry {
        Attention* attention = nullptr;  ///< the layer (not owned; must outlive the trace)
        Tensor log_prob{};               ///< log p(chosen key) [B, Tq] from its forward
    };
    std::vector<Entry> entries{};  ///< in forward order

    /// True when no hard attention with REINFORCE ran (eval mode, or none in the model).
    bool empty() const { return entries.empty(); }
    /// Sum over the entries of attention->reinforce_loss(log_prob, reward) (each layer's own
    /// baseline used, then updated); undefined when empty. reward [B] or [B, Tq] as
    /// Attention::reinforce_loss takes it, and throws as it does.
    Tensor loss(const Tensor& reward) const;
};

}  // namespace attograd::nn

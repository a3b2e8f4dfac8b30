// Fused scaled-dot-product attention: scores, mask, softmax, dropout and the weighted sum of
// values in one op with a hand-written backward, for three memory layouts of the heads.
#pragma once

#include "core/generator.hpp"
#include "core/tensor.hpp"

#include <string_view>

#include <optional>

namespace attograd {

/// Options of the fused scaled-dot-product attention ("sdpa") ops: PyTorch's
/// `F.scaled_dot_product_attention` arguments.
struct SdpaOptions {
    /// Float mask added to the scores, broadcastable to [B, h, Tq, Tk] (rank <= 4; -inf where
    /// attention is not allowed). Must have the dtype of q. Undefined = no mask. It receives no
    /// gradient: a mask that requires grad is rejected.
    Tensor attn_mask{};
    /// Factor on q k^T; default 1 / sqrt(d). Use 1 for the plain dot score.
    std::optional<double> scale{};
    /// Dropout probability on the attention weights (inverted dropout, applied while `training`).
    double dropout_p = 0.0;
    /// Dropout is active only while training.
    bool training = false;
    /// Source of the dropout masks; default_generator() when null.
    Generator* generator = nullptr;
    /// Return the weights. When false, SdpaResult::weights is undefined and long sequences run
    /// a flash-style kernel (Dao et al. 2022: key tiles, online softmax, log-sum-exp saved for
    /// backward) whose memory grows as T * d, not T^2.
    bool need_weights = true;
};

/// The two results of a fused attention op.
struct SdpaResult {
    Tensor output;   ///< the weighted sum of values
    Tensor weights;  ///< [B, h, Tq, Tk] softmax weights, before dropout (rows sum to 1 or are 0);
                     ///< undefined unless SdpaOptions::need_weights
};

/// Checks that a float additive mask holds only finite values and -inf (masked): NaN or +inf
/// would make every weight of its row NaN. Throws ValueError "`op`: `name` holds nan at index i
/// ..." naming the first bad element (flat index); undefined and non-float masks pass.
void check_additive_mask(const Tensor& mask, std::string_view name, std::string_view op);

/// Scaled dot-product attention (Vaswani et al. 2017, eq. 1):
/// `weights = softmax(scale * q k^T + attn_mask)`, `output = dropout(weights) v`, per batch and
/// head: q [B, h, Tq, d], k [B, h, Tk, d], v [B, h, Tk, dv] -> output [B, h, Tq, dv], weights
/// [B, h, Tq, Tk]. A row whose scores are all -inf (every key masked) gets zero weights and a
/// zero output, with finite gradients (PyTorch gives NaN). The returned weights are taken
/// before dropout (PyTorch's MultiheadAttention returns them after). Both results are
/// differentiable; each (batch, head) is a few Eigen GEMMs, run in parallel over B * h.
/// Backward: dV = Pd^T dO, dPd = dO V^T, dP = dPd * M / (1 - p) (+ dweights),
/// dS = P * (dP - rowsum(dP * P)), dQ = scale dS K, dK = scale dS^T Q.
/// Throws ShapeError (ranks, sizes or a mask that does not broadcast, with the shapes),
/// DTypeError (not float, dtypes differ), ValueError (dropout_p outside [0, 1], scale not
/// finite, a mask that requires grad, a mask holding NaN or +inf: check_additive_mask).
SdpaResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const SdpaOptions& options = {});

/// The same attention with the heads side by side in the last dimension, the layout a
/// projection produces and multi-head attention's output projection consumes (no head split or
/// merge copies): q [B, Tq, h * d], k [B, Tk, h * d], v [B, Tk, h * dv] -> output
/// [B, Tq, h * dv] (heads concatenated as in PyTorch), weights [B, h, Tq, Tk]. Head i reads
/// columns [i * d, (i + 1) * d). Throws as scaled_dot_product_attention, and ValueError when
/// `num_heads` < 1 or does not divide the widths.
SdpaResult scaled_dot_product_attention_heads(const Tensor& q, const Tensor& k, const Tensor& v,
                                              std::int64_t num_heads, const SdpaOptions& options = {});

/// Self-attention on one packed projection: qkv [B, T, 3 * h * d] holds q, k and v side by side
/// (PyTorch's `in_proj` layout: the first third is q) -> output [B, T, h * d], weights
/// [B, h, T, T]. Its gradient is one tensor of qkv's shape. Throws as
/// scaled_dot_product_attention_heads, and ShapeError when the width is not a multiple of 3.
SdpaResult scaled_dot_product_attention_packed(const Tensor& qkv, std::int64_t num_heads,
                                               const SdpaOptions& options = {});

}  // namespace attograd

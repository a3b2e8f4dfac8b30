// Single-head attention: the local (Luong) path, computing only the band of 2D + 1 keys per query.
#include "core/error.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_local_attention.hpp"
#include "core/ops_local_sdpa.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_shape.hpp"
#include "nn/attention.hpp"
#include "nn/attention_intervention.hpp"
#include "nn/attention_recorder.hpp"

#include <cmath>

namespace attograd::nn {

AttentionOutput Attention::forward_local(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const AttentionMasks& masks, bool need_weights) const {
    const std::int64_t batch = q.size(0), tq = q.size(1), tk = k.size(1);
    // The band: 2 d + 1 slots (d = D unless D >= Tk); the Gaussian uses D itself.
    const std::int64_t d = band_half_width(options_.scoring.window, tk), width = 2 * d + 1;
    const bool predictive = options_.scoring.local == LocalMode::Predictive;
    AttentionOutput out;
    if (predictive) {
        // p_t = Tk * sigmoid(v_p^T tanh(W_p q_t)): [B, Tq, Dq'] -> [B, Tq, H] -> [B, Tq]
        const Tensor hidden = tanh(matmul(q, transpose(W_p_, 0, 1)));
        out.centre =
            reshape(sigmoid(matmul(hidden, reshape(v_p_, {-1, 1}))), {batch, tq}) * static_cast<double>(tk);
        out.window_start = predictive_window_start(out.centre, tk, d);
    } else {
        out.window_start = monotonic_window_start(batch, tq, tk, d);
    }
    const Tensor& start = out.window_start;
    const double sigma = static_cast<double>(options_.scoring.window) / 2.0;
    const bool dot_score = options_.scoring.score == Score::Dot || options_.scoring.score == Score::ScaledDot;
    // Replaced weights need the band's own weights and its mask: the unfused path below.
    const std::vector<HeadIntervention>* heads = head_interventions(this);
    const bool replacing = replaces_weights(heads);
    if (dot_score && options_.normalizer == Normalizer::Soft && (options_.dropout == 0 || !is_training()) &&
        !replacing) {
        // One fused op over the band (core/ops_local_sdpa.hpp), the same weights as below.
        const LocalSdpaOptions fused{
            .band_mask =
                masks.empty() ? Tensor() : local_band_mask(masks, start, width, tk, q.dtype(), "Attention"),
            .factor = predictive ? gaussian_window(out.centre, start, width, sigma) : Tensor(),
            .scale = options_.scoring.score == Score::Dot
                         ? 1.0
                         : 1.0 / std::sqrt(static_cast<double>(score_->key_dim()))};
        SdpaResult r = local_scaled_dot_product_attention_heads(q, k, v, 1, start, width, fused);
        out.output = r.output;
        out.band_weights = r.weights;
        if (need_weights || attention_recording())
            out.weights = local_band_to_dense(out.band_weights, start, tk);
        return out;
    }
    // [B, Tq, 2D + 1] scores, -inf in slots outside the keys or masked
    Tensor scores = score_->forward_local(q, k, start, width) +
                    local_band_mask(masks, start, width, tk, q.dtype(), "Attention");
    const bool hard = options_.normalizer == Normalizer::Hard;
    // Hard attention samples from softmax(scores) * gaussian, i.e. adds the log-Gaussian to the scores.
    if (predictive && hard) scores = scores + log(gaussian_window(out.centre, start, width, sigma));
    Normalised n = normalise(scores);
    // local-p's Gaussian multiplies the replacement as it does the head's own weights
    if (replacing)
        n.weights = replace_band_weights(*heads, n.weights, scores, start, tk, {.first = 0, .total = tq});
    out.band_weights =
        predictive && !hard ? n.weights * gaussian_window(out.centre, start, width, sigma) : n.weights;
    out.log_prob = n.log_prob;
    // [B, Tq, Dv]; the weights used by an intervention get no dropout
    out.output =
        local_weighted_sum(replacing ? out.band_weights : attention_dropout(out.band_weights), v, start);
    if (need_weights || attention_recording()) out.weights = local_band_to_dense(out.band_weights, start, tk);
    return out;
}

}  // namespace attograd::nn

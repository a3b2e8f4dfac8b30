// MultiHeadAttention's paths beyond the global fused kernel: additive / bilinear scores, and
// local attention (the fused banded op for dot scores, core/ops_local_sdpa.hpp; otherwise each
// head a sequence of its own, [B * h, T, E / h], for the score modules and banded kernels).
#include "core/ops.hpp"
#include "core/ops_local_attention.hpp"
#include "core/ops_local_sdpa.hpp"
#include "nn/attention_intervention.hpp"
#include "nn/multihead_attention.hpp"

#include <cstring>

namespace attograd::nn {
namespace {

constexpr const char* kOp = "MultiHeadAttention";

// [B, T, h * d] -> [B * h, T, d]: head i's columns as sequence b * h + i.
Tensor split_heads(const Tensor& x, std::int64_t heads) {
    const std::int64_t b = x.size(0), t = x.size(1), d = x.size(2) / heads;
    return reshape(permute(reshape(x, {b, t, heads, d}), {0, 2, 1, 3}), {b * heads, t, d});
}

// [B * h, T, d] -> [B, T, h * d], the inverse of split_heads.
Tensor merge_heads(const Tensor& x, std::int64_t heads) {
    const std::int64_t b = x.size(0) / heads, t = x.size(1), d = x.size(2);
    return reshape(permute(reshape(x, {b, heads, t, d}), {0, 2, 1, 3}), {b, t, heads * d});
}

// The masks of B sequences as masks of the B * h head sequences: key_padding_mask rows are
// repeated per head; a [B * h, Tq, Tk] attn_mask already is per head sequence.
AttentionMasks per_head(const AttentionMasks& masks, std::int64_t heads) {
    AttentionMasks out = masks;
    const Tensor& kpm = masks.key_padding_mask;
    if (kpm.defined()) {
        const std::int64_t b = kpm.size(0), tk = kpm.size(1);
        out.key_padding_mask = empty({b * heads, tk}, {.dtype = kpm.dtype()});
        const std::size_t row = static_cast<std::size_t>(tk) * dtype_size(kpm.dtype());
        const auto* src = static_cast<const char*>(kpm.raw_data());
        auto* dst = static_cast<char*>(out.key_padding_mask.raw_data());
        for (std::int64_t r = 0; r < b * heads; ++r)
            std::memcpy(dst + static_cast<std::size_t>(r) * row,
                        src + static_cast<std::size_t>(r / heads) * row, row);
    }
    return out;
}

}  // namespace

std::pair<Tensor, Tensor> MultiHeadAttention::attend_with_score(const Tensor& q, const Tensor& k,
                                                                const Tensor& v, const Tensor& mask) const {
    const std::int64_t b = q.size(0), tq = q.size(1), tk = k.size(1), h = options_.num_heads, d = head_dim();
    // scores [B, h, Tq, Tk'] from each head's queries and keys, masked, normalised over the keys
    Tensor scores = reshape(score_->forward(split_heads(q, h), split_heads(k, h)), {b, h, tq, tk});
    if (mask.defined()) scores = scores + mask;
    const Tensor weights = softmax(scores, -1);
    const Tensor dropped = dropout(weights, options_.dropout, is_training(), *generator_);
    const Tensor heads = matmul(dropped, reshape(split_heads(v, h), {b, h, tk, d}));  // [B, h, Tq, d]
    return {reshape(permute(heads, {0, 2, 1, 3}), {b, tq, h * d}), weights};
}

std::pair<Tensor, Tensor> MultiHeadAttention::attend_local(
    const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMasks& masks,
    bool dense_weights, const std::vector<HeadIntervention>* interventions) const {
    const auto& o = options_;
    const std::int64_t b = query.size(0), tq = query.size(1), tk = key.size(1), h = o.num_heads,
                       d = head_dim();
    const std::int64_t d_band = band_half_width(o.scoring.window, tk),
                       width = 2 * d_band + 1;  // D unless D >= Tk
    // The (scaled) dot score without active dropout runs fused, heads read in place; the other
    // scores (and dropout) go through the score module, a softmax and local_weighted_sum.
    // Replaced weights need the band's own weights and its mask: the unfused path.
    const bool replacing = replaces_weights(interventions);
    const bool fused = (o.scoring.score == Score::ScaledDot || o.scoring.score == Score::Dot) &&
                       !(is_training() && o.dropout > 0) && !replacing;
    const bool self = query.impl() == key.impl() && key.impl() == value.impl();
    Tensor q, k, v, qkv;  // q, k, v [B, T, E], or qkv [B, T, 3E] from one GEMM
    if (fused && self && packed_projection()) {
        qkv = linear(query, in_proj_weight_, in_proj_bias_);
        if (o.scoring.local == LocalMode::Predictive) q = narrow(qkv, 2, 0, o.embed_dim);
    } else {
        const auto projected = project(query, key, value);
        q = projected.q;
        k = projected.k;
        v = projected.v;
    }
    Tensor start, centre;  // window starts int64 [B h, Tq]; local-p's real centres p_t [B h, Tq]
    if (o.scoring.local == LocalMode::Predictive) {
        // p_t = Tk * sigmoid(v_p^T tanh(W_p q_t)) per head: [B, Tq, h, d] -> [B, Tq, h] -> [B h, Tq]
        const Tensor hidden = tanh(linear(reshape(q, {b, tq, h, d}), W_p_));
        const Tensor p = reshape(sigmoid(linear(hidden, reshape(v_p_, {1, -1}))), {b, tq, h});
        centre = reshape(permute(p, {0, 2, 1}), {b * h, tq}) * static_cast<double>(tk);
        start = predictive_window_start(centre, tk, d_band);
    } else {
        start = monotonic_window_start(b * h, tq, tk, d_band);
    }
    // RoPE after local-p's centres, which are predicted from the queries' content
    if (qkv.defined()) {
        qkv = rotate(qkv);
    } else {
        q = rotate(q);
        k = rotate(k);
    }
    // ALiBi within the band only: [B h, Tq, 2D + 1]
    const Tensor alibi =
        o.scoring.positional == Positional::ALiBi ? alibi_band(start, width, h, o.dtype) : Tensor();
    // local-p: the weights times the Gaussian exp(-(s - p_t)^2 / (2 sigma^2)), sigma = D / 2, not
    // renormalised
    const Tensor gaussian =
        centre.defined() ? gaussian_window(centre, start, width, static_cast<double>(o.scoring.window) / 2.0)
                         : Tensor();
    Tensor heads, band;  // [B, Tq, E] and the weights [B h, Tq, 2D + 1]
    if (fused) {
        Tensor band_mask =
            masks.empty() ? Tensor() : local_band_mask(per_head(masks, h), start, width, tk, o.dtype, kOp);
        if (alibi.defined()) band_mask = band_mask.defined() ? band_mask + alibi : alibi;
        const LocalSdpaOptions options{
            .band_mask = band_mask,
            .factor = gaussian,
            .scale = o.scoring.score == Score::Dot ? std::optional<double>(1.0) : std::nullopt};
        const SdpaResult r =
            qkv.defined() ? local_scaled_dot_product_attention_packed(qkv, h, start, width, options)
                          : local_scaled_dot_product_attention_heads(q, k, v, h, start, width, options);
        heads = r.output;
        band = r.weights;
    } else {
        const Tensor qh = split_heads(q, h), kh = split_heads(k, h), vh = split_heads(v, h);  // [B h, T, d]
        // the band [B h, Tq, 2D + 1]: -inf outside the keys and where masked
        Tensor scores = score_->forward_local(qh, kh, start, width) +
                        local_band_mask(per_head(masks, h), start, width, tk, o.dtype, kOp);
        if (alibi.defined()) scores = scores + alibi;
        band = softmax(scores, -1);
        // local-p's Gaussian multiplies the replacement as it does the head's own weights
        if (replacing)
            band = replace_band_weights(*interventions, band, scores, start, tk, {.first = 0, .total = tq});
        if (gaussian.defined()) band = band * gaussian;
        // the weights used by an intervention get no dropout
        const Tensor used = replacing ? band : dropout(band, o.dropout, is_training(), *generator_);
        heads = merge_heads(local_weighted_sum(used, vh, start), h);
    }
    Tensor weights;
    if (dense_weights) weights = reshape(local_band_to_dense(band, start, tk), {b, h, tq, tk});
    return {heads, weights};
}

}  // namespace attograd::nn

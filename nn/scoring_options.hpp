// ScoringOptions: how an attention layer scores its keys (score function, global or local
// window, relative positions), one group shared by every attention and Transformer option struct.
#pragma once

#include "nn/attention_scores.hpp"
#include "nn/local_window.hpp"
#include "nn/positional_bias.hpp"

#include <cstdint>

namespace attograd::nn {

/// How an attention layer turns a query and its keys into scores. AttentionOptions,
/// MultiHeadAttentionOptions, TransformerLayerOptions, TransformerOptions and LuongDecoderOptions
/// embed it as `.scoring`; the Transformer options hand it unchanged to every attention they
/// build. Defaults are PyTorch's MultiheadAttention (scaled dot, global, no relative positions).
/// For example:
///     nn::MultiHeadAttention mha({.embed_dim = 64, .num_heads = 4,
///                                 .scoring = {.local = nn::LocalMode::Monotonic, .window = 8}});
/// Which values a layer accepts is documented, and checked, by that layer's constructor.
struct ScoringOptions {
    /// The score s(key, query) (nn/attention_scores.hpp): ScaledDot (Vaswani et al. 2017, eq. 1;
    /// PyTorch's MultiheadAttention), Dot and Bilinear ("dot" and "general" of Luong, Pham &
    /// Manning 2015, §3.1), Additive (Bahdanau, Cho & Bengio 2015, eq. 6; Luong's "concat").
    Score score = Score::ScaledDot;
    /// Global attention over every key (None), or local attention over a window of 2D + 1 keys
    /// around a centre (Luong et al. 2015, §3.2; nn/local_window.hpp): local-m (Monotonic,
    /// p_t = t) or local-p (Predictive, p_t = S sigmoid(v_p^T tanh(W_p h_t)), eq. 9, with the
    /// Gaussian factor of eq. 10). Only the band is computed, never a [Tq, Tk] score matrix.
    LocalMode local = LocalMode::None;
    /// Local attention's D (Luong et al. 2015, §3.2): query t sees the keys [p_t - D, p_t + D],
    /// clipped to the sequence; local-p's Gaussian has sigma = D / 2. >= 0, and >= 1 for local-p.
    /// Ignored by global attention.
    std::int64_t window = 0;
    /// Relative positions inside the scores (nn/positional_bias.hpp): none, RoPE (Su et al. 2021,
    /// eq. 34: queries and keys rotated by their positions) or ALiBi (Press, Smith & Lewis 2022,
    /// §3: -m_h |t - s| added to head h's scores). MultiHeadAttention and the Transformer
    /// layers only: nn::Attention and LuongDecoder refuse anything but None.
    Positional positional = Positional::None;
    /// RoPE's base: theta_j = base^(-2j / d), d the head width (Su et al. 2021, eq. 15);
    /// finite and > 0. Used by Positional::Rotary only.
    double rope_base = 10000.0;
};

}  // namespace attograd::nn

// Local attention windows (Luong et al. 2015 §3.2): placement, masks inside the band, Gaussian factor.
#pragma once

#include "core/tensor.hpp"
#include "nn/attention_mask.hpp"

#include <algorithm>
#include <string_view>

namespace attograd::nn {

/// Where local attention centres each query's window of 2D + 1 keys (Luong, Pham & Manning
/// 2015, §3.2). None = global attention over every key.
/// - Monotonic ("local-m"): p_t = t when Tq == Tk; in general p_t = floor(t * Tk / Tq), so the
///   windows sweep the keys evenly when the lengths differ (the paper assumes aligned lengths).
/// - Predictive ("local-p"): p_t = Tk * sigmoid(v_p^T tanh(W_p q_t)) (the paper's eq. 9 with S =
///   Tk), a real number in (0, Tk); the weights are multiplied by exp(-(s - p_t)^2 / (2 sigma^2)),
///   sigma = D / 2 (eq. 10).
enum class LocalMode { None, Monotonic, Predictive };

/// Parses "none", "m" / "monotonic" / "local-m", "p" / "predictive" / "local-p".
/// Throws ValueError listing the choices.
LocalMode parse_local_mode(std::string_view name);
/// "none", "local-m" or "local-p".
std::string_view to_string(LocalMode mode);

/// The half-width of the band actually computed for window D over Tk keys: min(D, Tk - 1).
/// Every window centre lies in [0, Tk), so a wider band would only add slots outside the keys
/// (a huge D must not allocate a huge band); the Gaussian of local-p keeps sigma = D / 2.
inline std::int64_t band_half_width(std::int64_t window, std::int64_t tk) {
    return std::min(window, std::max<std::int64_t>(tk - 1, 0));
}

/// Window starts of local-m: int64 [B, Tq] with start = floor(t * Tk / Tq) - D (slots outside
/// [0, Tk) are clipped by masking). Throws ValueError when window < 0 or tk < 1.
Tensor monotonic_window_start(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t window);

/// Window starts of local-p from the real centres p [B, Tq]: the window is centred at the key
/// nearest p_t, c_t = min(floor(p_t + 1/2), Tk - 1), and starts at c_t - D. The rounding is
/// piecewise constant: no gradient flows through it (p_t learns through the Gaussian factor).
/// Throws DTypeError (p not float), ShapeError (p not 2-D), ValueError (window < 0, tk < 1).
Tensor predictive_window_start(const Tensor& p, std::int64_t tk, std::int64_t window);

/// The attention masks gathered into the band, as one additive mask [B, Tq, W] of `dtype`:
/// -inf in slots whose key lies outside [0, Tk), is padded (key_padding_mask true), is in the
/// future (is_causal and s > t) or is not allowed (bool attn_mask true); float masks' values are
/// added. attn_mask is [Tq, Tk] or [B, Tq, Tk] (one head); only its band entries are read.
/// Time and memory linear in Tq * W. Throws ShapeError / DTypeError as check_attention_masks,
/// prefixed with `op`.
Tensor local_band_mask(const AttentionMasks& masks, const Tensor& window_start, std::int64_t width,
                       std::int64_t tk, DType dtype, std::string_view op);

/// Luong's Gaussian factor over the band: g[b, t, j] = exp(-(s - p[b, t])^2 / (2 sigma^2)) with
/// s = window_start[b, t] + j. p [B, Tq] (float, differentiable) -> [B, Tq, W]; the gradient
/// reaches p through g: dg/dp = g (s - p) / sigma^2. Throws ValueError unless sigma > 0.
Tensor gaussian_window(const Tensor& p, const Tensor& window_start, std::int64_t width, double sigma);

}  // namespace attograd::nn

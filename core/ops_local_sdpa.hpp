// Fused local (banded) scaled-dot-product attention over heads side by side: scores, band mask,
// softmax, an optional factor on the weights and the weighted sum of values in one op.
#pragma once

#include "core/ops_attention.hpp"
#include "core/tensor.hpp"

#include <optional>

namespace attograd {

/// Options of the fused local attention ops.
struct LocalSdpaOptions {
    /// Additive float mask over the band, [B * h, Tq, W] of q's dtype: -inf where a slot is not
    /// allowed (masked, padded, in the future). Slots whose key lies outside [0, Tk) need no
    /// mask: they are never computed. Undefined = no mask. Receives no gradient.
    Tensor band_mask{};
    /// Multiplies the normalised weights after the softmax, [B * h, Tq, W] of q's dtype: local-p's
    /// Gaussian exp(-(s - p_t)^2 / (2 sigma^2)) (Luong et al. 2015, eq. 10; not renormalised).
    /// Differentiable. Undefined = none.
    Tensor factor{};
    /// Factor on q . k; default 1 / sqrt(d) (scaled dot). Use 1 for the plain dot score.
    std::optional<double> scale{};
};

/// Local attention (Luong, Pham & Manning 2015, §3.2) with the (scaled) dot score, fused: query t
/// of head sequence n = b * h + i sees the `width` keys from window_start[n, t] (clipped to
/// [0, Tk)); weights = softmax(scale * q . k + band_mask) * factor over those slots, output =
/// sum of weights times values. q [B, Tq, h * d], k [B, Tk, h * d], v [B, Tk, h * dv] (head i
/// at columns [i * d, (i + 1) * d), as a projection produces them), window_start int64
/// [B * h, Tq] -> output [B, Tq, h * dv], weights [B * h, Tq, W] (0 in slots outside the keys;
/// a row with every slot masked is all 0 and its output 0, with finite gradients). Only the
/// band is computed: time and memory linear in Tq * W (the products run as GEMMs over blocks
/// of 32 queries and the 32 + W - 1 keys they share, core/ops_local_sdpa.cpp). Same results as
/// local_dot_score, a masked softmax and local_weighted_sum per head, without splitting heads or storing
/// scores. Backward: dw = dO . v (+ dweights), dp = dw * factor, dfactor = dw * p, ds = p * (dp - sum(p *
/// dp)), dq = scale ds k, dk += scale ds q, dv += w dO. Throws ShapeError (ranks, widths, batch sizes,
/// window_start / mask / factor shapes, with the shapes), DTypeError (not float, dtypes differ, window_start
/// not int64), ValueError (num_heads not dividing the widths, width < 1, scale not finite, a mask that
/// requires grad, a band_mask holding NaN or +inf).
SdpaResult local_scaled_dot_product_attention_heads(const Tensor& q, const Tensor& k, const Tensor& v,
                                                    std::int64_t num_heads, const Tensor& window_start,
                                                    std::int64_t width, const LocalSdpaOptions& options = {});

/// The same on one packed self-attention projection: qkv [B, T, 3 * h * d] holds q, k and v side
/// by side (PyTorch's in_proj layout) -> output [B, T, h * d], weights [B * h, T, W]; its
/// gradient is one tensor of qkv's shape. Throws as above, and ShapeError when the width is not
/// a multiple of 3.
SdpaResult local_scaled_dot_product_attention_packed(const Tensor& qkv, std::int64_t num_heads,
                                                     const Tensor& window_start, std::int64_t width,
                                                     const LocalSdpaOptions& options = {});

}  // namespace attograd

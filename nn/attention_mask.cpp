// Attention masks: causal and padding mask helpers, validating attn_mask / key_padding_mask /
// is_causal and combining them.
#include "nn/attention_mask.hpp"

#include "core/error.hpp"
#include "core/ops_attention.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"

#include <algorithm>

#include <limits>

namespace attograd::nn {

Tensor causal_mask(std::int64_t size) {
    AG_CHECK(size >= 0, ValueError, "causal_mask: size must be >= 0, got {}", size);
    return triu(ones({size, size}, {.dtype = DType::Bool}), 1);
}

Tensor generate_square_subsequent_mask(std::int64_t size, DType dtype) {
    AG_CHECK(size >= 0, ValueError, "generate_square_subsequent_mask: size must be >= 0, got {}", size);
    AG_CHECK(is_floating(dtype), DTypeError, "generate_square_subsequent_mask: dtype must be float, got {}",
             dtype);
    return masked_fill(zeros({size, size}, {.dtype = dtype}), causal_mask(size),
                       -std::numeric_limits<double>::infinity());
}

Tensor lengths_to_padding_mask(const Tensor& lengths, std::int64_t max_len) {
    AG_CHECK(lengths.defined(), ValueError, "lengths_to_padding_mask: undefined lengths");
    AG_CHECK(lengths.dtype() == DType::Int64, DTypeError,
             "lengths_to_padding_mask: lengths must be int64, got {} {}", lengths.dtype(), lengths.shape());
    AG_CHECK(lengths.dim() == 1, ShapeError, "lengths_to_padding_mask: lengths must be [B], got {}",
             lengths.shape());
    const auto values = lengths.to_vector<std::int64_t>();
    const std::int64_t longest = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
    const std::int64_t t_max = max_len < 0 ? std::max<std::int64_t>(longest, 0) : max_len;
    const auto batch = static_cast<std::int64_t>(values.size());
    Tensor mask = empty({batch, t_max}, {.dtype = DType::Bool});
    bool* pm = mask.data<bool>();
    for (std::int64_t b = 0; b < batch; ++b) {
        const std::int64_t len = values[static_cast<std::size_t>(b)];
        AG_CHECK(len >= 0 && len <= t_max, ValueError,
                 "lengths_to_padding_mask: length {} of sequence {} is outside [0, {}]", len, b, t_max);
        for (std::int64_t t = 0; t < t_max; ++t) pm[b * t_max + t] = t >= len;
    }
    return mask;
}

void check_float_mask(const Tensor& mask, std::string_view name, DType dtype, std::string_view op) {
    if (!mask.defined() || !is_floating(mask.dtype())) return;
    AG_CHECK(mask.dtype() == dtype, DTypeError,
             "{}: {} is {} but the layer computes in {}: expected {} dtype to be bool or float to match "
             "the query dtype {}",
             op, name, mask.dtype(), dtype, name, dtype);
    check_additive_mask(mask, name, op);
}

void check_attn_mask(const Tensor& m, const MaskNames& names, std::int64_t batch, std::int64_t heads,
                     std::int64_t tq, std::int64_t tk, DType dtype, std::string_view op) {
    if (!m.defined()) return;
    AG_CHECK(m.dtype() == DType::Bool || is_floating(m.dtype()), DTypeError,
             "{}: {} must be bool (true = not allowed) or float (added), got {} {}", op, names.mask,
             m.dtype(), m.shape());
    const bool two_d = m.shape() == Shape{tq, tk};
    const bool three_d = m.shape() == Shape{batch * heads, tq, tk};
    AG_CHECK(two_d || three_d, ShapeError, "{}: {} must be [{}, {}] = {} or [B * {}, {}, {}] = {}, got {}",
             op, names.mask, names.tq, names.tk, Shape{tq, tk}, names.heads, names.tq, names.tk,
             Shape{batch * heads, tq, tk}, m.shape());
    check_float_mask(m, names.mask, dtype, op);
}

void check_key_padding_mask(const Tensor& m, const MaskNames& names, std::int64_t batch, std::int64_t tk,
                            DType dtype, std::string_view op) {
    if (!m.defined()) return;
    AG_CHECK(m.dtype() == DType::Bool || is_floating(m.dtype()), DTypeError,
             "{}: {} must be bool (true = padded) or float (added), got {} {}", op, names.mask, m.dtype(),
             m.shape());
    AG_CHECK(m.shape() == (Shape{batch, tk}), ShapeError, "{}: {} must be [B, {}] = {}, got {}", op,
             names.mask, names.tk, Shape{batch, tk}, m.shape());
    check_float_mask(m, names.mask, dtype, op);
}

void check_attention_masks(const AttentionMasks& masks, std::int64_t batch, std::int64_t heads,
                           std::int64_t tq, std::int64_t tk, DType dtype, std::string_view op) {
    check_attn_mask(masks.attn_mask, {.mask = "attn_mask"}, batch, heads, tq, tk, dtype, op);
    check_key_padding_mask(masks.key_padding_mask, {.mask = "key_padding_mask"}, batch, tk, dtype, op);
}

Tensor combine_attention_masks(const AttentionMasks& masks, std::int64_t batch, std::int64_t heads,
                               std::int64_t tq, std::int64_t tk, DType dtype, std::string_view op) {
    check_attention_masks(masks, batch, heads, tq, tk, dtype, op);
    if (masks.empty()) return {};
    const bool per_head = masks.attn_mask.defined() && masks.attn_mask.dim() == 3;
    const std::int64_t mb = per_head || masks.key_padding_mask.defined() ? batch : 1;
    const std::int64_t mh = per_head ? heads : 1;
    Tensor out = zeros({mb, mh, tq, tk}, {.dtype = dtype});
    dispatch_floating(dtype, op, [&]<class T>(T) {
        T* po = out.data<T>();
        const T neg_inf = -std::numeric_limits<T>::infinity();
        const std::int64_t plane = tq * tk;
        // Reads element i of a bool or float mask as an additive value.
        auto additive = [&](const Tensor& m, std::int64_t i) -> T {
            if (m.dtype() == DType::Bool) return m.data<bool>()[i] ? neg_inf : T(0);
            return m.data<T>()[i];  // a float mask has the layer's dtype (check_float_mask)
        };
        for (std::int64_t b = 0; b < mb; ++b) {
            for (std::int64_t h = 0; h < mh; ++h) {
                T* p = po + (b * mh + h) * plane;
                if (masks.attn_mask.defined()) {
                    const std::int64_t base = per_head ? (b * heads + h) * plane : 0;
                    for (std::int64_t i = 0; i < plane; ++i) p[i] += additive(masks.attn_mask, base + i);
                }
                if (masks.key_padding_mask.defined())
                    for (std::int64_t t = 0; t < tq; ++t)
                        for (std::int64_t s = 0; s < tk; ++s)
                            p[t * tk + s] += additive(masks.key_padding_mask, b * tk + s);
                if (masks.is_causal)
                    for (std::int64_t t = 0; t < tq; ++t)
                        for (std::int64_t s = t + 1; s < tk; ++s) p[t * tk + s] = neg_inf;
            }
        }
    });
    return out;
}

}  // namespace attograd::nn

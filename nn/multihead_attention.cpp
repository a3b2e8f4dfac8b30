// MultiHeadAttention: options, parameters, projections, the fused path and out_proj.
#include "nn/multihead_attention.hpp"

#include "core/autograd.hpp"
#include "core/ops.hpp"
#include "core/ops_linear.hpp"
#include "core/ops_positional.hpp"
#include "nn/attention_intervention.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/detail/check_scoring.hpp"
#include "nn/linear.hpp"
#include "nn/parameter_size.hpp"
#include "nn/unbatched.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace attograd::nn {
namespace {

constexpr const char* kOp = "MultiHeadAttention";

// xavier_uniform_ (Glorot & Bengio 2010): U(-a, a), a = sqrt(6 / (fan_in + fan_out)), with
// PyTorch's fans of a [out, in] matrix.
Tensor xavier_uniform(std::int64_t out, std::int64_t in, DType dtype, Generator& gen) {
    const double bound = std::sqrt(6.0 / static_cast<double>(in + out));
    return uniform({out, in}, -bound, bound, gen, {.dtype = dtype});
}

// xavier_normal_ of a [1, 1, E] tensor: PyTorch's fans are 1 * E each, so std = sqrt(1 / E).
Tensor xavier_normal_bias(std::int64_t e, DType dtype, Generator& gen) {
    NoGradGuard no_grad;
    return randn({1, 1, e}, gen, {.dtype = dtype}) * std::sqrt(1.0 / static_cast<double>(e));
}

// An additive mask [mb, mh, Tq, Tk] with `extra` zero columns appended (the keys added by
// add_bias_kv / add_zero_attn are never masked, as PyTorch pads its masks with 0).
Tensor pad_mask_columns(const Tensor& mask, std::int64_t extra) {
    if (!mask.defined() || extra == 0) return mask;
    const Shape& s = mask.shape();
    const std::int64_t rows = s[0] * s[1] * s[2], tk = s[3];
    Tensor out = zeros({s[0], s[1], s[2], tk + extra}, {.dtype = mask.dtype()});
    const std::size_t row_bytes = static_cast<std::size_t>(tk) * dtype_size(mask.dtype());
    const auto* src = static_cast<const char*>(mask.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(dst + static_cast<std::size_t>(r) *
                              (row_bytes + static_cast<std::size_t>(extra) * dtype_size(mask.dtype())),
                    src + static_cast<std::size_t>(r) * row_bytes, row_bytes);
    return out;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(MultiHeadAttentionOptions options, Generator& generator)
    : options_(options), generator_(&generator) {
    auto& o = options_;
    AG_CHECK(o.embed_dim >= 1, ValueError, "{}: embed_dim must be >= 1, got {}", kOp, o.embed_dim);
    AG_CHECK(o.num_heads >= 1 && o.embed_dim % o.num_heads == 0, ValueError,
             "{}: num_heads {} must be >= 1 and divide embed_dim {}", kOp, o.num_heads, o.embed_dim);
    AG_CHECK(o.kdim >= 0 && o.vdim >= 0, ValueError,
             "{}: kdim and vdim must be >= 0 (0 = embed_dim), got {} and {}", kOp, o.kdim, o.vdim);
    AG_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, ValueError, "{}: dropout must be in [0, 1], got {}", kOp,
             o.dropout);
    AG_CHECK(o.batch_first, ValueError,
             "{}: inputs are always batch first [B, T, E]; batch_first = false is not "
             "supported",
             kOp);
    detail::check_scoring_options(o.scoring, kOp, true);
    AG_CHECK(o.scoring.local == LocalMode::None || (!o.add_bias_kv && !o.add_zero_attn), ValueError,
             "{}: local attention does not combine with add_bias_kv / add_zero_attn (their keys lie "
             "outside every window)",
             kOp);
    AG_CHECK(is_floating(o.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", kOp, o.dtype);
    AG_CHECK(o.scoring.positional != Positional::Rotary || (o.embed_dim / o.num_heads) % 2 == 0, ValueError,
             "{}: rotary positions need an even head width, got embed_dim {} / num_heads {} = {}", kOp,
             o.embed_dim, o.num_heads, o.embed_dim / o.num_heads);
    if (o.kdim == 0) o.kdim = o.embed_dim;
    if (o.vdim == 0) o.vdim = o.embed_dim;
    const std::int64_t e = o.embed_dim;
    // before any allocation, so the message names the option rather than uniform's shape
    AG_CHECK(e <= std::numeric_limits<std::int64_t>::max() / 3, ResourceError,
             "{}: embed_dim {} makes in_proj_weight [3 * {}, {}], which has too many elements", kOp, e, e, e);
    if (o.kdim == e && o.vdim == e) {
        check_parameter_size(kOp, fmt::format("embed_dim {}", e), "in_proj_weight", {3 * e, e}, o.dtype);
    } else {
        check_parameter_size(kOp, fmt::format("embed_dim {}", e), "q_proj_weight", {e, e}, o.dtype);
        check_parameter_size(kOp, fmt::format("embed_dim {} and kdim {}", e, o.kdim), "k_proj_weight",
                             {e, o.kdim}, o.dtype);
        check_parameter_size(kOp, fmt::format("embed_dim {} and vdim {}", e, o.vdim), "v_proj_weight",
                             {e, o.vdim}, o.dtype);
    }
    if (o.kdim == e && o.vdim == e) {
        in_proj_weight_ = register_parameter("in_proj_weight", xavier_uniform(3 * e, e, o.dtype, generator));
    } else {
        q_proj_weight_ = register_parameter("q_proj_weight", xavier_uniform(e, e, o.dtype, generator));
        k_proj_weight_ = register_parameter("k_proj_weight", xavier_uniform(e, o.kdim, o.dtype, generator));
        v_proj_weight_ = register_parameter("v_proj_weight", xavier_uniform(e, o.vdim, o.dtype, generator));
    }
    if (o.bias) in_proj_bias_ = register_parameter("in_proj_bias", zeros({3 * e}, {.dtype = o.dtype}));
    if (o.add_bias_kv) {
        bias_k_ = register_parameter("bias_k", xavier_normal_bias(e, o.dtype, generator));
        bias_v_ = register_parameter("bias_v", xavier_normal_bias(e, o.dtype, generator));
    }
    out_proj_ = register_module(
        "out_proj",
        std::make_shared<Linear>(
            LinearOptions{.in_features = e, .out_features = e, .bias = o.bias, .dtype = o.dtype}, generator));
    if (o.bias) {  // PyTorch zeroes out_proj.bias after nn.Linear's initialisation
        Tensor b = out_proj_->bias();
        std::memset(b.raw_data(), 0, static_cast<std::size_t>(b.numel()) * dtype_size(b.dtype()));
    }
    const bool fused = o.scoring.score == Score::ScaledDot || o.scoring.score == Score::Dot;
    if (!fused || o.scoring.local != LocalMode::None) {
        score_ = register_module(
            "score",
            make_score(o.scoring.score, {.query_dim = head_dim(), .key_dim = head_dim()}, generator));
        score_->to(o.dtype);
    }
    if (o.scoring.local == LocalMode::Predictive) {
        // As nn::Attention's: uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)] with fan_in = E / h.
        const double bound = 1.0 / std::sqrt(static_cast<double>(head_dim()));
        W_p_ = register_parameter(
            "W_p", uniform({head_dim(), head_dim()}, -bound, bound, generator, {.dtype = o.dtype}));
        v_p_ = register_parameter("v_p", uniform({head_dim()}, -bound, bound, generator, {.dtype = o.dtype}));
    }
}

MultiHeadAttention::~MultiHeadAttention() = default;

std::string MultiHeadAttention::extra_repr() const {
    const auto& o = options_;
    std::string out = fmt::format(
        "embed_dim={}, num_heads={}, dropout={}, bias={}, add_bias_kv={}, add_zero_attn={}, kdim={}, "
        "vdim={}, "
        "score={}",
        o.embed_dim, o.num_heads, o.dropout, o.bias, o.add_bias_kv, o.add_zero_attn, o.kdim, o.vdim,
        to_string(o.scoring.score));
    if (o.scoring.local != LocalMode::None)
        out += fmt::format(", local={}, window={}", to_string(o.scoring.local), o.scoring.window);
    if (o.scoring.positional != Positional::None)
        out += fmt::format(", positional={}", to_string(o.scoring.positional));
    if (o.scoring.positional == Positional::Rotary) out += fmt::format(", rope_base={}", o.scoring.rope_base);
    return out;
}

void MultiHeadAttention::check_inputs(const Tensor& query, const Tensor& key, const Tensor& value) const {
    const auto& o = options_;
    AG_CHECK(query.defined() && key.defined() && value.defined(), ValueError,
             "{}: undefined query, key or value", kOp);
    AG_CHECK(query.dim() == 3 && query.size(2) == o.embed_dim, ShapeError,
             "{}: query must be [B, Tq, E] with E = {}, got {}", kOp, o.embed_dim, query.shape());
    AG_CHECK(key.dim() == 3 && key.size(2) == o.kdim, ShapeError,
             "{}: key must be [B, Tk, kdim] with kdim = {}, got {}", kOp, o.kdim, key.shape());
    AG_CHECK(value.dim() == 3 && value.size(2) == o.vdim, ShapeError,
             "{}: value must be [B, Tk, vdim] with vdim = {}, got {}", kOp, o.vdim, value.shape());
    AG_CHECK(key.size(0) == query.size(0) && value.size(0) == query.size(0), ShapeError,
             "{}: batch sizes differ: query {}, key {}, value {}", kOp, query.shape(), key.shape(),
             value.shape());
    AG_CHECK(key.size(1) == value.size(1), ShapeError, "{}: key {} and value {} have different lengths", kOp,
             key.shape(), value.shape());
    AG_CHECK(key.size(1) >= 1, ShapeError, "{}: needs at least one key, got key {}", kOp, key.shape());
    check_input_dtype(query, o.dtype, kOp, "query");
    check_input_dtype(key, o.dtype, kOp, "key");
    check_input_dtype(value, o.dtype, kOp, "value");
}

MultiHeadAttention::Projected MultiHeadAttention::project(const Tensor& query, const Tensor& key,
                                                          const Tensor& value) const {
    const std::int64_t e = options_.embed_dim;
    auto bias_part = [&](std::int64_t i) {
        return in_proj_bias_.defined() ? narrow(in_proj_bias_, 0, i * e, e) : Tensor();
    };
    if (!packed_projection())
        return {linear(query, q_proj_weight_, bias_part(0)), linear(key, k_proj_weight_, bias_part(1)),
                linear(value, v_proj_weight_, bias_part(2))};
    // Row blocks of in_proj_weight ([E, E] copies): cheaper than slicing a [B, T, 3E] product,
    // whose slices' gradients would each be a [B, T, 3E] tensor.
    auto weight_part = [&](std::int64_t i) { return narrow(in_proj_weight_, 0, i * e, e); };
    return {linear(query, weight_part(0), bias_part(0)), linear(key, weight_part(1), bias_part(1)),
            linear(value, weight_part(2), bias_part(2))};
}

Tensor MultiHeadAttention::rotate(const Tensor& x) const {
    if (options_.scoring.positional != Positional::Rotary) return x;
    // q and k [B, T, E], or the q and k thirds of a packed qkv [B, T, 3E]
    const std::int64_t e = options_.embed_dim;
    return rotary_embedding(x, head_dim(), options_.scoring.rope_base, x.size(2) == 3 * e ? 2 * e : e);
}

MultiHeadAttentionOutput MultiHeadAttention::forward(const Tensor& query, const Tensor& key,
                                                     const Tensor& value, const AttentionArgs& args) const {
    if (query.defined() && key.defined() && value.defined() && query.dim() == 2 && key.dim() == 2 &&
        value.dim() == 2) {  // unbatched [T, E], as PyTorch: run as a batch of one (nn/unbatched.hpp)
        const Unbatched in(query, key, value, args.key_padding_mask);
        AttentionArgs batched = args;
        batched.key_padding_mask = in.key_padding_mask;
        MultiHeadAttentionOutput out = forward(in.query, in.key, in.value, batched);
        return {drop_batch(out.output), drop_batch(out.weights)};
    }
    check_inputs(query, key, value);
    const auto& o = options_;
    const std::int64_t batch = query.size(0), tq = query.size(1), tk = key.size(1);
    const AttentionMasks masks = args.masks();
    const std::int64_t extra = (o.add_bias_kv ? 1 : 0) + (o.add_zero_attn ? 1 : 0);
    const bool self = query.impl() == key.impl() && key.impl() == value.impl();
    Tensor heads, weights;  // [B, Tq, E] (heads side by side) and [B, h, Tq, Tk']
    const auto* interventions = head_interventions(this);
    // Replaced weights need the materialised weights and the values: the unfused path, this layer only.
    const bool replacing = replaces_weights(interventions);
    if (o.scoring.local != LocalMode::None) {
        check_attention_masks(masks, batch, o.num_heads, tq, tk, o.dtype, kOp);
        std::tie(heads, weights) =
            attend_local(query, key, value, masks, args.need_weights || attention_recording(), interventions);
    } else {
        Tensor mask = combine_attention_masks(masks, batch, o.num_heads, tq, tk, o.dtype, kOp);
        if (o.scoring.positional == Positional::ALiBi) {  // [mb, h, Tq, Tk]; no gradient
            const Tensor bias = alibi_bias(o.num_heads, tq, tk, o.dtype);
            mask = mask.defined() ? mask + bias : bias;
        }
        mask = pad_mask_columns(mask, extra);
        const SdpaOptions sdpa{
            .attn_mask = mask,
            .scale = o.scoring.score == Score::Dot ? std::optional<double>(1.0) : std::nullopt,
            .dropout_p = o.dropout,
            .training = is_training(),
            .generator = generator_,
            .need_weights = args.need_weights || attention_recording() || replacing};
        if (!score_ && self && packed_projection() && extra == 0 && !replacing) {
            // q, k, v from one GEMM; the kernel reads them in place and returns one gradient
            auto r = scaled_dot_product_attention_packed(
                rotate(linear(query, in_proj_weight_, in_proj_bias_)), o.num_heads, sdpa);
            heads = r.output;
            weights = r.weights;
        } else {
            auto [q, k, v] = project(query, key, value);
            q = rotate(q);
            k = rotate(k);
            if (o.add_bias_kv) {
                const Tensor rows = zeros({batch, 1, o.embed_dim}, {.dtype = o.dtype});
                k = concat({k, rows + bias_k_}, 1);
                v = concat({v, rows + bias_v_}, 1);
            }
            if (o.add_zero_attn) {
                const Tensor rows = zeros({batch, 1, o.embed_dim}, {.dtype = o.dtype});
                k = concat({k, rows}, 1);
                v = concat({v, rows}, 1);
            }
            if (score_) {
                std::tie(heads, weights) = attend_with_score(q, k, v, mask);
            } else {
                auto r = scaled_dot_product_attention_heads(q, k, v, o.num_heads, sdpa);
                heads = r.output;
                weights = r.weights;
            }
            if (replacing) {
                const std::int64_t tkv = v.size(1), h = o.num_heads;
                const Tensor values = permute(reshape(v, {batch, tkv, h, head_dim()}), {0, 2, 1, 3});
                replace_head_weights(*interventions, values, allowed_keys(mask, batch, h, tq, tkv), heads,
                                     weights);
            }
        }
    }
    // attend_local applies replacements itself, like the global path above
    if (interventions != nullptr && !replacing) silence_heads(*interventions, heads, weights);
    if (weights.defined()) record_attention(this, weights);
    MultiHeadAttentionOutput out{.output = out_proj_->forward(heads), .weights = {}};
    if (args.need_weights) out.weights = args.average_attn_weights ? mean(weights, {1}) : weights;
    return out;
}

MultiHeadAttentionOutput MultiHeadAttention::forward(const Tensor& x, const AttentionArgs& args) const {
    return forward(x, x, x, args);
}

}  // namespace attograd::nn

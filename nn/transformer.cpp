// Transformer encoder and decoder layers: options, submodules and the post-/pre-norm forward.
#include "nn/transformer.hpp"

#include "core/error.hpp"
#include "core/ops_elementwise.hpp"
#include "nn/dropout.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/multihead_attention.hpp"

#include <cmath>

namespace attograd::nn {
namespace {

void check_options(const TransformerLayerOptions& o, std::string_view op) {
    AG_CHECK(o.d_model >= 1, ValueError, "{}: d_model must be >= 1, got {}", op, o.d_model);
    AG_CHECK(o.nhead >= 1 && o.d_model % o.nhead == 0, ValueError,
             "{}: nhead {} must be >= 1 and divide d_model {}", op, o.nhead, o.d_model);
    AG_CHECK(o.dim_feedforward >= 1, ValueError, "{}: dim_feedforward must be >= 1, got {}", op,
             o.dim_feedforward);
    AG_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, ValueError, "{}: dropout must be in [0, 1], got {}", op,
             o.dropout);
    AG_CHECK(std::isfinite(o.layer_norm_eps) && o.layer_norm_eps >= 0.0, ValueError,
             "{}: layer_norm_eps must be finite and >= 0, got {}", op, o.layer_norm_eps);
    AG_CHECK(o.batch_first, ValueError,
             "{}: inputs are always batch first [B, T, E]; batch_first = false is not supported", op);
    AG_CHECK(is_floating(o.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", op, o.dtype);
}

std::shared_ptr<MultiHeadAttention> make_attention(const TransformerLayerOptions& o, Generator& gen) {
    return std::make_shared<MultiHeadAttention>(MultiHeadAttentionOptions{.embed_dim = o.d_model,
                                                                          .num_heads = o.nhead,
                                                                          .dropout = o.dropout,
                                                                          .bias = o.bias,
                                                                          .score = o.score,
                                                                          .local = o.local,
                                                                          .window = o.window,
                                                                          .positional = o.positional,
                                                                          .rope_base = o.rope_base,
                                                                          .dtype = o.dtype},
                                                gen);
}

std::shared_ptr<Linear> make_linear(std::int64_t in, std::int64_t out, const TransformerLayerOptions& o,
                                    Generator& gen) {
    return std::make_shared<Linear>(
        LinearOptions{.in_features = in, .out_features = out, .bias = o.bias, .dtype = o.dtype}, gen);
}

std::shared_ptr<LayerNorm> make_norm(const TransformerLayerOptions& o) {
    return std::make_shared<LayerNorm>(LayerNormOptions{
        .normalized_shape = {o.d_model}, .eps = o.layer_norm_eps, .bias = o.bias, .dtype = o.dtype});
}

// A sequence input [B, T, d_model] of the parameters' dtype, checked before the attention does.
void check_sequence(const Tensor& x, const char* name, const TransformerLayerOptions& o,
                    std::string_view op) {
    AG_CHECK(x.defined(), ValueError, "{}: {} is undefined", op, name);
    AG_CHECK(x.dim() == 3 && x.size(2) == o.d_model, ShapeError,
             "{}: {} must be [B, T, d_model] with d_model = {}, got {}", op, name, o.d_model, x.shape());
    AG_CHECK(x.dtype() == o.dtype, DTypeError, "{}: {} must have the parameters' dtype {}, got {} {}", op,
             name, o.dtype, x.dtype(), x.shape());
}

// The position-wise feed-forward block (Vaswani et al. 2017, eq. 2, with PyTorch's inner dropout):
// linear2(dropout(activation(linear1(x)))), x [B, T, E] -> [B, T, F] -> [B, T, E].
Tensor feed_forward(const Tensor& x, const Linear& linear1, const Dropout& dropout, const Linear& linear2,
                    Activation activation) {
    const Tensor hidden = linear1.forward(x);
    return linear2.forward(dropout.forward(activation == Activation::GELU ? gelu(hidden) : relu(hidden)));
}

std::string layer_repr(const TransformerLayerOptions& o) {
    std::string out = fmt::format(
        "d_model={}, nhead={}, dim_feedforward={}, dropout={}, activation={}, layer_norm_eps={}, "
        "norm_first={}, bias={}",
        o.d_model, o.nhead, o.dim_feedforward, o.dropout, to_string(o.activation), o.layer_norm_eps,
        o.norm_first, o.bias);
    if (o.score != Score::ScaledDot) out += fmt::format(", score={}", to_string(o.score));
    if (o.local != LocalMode::None) out += fmt::format(", local={}, window={}", to_string(o.local), o.window);
    if (o.positional != Positional::None) out += fmt::format(", positional={}", to_string(o.positional));
    return out;
}

}  // namespace

Activation parse_activation(std::string_view name) {
    if (name == "relu") return Activation::ReLU;
    if (name == "gelu") return Activation::GELU;
    throw ValueError(fmt::format("activation: unknown activation '{}' (choose relu or gelu)", name));
}

std::string_view to_string(Activation activation) { return activation == Activation::GELU ? "gelu" : "relu"; }

// --- encoder layer ---------------------------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(TransformerLayerOptions options, Generator& generator)
    : options_(options) {
    const auto& o = options_;
    check_options(o, type_name());
    // PyTorch's registration order, so named_parameters() lists the keys as its state_dict does
    self_attn_ = register_module("self_attn", make_attention(o, generator));
    linear1_ = register_module("linear1", make_linear(o.d_model, o.dim_feedforward, o, generator));
    dropout_ = register_module("dropout", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    linear2_ = register_module("linear2", make_linear(o.dim_feedforward, o.d_model, o, generator));
    norm1_ = register_module("norm1", make_norm(o));
    norm2_ = register_module("norm2", make_norm(o));
    dropout1_ = register_module("dropout1", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    dropout2_ = register_module("dropout2", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
}

TransformerEncoderLayer::~TransformerEncoderLayer() = default;

std::string TransformerEncoderLayer::extra_repr() const { return layer_repr(options_); }

Tensor TransformerEncoderLayer::forward(const Tensor& src, const TransformerEncoderArgs& args) const {
    check_sequence(src, "src", options_, type_name());
    const MultiHeadAttentionArgs attention{.key_padding_mask = args.src_key_padding_mask,
                                           .attn_mask = args.src_mask,
                                           .is_causal = args.is_causal,
                                           .need_weights = false};
    // x [B, T, E] -> [B, T, E]: one argument for query, key and value (the packed path)
    const auto self_block = [&](const Tensor& x) {
        return dropout1_->forward(self_attn_->forward(x, attention).output);
    };
    const auto ff_block = [&](const Tensor& x) {
        return dropout2_->forward(feed_forward(x, *linear1_, *dropout_, *linear2_, options_.activation));
    };
    if (options_.norm_first) {
        const Tensor x = src + self_block(norm1_->forward(src));
        return x + ff_block(norm2_->forward(x));
    }
    const Tensor x = norm1_->forward(src + self_block(src));
    return norm2_->forward(x + ff_block(x));
}

// --- decoder layer ---------------------------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(TransformerLayerOptions options, Generator& generator)
    : options_(options) {
    const auto& o = options_;
    check_options(o, type_name());
    self_attn_ = register_module("self_attn", make_attention(o, generator));
    multihead_attn_ = register_module("multihead_attn", make_attention(o, generator));
    linear1_ = register_module("linear1", make_linear(o.d_model, o.dim_feedforward, o, generator));
    dropout_ = register_module("dropout", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    linear2_ = register_module("linear2", make_linear(o.dim_feedforward, o.d_model, o, generator));
    norm1_ = register_module("norm1", make_norm(o));
    norm2_ = register_module("norm2", make_norm(o));
    norm3_ = register_module("norm3", make_norm(o));
    dropout1_ = register_module("dropout1", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    dropout2_ = register_module("dropout2", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    dropout3_ = register_module("dropout3", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
}

TransformerDecoderLayer::~TransformerDecoderLayer() = default;

std::string TransformerDecoderLayer::extra_repr() const { return layer_repr(options_); }

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const TransformerDecoderArgs& args) const {
    check_sequence(tgt, "tgt", options_, type_name());
    check_sequence(memory, "memory", options_, type_name());
    AG_CHECK(tgt.size(0) == memory.size(0), ShapeError, "{}: batch sizes differ: tgt {}, memory {}",
             type_name(), tgt.shape(), memory.shape());
    const MultiHeadAttentionArgs self_args{.key_padding_mask = args.tgt_key_padding_mask,
                                           .attn_mask = args.tgt_mask,
                                           .is_causal = args.tgt_is_causal,
                                           .need_weights = false};
    const MultiHeadAttentionArgs cross_args{.key_padding_mask = args.memory_key_padding_mask,
                                            .attn_mask = args.memory_mask,
                                            .is_causal = args.memory_is_causal,
                                            .need_weights = false};
    const auto self_block = [&](const Tensor& x) {  // [B, Tt, E] -> [B, Tt, E]
        return dropout1_->forward(self_attn_->forward(x, self_args).output);
    };
    const auto cross_block = [&](const Tensor& x) {  // [B, Tt, E] over memory [B, Tm, E] -> [B, Tt, E]
        return dropout2_->forward(multihead_attn_->forward(x, memory, memory, cross_args).output);
    };
    const auto ff_block = [&](const Tensor& x) {
        return dropout3_->forward(feed_forward(x, *linear1_, *dropout_, *linear2_, options_.activation));
    };
    if (options_.norm_first) {
        Tensor x = tgt + self_block(norm1_->forward(tgt));
        x = x + cross_block(norm2_->forward(x));
        return x + ff_block(norm3_->forward(x));
    }
    Tensor x = norm1_->forward(tgt + self_block(tgt));
    x = norm2_->forward(x + cross_block(x));
    return norm3_->forward(x + ff_block(x));
}

}  // namespace attograd::nn

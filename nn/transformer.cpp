// Transformer encoder and decoder layers: options, submodules and the post-/pre-norm forward.
#include "nn/transformer.hpp"

#include "core/error.hpp"
#include "core/ops_elementwise.hpp"
#include "nn/attention.hpp"
#include "nn/attention_mask.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/dropout.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/multihead_attention.hpp"
#include "nn/parameter_size.hpp"
#include "nn/transformer_inputs.hpp"
#include "nn/unbatched.hpp"

#include <cmath>
#include <utility>

namespace attograd::nn {
namespace {

void check_options(const TransformerLayerOptions& o, std::string_view op) {
    AG_CHECK(o.d_model >= 1, ValueError, "{}: d_model must be >= 1, got {}", op, o.d_model);
    AG_CHECK(o.nhead >= 1 && o.d_model % o.nhead == 0, ValueError,
             "{}: nhead {} must be >= 1 and divide d_model {}", op, o.nhead, o.d_model);
    AG_CHECK(o.dim_feedforward >= 0, ValueError,
             "{}: dim_feedforward must be >= 0 (0 = no feed-forward), got {}", op, o.dim_feedforward);
    AG_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, ValueError, "{}: dropout must be in [0, 1], got {}", op,
             o.dropout);
    AG_CHECK(std::isfinite(o.layer_norm_eps) && o.layer_norm_eps >= 0.0, ValueError,
             "{}: layer_norm_eps must be finite and >= 0, got {}", op, o.layer_norm_eps);
    AG_CHECK(o.batch_first, ValueError,
             "{}: inputs are always batch first [B, T, E]; batch_first = false is not supported", op);
    AG_CHECK(is_floating(o.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", op, o.dtype);
    check_transformer_sizes(op, o.d_model, o.dim_feedforward, o.dtype);
    if (o.attention == LayerAttention::Single) {
        AG_CHECK(o.nhead == 1, ValueError, "{}: attention Single is one head, but nhead is {}", op, o.nhead);
        AG_CHECK(o.scoring.positional == Positional::None, ValueError,
                 "{}: positional {} needs attention MultiHead (Single has no relative positions)", op,
                 to_string(o.scoring.positional));
    } else {
        AG_CHECK(o.normalizer == Normalizer::Soft, ValueError,
                 "{}: normalizer {} needs attention Single (MultiHead attention is soft)", op,
                 to_string(o.normalizer));
    }
}

// One attention block of a layer: a MultiHeadAttention, or an Attention with LayerAttention::Single
// (exactly one of the two is set).
struct AttentionModule {
    std::shared_ptr<MultiHeadAttention> multi;
    std::shared_ptr<Attention> single;
};

AttentionModule make_attention(const TransformerLayerOptions& o, Generator& gen) {
    if (o.attention == LayerAttention::Single) {
        return {nullptr, std::make_shared<Attention>(AttentionOptions{.query_dim = o.d_model,
                                                                      .scoring = o.scoring,
                                                                      .project_query = true,
                                                                      .project_key = true,
                                                                      .project_value = true,
                                                                      .bias = o.bias,
                                                                      .normalizer = o.normalizer,
                                                                      .estimator = o.estimator,
                                                                      .temperature = o.temperature,
                                                                      .baseline_decay = o.baseline_decay,
                                                                      .dropout = o.dropout,
                                                                      .dtype = o.dtype},
                                                     gen)};
    }
    return {std::make_shared<MultiHeadAttention>(MultiHeadAttentionOptions{.embed_dim = o.d_model,
                                                                           .num_heads = o.nhead,
                                                                           .dropout = o.dropout,
                                                                           .bias = o.bias,
                                                                           .scoring = o.scoring,
                                                                           .dtype = o.dtype},
                                                 gen),
            nullptr};
}

// query [B, Tq, E] over memory [B, Tk, E] as keys and values, or over itself when memory is
// undefined (MultiHeadAttention's packed self-attention path) -> [B, Tq, E]. Hard attention's
// REINFORCE log-probability goes to `trace` when one is given.
Tensor attend(const AttentionModule& m, const Tensor& query, const Tensor& memory, const AttentionArgs& args,
              ReinforceTrace* trace) {
    const Tensor& kv = memory.defined() ? memory : query;
    if (m.multi)
        return (memory.defined() ? m.multi->forward(query, kv, kv, args) : m.multi->forward(query, args))
            .output;
    // weights only when recorded: the local path builds its dense view only then
    AttentionArgs single_args = args;
    single_args.need_weights = attention_recording();
    AttentionOutput out = m.single->forward(query, kv, single_args);
    if (trace != nullptr && out.log_prob.defined()) trace->entries.push_back({m.single.get(), out.log_prob});
    return out.output;
}

const MultiHeadAttention& multi_head(const std::shared_ptr<MultiHeadAttention>& m, std::string_view op,
                                     const char* name) {
    AG_CHECK(m != nullptr, ValueError,
             "{}::{}: this layer has no MultiHeadAttention '{}' (attention Single, or none)", op, name, name);
    return *m;
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
    const ScoringOptions& sc = o.scoring;
    if (sc.score != Score::ScaledDot) out += fmt::format(", score={}", to_string(sc.score));
    if (sc.local != LocalMode::None)
        out += fmt::format(", local={}, window={}", to_string(sc.local), sc.window);
    if (sc.positional != Positional::None) out += fmt::format(", positional={}", to_string(sc.positional));
    if (o.attention == LayerAttention::Single) {
        out += fmt::format(", attention=single, normalizer={}", to_string(o.normalizer));
        if (o.normalizer == Normalizer::Hard) out += fmt::format(", estimator={}", to_string(o.estimator));
    }
    if (!o.self_attention) out += ", self_attention=false";
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
    AG_CHECK(o.self_attention, ValueError, "{}: self_attention = false leaves an encoder layer no attention",
             type_name());
    // PyTorch's registration order, so named_parameters() lists the keys as its state_dict does
    auto attention = make_attention(o, generator);
    if (attention.multi) self_attn_ = register_module("self_attn", attention.multi);
    if (attention.single) self_attn_single_ = register_module("self_attn", attention.single);
    if (o.dim_feedforward > 0) {
        linear1_ = register_module("linear1", make_linear(o.d_model, o.dim_feedforward, o, generator));
        dropout_ =
            register_module("dropout", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
        linear2_ = register_module("linear2", make_linear(o.dim_feedforward, o.d_model, o, generator));
    }
    norm1_ = register_module("norm1", make_norm(o));
    if (o.dim_feedforward > 0) norm2_ = register_module("norm2", make_norm(o));
    dropout1_ = register_module("dropout1", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    if (o.dim_feedforward > 0) {
        dropout2_ =
            register_module("dropout2", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    }
}

TransformerEncoderLayer::~TransformerEncoderLayer() = default;

std::string TransformerEncoderLayer::extra_repr() const { return layer_repr(options_); }

const MultiHeadAttention& TransformerEncoderLayer::self_attn() const {
    return multi_head(self_attn_, type_name(), "self_attn");
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const TransformerEncoderArgs& args) const {
    check_encoder_inputs(src, args, options_, type_name());
    if (src.dim() == 2) {  // unbatched [T, E], as PyTorch: a batch of one
        TransformerEncoderArgs batched = args;
        batched.src_key_padding_mask = unbatched_padding(args.src_key_padding_mask);
        return drop_batch(forward(Unbatched(src, src, src, Tensor()).query, batched));
    }
    const AttentionArgs attention{.key_padding_mask = args.src_key_padding_mask,
                                  .attn_mask = args.src_mask,
                                  .is_causal = args.is_causal,
                                  .need_weights = false};
    const AttentionModule self{self_attn_, self_attn_single_};
    // x [B, T, E] -> [B, T, E]: one argument for query, key and value (the packed path)
    const auto self_block = [&](const Tensor& x) {
        return dropout1_->forward(attend(self, x, Tensor(), attention, args.reinforce));
    };
    const auto ff_block = [&](const Tensor& x) {
        return dropout2_->forward(feed_forward(x, *linear1_, *dropout_, *linear2_, options_.activation));
    };
    const bool ff = options_.dim_feedforward > 0;
    if (options_.norm_first) {
        const Tensor x = src + self_block(norm1_->forward(src));
        return ff ? x + ff_block(norm2_->forward(x)) : x;
    }
    const Tensor x = norm1_->forward(src + self_block(src));
    return ff ? norm2_->forward(x + ff_block(x)) : x;
}

// --- decoder layer ---------------------------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(TransformerLayerOptions options, Generator& generator)
    : options_(options) {
    const auto& o = options_;
    check_options(o, type_name());
    const bool ff = o.dim_feedforward > 0;
    if (o.self_attention) {
        auto self = make_attention(o, generator);
        if (self.multi) self_attn_ = register_module("self_attn", self.multi);
        if (self.single) self_attn_single_ = register_module("self_attn", self.single);
    }
    auto cross = make_attention(o, generator);
    if (cross.multi) multihead_attn_ = register_module("multihead_attn", cross.multi);
    if (cross.single) multihead_attn_single_ = register_module("multihead_attn", cross.single);
    if (ff) {
        linear1_ = register_module("linear1", make_linear(o.d_model, o.dim_feedforward, o, generator));
        dropout_ =
            register_module("dropout", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
        linear2_ = register_module("linear2", make_linear(o.dim_feedforward, o.d_model, o, generator));
    }
    if (o.self_attention) norm1_ = register_module("norm1", make_norm(o));
    norm2_ = register_module("norm2", make_norm(o));
    if (ff) norm3_ = register_module("norm3", make_norm(o));
    if (o.self_attention) {
        dropout1_ =
            register_module("dropout1", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    }
    dropout2_ = register_module("dropout2", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
    if (ff)
        dropout3_ =
            register_module("dropout3", std::make_shared<Dropout>(DropoutOptions{o.dropout}, generator));
}

TransformerDecoderLayer::~TransformerDecoderLayer() = default;

std::string TransformerDecoderLayer::extra_repr() const { return layer_repr(options_); }

const MultiHeadAttention& TransformerDecoderLayer::self_attn() const {
    return multi_head(self_attn_, type_name(), "self_attn");
}

const MultiHeadAttention& TransformerDecoderLayer::multihead_attn() const {
    return multi_head(multihead_attn_, type_name(), "multihead_attn");
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const TransformerDecoderArgs& args) const {
    check_decoder_inputs(tgt, memory, args, options_, type_name());
    if (tgt.dim() == 2) {  // unbatched, as PyTorch: a batch of one
        TransformerDecoderArgs batched = args;
        batched.tgt_key_padding_mask = unbatched_padding(args.tgt_key_padding_mask);
        batched.memory_key_padding_mask = unbatched_padding(args.memory_key_padding_mask);
        const Unbatched in(tgt, memory, memory, Tensor());
        return drop_batch(forward(in.query, in.key, batched));
    }
    const AttentionArgs self_args{.key_padding_mask = args.tgt_key_padding_mask,
                                  .attn_mask = args.tgt_mask,
                                  .is_causal = args.tgt_is_causal,
                                  .need_weights = false};
    const AttentionArgs cross_args{.key_padding_mask = args.memory_key_padding_mask,
                                   .attn_mask = args.memory_mask,
                                   .is_causal = args.memory_is_causal,
                                   .need_weights = false};
    const AttentionModule self{self_attn_, self_attn_single_}, cross{multihead_attn_, multihead_attn_single_};
    return run_blocks(
        tgt, [&](const Tensor& x) { return attend(self, x, Tensor(), self_args, args.reinforce); },
        [&](const Tensor& x) { return attend(cross, x, memory, cross_args, args.reinforce); });
}

Tensor TransformerDecoderLayer::run_blocks(const Tensor& tgt, const Block& self_attention,
                                           const Block& cross_attention) const {
    const auto self_block = [&](const Tensor& x) { return dropout1_->forward(self_attention(x)); };
    const auto cross_block = [&](const Tensor& x) { return dropout2_->forward(cross_attention(x)); };
    const auto ff_block = [&](const Tensor& x) {
        return dropout3_->forward(feed_forward(x, *linear1_, *dropout_, *linear2_, options_.activation));
    };
    const bool has_self = options_.self_attention, ff = options_.dim_feedforward > 0;
    if (options_.norm_first) {
        Tensor x = has_self ? tgt + self_block(norm1_->forward(tgt)) : tgt;
        x = x + cross_block(norm2_->forward(x));
        return ff ? x + ff_block(norm3_->forward(x)) : x;
    }
    Tensor x = has_self ? norm1_->forward(tgt + self_block(tgt)) : tgt;
    x = norm2_->forward(x + cross_block(x));
    return ff ? norm3_->forward(x + ff_block(x)) : x;
}

bool TransformerDecoderLayer::supports_cache() const {
    return multihead_attn_ != nullptr && multihead_attn_->supports_cache() &&
           (!options_.self_attention || (self_attn_ != nullptr && self_attn_->supports_cache()));
}

Tensor TransformerDecoderLayer::forward_cached(const Tensor& tgt, const Tensor& memory,
                                               TransformerDecoderLayerCache& cache,
                                               const TransformerDecoderArgs& args) const {
    AG_CHECK(
        supports_cache(), ValueError,
        "{}::forward_cached: incremental decoding needs MultiHead attention with a dot or scaled-dot score, "
        "global attention and no add_bias_kv / add_zero_attn ({})",
        type_name(), layer_repr(options_));
    AG_CHECK(
        !args.tgt_mask.defined() && !args.memory_mask.defined() && !args.memory_is_causal, ValueError,
        "{}::forward_cached: tgt_mask, memory_mask and memory_is_causal do not apply to one cached position",
        type_name());
    // the same blocks as forward, over one position with the cached keys and values
    return run_blocks(
        tgt,
        [&](const Tensor& x) {
            return self_attn_
                ->forward_cached(x, cache.self_attn, args.tgt_key_padding_mask, {.need_weights = false})
                .output;
        },
        [&](const Tensor& x) {
            return multihead_attn_
                ->forward_cross_cached(x, memory, cache.multihead_attn, args.memory_key_padding_mask,
                                       {.need_weights = false})
                .output;
        });
}

}  // namespace attograd::nn

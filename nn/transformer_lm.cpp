// nn::TransformerLM: embeddings, a causal TransformerEncoder and a linear head.
#include "nn/transformer_lm.hpp"

#include "core/error.hpp"
#include "core/format.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/positional_encoding.hpp"

namespace attograd::nn {
namespace {

// Checked before any submodule is built, so the messages name TransformerLM's own options.
void check_options(const TransformerLMOptions& o) {
    AG_CHECK(o.vocab_size >= 1, ValueError, "TransformerLM: vocab_size must be >= 1, got {}", o.vocab_size);
    AG_CHECK(o.max_len >= 1, ValueError, "TransformerLM: max_len must be >= 1, got {}", o.max_len);
    AG_CHECK(o.d_model >= 1, ValueError, "TransformerLM: d_model must be >= 1, got {}", o.d_model);
    AG_CHECK(o.nhead >= 1 && o.d_model % o.nhead == 0, ValueError,
             "TransformerLM: nhead {} must be >= 1 and divide d_model {}", o.nhead, o.d_model);
    AG_CHECK(o.num_layers >= 0, ValueError, "TransformerLM: num_layers must be >= 0, got {}", o.num_layers);
    AG_CHECK(o.dim_feedforward >= 0, ValueError, "TransformerLM: dim_feedforward must be >= 0, got {}",
             o.dim_feedforward);
    AG_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, ValueError,
             "TransformerLM: dropout must be in [0, 1], got {}", o.dropout);
}

}  // namespace

TransformerLM::TransformerLM(TransformerLMOptions options, Generator& generator) : options_(options) {
    check_options(options_);
    const TransformerLMOptions& o = options_;
    input_emb_ = register_module(
        "input_emb",
        std::make_shared<Embedding>(
            EmbeddingOptions{.num_embeddings = o.vocab_size, .embedding_dim = o.d_model, .dtype = o.dtype},
            generator));
    if (o.positional == Positional::None)
        pos_encoder_ = register_module(
            "pos_encoder",
            std::make_shared<LearnedPositionalEmbedding>(
                PositionalEncodingOptions{.embedding_dim = o.d_model, .max_len = o.max_len, .dtype = o.dtype},
                generator));
    const TransformerLayerOptions layer{.d_model = o.d_model,
                                        .nhead = o.nhead,
                                        .dim_feedforward = o.dim_feedforward,
                                        .dropout = o.dropout,
                                        .activation = o.activation,
                                        .layer_norm_eps = o.layer_norm_eps,
                                        .norm_first = o.norm_first,
                                        .scoring = {.positional = o.positional},
                                        .dtype = o.dtype};
    encoder_ = register_module(
        "encoder",
        std::make_shared<TransformerEncoder>(
            TransformerStackOptions{.layer = layer, .num_layers = o.num_layers, .norm = true}, generator));
    decoder_ = register_module("decoder", std::make_shared<Linear>(LinearOptions{.in_features = o.d_model,
                                                                                 .out_features = o.vocab_size,
                                                                                 .dtype = o.dtype},
                                                                   generator));
}

TransformerLM::~TransformerLM() = default;

Tensor TransformerLM::forward(const Tensor& ids, const Tensor& key_padding_mask) const {
    AG_CHECK(ids.defined() && (ids.dim() == 1 || ids.dim() == 2), ShapeError,
             "TransformerLM: ids must be [B, T] or [T], got {}", ids.defined() ? ids.shape() : Shape{});
    AG_CHECK(ids.dtype() == DType::Int64, DTypeError, "TransformerLM: ids must be int64, got {}",
             ids.dtype());
    check_length(ids.shape().back(), ids.shape());
    return forward_embeds(embed(ids), key_padding_mask);
}

Tensor TransformerLM::forward_embeds(const Tensor& inputs_embeds, const Tensor& key_padding_mask) const {
    const Tensor& x = inputs_embeds;
    AG_CHECK(x.defined() && (x.dim() == 2 || x.dim() == 3) && x.size(-1) == options_.d_model, ShapeError,
             "TransformerLM: inputs_embeds must be [B, T, d_model = {}] or [T, {}], got {}", options_.d_model,
             options_.d_model, x.defined() ? x.shape() : Shape{});
    check_length(x.size(-2), x.shape());
    const Tensor h = pos_encoder_ ? pos_encoder_->forward(x) : x;
    return decoder_->forward(encoder_->forward(
        h, TransformerEncoderArgs{.src_key_padding_mask = key_padding_mask, .is_causal = true}));
}

Tensor TransformerLM::embed(const Tensor& ids) const { return input_emb_->forward(ids); }

void TransformerLM::check_length(std::int64_t t, const Shape& shape) const {
    AG_CHECK(t >= 1 && t <= options_.max_len, ShapeError,
             "TransformerLM: input {} must hold 1 to max_len = {} positions, got {}", shape, options_.max_len,
             t);
}

NextTokenLogits TransformerLM::next_token_logits() const {
    return [this](const Tensor& ids) { return forward(ids); };
}

std::string TransformerLM::extra_repr() const {
    return fmt::format("vocab_size={}, max_len={}, d_model={}, nhead={}, num_layers={}, dim_feedforward={}",
                       options_.vocab_size, options_.max_len, options_.d_model, options_.nhead,
                       options_.num_layers, options_.dim_feedforward);
}

}  // namespace attograd::nn

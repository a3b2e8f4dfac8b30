// The decoder-only language model of `attograd train --model lm`: an nn::TransformerLM (token
// embedding, `layers` causal pre-norm self-attention layers with rotary positions, a final
// LayerNorm and a linear head) registered as "lm". Output position t is predicted from source
// tokens 0..t only, so on a task whose target is its source shifted by one (induction, charlm)
// it is next-token prediction. Rotary positions (Su et al. 2021) rather than a learned table:
// an induction head matches tokens by content at any offset, and with RoPE the two-layer
// attention-only model reaches its phase change within a few hundred steps.
// Its attention is "lm.encoder.layers.<i>.self_attn": one causal [B, h, S, S] map per layer.
#include "models.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "nn/transformer_lm.hpp"

namespace attograd::cli {

namespace {

class LmModel final : public Model {
public:
    LmModel(const ModelConfig& c, const Vocabulary& vocab, Generator& generator) : config_(c) {
        lm_ = register_module("lm", std::make_shared<nn::TransformerLM>(
                                        nn::TransformerLMOptions{.vocab_size = vocab.size(),
                                                                 .max_len = c.max_source_len,
                                                                 .d_model = c.embed_dim,
                                                                 .nhead = c.heads,
                                                                 .num_layers = c.layers,
                                                                 .dim_feedforward = c.ffn_dim,
                                                                 .dropout = c.dropout,
                                                                 .positional = nn::Positional::Rotary},
                                        generator));
        for (std::int64_t i = 0; i < c.layers; ++i)
            layers_info_.push_back({"lm.encoder.layers." + std::to_string(i) + ".self_attn", c.heads, false});
    }

    std::string type_name() const override { return "LmModel"; }

    Batch make_batch(const std::vector<std::vector<std::int64_t>>& sources,
                     const std::vector<std::vector<std::int64_t>>* targets) const override {
        Batch batch;
        fill_source(batch, sources, -1, config_.max_source_len, config_.max_source_len);
        fill_per_input_targets(batch, sources, targets, config_.max_source_len, config_.kind);
        return batch;
    }

    ForwardResult forward(const Batch& batch, const Tensor& token_embedding) const override {
        ForwardResult result;
        result.logits = token_embedding.defined()
                            ? lm_->forward_embeds(token_embedding, batch.key_padding_mask)
                            : lm_->forward(batch.source, batch.key_padding_mask);
        return result;
    }

    /// The argmax next token at every position of each source (teacher-forced: position t reads
    /// the source's tokens 0..t, not the model's earlier predictions).
    std::vector<std::vector<std::int64_t>> predict(const std::vector<std::vector<std::int64_t>>& sources,
                                                   const DecodeSettings& decoding) const override {
        check_decoding(decoding, config_);
        NoGradGuard no_grad;
        return argmax_per_input(forward(make_batch(sources, nullptr), Tensor()).logits, sources);
    }

    Tensor token_embedding(const Batch& batch) const override {
        NoGradGuard no_grad;
        return lm_->embed(batch.source).detach();
    }

    std::vector<std::string> model_source(const std::vector<std::string>& source) const override {
        return source;
    }
    std::int64_t source_column(std::int64_t i) const override { return i; }

    const nn::TransformerLM& lm() const { return *lm_; }

private:
    ModelConfig config_;
    std::shared_ptr<nn::TransformerLM> lm_;
};

}  // namespace

std::shared_ptr<Model> make_lm_model(const ModelConfig& config, const Vocabularies& vocab,
                                     Generator& generator) {
    return std::make_shared<LmModel>(config, vocab.source, generator);
}

const nn::TransformerLM* language_model(const Model& model) {
    const auto* lm = dynamic_cast<const LmModel*>(&model);
    return lm == nullptr ? nullptr : &lm->lm();
}

}  // namespace attograd::cli

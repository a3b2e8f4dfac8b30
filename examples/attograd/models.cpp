// The models `attograd train` builds (see models.hpp for the design).
#include "models.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "nn/attention.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/multihead_attention.hpp"
#include "nn/linear.hpp"

#include <algorithm>

namespace attograd::cli {

namespace {

/// Int64 [n] = 0, 1, ..., n-1.
Tensor positions(std::int64_t n) {
    std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = i;
    return index_tensor(ids, {n});
}

/// Bool [rows, cols] of `value`.
Tensor bool_full(const Shape& shape, bool value) {
    Tensor t = empty(shape, {.dtype = DType::Bool});
    std::fill_n(t.data<bool>(), t.numel(), value);
    return t;
}

/// One pre-LayerNorm residual block: h + attention(LN(h), memory), then h + FFN(LN(h)), the
/// FFN being Linear(E, F) -> ReLU -> Linear(F, E) (skipped when F = 0). Self-attention when
/// memory is undefined. With one head the attention is an nn::Attention (every score,
/// normaliser and window); with several an nn::MultiHeadAttention (soft, every score and
/// window). It is registered as "self_attn" or "cross_attn".
class Block final : public nn::Module {
public:
    Block(const ModelConfig& c, bool cross, Generator& generator) : heads_(c.heads) {
        const std::int64_t e = c.embed_dim;
        norm1_ = register_module("norm1", std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.normalized_shape = {e}}));
        const std::string name = cross ? "cross_attn" : "self_attn";
        const nn::LocalMode local = c.window >= 0 ? nn::parse_local_mode(c.local) : nn::LocalMode::None;
        const std::int64_t window = std::max<std::int64_t>(c.window, 0);
        if (heads_ > 1) {
            multi_head_ = register_module(name, std::make_shared<nn::MultiHeadAttention>(
                                                    nn::MultiHeadAttentionOptions{.embed_dim = e,
                                                                                  .num_heads = heads_,
                                                                                  .score = nn::parse_score(c.score),
                                                                                  .local = local,
                                                                                  .window = window},
                                                    generator));
        } else {
            nn::AttentionOptions a{.query_dim = e,
                                   .score = nn::parse_score(c.score),
                                   .project_query = true,
                                   .project_key = true,
                                   .project_value = true,
                                   .local = local,
                                   .window = window};
            if (cross) {
                a.normalizer = c.attention == "hard" ? nn::Normalizer::Hard : nn::Normalizer::Soft;
                a.estimator = nn::parse_hard_estimator(c.estimator);
            }
            hard_reinforce_ = a.normalizer == nn::Normalizer::Hard && a.estimator == nn::HardEstimator::Reinforce;
            attention_ = register_module(name, std::make_shared<nn::Attention>(a, generator));
        }
        if (c.ffn_dim > 0) {
            norm2_ = register_module("norm2",
                                     std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.normalized_shape = {e}}));
            ff1_ = register_module("ff1", std::make_shared<nn::Linear>(
                                              nn::LinearOptions{.in_features = e, .out_features = c.ffn_dim}, generator));
            ff2_ = register_module("ff2", std::make_shared<nn::Linear>(
                                              nn::LinearOptions{.in_features = c.ffn_dim, .out_features = e}, generator));
        }
    }

    std::string type_name() const override { return "Block"; }

    /// h [B, Tq, E], memory [B, Tk, E] (or undefined: self-attention), key_padding_mask bool
    /// [B, Tk]. Appends hard attention's log p to `log_probs` when trained by REINFORCE.
    Tensor forward(const Tensor& h, const Tensor& memory, const Tensor& key_padding_mask,
                   std::vector<Tensor>& log_probs) const {
        const Tensor x = norm1_->forward(h);
        const Tensor& keys = memory.defined() ? memory : x;
        Tensor attended;
        if (multi_head_) {
            nn::MultiHeadAttentionArgs args{.key_padding_mask = key_padding_mask,
                                            .need_weights = false};
            attended = multi_head_->forward(x, keys, keys, args).output;
        } else {
            nn::AttentionMasks masks{.key_padding_mask = key_padding_mask};
            const nn::AttentionOutput a = attention_->forward(x, keys, masks, nn::attention_recording());
            if (hard_reinforce_ && a.log_prob.defined()) log_probs.push_back(a.log_prob);
            attended = a.output;
        }
        Tensor out = h + attended;
        if (ff1_) out = out + ff2_->forward(relu(ff1_->forward(norm2_->forward(out))));
        return out;
    }

    /// The single-head attention layer (REINFORCE's loss); null with several heads.
    nn::Attention* attention() const { return attention_.get(); }

private:
    std::int64_t heads_;
    std::shared_ptr<nn::LayerNorm> norm1_, norm2_;
    std::shared_ptr<nn::Attention> attention_;
    std::shared_ptr<nn::MultiHeadAttention> multi_head_;
    std::shared_ptr<nn::Linear> ff1_, ff2_;
    bool hard_reinforce_ = false;
};

/// Numbered submodules "0", "1", ... (a plain container, like PyTorch's ModuleList).
class BlockList final : public nn::Module {
public:
    BlockList(const ModelConfig& c, std::int64_t count, bool cross, Generator& generator) {
        for (std::int64_t i = 0; i < count; ++i) {
            blocks_.push_back(register_module(std::to_string(i), std::make_shared<Block>(c, cross, generator)));
        }
    }
    std::string type_name() const override { return "BlockList"; }
    const std::vector<std::shared_ptr<Block>>& blocks() const { return blocks_; }

private:
    std::vector<std::shared_ptr<Block>> blocks_;
};

/// Embeddings + self-attention blocks + a final LayerNorm.
class Encoder final : public nn::Module {
public:
    Encoder(const ModelConfig& c, std::int64_t positions, std::int64_t vocab_size, Generator& generator) {
        const std::int64_t e = c.embed_dim;
        if (c.next_token) {
            next_token_ = register_module(
                "next_token", std::make_shared<nn::Embedding>(nn::EmbeddingOptions{.num_embeddings = vocab_size,
                                                                                   .embedding_dim = e,
                                                                                   .padding_idx = Vocabulary::pad_id},
                                                              generator));
        }
        pos_start_ = register_module("pos_start", std::make_shared<nn::Embedding>(
                                                      nn::EmbeddingOptions{.num_embeddings = positions, .embedding_dim = e},
                                                      generator));
        pos_end_ = register_module("pos_end", std::make_shared<nn::Embedding>(
                                                  nn::EmbeddingOptions{.num_embeddings = positions, .embedding_dim = e},
                                                  generator));
        layers_ = register_module("layers", std::make_shared<BlockList>(c, c.layers, false, generator));
        norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.normalized_shape = {e}}));
    }
    std::string type_name() const override { return "Encoder"; }

    /// tokens [B, S, E] (already embedded) -> [B, S, E].
    Tensor forward(const Tensor& tokens, const Batch& batch, std::vector<Tensor>& log_probs) const {
        const std::int64_t s = batch.source.size(1);
        Tensor h = tokens + pos_start_->forward(positions(s)) + pos_end_->forward(batch.source_from_end);
        if (next_token_) h = h + next_token_->forward(batch.source_next);
        const auto& blocks = layers_->blocks();
        for (std::size_t i = 0; i < blocks.size(); ++i) {
            h = blocks[i]->forward(h, Tensor(), batch.key_padding_mask, log_probs);
        }
        return norm_->forward(h);
    }

private:
    std::shared_ptr<nn::Embedding> pos_start_, pos_end_, next_token_;
    std::shared_ptr<BlockList> layers_;
    std::shared_ptr<nn::LayerNorm> norm_;
};

/// Shared plumbing of the two models: the token embedding and the output layer.
class ModelBase : public Model {
protected:
    ModelBase(const ModelConfig& c, const Vocabulary& vocab, Generator& generator)
        : config_(c), vocab_size_(vocab.size()) {
        embed_ = register_module("embed", std::make_shared<nn::Embedding>(
                                              nn::EmbeddingOptions{.num_embeddings = vocab.size(),
                                                                   .embedding_dim = c.embed_dim,
                                                                   .padding_idx = Vocabulary::pad_id},
                                              generator));
    }

    Tensor token_embedding(const Batch& batch) const override {
        NoGradGuard no_grad;
        return embed_->forward(batch.source).detach();
    }

    Tensor embed_source(const Batch& batch, const Tensor& token_embedding) const {
        return token_embedding.defined() ? token_embedding : embed_->forward(batch.source);
    }

    /// Fills the source tensors of `batch` with `sources` wrapped by `prefix` / `suffix` ids
    /// (when >= 0), padded to `width`.
    void fill_source(Batch& batch, const std::vector<std::vector<std::int64_t>>& sources, std::int64_t prefix,
                     std::int64_t suffix, std::int64_t width) const {
        const auto b = static_cast<std::int64_t>(sources.size());
        AG_CHECK(b >= 1, ValueError, "model: empty batch");
        std::vector<std::int64_t> ids(static_cast<std::size_t>(b * width), Vocabulary::pad_id);
        std::vector<std::int64_t> from_end(ids.size(), 0);
        std::vector<std::int64_t> lengths;
        Tensor mask = bool_full({b, width}, true);
        for (std::int64_t i = 0; i < b; ++i) {
            const auto& src = sources[static_cast<std::size_t>(i)];
            AG_CHECK(std::ssize(src) <= config_.max_source_len, ValueError,
                     "the input has {} tokens; this model takes at most {}", src.size(), config_.max_source_len);
            std::vector<std::int64_t> row;
            if (prefix >= 0) row.push_back(prefix);
            row.insert(row.end(), src.begin(), src.end());
            if (suffix >= 0) row.push_back(suffix);
            const auto n = std::ssize(row);
            for (std::int64_t j = 0; j < n; ++j) {
                ids[static_cast<std::size_t>(i * width + j)] = row[static_cast<std::size_t>(j)];
                from_end[static_cast<std::size_t>(i * width + j)] = n - 1 - j;
                mask.data<bool>()[i * width + j] = false;
            }
            lengths.push_back(n);
        }
        batch.size = b;
        batch.source = index_tensor(ids, {b, width});
        batch.source_from_end = index_tensor(from_end, {b, width});
        std::vector<std::int64_t> next(ids.size(), Vocabulary::pad_id);
        for (std::size_t j = 0; j + 1 < ids.size(); ++j) {
            if ((j + 1) % static_cast<std::size_t>(width) != 0) next[j] = ids[j + 1];
        }
        batch.source_next = index_tensor(next, {b, width});
        batch.source_length = index_tensor(lengths, {b});
        batch.key_padding_mask = mask;
    }

    Tensor logits(const Tensor& h) const { return out_->forward(h); }

    ModelConfig config_;
    std::int64_t vocab_size_;
    std::shared_ptr<nn::Embedding> embed_;
    std::shared_ptr<nn::Linear> out_;
};

/// Index of the largest of `n` floats.
std::int64_t argmax_row(const float* row, std::int64_t n) {
    return static_cast<std::int64_t>(std::max_element(row, row + n) - row);
}

class Seq2SeqModel final : public ModelBase {
public:
    Seq2SeqModel(const ModelConfig& c, const Vocabulary& vocab, Generator& generator)
        : ModelBase(c, vocab, generator), source_width_(c.max_source_len + 1), target_width_(c.max_target_len + 1) {
        encoder_ = register_module("encoder", std::make_shared<Encoder>(c, source_width_, vocab.size(), generator));
        decoder_ = register_module("decoder", std::make_shared<Decoder>(c, source_width_, target_width_, generator));
        out_ = register_module("out", std::make_shared<nn::Linear>(
                                          nn::LinearOptions{.in_features = c.embed_dim, .out_features = vocab.size()},
                                          generator));
        for (std::int64_t i = 0; i < c.layers; ++i) {
            layers_info_.push_back({"encoder.layers." + std::to_string(i) + ".self_attn", c.heads, false});
        }
        for (std::int64_t i = 0; i < c.decoder_layers; ++i) {
            layers_info_.push_back({"decoder.layers." + std::to_string(i) + ".cross_attn", c.heads, true});
        }
    }

    std::string type_name() const override { return "Seq2SeqModel"; }

    Batch make_batch(const std::vector<std::vector<std::int64_t>>& sources,
                     const std::vector<std::vector<std::int64_t>>* targets) const override {
        Batch batch;
        fill_source(batch, sources, -1, Vocabulary::eos_id, source_width_);
        const std::int64_t b = batch.size, t = target_width_;
        std::vector<std::int64_t> input(static_cast<std::size_t>(b * t), Vocabulary::pad_id);
        std::vector<std::int64_t> target(input.size(), Vocabulary::pad_id);
        for (std::int64_t i = 0; i < b; ++i) {
            input[static_cast<std::size_t>(i * t)] = Vocabulary::bos_id;
            if (targets == nullptr) continue;
            const auto& y = (*targets)[static_cast<std::size_t>(i)];
            AG_CHECK(std::ssize(y) <= config_.max_target_len, ValueError,
                     "the target has {} tokens; this model writes at most {}", y.size(), config_.max_target_len);
            for (std::size_t j = 0; j < y.size(); ++j) {
                target[static_cast<std::size_t>(i * t) + j] = y[j];
                input[static_cast<std::size_t>(i * t) + j + 1] = y[j];
            }
            target[static_cast<std::size_t>(i * t) + y.size()] = Vocabulary::eos_id;
        }
        batch.decoder_input = index_tensor(input, {b, t});
        batch.target = index_tensor(target, {b, t});
        return batch;
    }

    ForwardResult forward(const Batch& batch, const Tensor& token_embedding) const override {
        ForwardResult result;
        const Tensor memory = encoder_->forward(embed_source(batch, token_embedding), batch, result.log_probs);
        const Tensor h = decoder_->forward(embed_->forward(batch.decoder_input), memory, batch, result.log_probs);
        result.logits = logits(h);
        return result;
    }

    std::vector<std::vector<std::int64_t>> predict(const std::vector<std::vector<std::int64_t>>& sources) const override {
        NoGradGuard no_grad;
        const Batch batch = make_batch(sources, nullptr);
        std::vector<Tensor> unused;
        const Tensor memory = encoder_->forward(embed_->forward(batch.source), batch, unused);
        const std::int64_t b = batch.size, t = target_width_;
        std::vector<std::int64_t> input(static_cast<std::size_t>(b * t), Vocabulary::pad_id);
        for (std::int64_t i = 0; i < b; ++i) input[static_cast<std::size_t>(i * t)] = Vocabulary::bos_id;
        std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(b));
        std::vector<bool> done(static_cast<std::size_t>(b), false);
        for (std::int64_t step = 0; step < t; ++step) {
            // Decoder positions do not see each other, so position `step` depends only on the
            // tokens written so far; the whole width is run to keep local-m's centres as in training.
            const Tensor h = decoder_->forward(embed_->forward(index_tensor(input, {b, t})), memory, batch, unused);
            const Tensor row = logits(narrow(h, 1, step, 1));  // [B, 1, V]
            const float* data = row.data<float>();
            bool all_done = true;
            for (std::int64_t i = 0; i < b; ++i) {
                if (done[static_cast<std::size_t>(i)]) continue;
                const std::int64_t y = argmax_row(data + i * vocab_size_, vocab_size_);
                if (y == Vocabulary::eos_id || step == t - 1) {
                    done[static_cast<std::size_t>(i)] = true;
                    if (y == Vocabulary::eos_id) continue;
                }
                out[static_cast<std::size_t>(i)].push_back(y);
                if (step + 1 < t) input[static_cast<std::size_t>(i * t + step + 1)] = y;
                all_done = all_done && done[static_cast<std::size_t>(i)];
            }
            if (all_done) break;
        }
        for (auto& y : out) {
            if (std::ssize(y) > config_.max_target_len) y.resize(static_cast<std::size_t>(config_.max_target_len));
        }
        return out;
    }

    std::vector<std::string> model_source(const std::vector<std::string>& source) const override {
        std::vector<std::string> out;
        out.insert(out.end(), source.begin(), source.end());
        out.emplace_back(Vocabulary::eos);
        return out;
    }

    std::int64_t source_column(std::int64_t i) const override { return i; }

    Tensor reinforce_loss(const ForwardResult& result, const Tensor& reward) override {
        Tensor loss;
        const auto& blocks = decoder_->blocks();
        for (std::size_t i = 0; i < result.log_probs.size() && i < blocks.size(); ++i) {
            const Tensor l = blocks[i]->attention()->reinforce_loss(result.log_probs[i], reward);
            loss = loss.defined() ? loss + l : l;
        }
        return loss;
    }

private:
    /// Queries embed(y_{t-1}) + position(t) + length(n), then cross-attention blocks.
    class Decoder final : public nn::Module {
    public:
        Decoder(const ModelConfig& c, std::int64_t source_width, std::int64_t target_width, Generator& generator) {
            const std::int64_t e = c.embed_dim;
            pos_ = register_module("pos", std::make_shared<nn::Embedding>(
                                              nn::EmbeddingOptions{.num_embeddings = target_width, .embedding_dim = e},
                                              generator));
            length_ = register_module("length", std::make_shared<nn::Embedding>(
                                                    nn::EmbeddingOptions{.num_embeddings = source_width + 1,
                                                                         .embedding_dim = e},
                                                    generator));
            layers_ = register_module("layers", std::make_shared<BlockList>(c, c.decoder_layers, true, generator));
            norm_ = register_module("norm",
                                    std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.normalized_shape = {e}}));
        }
        std::string type_name() const override { return "Decoder"; }

        Tensor forward(const Tensor& inputs, const Tensor& memory, const Batch& batch,
                       std::vector<Tensor>& log_probs) const {
            const std::int64_t b = inputs.size(0), t = inputs.size(1), e = inputs.size(2);
            Tensor h = inputs + pos_->forward(positions(t)) + reshape(length_->forward(batch.source_length), {b, 1, e});
            const auto& blocks = layers_->blocks();
            for (std::size_t i = 0; i < blocks.size(); ++i) {
                h = blocks[i]->forward(h, memory, batch.key_padding_mask, log_probs);
            }
            return norm_->forward(h);
        }
        const std::vector<std::shared_ptr<Block>>& blocks() const { return layers_->blocks(); }

    private:
        std::shared_ptr<nn::Embedding> pos_, length_;
        std::shared_ptr<BlockList> layers_;
        std::shared_ptr<nn::LayerNorm> norm_;
    };

    std::int64_t source_width_, target_width_;
    std::shared_ptr<Encoder> encoder_;
    std::shared_ptr<Decoder> decoder_;
};

class EncoderModel final : public ModelBase {
public:
    EncoderModel(const ModelConfig& c, const Vocabulary& vocab, Generator& generator) : ModelBase(c, vocab, generator) {
        encoder_ = register_module("encoder", std::make_shared<Encoder>(c, c.max_source_len, vocab.size(), generator));
        out_ = register_module("out", std::make_shared<nn::Linear>(
                                          nn::LinearOptions{.in_features = c.embed_dim, .out_features = vocab.size()},
                                          generator));
        for (std::int64_t i = 0; i < c.layers; ++i) {
            layers_info_.push_back({"encoder.layers." + std::to_string(i) + ".self_attn", c.heads, false});
        }
    }

    std::string type_name() const override { return "EncoderModel"; }

    Batch make_batch(const std::vector<std::vector<std::int64_t>>& sources,
                     const std::vector<std::vector<std::int64_t>>* targets) const override {
        Batch batch;
        const std::int64_t s = config_.max_source_len;
        fill_source(batch, sources, -1, -1, s);
        std::vector<std::int64_t> target(static_cast<std::size_t>(batch.size * s), Vocabulary::pad_id);
        if (targets != nullptr) {
            for (std::size_t i = 0; i < sources.size(); ++i) {
                const auto& y = (*targets)[i];
                AG_CHECK(y.size() == sources[i].size(), ValueError,
                         "--model encoder writes one token per input token, but a target has {} tokens for {} inputs",
                         y.size(), sources[i].size());
                std::copy(y.begin(), y.end(), target.begin() + static_cast<std::ptrdiff_t>(i) * s);
            }
        }
        batch.target = index_tensor(target, {batch.size, s});
        return batch;
    }

    ForwardResult forward(const Batch& batch, const Tensor& token_embedding) const override {
        ForwardResult result;
        result.logits = logits(encoder_->forward(embed_source(batch, token_embedding), batch, result.log_probs));
        return result;
    }

    std::vector<std::vector<std::int64_t>> predict(const std::vector<std::vector<std::int64_t>>& sources) const override {
        NoGradGuard no_grad;
        const Batch batch = make_batch(sources, nullptr);
        const Tensor l = forward(batch, Tensor()).logits;  // [B, S, V]
        const float* data = l.data<float>();
        const std::int64_t s = config_.max_source_len;
        std::vector<std::vector<std::int64_t>> out(sources.size());
        for (std::size_t i = 0; i < sources.size(); ++i) {
            for (std::size_t j = 0; j < sources[i].size(); ++j) {
                out[i].push_back(argmax_row(data + (static_cast<std::int64_t>(i) * s + static_cast<std::int64_t>(j)) * vocab_size_,
                                            vocab_size_));
            }
        }
        return out;
    }

    std::vector<std::string> model_source(const std::vector<std::string>& source) const override { return source; }
    std::int64_t source_column(std::int64_t i) const override { return i; }
    Tensor reinforce_loss(const ForwardResult&, const Tensor&) override { return Tensor(); }

private:
    std::shared_ptr<Encoder> encoder_;
};

}  // namespace

std::shared_ptr<Model> make_model(const ModelConfig& config, const Vocabulary& vocab, Generator& generator) {
    if (config.kind == "encoder") return std::make_shared<EncoderModel>(config, vocab, generator);
    AG_CHECK(config.kind == "seq2seq", ValueError, "--model must be seq2seq or encoder, got '{}'", config.kind);
    return std::make_shared<Seq2SeqModel>(config, vocab, generator);
}

}  // namespace attograd::cli

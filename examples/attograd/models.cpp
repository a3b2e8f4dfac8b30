// The models `attograd train` builds (see models.hpp for the design), composed of library modules.
#include "models.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "data/batcher.hpp"
#include "nn/decoding.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/positional_encoding.hpp"
#include "nn/transformer.hpp"

#include <algorithm>
#include <cmath>

namespace attograd::cli {

namespace {

/// Id sequences padded with <pad> to `width` (ids, key_padding_mask, lengths).
data::PaddedSequences pad(const std::vector<std::vector<std::int64_t>>& rows, std::int64_t width) {
    return data::pad_sequences(rows, {.padding_value = Vocabulary::pad_id, .length = width});
}

/// The layer options of the program's models: pre-norm (Xiong et al. 2020), the configured
/// dropout (PyTorch's, of every block), the configured attention in every layer (nn::Attention
/// with one head, MultiHeadAttention with several). Decoder layers (`cross`) have a causal
/// self-attention only with decoder_self_attention, and take the hard normaliser when asked
/// (validate() refuses hard attention with a decoder self-attention, so self-attention is always
/// soft).
nn::TransformerLayerOptions layer_options(const ModelConfig& c, bool cross) {
    nn::TransformerLayerOptions o{
        .d_model = c.embed_dim,
        .nhead = c.heads,
        .dim_feedforward = c.ffn_dim,
        .dropout = c.dropout,
        .norm_first = true,
        .scoring = {.score = nn::parse_score(c.score),
                    .local = c.window >= 0 ? nn::parse_local_mode(c.local) : nn::LocalMode::None,
                    .window = std::max<std::int64_t>(c.window, 0)},
        .attention = c.heads > 1 ? nn::LayerAttention::MultiHead : nn::LayerAttention::Single,
        .self_attention = !cross || c.decoder_self_attention};
    if (cross && c.heads == 1) {
        o.normalizer = c.attention == "hard" ? nn::Normalizer::Hard : nn::Normalizer::Soft;
        o.estimator = nn::parse_hard_estimator(c.estimator);
    }
    return o;
}

/// An embedding of `vocab`'s ids of width `e`, <pad> embedded as zeros.
std::shared_ptr<nn::Embedding> token_table(const Vocabulary& vocab, std::int64_t e, Generator& generator) {
    return std::make_shared<nn::Embedding>(
        nn::EmbeddingOptions{
            .num_embeddings = vocab.size(), .embedding_dim = e, .padding_idx = Vocabulary::pad_id},
        generator);
}

/// Index of the largest of `n` floats.
std::int64_t argmax_row(const float* row, std::int64_t n) {
    return static_cast<std::int64_t>(std::max_element(row, row + n) - row);
}

/// What both models share: the source token embedding, the source position tables (from the
/// start and from the end), the optional next-token embedding, the self-attention encoder and the
/// output layer over the target vocabulary. Registration order (the order the parameters are drawn in, kept
/// from the program's earlier models so that a seed trains as it did): embed, source_next, source_pos,
/// source_pos_from_end, encoder, then the subclass's modules, then out.
class ModelBase : public Model {
protected:
    ModelBase(const ModelConfig& c, const Vocabularies& vocab, std::int64_t source_width,
              Generator& generator)
        : config_(c), vocab_size_(vocab.target.size()), source_width_(source_width) {
        const std::int64_t e = c.embed_dim;
        embed_ = register_module("embed", token_table(vocab.source, e, generator));
        if (c.next_token)
            source_next_ = register_module("source_next", token_table(vocab.source, e, generator));
        const nn::PositionalEncodingOptions positions{.embedding_dim = e, .max_len = source_width};
        source_pos_ = register_module("source_pos",
                                      std::make_shared<nn::LearnedPositionalEmbedding>(positions, generator));
        source_pos_from_end_ = register_module(
            "source_pos_from_end", std::make_shared<nn::LearnedPositionalEmbedding>(positions, generator));
        encoder_ = register_module(
            "encoder", std::make_shared<nn::TransformerEncoder>(
                           nn::TransformerStackOptions{
                               .layer = layer_options(c, false), .num_layers = c.layers, .norm = true},
                           generator));
        for (std::int64_t i = 0; i < c.layers; ++i) {
            layers_info_.push_back({"encoder.layers." + std::to_string(i) + ".self_attn", c.heads, false});
        }
    }

    /// Registers the output layer (last, after the subclass's modules).
    void add_output(Generator& generator) {
        out_ = register_module(
            "out",
            std::make_shared<nn::Linear>(
                nn::LinearOptions{.in_features = config_.embed_dim, .out_features = vocab_size_}, generator));
    }

    Tensor token_embedding(const Batch& batch) const override {
        NoGradGuard no_grad;
        return embed_->forward(batch.source).detach();
    }

    void fill_source(Batch& batch, const std::vector<std::vector<std::int64_t>>& sources,
                     std::int64_t suffix) const {
        cli::fill_source(batch, sources, suffix, config_.max_source_len, source_width_);
    }

    /// The encoder's output [B, S, E] for embedded source tokens [B, S, E].
    Tensor encode(const Tensor& tokens, const Batch& batch, nn::ReinforceTrace* trace) const {
        Tensor h = source_pos_from_end_->forward_at(source_pos_->forward(tokens), batch.source_from_end);
        if (source_next_) h = h + source_next_->forward(batch.source_next);
        return encoder_->forward(h, {.src_key_padding_mask = batch.key_padding_mask, .reinforce = trace});
    }

    Tensor embed_source(const Batch& batch, const Tensor& token_embedding) const {
        return token_embedding.defined() ? token_embedding : embed_->forward(batch.source);
    }

    Tensor logits(const Tensor& h) const { return out_->forward(h); }

    ModelConfig config_;
    std::int64_t vocab_size_, source_width_;  // vocab_size_: the outputs' (target) vocabulary
    std::shared_ptr<nn::Embedding> embed_, source_next_;
    std::shared_ptr<nn::LearnedPositionalEmbedding> source_pos_, source_pos_from_end_;
    std::shared_ptr<nn::TransformerEncoder> encoder_;
    std::shared_ptr<nn::Linear> out_;
};

class Seq2SeqModel final : public ModelBase {
public:
    Seq2SeqModel(const ModelConfig& c, const Vocabularies& vocab, Generator& generator)
        : ModelBase(c, vocab, c.max_source_len + 1, generator), target_width_(c.max_target_len + 1) {
        const std::int64_t e = c.embed_dim;
        // Separate vocabularies: the decoder's inputs have their own embedding (shared: `embed`).
        if (&vocab.target != &vocab.source)
            target_embed_ = register_module("target_embed", token_table(vocab.target, e, generator));
        target_pos_ = register_module(
            "target_pos",
            std::make_shared<nn::LearnedPositionalEmbedding>(
                nn::PositionalEncodingOptions{.embedding_dim = e, .max_len = target_width_}, generator));
        source_length_ = register_module(
            "source_length",
            std::make_shared<nn::Embedding>(
                nn::EmbeddingOptions{.num_embeddings = source_width_ + 1, .embedding_dim = e}, generator));
        decoder_ = register_module(
            "decoder", std::make_shared<nn::TransformerDecoder>(
                           nn::TransformerStackOptions{
                               .layer = layer_options(c, true), .num_layers = c.decoder_layers, .norm = true},
                           generator));
        add_output(generator);
        for (std::int64_t i = 0; i < c.decoder_layers; ++i) {
            const std::string layer = "decoder.layers." + std::to_string(i);
            if (c.decoder_self_attention)
                layers_info_.push_back({layer + ".self_attn", c.heads, false, true});
            layers_info_.push_back({layer + ".multihead_attn", c.heads, true});
        }
    }

    std::string type_name() const override { return "Seq2SeqModel"; }

    Batch make_batch(const std::vector<std::vector<std::int64_t>>& sources,
                     const std::vector<std::vector<std::int64_t>>* targets) const override {
        Batch batch;
        fill_source(batch, sources, Vocabulary::eos_id);
        fill_targets(batch, targets, config_.max_target_len);
        return batch;
    }

    ForwardResult forward(const Batch& batch, const Tensor& token_embedding) const override {
        ForwardResult result;
        const Tensor memory = encode(embed_source(batch, token_embedding), batch, &result.reinforce);
        result.logits = logits(decode(batch.decoder_input, memory, batch.key_padding_mask,
                                      batch.source_length, &result.reinforce));
        return result;
    }

    std::vector<std::vector<std::int64_t>> predict(const std::vector<std::vector<std::int64_t>>& sources,
                                                   const DecodeSettings& decoding) const override {
        check_decoding(decoding, config_);
        NoGradGuard no_grad;
        const Batch batch = make_batch(sources, nullptr);
        const Tensor memory = encode(embed_->forward(batch.source), batch, nullptr);
        const nn::DecodeStep step = [this](const Tensor& prefixes, const Tensor& rows_memory,
                                           const Tensor& rows_mask) {
            return next_logits(prefixes, rows_memory, rows_mask);
        };
        return decode_outputs(memory, batch.key_padding_mask, step, decoding, config_.max_target_len);
    }

    std::vector<std::string> model_source(const std::vector<std::string>& source) const override {
        return with_eos(source);
    }

    std::int64_t source_column(std::int64_t i) const override { return i; }

private:
    /// Queries embed(y_{t-1}) + position(t) + length(n) over the memory: inputs int64 [B, T],
    /// memory [B, S, E], mask bool [B, S], source lengths int64 [B] -> [B, T, E].
    Tensor decode(const Tensor& inputs, const Tensor& memory, const Tensor& mask, const Tensor& lengths,
                  nn::ReinforceTrace* trace) const {
        const std::int64_t b = inputs.size(0), e = config_.embed_dim;
        const Tensor queries =
            target_pos_->forward((target_embed_ ? target_embed_ : embed_)->forward(inputs)) +
            reshape(source_length_->forward(lengths), {b, 1, e});
        // With self-attention, output t sees outputs s <= t only (PyTorch's tgt_is_causal mask):
        // teacher forcing then computes what decoding one token at a time computes.
        return decoder_->forward(queries, memory,
                                 {.memory_key_padding_mask = mask,
                                  .tgt_is_causal = config_.decoder_self_attention,
                                  .reinforce = trace});
    }

    /// The nn::DecodeStep of the decoder: prefixes int64 [N, t] (<bos> y_1 .. y_{t-1}), memory
    /// [N, S, E], mask bool [N, S] -> logits [N, V] of y_t. Decoder positions see no later
    /// position (none at all without self-attention, the earlier ones through the causal mask
    /// with it), so position t - 1 depends only on the prefix; the rest of the width is run on
    /// <pad> to keep local-m's centres (floor(t * S / T)) as in training.
    Tensor next_logits(const Tensor& prefixes, const Tensor& memory, const Tensor& mask) const {
        const std::int64_t n = prefixes.size(0), t = prefixes.size(1), s = mask.size(1);
        const Tensor inputs =
            t < target_width_
                ? concat({prefixes, full({n, target_width_ - t}, static_cast<double>(Vocabulary::pad_id),
                                         {.dtype = DType::Int64})},
                         1)
                : prefixes;
        // real source positions (the batch's source_length) from the padding mask
        const Tensor lengths = to_dtype(
            full({n}, static_cast<double>(s)) - sum(to_dtype(mask, DType::Float32), {1}), DType::Int64);
        return logits(select(decode(inputs, memory, mask, lengths, nullptr), 1, t - 1));
    }

    std::int64_t target_width_;
    std::shared_ptr<nn::Embedding> target_embed_;  // null when the vocabulary is shared
    std::shared_ptr<nn::LearnedPositionalEmbedding> target_pos_;
    std::shared_ptr<nn::Embedding> source_length_;
    std::shared_ptr<nn::TransformerDecoder> decoder_;
};

class EncoderModel final : public ModelBase {
public:
    EncoderModel(const ModelConfig& c, const Vocabularies& vocab, Generator& generator)
        : ModelBase(c, vocab, c.max_source_len, generator) {
        add_output(generator);
    }

    std::string type_name() const override { return "EncoderModel"; }

    Batch make_batch(const std::vector<std::vector<std::int64_t>>& sources,
                     const std::vector<std::vector<std::int64_t>>* targets) const override {
        Batch batch;
        fill_source(batch, sources, -1);
        fill_per_input_targets(batch, sources, targets, source_width_, config_.kind);
        return batch;
    }

    ForwardResult forward(const Batch& batch, const Tensor& token_embedding) const override {
        ForwardResult result;
        result.logits = logits(encode(embed_source(batch, token_embedding), batch, &result.reinforce));
        return result;
    }

    std::vector<std::vector<std::int64_t>> predict(const std::vector<std::vector<std::int64_t>>& sources,
                                                   const DecodeSettings& decoding) const override {
        check_decoding(decoding, config_);
        NoGradGuard no_grad;
        return argmax_per_input(forward(make_batch(sources, nullptr), Tensor()).logits, sources);
    }

    std::vector<std::string> model_source(const std::vector<std::string>& source) const override {
        return source;
    }
    std::int64_t source_column(std::int64_t i) const override { return i; }
};

}  // namespace

void fill_per_input_targets(Batch& batch, const std::vector<std::vector<std::int64_t>>& sources,
                            const std::vector<std::vector<std::int64_t>>* targets, std::int64_t width,
                            const std::string& kind) {
    std::vector<std::vector<std::int64_t>> outputs(sources.size());
    for (std::size_t i = 0; targets != nullptr && i < sources.size(); ++i) {
        const auto& y = (*targets)[i];
        AG_CHECK(y.size() == sources[i].size(), ValueError,
                 "--model {} writes one token per input token, but a target has {} tokens for {} inputs",
                 kind, y.size(), sources[i].size());
        outputs[i] = y;
    }
    batch.target = pad(outputs, width).ids;
}

std::vector<std::vector<std::int64_t>> argmax_per_input(
    const Tensor& logits, const std::vector<std::vector<std::int64_t>>& sources) {
    const std::int64_t width = logits.size(1), v = logits.size(2);
    const float* data = logits.data<float>();
    std::vector<std::vector<std::int64_t>> out(sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
        for (std::size_t j = 0; j < sources[i].size(); ++j) {
            const auto row = static_cast<std::int64_t>(i) * width + static_cast<std::int64_t>(j);
            out[i].push_back(argmax_row(data + row * v, v));
        }
    }
    return out;
}

std::vector<std::string> with_eos(const std::vector<std::string>& source) {
    std::vector<std::string> out = source;
    out.emplace_back(Vocabulary::eos);
    return out;
}

void fill_source(Batch& batch, const std::vector<std::vector<std::int64_t>>& sources, std::int64_t suffix,
                 std::int64_t max_source_len, std::int64_t width) {
    AG_CHECK(!sources.empty(), ValueError, "model: empty batch");
    std::vector<std::vector<std::int64_t>> rows;
    for (const auto& src : sources) {
        AG_CHECK(std::ssize(src) <= max_source_len, ValueError,
                 "the input has {} tokens; this model takes at most {}", src.size(), max_source_len);
        rows.push_back(src);
        if (suffix >= 0) rows.back().push_back(suffix);
    }
    const data::PaddedSequences p = pad(rows, width);
    batch.size = std::ssize(sources);
    batch.source = p.ids;
    batch.key_padding_mask = p.key_padding_mask;
    batch.source_length = p.lengths;
    batch.source_from_end = nn::positions_from_end(p.key_padding_mask);
    // the id one position to the right, <pad> after the last column (only the next-token
    // embedding reads it)
    const Tensor pads =
        full({batch.size, 1}, static_cast<double>(Vocabulary::pad_id), {.dtype = DType::Int64});
    batch.source_next = width == 1 ? pads : concat({narrow(p.ids, 1, 1, width - 1), pads}, 1);
}

void fill_targets(Batch& batch, const std::vector<std::vector<std::int64_t>>* targets,
                  std::int64_t max_target_len) {
    const std::size_t n = static_cast<std::size_t>(batch.size);
    std::vector<std::vector<std::int64_t>> inputs(n, {Vocabulary::bos_id}), outputs(n);
    for (std::size_t i = 0; targets != nullptr && i < n; ++i) {
        const auto& y = (*targets)[i];
        AG_CHECK(std::ssize(y) <= max_target_len, ValueError,
                 "the target has {} tokens; this model writes at most {}", y.size(), max_target_len);
        inputs[i].insert(inputs[i].end(), y.begin(), y.end());  // <bos> y_1 .. y_m
        outputs[i] = y;
        outputs[i].push_back(Vocabulary::eos_id);  // y_1 .. y_m <eos>
    }
    batch.decoder_input = pad(inputs, max_target_len + 1).ids;
    batch.target = pad(outputs, max_target_len + 1).ids;
}

std::vector<std::vector<std::int64_t>> decode_outputs(const Tensor& memory, const Tensor& mask,
                                                      const nn::DecodeStep& step,
                                                      const DecodeSettings& decoding,
                                                      std::int64_t max_target_len) {
    // Up to max_target_len tokens and their <eos>.
    const nn::DecodeOptions options{.bos_id = Vocabulary::bos_id,
                                    .eos_id = Vocabulary::eos_id,
                                    .max_length = max_target_len + 1,
                                    .beam_size = decoding.beam,
                                    .length_penalty = decoding.length_penalty,
                                    .record_attention = false};
    std::vector<std::vector<std::int64_t>> out;
    if (decoding.beam == 1) {
        for (auto& h : nn::greedy_decode(memory, mask, step, options)) out.push_back(std::move(h.tokens));
    } else {
        out = nn::best_tokens(nn::beam_search(memory, mask, step, options));
    }
    for (auto& y : out) {  // an output that never wrote <eos> is cut to what the model may write
        if (std::ssize(y) > max_target_len) y.resize(static_cast<std::size_t>(max_target_len));
    }
    return out;
}

void check_decoding(const DecodeSettings& decoding, const ModelConfig& config) {
    AG_CHECK(decoding.beam >= 1 && decoding.beam <= DecodeSettings::max_beam, ValueError,
             "--beam must be in [1, {}], got {}", DecodeSettings::max_beam, decoding.beam);
    AG_CHECK(std::abs(decoding.length_penalty) <= DecodeSettings::max_length_penalty, ValueError,
             "--length-penalty must be in [-{}, {}], got {:g}", DecodeSettings::max_length_penalty,
             DecodeSettings::max_length_penalty, decoding.length_penalty);
    // As every real-valued flag: 0 or a magnitude float32 keeps (1e-50 would act as 0).
    AG_CHECK(is_float32_magnitude(decoding.length_penalty), ValueError,
             "--length-penalty must be 0 or a magnitude in {} (representable in float32), got {:g}",
             float32_range_text(), decoding.length_penalty);
    AG_CHECK(decoding.beam == 1 || !writes_per_input(config), ValueError,
             "--beam {}: beam search applies to seq2seq runs only (--model {} writes one token per input "
             "token in one pass)",
             decoding.beam, config.kind);
}

std::shared_ptr<Model> make_model(const ModelConfig& config, const Vocabularies& vocab,
                                  Generator& generator) {
    if (config.kind == "encoder") return std::make_shared<EncoderModel>(config, vocab, generator);
    if (config.kind == "rnn") return make_rnn_model(config, vocab, generator);
    if (config.kind == "lm") return make_lm_model(config, vocab, generator);
    AG_CHECK(config.kind == "seq2seq", ValueError, "--model must be seq2seq, encoder, rnn or lm, got '{}'",
             config.kind);
    return std::make_shared<Seq2SeqModel>(config, vocab, generator);
}

std::shared_ptr<Model> make_model(const ModelConfig& config, const Vocabulary& vocab, Generator& generator) {
    return make_model(config, Vocabularies{vocab, vocab}, generator);
}

}  // namespace attograd::cli

// The recurrent encoder-decoder of `attograd train --model rnn`:
//   encoder: nn::Embedding (+ nn::Dropout with --dropout) + an nn::GRU or nn::LSTM of `rnn_layers`
//            layers over `x_1 .. x_n <eos>` (the padding skipped through the lengths; --dropout
//            also between its layers, as PyTorch's), bidirectional on request with E / 2
//            per direction, so that the annotations h_j [B, S, E] are E wide either way (as
//            OpenNMT's bidirectional encoders) and every score of the Luong decoder applies;
//   bridge:  the decoder's initial state tanh(W [h->_n; h<-_1]) from the top layer's last
//            forward state (and the backward state at the first token), as Bahdanau et al. 2015
//            (appendix A.2.2) compute s_0; for the Luong decoder one such state per layer (c_0 = 0);
//   decoder: nn::BahdanauDecoder (a GRU, the additive score, deep output) or nn::LuongDecoder
//            (`rnn_layers` GRU or LSTM cells, the dot / scaled-dot / general / concat score,
//            global or local-m / local-p attention, input feeding) over the annotations.
// Its attention is the decoder's submodule "decoder.attention": one [B, T, S] map per forward.
#include "models.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "nn/bahdanau_decoder.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/luong_decoder.hpp"
#include "nn/rnn.hpp"

namespace attograd::cli {

namespace {

class RnnModel final : public Model {
public:
    RnnModel(const ModelConfig& c, const Vocabularies& vocab, Generator& generator)
        : config_(c), source_width_(c.max_source_len + 1) {
        const std::int64_t e = c.embed_dim, hidden = c.bidirectional ? e / 2 : e;
        embed_ = register_module("embed", std::make_shared<nn::Embedding>(
                                              nn::EmbeddingOptions{.num_embeddings = vocab.source.size(),
                                                                   .embedding_dim = e,
                                                                   .padding_idx = Vocabulary::pad_id},
                                              generator));
        embed_dropout_ = register_module(
            "embed_dropout", std::make_shared<nn::Dropout>(nn::DropoutOptions{.p = c.dropout}, generator));
        if (c.cell == "lstm") {
            lstm_ = register_module(
                "encoder", std::make_shared<nn::LSTM>(nn::LSTMOptions{.input_size = e,
                                                                      .hidden_size = hidden,
                                                                      .num_layers = c.rnn_layers,
                                                                      .dropout = c.dropout,
                                                                      .bidirectional = c.bidirectional},
                                                      generator));
        } else {
            gru_ = register_module("encoder",
                                   std::make_shared<nn::GRU>(nn::GRUOptions{.input_size = e,
                                                                            .hidden_size = hidden,
                                                                            .num_layers = c.rnn_layers,
                                                                            .dropout = c.dropout,
                                                                            .bidirectional = c.bidirectional},
                                                             generator));
        }
        const bool luong = c.decoder == "luong";
        bridge_ = register_module(
            "bridge", std::make_shared<nn::Linear>(
                          nn::LinearOptions{.in_features = e, .out_features = (luong ? c.rnn_layers : 1) * e},
                          generator));
        if (luong) {
            luong_ = register_module(
                "decoder",
                std::make_shared<nn::LuongDecoder>(
                    nn::LuongDecoderOptions{.vocab_size = vocab.target.size(),
                                            .embedding_dim = e,
                                            .hidden_size = e,
                                            .num_layers = c.rnn_layers,
                                            .cell = nn::parse_luong_cell(c.cell),
                                            .scoring = {.score = nn::parse_score(c.score),
                                                        .local = c.window >= 0 ? nn::parse_local_mode(c.local)
                                                                               : nn::LocalMode::None,
                                                        .window = std::max<std::int64_t>(c.window, 0)}},
                    generator));
        } else {
            bahdanau_ = register_module(
                "decoder", std::make_shared<nn::BahdanauDecoder>(
                               nn::BahdanauDecoderOptions{
                                   .vocab_size = vocab.target.size(), .embedding_dim = e, .hidden_size = e},
                               generator));
        }
        layers_info_.push_back({"decoder.attention", 1, true});
    }

    std::string type_name() const override { return "RnnModel"; }

    Batch make_batch(const std::vector<std::vector<std::int64_t>>& sources,
                     const std::vector<std::vector<std::int64_t>>* targets) const override {
        Batch batch;
        fill_source(batch, sources, Vocabulary::eos_id, config_.max_source_len, source_width_);
        fill_targets(batch, targets, config_.max_target_len);
        return batch;
    }

    ForwardResult forward(const Batch& batch, const Tensor& token_embedding) const override {
        const Tensor tokens = token_embedding.defined() ? token_embedding : embed_->forward(batch.source);
        const Tensor memory = encode(tokens, batch.source_length);
        const Tensor& mask = batch.key_padding_mask;
        const Tensor h0 = initial_state(memory, mask);
        ForwardResult result;
        result.logits = luong_ ? luong_->forward(batch.decoder_input, memory, mask, {.h = h0})
                               : bahdanau_->forward(batch.decoder_input, memory, mask, h0);
        return result;
    }

    std::vector<std::vector<std::int64_t>> predict(const std::vector<std::vector<std::int64_t>>& sources,
                                                   const DecodeSettings& decoding) const override {
        check_decoding(decoding, config_);
        NoGradGuard no_grad;
        const Batch batch = make_batch(sources, nullptr);
        const Tensor memory = encode(embed_->forward(batch.source), batch.source_length);
        // The search gathers memory rows per hypothesis: the initial states come from those rows.
        const nn::DecodeStep step =
            luong_ ? luong_->decode_step([this](const Tensor& rows, const Tensor& mask) {
                return nn::LuongDecoderState{.h = initial_state(rows, mask)};
            })
                   : bahdanau_->decode_step([this](const Tensor& rows, const Tensor& mask) {
                         return initial_state(rows, mask);
                     });
        return decode_outputs(memory, batch.key_padding_mask, step, decoding, config_.max_target_len);
    }

    Tensor token_embedding(const Batch& batch) const override {
        NoGradGuard no_grad;
        return embed_->forward(batch.source).detach();
    }

    std::vector<std::string> model_source(const std::vector<std::string>& source) const override {
        return with_eos(source);
    }

    std::int64_t source_column(std::int64_t i) const override { return i; }

private:
    /// Embedded tokens [B, S, E] and their lengths [B] -> the annotations [B, S, E] (0 at padding).
    Tensor encode(const Tensor& embedded, const Tensor& lengths) const {
        const Tensor tokens = embed_dropout_->forward(embedded);
        return lstm_ ? lstm_->forward(tokens, {}, {}, lengths).output
                     : gru_->forward(tokens, {}, lengths).output;
    }

    /// The decoder's initial state from the annotations [N, S, E] and their padding mask [N, S]:
    /// tanh(W [h->_n; h<-_1]), [N, E] for Bahdanau, [L, N, E] (one per layer) for Luong.
    Tensor initial_state(const Tensor& memory, const Tensor& mask) const {
        const std::int64_t n = memory.size(0), s = memory.size(1), e = config_.embed_dim;
        const auto lengths = nn::lengths_from_padding_mask(mask).to_vector<std::int64_t>();
        std::vector<std::int64_t> rows;
        for (std::int64_t b = 0; b < n; ++b) rows.push_back(b * s + lengths[static_cast<std::size_t>(b)] - 1);
        Tensor summary = index_select(reshape(memory, {n * s, e}), 0, index_tensor(rows, {n}));
        if (config_.bidirectional)  // the backward direction has read the whole source at position 0
            summary =
                concat({narrow(summary, 1, 0, e / 2), narrow(select(memory, 1, 0), 1, e / 2, e / 2)}, 1);
        const Tensor state = tanh(bridge_->forward(summary));
        if (!luong_) return state;
        return transpose(reshape(state, {n, config_.rnn_layers, e}), 0, 1);
    }

    ModelConfig config_;
    std::int64_t source_width_;
    std::shared_ptr<nn::Embedding> embed_;
    std::shared_ptr<nn::Dropout> embed_dropout_;
    std::shared_ptr<nn::GRU> gru_;
    std::shared_ptr<nn::LSTM> lstm_;
    std::shared_ptr<nn::Linear> bridge_;
    std::shared_ptr<nn::BahdanauDecoder> bahdanau_;
    std::shared_ptr<nn::LuongDecoder> luong_;
};

}  // namespace

std::shared_ptr<Model> make_rnn_model(const ModelConfig& config, const Vocabularies& vocab,
                                      Generator& generator) {
    return std::make_shared<RnnModel>(config, vocab, generator);
}

}  // namespace attograd::cli

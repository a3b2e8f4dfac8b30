// The models `attograd train` builds, composed only of attograd's public modules:
//
// Seq2SeqModel — an attention encoder-decoder (Bahdanau et al. 2015; Luong et al. 2015):
//   encoder: nn::Embedding of the tokens + nn::LearnedPositionalEmbedding from the start and from
//            the end (nn::positions_from_end) of `x_1 .. x_n <eos>` (no `<bos>` key: it became an
//            attention sink that unscaled scores fell into), then an nn::TransformerEncoder of
//            `layers` pre-norm layers (self-attention + feed-forward, each residual) and its final
//            LayerNorm;
//   decoder: the query of output position t is embed(y_{t-1}) + position(t) + length(n): the
//            previous output token (teacher-forced while training, the model's own while
//            decoding), where it is, and how long the source is. An nn::TransformerDecoder
//            of `decoder_layers` pre-norm layers *without self-attention* by default (with
//            --decoder-self-attention each first attends causally over the earlier outputs, as
//            Vaswani et al. 2017's decoder) then attends over the
//            encoder with the configured score, soft or hard weights and global, local-m or
//            local-p windows (+ feed-forward), and an nn::Linear gives the token logits. With
//            one head the layers' attention is nn::Attention (LayerAttention::Single: every score,
//            normaliser and estimator), with several nn::MultiHeadAttention. No self-attention
//            over earlier outputs by default: every toy task's output token is a function of the source, its
//            position and the previous token (sort: "the smallest letter after the last one"), and
//            without it one attention layer's weights are the whole alignment story, which is
//            what `inspect` shows; real text (translation) needs the earlier outputs. Both position tables
//            let a query find "the k-th token from the start" (copy) or "from the end" (reverse) with one dot
//            product.
// EncoderModel — a self-attention encoder for tasks whose output has one token per input token:
//   the same embeddings (no markers), an nn::TransformerEncoder, an nn::Linear per position.
// LmModel — a decoder-only causal language model, nn::TransformerLM (model_lm.cpp).
#pragma once

#include "config.hpp"
#include "data/vocabulary.hpp"

#include "core/generator.hpp"
#include "core/tensor.hpp"
#include "nn/attention.hpp"
#include "nn/decoding.hpp"
#include "nn/module.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attograd::nn {
class TransformerLM;
}

namespace attograd::cli {

/// Token-id sequences as the padded tensors a model takes.
struct Batch {
    std::int64_t size = 0;
    Tensor source;            ///< int64 [B, S]: the model's source ids (seq2seq adds <eos>), padded
    Tensor source_from_end;   ///< int64 [B, S]: each position counted from the last real one (0 at pads)
    Tensor source_next;       ///< int64 [B, S]: the next position's id (<pad> after the last one)
    Tensor source_length;     ///< int64 [B]: real source positions (markers included)
    Tensor key_padding_mask;  ///< bool [B, S]: true at padding
    Tensor decoder_input;     ///< int64 [B, T]: <bos> y_1 .. (seq2seq only)
    Tensor target;            ///< int64 [B, T]: the tokens to predict, <pad> where nothing is
};

/// What a forward pass returns.
struct ForwardResult {
    Tensor logits;  ///< [B, T, V]
    /// Hard attention trained by REINFORCE (while training): each layer's log p(chosen key);
    /// `reinforce.loss(reward)` is their surrogate loss.
    nn::ReinforceTrace reinforce;
};

/// One attention layer of a model, as `inspect` lists it.
struct AttentionLayerInfo {
    std::string name;  ///< module name, as the AttentionRecorder reports it
    std::int64_t heads;
    bool cross;  ///< decoder attention over the encoder (else self-attention)
    /// The decoder's causal self-attention: its queries and keys are output positions (the keys
    /// labelled by the decoder's inputs <bos> y_1 ..), so it has no source alignment.
    bool over_outputs = false;
};

/// How Model::predict writes the seq2seq model's outputs (the encoder model has no choice: it
/// writes one token per input token in one pass).
struct DecodeSettings {
    /// Hypotheses kept per source: 1 = greedy (nn::greedy_decode), more = nn::beam_search (at most
    /// max_beam).
    std::int64_t beam = 1;
    /// Beam search ranks a finished output y by log P(y) / |y|^alpha, |y| counting its <eos>
    /// (nn::LengthNormalization::Power, Hugging Face's `length_penalty`): 0 ranks by log P(y), which
    /// favours short outputs; 1 is the mean log-probability per token. No effect with beam = 1.
    double length_penalty = 0.0;
    static constexpr std::int64_t max_beam = 64;
    /// |length_penalty| at most: Hugging Face's typical values are 0.6-2; beyond 10, |y|^A
    /// swamps log P(y) (a score of 1e308 ranks by length alone, or overflows).
    static constexpr double max_length_penalty = 10.0;
};

/// Common interface of the two models.
class Model : public nn::Module {
public:
    /// Ids of `sources` (and `targets`, when given) as a padded batch. Throws ValueError when a
    /// source is longer than max_source_len (naming both lengths).
    virtual Batch make_batch(const std::vector<std::vector<std::int64_t>>& sources,
                             const std::vector<std::vector<std::int64_t>>* targets) const = 0;
    /// Teacher-forced logits of a batch made with targets. `token_embedding`, when defined,
    /// replaces embed(source) [B, S, E] (for gradient x input saliency).
    virtual ForwardResult forward(const Batch& batch, const Tensor& token_embedding = Tensor()) const = 0;
    /// Outputs (ids, without <eos>, at most max_target_len) for each source: greedy, or the best
    /// hypothesis of beam search (`decoding`). Throws ValueError as check_decoding.
    virtual std::vector<std::vector<std::int64_t>> predict(
        const std::vector<std::vector<std::int64_t>>& sources, const DecodeSettings& decoding = {}) const = 0;
    /// embed(source) [B, S, E] of a batch (detached: a leaf for saliency).
    virtual Tensor token_embedding(const Batch& batch) const = 0;
    /// Source tokens as the model sees them (seq2seq adds <eos>): the column labels
    /// of its attention maps.
    virtual std::vector<std::string> model_source(const std::vector<std::string>& source) const = 0;
    /// Column of source token i in the attention maps.
    virtual std::int64_t source_column(std::int64_t i) const = 0;
    /// Every attention layer in forward order.
    const std::vector<AttentionLayerInfo>& attention_layers() const { return layers_info_; }

protected:
    std::vector<AttentionLayerInfo> layers_info_;
};

/// `source` followed by <eos>: what the seq2seq models read (their attention maps' columns).
std::vector<std::string> with_eos(const std::vector<std::string>& source);

/// Fills the source tensors of `batch` with `sources` (each followed by `suffix` when >= 0),
/// padded to `width`. Throws ValueError for no source or one longer than max_source_len.
void fill_source(Batch& batch, const std::vector<std::vector<std::int64_t>>& sources, std::int64_t suffix,
                 std::int64_t max_source_len, std::int64_t width);
/// Fills the target of a batch of `sources` from `targets` (none when null), one token per
/// source token, padded to `width`. Throws ValueError naming `kind` (the --model) when a target's
/// length differs from its source's.
void fill_per_input_targets(Batch& batch, const std::vector<std::vector<std::int64_t>>& sources,
                            const std::vector<std::vector<std::int64_t>>* targets, std::int64_t width,
                            const std::string& kind);
/// The argmax token of each real position: logits float32 [B, S, V] of `sources` (B rows of at
/// most S tokens) -> one id per source token.
std::vector<std::vector<std::int64_t>> argmax_per_input(
    const Tensor& logits, const std::vector<std::vector<std::int64_t>>& sources);
/// Fills decoder_input (<bos> y) and target (y <eos>) of a batch of batch.size rows from
/// `targets` (<bos> alone and no target when null), padded to max_target_len + 1. Throws
/// ValueError for a target longer than max_target_len.
void fill_targets(Batch& batch, const std::vector<std::vector<std::int64_t>>* targets,
                  std::int64_t max_target_len);

/// ValueError, naming the flag (--beam, --length-penalty), unless `decoding` is one a model of
/// `config` can run: beam in [1, DecodeSettings::max_beam], 1 for the encoder model; a
/// length penalty in [-max_length_penalty, max_length_penalty].
void check_decoding(const DecodeSettings& decoding, const ModelConfig& config);

/// The outputs (ids without <eos>, cut to max_target_len) of a seq2seq model's decoder `step`
/// over `memory` [B, S, E] and its padding mask [B, S]: nn::greedy_decode when decoding.beam is
/// 1, else the best hypothesis of nn::beam_search; at most max_target_len + 1 steps, no attention
/// recorded (inspect records it teacher-forced on the output).
std::vector<std::vector<std::int64_t>> decode_outputs(const Tensor& memory, const Tensor& mask,
                                                      const nn::DecodeStep& step,
                                                      const DecodeSettings& decoding,
                                                      std::int64_t max_target_len);

/// The decoder-only causal language model of `--model lm` (model_lm.cpp): output t is predicted
/// from source tokens 0..t. Throws ValueError as nn::TransformerLM.
std::shared_ptr<Model> make_lm_model(const ModelConfig& config, const Vocabularies& vocab,
                                     Generator& generator);
/// The nn::TransformerLM of a model make_lm_model made, else nullptr.
const nn::TransformerLM* language_model(const Model& model);

/// The recurrent encoder-decoder of `--model rnn` (model_rnn.cpp): the encoder embeds
/// vocab.source, the decoder embeds and writes vocab.target.
std::shared_ptr<Model> make_rnn_model(const ModelConfig& config, const Vocabularies& vocab,
                                      Generator& generator);

/// The model `config` describes over vocabularies `vocab` (sources read with vocab.source, outputs
/// written in vocab.target; with separate vocabularies the seq2seq decoder embeds its inputs with
/// its own `target_embed`, else with the source's `embed`), its parameters drawn from `generator`
/// (which must outlive it: hard attention and dropout draw from it). Throws ValueError on bad
/// options.
std::shared_ptr<Model> make_model(const ModelConfig& config, const Vocabularies& vocab, Generator& generator);
/// make_model with one vocabulary for both sides.
std::shared_ptr<Model> make_model(const ModelConfig& config, const Vocabulary& vocab, Generator& generator);

}  // namespace attograd::cli

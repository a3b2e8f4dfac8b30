// nn::Seq2SeqTransformer: token embedding, sinusoidal positions, nn::Transformer and a linear
// generator head: an encoder-decoder model over token ids, ready for greedy and beam search.
#pragma once

#include "core/generator.hpp"
#include "nn/decoding.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/positional_encoding.hpp"
#include "nn/transformer_model.hpp"

#include <memory>
#include <vector>

namespace attograd::nn {

/// Options of Seq2SeqTransformer.
struct Seq2SeqTransformerOptions {
    std::int64_t vocab_size = 0;      ///< V: source token ids are in [0, V) (>= 1)
    std::int64_t tgt_vocab_size = 0;  ///< target ids and logits; 0: V, with one embedding for both sides
    /// Id of padding (in [0, V) and [0, tgt vocabulary)), or -1 for none. Positions holding it get
    /// `true` in the key padding masks the model builds (fairseq's `padding_idx`), and it is the
    /// embeddings' padding_idx (a zero row that gets no gradient).
    std::int64_t pad_id = -1;
    /// Multiply embeddings by sqrt(d_model) before adding the positions (Vaswani et al. 2017,
    /// §3.4, and PyTorch's tutorial; off by default: nn::Embedding's N(0, 1) rows already have
    /// the positions' scale).
    bool scale_embedding = false;
    std::int64_t max_len = 5000;       ///< longest source or target the positional table covers (>= 1)
    TransformerOptions transformer{};  ///< the nn::Transformer between (its dtype is every part's)
};

/// The encoder-decoder model of PyTorch's "Language Translation with nn.Transformer" tutorial
/// (Vaswani et al. 2017, §3), over token ids:
///   memory = transformer.encode(pe(embed(src)))                      [B, S, E]
///   logits = generator(transformer.decode(pe(embed(tgt)), memory))  [B, T, V_tgt], causal
/// with pe the SinusoidalPositionalEncoding and embed an Embedding (times sqrt(E) with
/// scale_embedding). Each part keeps its own PyTorch initialisation (Embedding N(0, 1),
/// Transformer's xavier reset, Linear's kaiming-uniform). state_dict keys: `embedding.weight`
/// (one shared embedding; `src_embedding.weight` and `tgt_embedding.weight` with a separate
/// tgt_vocab_size), `positional_encoding.pe` (buffer), `transformer.encoder.layers.0.*`, ...,
/// `transformer.decoder.norm.*`, `generator.weight`, `generator.bias`. An AttentionRecorder on the
/// model sees `transformer.encoder.layers.<i>.self_attn` [B, h, S, S],
/// `transformer.decoder.layers.<i>.self_attn` [B, h, T, T] and
/// `transformer.decoder.layers.<i>.multihead_attn` [B, h, T, S] (the cross-attention).
class Seq2SeqTransformer : public Module {
public:
    /// Draws the parameters from `generator` (embeddings, transformer, generator head, in that
    /// order), which must outlive the model (dropout draws from it). Throws ValueError
    /// (vocab_size < 1, tgt_vocab_size < 0, pad_id outside [-1, V) or the target vocabulary,
    /// max_len < 1, and as Transformer for options.transformer), DTypeError, ResourceError naming
    /// the option (vocab_size, tgt_vocab_size, max_len, d_model, dim_feedforward) that makes a
    /// parameter or buffer too large (see check_parameter_size).
    explicit Seq2SeqTransformer(Seq2SeqTransformerOptions options,
                                Generator& generator = default_generator());
    ~Seq2SeqTransformer() override;

    /// src int64 [B, S] -> memory [B, S, E], with the key padding mask src_key_padding_mask(src).
    /// Throws ShapeError (src not [B, S], S = 0 or above max_len), DTypeError (src not int64),
    /// IndexError (an id outside [0, V)); messages start with "Seq2SeqTransformer".
    Tensor encode(const Tensor& src) const;
    /// tgt int64 [B, T] (decoder input, `<bos>` first), memory [B, S, E],
    /// memory_key_padding_mask bool [B, S] or undefined -> logits [B, T, V_tgt]. Causal: position
    /// t sees targets <= t; targets equal to pad_id are masked as keys. Throws ShapeError (tgt
    /// not [B, T], T = 0 or above max_len, memory or mask that do not fit), DTypeError, IndexError (an
    /// id outside the target vocabulary).
    Tensor decode(const Tensor& tgt, const Tensor& memory, const Tensor& memory_key_padding_mask = {}) const;
    /// Teacher forcing: src int64 [B, S], tgt int64 [B, T] -> logits [B, T, V_tgt], i.e.
    /// decode(tgt, encode(src), src_key_padding_mask(src)). Train with
    /// `cross_entropy(transpose(logits, 1, 2), labels, {.ignore_index = pad_id})`. Throws as
    /// encode and decode, and ShapeError when the batch sizes of src and tgt differ.
    Tensor forward(const Tensor& src, const Tensor& tgt) const;

    /// bool [B, S], true where `ids` [B, S] equals pad_id; undefined when pad_id is -1.
    Tensor key_padding_mask(const Tensor& ids) const;
    /// The step function of greedy_decode and beam_search: decode(prefixes, memory, mask)
    /// -> [N, t, V_tgt]. Keeps a reference to the model, which must outlive it.
    DecodeStep decode_step() const;
    /// One incremental decoding step: tokens int64 [N] (the last token of each of N target
    /// prefixes, at position p = cache.steps), memory [B, S, E]: at every step the tensor the
    /// cache was started with (N = B rows then; after a reorder the same tensor, whose keys the
    /// cache holds by row), memory_key_padding_mask bool [B, S] (read at the first step) -> logits
    /// [N, V_tgt], equal to decode(prefixes, memory, mask)[:, p] bit for bit; the position's
    /// keys and values join `cache` (TransformerDecoder::forward_cached). A token equal to pad_id
    /// is masked as a key, as decode masks it. Throws ShapeError (tokens not [N], N not the
    /// cache's rows, position p at or beyond max_len), DTypeError, IndexError (an id outside the
    /// target vocabulary), ValueError (an architecture supports_cache() refuses, another memory
    /// than the cache's), DTypeError (the model converted since the cache was started); a step
    /// that throws leaves the cache as it was; messages start with
    /// "Seq2SeqTransformer::decode_cached" or name the layer.
    Tensor decode_cached(const Tensor& tokens, const Tensor& memory, TransformerDecoderCache& cache,
                         const Tensor& memory_key_padding_mask = {}) const;
    /// Whether decode_cached supports the architecture: every decoder layer's
    /// TransformerDecoderLayer::supports_cache (MultiHead attention, dot or scaled-dot score, global
    /// attention, any positional option).
    bool supports_cache() const;
    /// The incremental start of greedy_decode and beam_search: a state holding the memory, its
    /// mask and a TransformerDecoderCache, stepping with decode_cached and reordering the cache
    /// with the prefixes. Empty when !supports_cache(). Keeps a reference to the model.
    IncrementalStart incremental_start() const;
    /// decode_step() and incremental_start(): what beam_search and greedy_decode decode with.
    DecodeModel decode_model() const;
    /// nn::beam_search over encode(src), for src int64 [B, S] (padded with pad_id): per source,
    /// its best hypotheses, best first, with decode_model() (the key/value cache when
    /// supports_cache() and options.use_cache; the same output either way). Runs under
    /// NoGradGuard; call eval() first. With an
    /// AttentionRecorder alive, it holds each source's best output's attention afterwards (see
    /// nn::beam_search). Throws ValueError up front when bos_id or eos_id is outside the target
    /// vocabulary or bos_id equals pad_id, then as encode and nn::beam_search.
    std::vector<std::vector<Hypothesis>> beam_search(const Tensor& src, const DecodeOptions& options) const;
    /// nn::greedy_decode over encode(src): one hypothesis per source. Throws as beam_search (its
    /// messages name greedy_decode).
    std::vector<Hypothesis> greedy_decode(const Tensor& src, const DecodeOptions& options) const;

    std::string type_name() const override { return "Seq2SeqTransformer"; }
    std::string extra_repr() const override;

    const Seq2SeqTransformerOptions& options() const { return options_; }  ///< the options it was built with
    const Transformer& transformer() const { return *transformer_; }       ///< registered as "transformer"
    const Linear& generator() const { return *generator_; }                ///< registered as "generator"

protected:
    void dtype_changed(DType dtype) override { options_.transformer.dtype = dtype; }

private:
    void check_decode_options(const DecodeOptions& options, const char* fn) const;
    Tensor embed(const Embedding& embedding, const Tensor& ids, const char* what, const char* fn,
                 std::int64_t offset = 0) const;

    Seq2SeqTransformerOptions options_;
    std::shared_ptr<Embedding> src_embedding_;
    std::shared_ptr<Embedding> tgt_embedding_;  // the same object when shared
    std::shared_ptr<SinusoidalPositionalEncoding> positional_encoding_;
    std::shared_ptr<Transformer> transformer_;
    std::shared_ptr<Linear> generator_;
};

}  // namespace attograd::nn

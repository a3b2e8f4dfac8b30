// nn::Seq2SeqTransformer: embeddings, positions, Transformer and generator head over token ids.
#include "nn/seq2seq_transformer.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "nn/parameter_size.hpp"

#include <cmath>
#include <optional>

namespace attograd::nn {
namespace {

constexpr const char* kOp = "Seq2SeqTransformer";

void check_options(const Seq2SeqTransformerOptions& o) {
    AG_CHECK(o.vocab_size >= 1, ValueError, "Seq2SeqTransformer: vocab_size must be >= 1, got {}",
             o.vocab_size);
    AG_CHECK(o.tgt_vocab_size >= 0, ValueError,
             "Seq2SeqTransformer: tgt_vocab_size must be >= 0 (0: the source vocabulary), got {}",
             o.tgt_vocab_size);
    const std::int64_t tgt = o.tgt_vocab_size > 0 ? o.tgt_vocab_size : o.vocab_size;
    AG_CHECK(o.pad_id >= -1 && o.pad_id < o.vocab_size && o.pad_id < tgt, ValueError,
             "Seq2SeqTransformer: pad_id {} must be -1 or an id of both vocabularies ({} and {})", o.pad_id,
             o.vocab_size, tgt);
    AG_CHECK(o.max_len >= 1, ValueError, "Seq2SeqTransformer: max_len must be >= 1, got {}", o.max_len);
    // the sizes it allocates itself, named by its own options; the transformer names its own
    const std::int64_t e = o.transformer.d_model;
    if (e < 1) return;  // the transformer reports it
    check_parameter_size(kOp, fmt::format("vocab_size {}", o.vocab_size),
                         o.tgt_vocab_size == 0 ? "embedding.weight" : "src_embedding.weight",
                         {o.vocab_size, e}, o.transformer.dtype);
    check_parameter_size(kOp, fmt::format("tgt_vocab_size {}", tgt), "generator.weight", {tgt, e},
                         o.transformer.dtype);
    // the sinusoidal table is computed in float64
    check_parameter_size(kOp, fmt::format("max_len {}", o.max_len), "positional_encoding.pe", {o.max_len, e},
                         DType::Float64);
    check_transformer_sizes(kOp, e, o.transformer.dim_feedforward, o.transformer.dtype);
}

}  // namespace

Seq2SeqTransformer::Seq2SeqTransformer(Seq2SeqTransformerOptions options, Generator& generator)
    : options_(options) {
    check_options(options_);
    const TransformerOptions& arch = options_.transformer;
    const std::optional<std::int64_t> padding_idx =
        options_.pad_id >= 0 ? std::optional<std::int64_t>(options_.pad_id) : std::nullopt;
    const auto embedding = [&](std::int64_t vocab) {
        return std::make_shared<Embedding>(EmbeddingOptions{.num_embeddings = vocab,
                                                            .embedding_dim = arch.d_model,
                                                            .padding_idx = padding_idx,
                                                            .dtype = arch.dtype},
                                           generator);
    };
    if (options_.tgt_vocab_size == 0) {
        src_embedding_ = tgt_embedding_ = register_module("embedding", embedding(options_.vocab_size));
    } else {
        src_embedding_ = register_module("src_embedding", embedding(options_.vocab_size));
        tgt_embedding_ = register_module("tgt_embedding", embedding(options_.tgt_vocab_size));
    }
    positional_encoding_ = register_module(
        "positional_encoding",
        std::make_shared<SinusoidalPositionalEncoding>(PositionalEncodingOptions{
            .embedding_dim = arch.d_model, .max_len = options_.max_len, .dtype = arch.dtype}));
    transformer_ = register_module("transformer", std::make_shared<Transformer>(arch, generator));
    generator_ = register_module(
        "generator",
        std::make_shared<Linear>(LinearOptions{.in_features = arch.d_model,
                                               .out_features = tgt_embedding_->options().num_embeddings,
                                               .dtype = arch.dtype},
                                 generator));
}

Seq2SeqTransformer::~Seq2SeqTransformer() = default;

std::string Seq2SeqTransformer::extra_repr() const {
    return fmt::format("vocab_size={}, tgt_vocab_size={}, pad_id={}, d_model={}",
                       src_embedding_->options().num_embeddings, tgt_embedding_->options().num_embeddings,
                       options_.pad_id, options_.transformer.d_model);
}

// ids [B, T] -> pe(embed(ids)) [B, T, E], the ids checked first so that messages name the model.
Tensor Seq2SeqTransformer::embed(const Embedding& embedding, const Tensor& ids, const char* what,
                                 const char* fn, std::int64_t offset) const {
    AG_CHECK(ids.defined() && ids.dim() == 2, ShapeError,
             "Seq2SeqTransformer::{}: {} must be ids [batch, length], got {}", fn, what,
             ids.defined() ? fmt::format("{}", ids.shape()) : "an undefined tensor");
    AG_CHECK(ids.dtype() == DType::Int64, DTypeError, "Seq2SeqTransformer::{}: {} must be int64, got {}", fn,
             what, ids.dtype());
    AG_CHECK(ids.size(1) >= 1, ShapeError,
             "Seq2SeqTransformer::{}: {} must hold at least one position (attention needs a key), got {}", fn,
             what, ids.shape());
    AG_CHECK(ids.size(1) <= options_.max_len, ShapeError,
             "Seq2SeqTransformer::{}: {} {} is longer than max_len {}", fn, what, ids.shape(),
             options_.max_len);
    const std::int64_t vocab = embedding.options().num_embeddings;
    const std::int64_t* p = ids.data<std::int64_t>();
    for (std::int64_t i = 0; i < ids.numel(); ++i)
        AG_CHECK(p[i] >= 0 && p[i] < vocab, IndexError,
                 "Seq2SeqTransformer::{}: {} {} holds id {} at [{}, {}], outside [0, {})", fn, what,
                 ids.shape(), p[i], i / ids.size(1), i % ids.size(1), vocab);
    Tensor x = embedding.forward(ids);
    if (options_.scale_embedding) x = x * std::sqrt(static_cast<double>(options_.transformer.d_model));
    return positional_encoding_->forward(x, offset);
}

Tensor Seq2SeqTransformer::key_padding_mask(const Tensor& ids) const {
    if (options_.pad_id < 0) return {};
    return eq(ids, static_cast<double>(options_.pad_id));
}

Tensor Seq2SeqTransformer::encode(const Tensor& src) const {
    const Tensor x = embed(*src_embedding_, src, "src", "encode");
    return transformer_->encode(x, {.src_key_padding_mask = key_padding_mask(src)});
}

Tensor Seq2SeqTransformer::decode(const Tensor& tgt, const Tensor& memory,
                                  const Tensor& memory_key_padding_mask) const {
    const Tensor y = embed(*tgt_embedding_, tgt, "tgt", "decode");
    return generator_->forward(transformer_->decode(y, memory,
                                                    {.tgt_key_padding_mask = key_padding_mask(tgt),
                                                     .memory_key_padding_mask = memory_key_padding_mask,
                                                     .tgt_is_causal = true}));
}

Tensor Seq2SeqTransformer::forward(const Tensor& src, const Tensor& tgt) const {
    AG_CHECK(!src.defined() || !tgt.defined() || src.dim() < 1 || tgt.dim() < 1 || src.size(0) == tgt.size(0),
             ShapeError, "Seq2SeqTransformer::forward: the batch sizes of src {} and tgt {} must be equal",
             src.shape(), tgt.shape());
    return decode(tgt, encode(src), key_padding_mask(src));
}

DecodeStep Seq2SeqTransformer::decode_step() const {
    return [this](const Tensor& prefixes, const Tensor& memory, const Tensor& memory_key_padding_mask) {
        return decode(prefixes, memory, memory_key_padding_mask);
    };
}

bool Seq2SeqTransformer::supports_cache() const { return transformer_->decoder().supports_cache(); }

Tensor Seq2SeqTransformer::decode_cached(const Tensor& tokens, const Tensor& memory,
                                         TransformerDecoderCache& cache,
                                         const Tensor& memory_key_padding_mask) const {
    AG_CHECK(tokens.defined() && tokens.dim() == 1, ShapeError,
             "Seq2SeqTransformer::decode_cached: tokens must be ids [N] (one per prefix), got {}",
             tokens.defined() ? fmt::format("{}", tokens.shape()) : "an undefined tensor");
    const std::int64_t n = tokens.size(0), p = cache.steps;
    AG_CHECK(p < options_.max_len, ShapeError,
             "Seq2SeqTransformer::decode_cached: the cache holds {} positions; position {} is beyond max_len "
             "{} of "
             "the positional encoding",
             p, p, options_.max_len);
    const bool started = !cache.layers.empty() && cache.layers.front().multihead_attn.owner != nullptr;
    const std::int64_t rows = started ? cache.layers.front().multihead_attn.batch_size() : n;
    AG_CHECK(
        rows == n, ShapeError,
        "Seq2SeqTransformer::decode_cached: the cache holds {} rows but tokens {} has {} (reorder the cache "
        "with the prefixes)",
        rows, tokens.shape(), n);
    const Tensor ids = reshape(tokens, {n, 1});
    const Tensor y = embed(*tgt_embedding_, ids, "tokens", "decode_cached", p);
    const Tensor x = transformer_->decoder().forward_cached(
        y, memory, cache,
        {.tgt_key_padding_mask = key_padding_mask(ids), .memory_key_padding_mask = memory_key_padding_mask});
    return reshape(generator_->forward(x), {n, generator_->options().out_features});
}

namespace {

/// Seq2SeqTransformer's incremental decode: the memory, its mask and the decoder's caches.
class Seq2SeqDecodeState : public IncrementalState {
public:
    Seq2SeqDecodeState(const Seq2SeqTransformer& model, Tensor memory, Tensor mask)
        : model_(model), memory_(std::move(memory)), mask_(std::move(mask)) {}
    Tensor step(const Tensor& tokens) override {
        return model_.decode_cached(tokens, memory_, cache_, mask_);
    }
    void reorder(const Tensor& rows) override { cache_.reorder(rows); }

private:
    const Seq2SeqTransformer& model_;
    Tensor memory_, mask_;
    TransformerDecoderCache cache_;
};

}  // namespace

IncrementalStart Seq2SeqTransformer::incremental_start() const {
    if (!supports_cache()) return {};
    return [this](const Tensor& memory, const Tensor& mask) -> std::unique_ptr<IncrementalState> {
        return std::make_unique<Seq2SeqDecodeState>(*this, memory, mask);
    };
}

DecodeModel Seq2SeqTransformer::decode_model() const {
    return {.step = decode_step(), .start = incremental_start()};
}

void Seq2SeqTransformer::check_decode_options(const DecodeOptions& options, const char* fn) const {
    const std::int64_t vocab = tgt_embedding_->options().num_embeddings;
    AG_CHECK(options.bos_id >= 0 && options.bos_id < vocab, ValueError,
             "Seq2SeqTransformer::{}: bos_id {} must be an id of the target vocabulary [0, {})", fn,
             options.bos_id, vocab);
    AG_CHECK(options.eos_id >= 0 && options.eos_id < vocab, ValueError,
             "Seq2SeqTransformer::{}: eos_id {} must be an id of the target vocabulary [0, {})", fn,
             options.eos_id, vocab);
    // a bos equal to pad_id would be masked as a key: the first step would attend to nothing
    AG_CHECK(options.bos_id != options_.pad_id, ValueError,
             "Seq2SeqTransformer::{}: bos_id {} must differ from pad_id {} (padding is masked as a key)", fn,
             options.bos_id, options_.pad_id);
}

std::vector<std::vector<Hypothesis>> Seq2SeqTransformer::beam_search(const Tensor& src,
                                                                     const DecodeOptions& options) const {
    check_decode_options(options, "beam_search");
    const NoGradGuard no_grad;
    return nn::beam_search(encode(src), key_padding_mask(src), decode_model(), options);
}

std::vector<Hypothesis> Seq2SeqTransformer::greedy_decode(const Tensor& src,
                                                          const DecodeOptions& options) const {
    check_decode_options(options, "greedy_decode");
    const NoGradGuard no_grad;
    return nn::greedy_decode(encode(src), key_padding_mask(src), decode_model(), options);
}

}  // namespace attograd::nn

// BahdanauDecoder: a GRUCell stepped over the target, attending with the additive score.
#include "nn/bahdanau_decoder.hpp"

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops.hpp"
#include "core/ops_index.hpp"
#include "core/ops_shape.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/attention_scores.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/recurrent_decoder.hpp"
#include "nn/rnn_cell.hpp"

namespace attograd::nn {
namespace {

constexpr std::string_view kOp = "BahdanauDecoder";

BahdanauDecoderOptions checked(BahdanauDecoderOptions o) {
    AG_CHECK(o.vocab_size >= 1 && o.embedding_dim >= 1 && o.hidden_size >= 1, ValueError,
             "{}: vocab_size, embedding_dim and hidden_size must be >= 1, got vocab_size={} embedding_dim={} "
             "hidden_size={}",
             kOp, o.vocab_size, o.embedding_dim, o.hidden_size);
    AG_CHECK(
        o.memory_dim >= 0 && o.attention_dim >= 0, ValueError,
        "{}: memory_dim and attention_dim must be >= 0 (0 = hidden_size), got memory_dim={} attention_dim={}",
        kOp, o.memory_dim, o.attention_dim);
    AG_CHECK(is_floating(o.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", kOp, o.dtype);
    if (o.memory_dim == 0) o.memory_dim = o.hidden_size;
    if (o.attention_dim == 0) o.attention_dim = o.hidden_size;
    return o;
}

}  // namespace

BahdanauDecoder::BahdanauDecoder(BahdanauDecoderOptions options, Generator& generator)
    : options_(checked(options)) {
    const auto& o = options_;
    embedding_ = register_module(
        "embedding", std::make_shared<Embedding>(EmbeddingOptions{.num_embeddings = o.vocab_size,
                                                                  .embedding_dim = o.embedding_dim,
                                                                  .dtype = o.dtype},
                                                 generator));
    attention_ = register_module(
        "attention", std::make_shared<AdditiveScore>(AttentionScoreOptions{.query_dim = o.hidden_size,
                                                                           .key_dim = o.memory_dim,
                                                                           .hidden = o.attention_dim,
                                                                           .bias = o.score_bias},
                                                     generator));
    attention_->to(o.dtype);  // the score modules draw float32
    cell_ = register_module(
        "cell", std::make_shared<GRUCell>(RNNCellOptions{.input_size = o.embedding_dim + o.memory_dim,
                                                         .hidden_size = o.hidden_size,
                                                         .dtype = o.dtype},
                                          generator));
    const std::int64_t features =
        o.deep_output ? o.hidden_size + o.memory_dim + o.embedding_dim : o.hidden_size;
    out_ = register_module(
        "out", std::make_shared<Linear>(
                   LinearOptions{.in_features = features, .out_features = o.vocab_size, .dtype = o.dtype},
                   generator));
}

BahdanauDecoder::~BahdanauDecoder() = default;

std::string BahdanauDecoder::extra_repr() const {
    const auto& o = options_;
    return fmt::format(
        "vocab_size={}, embedding_dim={}, hidden_size={}, memory_dim={}, attention_dim={}, "
        "score_bias={}, deep_output={}",
        o.vocab_size, o.embedding_dim, o.hidden_size, o.memory_dim, o.attention_dim, o.score_bias,
        o.deep_output);
}

std::pair<Tensor, Tensor> BahdanauDecoder::step(const Tensor& y, Tensor& s, const Tensor& keys,
                                                const Tensor& memory, const Tensor& additive_mask,
                                                const QueryRows& rows) const {
    // e_ij = v^T tanh(W h_j + U s_{i-1}) [B, 1, S]; c_i [B, A]
    const Tensor scores =
        attention_->forward_projected(reshape(s, {s.size(0), 1, options_.hidden_size}), keys);
    auto [context, alpha] = detail::attend(scores, memory, additive_mask, attention_.get(), rows);
    s = cell_->forward(concat({y, context}, 1), s);  // s_i = GRU(s_{i-1}, [E y_{i-1}; c_i])
    return {options_.deep_output ? concat({s, context, y}, 1) : s, alpha};
}

Tensor BahdanauDecoder::forward(const Tensor& tgt_in, const Tensor& memory,
                                const Tensor& memory_key_padding_mask, const Tensor& initial_state) const {
    const auto& o = options_;
    const detail::DecoderInputs in = detail::check_decoder_inputs(
        kOp, tgt_in, memory, memory_key_padding_mask, o.vocab_size, o.memory_dim, o.dtype);
    detail::check_state(kOp, "initial_state", initial_state, {in.batch, o.hidden_size}, o.dtype);
    Tensor s = initial_state.defined() ? initial_state : zeros({in.batch, o.hidden_size}, {.dtype = o.dtype});
    const Tensor embedded = embedding_->forward(tgt_in);   // [B, T, E]
    const Tensor keys = attention_->project_keys(memory);  // W h_j [B, S, n'], once for every step
    const bool recording = attention_recording();
    std::vector<Tensor> features, weights;
    for (std::int64_t i = 0; i < in.steps; ++i) {
        auto [feature, alpha] =
            step(select(embedded, 1, i), s, keys, memory, in.additive_mask, {.first = i, .total = in.steps});
        features.push_back(std::move(feature));
        if (recording) weights.push_back(std::move(alpha));
    }
    detail::record_steps(attention_.get(), weights);
    return out_->forward(stack(features, 1));  // [B, T, V]
}

DecodeStep BahdanauDecoder::decode_step(InitialState initial_state) const {
    return detail::stateless_step<BahdanauDecoder, Tensor>(this, std::move(initial_state));
}

/// BahdanauDecoder's incremental decode: s_{i-1}, the projected keys, the memory and its additive
/// mask, one row per live prefix.
class BahdanauDecodeState : public IncrementalState {
public:
    BahdanauDecodeState(const BahdanauDecoder& decoder, const Tensor& memory, const Tensor& mask,
                        const BahdanauDecoder::InitialState& init)
        : decoder_(decoder), memory_(memory) {
        const auto& o = decoder.options_;
        // the teacher-forced forward's checks, on a one-step prefix of bos-like ids
        const detail::DecoderInputs in =
            detail::check_decoder_inputs(kOp, zeros({memory.size(0), 1}, {.dtype = DType::Int64}), memory,
                                         mask, o.vocab_size, o.memory_dim, o.dtype);
        additive_mask_ = in.additive_mask;
        s_ = init ? init(memory, mask) : zeros({in.batch, o.hidden_size}, {.dtype = o.dtype});
        detail::check_state(kOp, "initial_state", s_, {in.batch, o.hidden_size}, o.dtype);
        keys_ = decoder.attention_->project_keys(memory);
    }

    Tensor step(const Tensor& tokens) override {
        const auto& o = decoder_.options_;
        detail::check_step_tokens(kOp, tokens, s_.size(0), o.vocab_size);
        const Tensor y = decoder_.embedding_->forward(tokens);  // E y_{i-1} [N, E]
        const Tensor feature = decoder_.step(y, s_, keys_, memory_, additive_mask_, {.first = t_++}).first;
        return decoder_.out_->forward(feature);  // [N, V]
    }

    void reorder(const Tensor& rows) override {
        detail::check_reorder_rows(kOp, rows, s_.size(0));
        s_ = index_select(s_, 0, rows);
        keys_ = index_select(keys_, 0, rows);
        memory_ = index_select(memory_, 0, rows);
        if (additive_mask_.defined()) additive_mask_ = index_select(additive_mask_, 0, rows);
    }

private:
    const BahdanauDecoder& decoder_;
    Tensor memory_, additive_mask_, s_, keys_;
    std::int64_t t_ = 0;  // the next step's index
};

IncrementalStart BahdanauDecoder::incremental_start(InitialState initial_state) const {
    return detail::incremental_start<BahdanauDecodeState>(this, std::move(initial_state));
}

DecodeModel BahdanauDecoder::decode_model(InitialState initial_state) const {
    return {.step = decode_step(initial_state), .start = incremental_start(std::move(initial_state))};
}

}  // namespace attograd::nn

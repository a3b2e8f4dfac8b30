// LuongDecoder: stacked cells stepped over the target, global or local attention, input feeding.
#include "nn/luong_decoder.hpp"

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"
#include "core/ops_linear.hpp"
#include "core/ops_local_attention.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_shape.hpp"
#include "core/ops_softmax.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/detail/check_scoring.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/module_list.hpp"
#include "nn/recurrent_decoder.hpp"
#include "nn/rnn_cell.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace attograd::nn {
namespace {

constexpr std::string_view kOp = "LuongDecoder";

LuongDecoderOptions checked(LuongDecoderOptions o) {
    AG_CHECK(o.vocab_size >= 1 && o.embedding_dim >= 1 && o.hidden_size >= 1 && o.num_layers >= 1, ValueError,
             "{}: vocab_size, embedding_dim, hidden_size and num_layers must be >= 1, got vocab_size={} "
             "embedding_dim={} hidden_size={} num_layers={}",
             kOp, o.vocab_size, o.embedding_dim, o.hidden_size, o.num_layers);
    AG_CHECK(
        o.memory_dim >= 0 && o.attention_dim >= 0, ValueError,
        "{}: memory_dim and attention_dim must be >= 0 (0 = hidden_size), got memory_dim={} attention_dim={}",
        kOp, o.memory_dim, o.attention_dim);
    detail::check_scoring_options(o.scoring, kOp, false);
    AG_CHECK(is_floating(o.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", kOp, o.dtype);
    if (o.memory_dim == 0) o.memory_dim = o.hidden_size;
    if (o.attention_dim == 0) o.attention_dim = o.hidden_size;
    const bool dot = o.scoring.score == Score::Dot || o.scoring.score == Score::ScaledDot;
    AG_CHECK(!dot || o.memory_dim == o.hidden_size, ShapeError,
             "{}: the {} score needs memory_dim == hidden_size, got memory_dim={} hidden_size={}", kOp,
             to_string(o.scoring.score), o.memory_dim, o.hidden_size);
    return o;
}

}  // namespace

LuongCell parse_luong_cell(std::string_view name) {
    if (name == "lstm") return LuongCell::LSTM;
    if (name == "gru") return LuongCell::GRU;
    throw ValueError(fmt::format("LuongDecoder: unknown cell '{}' (choose lstm or gru)", name));
}

std::string_view to_string(LuongCell cell) { return cell == LuongCell::LSTM ? "lstm" : "gru"; }

LuongDecoder::LuongDecoder(LuongDecoderOptions options, Generator& generator) : options_(checked(options)) {
    const auto& o = options_;
    embedding_ = register_module(
        "embedding", std::make_shared<Embedding>(EmbeddingOptions{.num_embeddings = o.vocab_size,
                                                                  .embedding_dim = o.embedding_dim,
                                                                  .dtype = o.dtype},
                                                 generator));
    cells_list_ = register_module("cells", std::make_shared<ModuleList>());
    for (std::int64_t l = 0; l < o.num_layers; ++l) {
        const RNNCellOptions cell{
            .input_size = l > 0 ? o.hidden_size : o.embedding_dim + (o.input_feeding ? o.hidden_size : 0),
            .hidden_size = o.hidden_size,
            .dtype = o.dtype};
        if (o.cell == LuongCell::LSTM)
            lstm_cells_.push_back(cells_list_->push_back(std::make_shared<LSTMCell>(cell, generator)));
        else
            gru_cells_.push_back(cells_list_->push_back(std::make_shared<GRUCell>(cell, generator)));
    }
    attention_ = register_module(
        "attention",
        make_score(o.scoring.score,
                   {.query_dim = o.hidden_size, .key_dim = o.memory_dim, .hidden = o.attention_dim},
                   generator));
    attention_->to(o.dtype);  // the score modules draw float32
    if (o.scoring.local == LocalMode::Predictive) {
        // Uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)], as nn::Attention's W_p, v_p.
        const double bw = 1.0 / std::sqrt(static_cast<double>(o.hidden_size)),
                     bv = 1.0 / std::sqrt(static_cast<double>(o.attention_dim));
        W_p_ = register_parameter(
            "W_p", uniform({o.attention_dim, o.hidden_size}, -bw, bw, generator, {.dtype = o.dtype}));
        v_p_ = register_parameter("v_p", uniform({o.attention_dim}, -bv, bv, generator, {.dtype = o.dtype}));
    }
    combine_ = register_module(
        "combine", std::make_shared<Linear>(LinearOptions{.in_features = o.memory_dim + o.hidden_size,
                                                          .out_features = o.hidden_size,
                                                          .bias = false,
                                                          .dtype = o.dtype},
                                            generator));
    out_ = register_module("out", std::make_shared<Linear>(LinearOptions{.in_features = o.hidden_size,
                                                                         .out_features = o.vocab_size,
                                                                         .dtype = o.dtype},
                                                           generator));
}

LuongDecoder::~LuongDecoder() = default;

std::string LuongDecoder::extra_repr() const {
    const auto& o = options_;
    std::string s = fmt::format(
        "vocab_size={}, embedding_dim={}, hidden_size={}, num_layers={}, cell={}, memory_dim={}, score={}, "
        "attention={}",
        o.vocab_size, o.embedding_dim, o.hidden_size, o.num_layers, to_string(o.cell), o.memory_dim,
        to_string(o.scoring.score), to_string(o.scoring.local));
    if (o.scoring.local != LocalMode::None) s += fmt::format(", window={}", o.scoring.window);
    return s + fmt::format(", input_feeding={}", o.input_feeding);
}

std::pair<Tensor, Tensor> LuongDecoder::attend(const Tensor& h_top, const QueryRows& rows,
                                               const Tensor& memory, const Tensor& memory_key_padding_mask,
                                               const Tensor& additive_mask, bool want_weights) const {
    const Tensor query = reshape(h_top, {h_top.size(0), 1, options_.hidden_size});  // [B, 1, H]
    if (options_.scoring.local != LocalMode::None)
        return attend_local(query, rows, memory, memory_key_padding_mask, want_weights);
    return detail::attend(attention_->forward(query, memory), memory, additive_mask, attention_.get(), rows);
}

std::pair<Tensor, Tensor> LuongDecoder::attend_local(const Tensor& query, const QueryRows& rows,
                                                     const Tensor& memory,
                                                     const Tensor& memory_key_padding_mask,
                                                     bool want_weights) const {
    const std::int64_t batch = memory.size(0), src_len = memory.size(1);
    const std::int64_t d = band_half_width(options_.scoring.window, src_len), width = 2 * d + 1;
    const bool predictive = options_.scoring.local == LocalMode::Predictive;
    Tensor centre, start;  // p_t [B, 1] (local-p), window starts int64 [B, 1]
    if (predictive) {
        // p_t = S * sigmoid(v_p^T tanh(W_p h_t)): [B, 1, H] -> [B, 1, H_p] -> [B, 1]
        const Tensor hidden = tanh(linear(query, W_p_));
        centre = reshape(sigmoid(matmul(hidden, reshape(v_p_, {-1, 1}))), {batch, 1}) *
                 static_cast<double>(src_len);
        start = predictive_window_start(centre, src_len, d);
    } else {
        start = full({batch, 1}, static_cast<double>(std::min(rows.first, src_len - 1) - d),
                     {.dtype = DType::Int64});
    }
    // [B, 1, 2d + 1] band scores, -inf outside the source and at padded positions
    const Tensor scores = attention_->forward_local(query, memory, start, width) +
                          local_band_mask({.key_padding_mask = memory_key_padding_mask}, start, width,
                                          src_len, options_.dtype, kOp);
    Tensor band = softmax(scores, -1);
    // local-p's Gaussian multiplies a replacement as it does the own weights
    if (const auto* heads = head_interventions(attention_.get()); heads != nullptr)
        band = replace_band_weights(*heads, band, scores, start, src_len, rows);
    if (predictive)
        band =
            band * gaussian_window(centre, start, width, static_cast<double>(options_.scoring.window) / 2.0);
    const Tensor context = reshape(local_weighted_sum(band, memory, start), {batch, memory.size(2)});
    return {context, want_weights ? local_band_to_dense(band, start, src_len) : Tensor()};
}

Tensor LuongDecoder::step(Tensor x, const QueryRows& rows, std::vector<Tensor>& h, std::vector<Tensor>& c,
                          Tensor& feed, const Tensor& memory, const Tensor& memory_key_padding_mask,
                          const Tensor& additive_mask, bool want_weights) const {
    const auto& o = options_;
    if (o.input_feeding) x = concat({x, feed}, 1);
    for (std::int64_t l = 0; l < o.num_layers; ++l) {
        const auto i = static_cast<std::size_t>(l);
        if (o.cell == LuongCell::LSTM)
            std::tie(h[i], c[i]) = lstm_cells_[i]->forward(x, {h[i], c[i]});
        else
            h[i] = gru_cells_[i]->forward(x, h[i]);
        x = h[i];
    }
    auto [context, alpha] = attend(x, rows, memory, memory_key_padding_mask, additive_mask, want_weights);
    feed = tanh(combine_->forward(concat({context, x}, 1)));  // h~_t = tanh(W_c [c_t; h_t])
    return alpha;
}

void LuongDecoder::initial_layers(const LuongDecoderState& initial_state, std::int64_t batch,
                                  std::vector<Tensor>& h, std::vector<Tensor>& c) const {
    const auto& o = options_;
    const Shape state_shape{o.num_layers, batch, o.hidden_size};
    detail::check_state(kOp, "initial_state.h", initial_state.h, state_shape, o.dtype);
    detail::check_state(kOp, "initial_state.c", initial_state.c, state_shape, o.dtype);
    AG_CHECK(o.cell == LuongCell::LSTM || !initial_state.c.defined(), ValueError,
             "{}: initial_state.c is given but the cells are GRUs (they have no cell state)", kOp);
    const Tensor zero = zeros({batch, o.hidden_size}, {.dtype = o.dtype});
    auto layer_state = [&](const Tensor& s, std::int64_t l) { return s.defined() ? select(s, 0, l) : zero; };
    for (std::int64_t l = 0; l < o.num_layers; ++l) {
        h.push_back(layer_state(initial_state.h, l));
        c.push_back(layer_state(initial_state.c, l));
    }
}

Tensor LuongDecoder::forward(const Tensor& tgt_in, const Tensor& memory,
                             const Tensor& memory_key_padding_mask,
                             const LuongDecoderState& initial_state) const {
    const auto& o = options_;
    const detail::DecoderInputs in = detail::check_decoder_inputs(
        kOp, tgt_in, memory, memory_key_padding_mask, o.vocab_size, o.memory_dim, o.dtype);
    std::vector<Tensor> h, c;
    initial_layers(initial_state, in.batch, h, c);
    const Tensor zero = zeros({in.batch, o.hidden_size}, {.dtype = o.dtype});
    const Tensor embedded = embedding_->forward(tgt_in);  // [B, T, E]
    const bool recording = attention_recording();
    Tensor feed = zero;  // h~_{t-1}
    std::vector<Tensor> attentional, weights;
    for (std::int64_t t = 0; t < in.steps; ++t) {
        Tensor alpha = step(select(embedded, 1, t), {.first = t, .total = in.steps}, h, c, feed, memory,
                            memory_key_padding_mask, in.additive_mask, recording);
        attentional.push_back(feed);
        if (recording) weights.push_back(std::move(alpha));
    }
    detail::record_steps(attention_.get(), weights);
    return out_->forward(stack(attentional, 1));  // [B, T, V]
}

DecodeStep LuongDecoder::decode_step(InitialState initial_state) const {
    return detail::stateless_step<LuongDecoder, LuongDecoderState>(this, std::move(initial_state));
}

/// LuongDecoder's incremental decode: every layer's h and c, the input-feeding vector, the step
/// index, the memory and its masks, one row per live prefix.
class LuongDecodeState : public IncrementalState {
public:
    LuongDecodeState(const LuongDecoder& decoder, const Tensor& memory, const Tensor& mask,
                     const LuongDecoder::InitialState& init)
        : decoder_(decoder), memory_(memory), mask_(mask) {
        const auto& o = decoder.options_;
        // the teacher-forced forward's checks, on a one-step prefix
        const detail::DecoderInputs in =
            detail::check_decoder_inputs(kOp, zeros({memory.size(0), 1}, {.dtype = DType::Int64}), memory,
                                         mask, o.vocab_size, o.memory_dim, o.dtype);
        additive_mask_ = in.additive_mask;
        decoder.initial_layers(init ? init(memory, mask) : LuongDecoderState{}, in.batch, h_, c_);
        feed_ = zeros({in.batch, o.hidden_size}, {.dtype = o.dtype});
    }

    Tensor step(const Tensor& tokens) override {
        const auto& o = decoder_.options_;
        detail::check_step_tokens(kOp, tokens, feed_.size(0), o.vocab_size);
        decoder_.step(decoder_.embedding_->forward(tokens), {.first = t_}, h_, c_, feed_, memory_, mask_,
                      additive_mask_, false);
        ++t_;
        return decoder_.out_->forward(feed_);  // [N, V]
    }

    void reorder(const Tensor& rows) override {
        detail::check_reorder_rows(kOp, rows, feed_.size(0));
        const auto keep = [&](Tensor& x) {
            if (x.defined()) x = index_select(x, 0, rows);
        };
        for (Tensor& x : h_) keep(x);
        for (Tensor& x : c_) keep(x);
        keep(feed_);
        keep(memory_);
        keep(mask_);
        keep(additive_mask_);
    }

private:
    const LuongDecoder& decoder_;
    Tensor memory_, mask_, additive_mask_, feed_;
    std::vector<Tensor> h_, c_;
    std::int64_t t_ = 0;
};

IncrementalStart LuongDecoder::incremental_start(InitialState initial_state) const {
    return detail::incremental_start<LuongDecodeState>(this, std::move(initial_state));
}

DecodeModel LuongDecoder::decode_model(InitialState initial_state) const {
    return {.step = decode_step(initial_state), .start = incremental_start(std::move(initial_state))};
}

}  // namespace attograd::nn

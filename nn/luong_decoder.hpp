// LuongDecoder: the stacked LSTM (or GRU) decoder with global / local attention and input
// feeding of Luong, Pham & Manning (2015).
#pragma once

#include "core/generator.hpp"
#include "nn/decoding.hpp"
#include "nn/module.hpp"
#include "nn/scoring_options.hpp"

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace attograd::nn {

struct QueryRows;

class Embedding;
class Linear;
class ModuleList;
class GRUCell;
class LSTMCell;

/// The recurrent unit of each LuongDecoder layer: LSTMCell (the paper's) or GRUCell.
enum class LuongCell { LSTM, GRU };

/// Parses "lstm" or "gru". Throws ValueError listing the choices.
LuongCell parse_luong_cell(std::string_view name);
/// "lstm" or "gru".
std::string_view to_string(LuongCell cell);

/// Options of LuongDecoder.
struct LuongDecoderOptions {
    std::int64_t vocab_size = 0;       ///< V, target vocabulary (>= 1)
    std::int64_t embedding_dim = 0;    ///< E, width of the target embeddings (>= 1)
    std::int64_t hidden_size = 0;      ///< H, width of every layer's state (>= 1)
    std::int64_t num_layers = 1;       ///< L, stacked cells (>= 1; the paper uses 4)
    LuongCell cell = LuongCell::LSTM;  ///< LSTM (the paper) or GRU cells
    /// A, width of the encoder states h_s; 0 = hidden_size. The dot score needs A == H.
    std::int64_t memory_dim = 0;
    /// score(h_t, h_s) (eq. 8): Dot "dot" h_t^T h_s; Bilinear "general" h_t^T W_a h_s (the
    /// default); Additive "concat" v_a^T tanh(W_a [h_t; h_s]) (= v^T tanh(W h_s + U h_t));
    /// ScaledDot divides dot by sqrt(H). local: global, local-m or local-p attention (§3.1,
    /// §3.2) over [p_t - D, p_t + D], D = window (>= 0; >= 1 for local-p; the paper's 10 by
    /// default). positional must be None. A `.scoring = {...}` written out starts from
    /// ScoringOptions' own defaults (scaled dot, window 0) for the fields it leaves out.
    ScoringOptions scoring{.score = Score::Bilinear, .window = 10};
    /// Hidden width of the concat score and of local-p's predictor W_p [H_p, H]; 0 = hidden_size.
    std::int64_t attention_dim = 0;
    bool input_feeding = true;     ///< feed h~_{t-1} with the next input (§3.3)
    DType dtype = DType::Float32;  ///< parameter dtype (float32 or float64)
};

/// Initial states of LuongDecoder's layers, as PyTorch's nn.LSTM takes (h_0, c_0): h [L, B, H] and,
/// for LSTM cells, c [L, B, H]. Undefined tensors mean zeros.
struct LuongDecoderState {
    Tensor h{};  ///< h [L, B, H]
    Tensor c{};  ///< c [L, B, H], LSTM cells only
};

/// The decoder of Luong, Pham & Manning, "Effective Approaches to Attention-based Neural Machine
/// Translation" (EMNLP 2015), teacher-forced over a target prefix. At step t (from 0):
///   x_t = [E y_{t-1}; h~_{t-1}] with input feeding (h~_{-1} = 0), else E y_{t-1}      (§3.3)
///   h_t = the top of L stacked LSTMCells (or GRUCells) run on x_t
///   a_t(s) = align(h_t, h_s) = softmax_s(score(h_t, h_s))                          (eq. 7)
///   c_t = sum_s a_t(s) h_s,  h~_t = tanh(W_c [c_t; h_t]),  logits_t = W_s h~_t + b_s  (eq. 5, 6)
/// Global attention scores every source position. Local attention (§3.2) scores only the window
/// [p_t - D, p_t + D] (clipped to the source; computed as a band, never [T, S]):
///   local-m: p_t = min(t, S - 1);
///   local-p: p_t = S * sigmoid(v_p^T tanh(W_p h_t)) (eq. 9), and the weights are multiplied by
///   exp(-(s - p_t)^2 / (2 sigma^2)), sigma = D / 2 (eq. 10), not renormalised (as the paper;
///   nn/local_window.hpp centres the window at the position nearest p_t).
///
/// Parameters (state_dict keys): "embedding.weight" [V, E]; "cells.<l>.weight_ih" [G H, I_l]
/// (I_0 = E + H with input feeding, else E; I_l = H above), "cells.<l>.weight_hh" [G H, H],
/// "cells.<l>.bias_ih", "cells.<l>.bias_hh" (G = 4 for LSTM, 3 for GRU); the score's
/// "attention.W" (general: [A, H]; concat: "attention.W" [H_a, A], "attention.U" [H_a, H],
/// "attention.v" [H_a]); local-p's "W_p" [H_p, H] and "v_p" [H_p]; "combine.weight" (W_c)
/// [H, A + H]; "out.weight" (W_s) [V, H], "out.bias" [V]. The [B, T, S] attention map of a
/// forward (zeros outside local windows) is reported once to an active AttentionRecorder,
/// under the name of the "attention" submodule.
class LuongDecoder : public Module {
public:
    /// Draws the parameters from `generator`. Throws ValueError (a size < 1, memory_dim or
    /// attention_dim < 0, window < 0, local-p with window 0, a positional option), ShapeError (dot scores
    /// with memory_dim != hidden_size), DTypeError, ResourceError (parameters too large).
    explicit LuongDecoder(LuongDecoderOptions options, Generator& generator = default_generator());
    ~LuongDecoder() override;

    /// Teacher-forced decoding: tgt_in int64 [B, T], memory [B, S, A], memory_key_padding_mask bool
    /// or float [B, S] (`true` at padded source positions, which get weight exactly 0; undefined
    /// = none), initial states h, c [L, B, H] (undefined = zeros; c must be undefined for GRU
    /// cells) -> logits [B, T, V] (row t predicts y_{t+1}). Throws ShapeError, DTypeError,
    /// IndexError (an id outside [0, V)), ValueError; messages start with "LuongDecoder" and name
    /// the argument and the shapes.
    Tensor forward(const Tensor& tgt_in, const Tensor& memory, const Tensor& memory_key_padding_mask = {},
                   const LuongDecoderState& initial_state = {}) const;

    /// Maps the memory [N, S, A] and its mask [N, S] (undefined when none) to the initial states.
    using InitialState =
        std::function<LuongDecoderState(const Tensor& memory, const Tensor& memory_key_padding_mask)>;
    /// The step function greedy_decode / beam_search call: forward over the whole prefix
    /// (stateless), initial states from `initial_state` (zeros when empty), computed from the rows
    /// decoding gathered. The module must outlive it.
    DecodeStep decode_step(InitialState initial_state = {}) const;
    /// The incremental start of greedy_decode / beam_search: a state carrying every layer's h and
    /// c, the input-feeding vector h~_{t-1}, the step index t (local-m's centre), the memory and
    /// its mask, one row per prefix; each step runs the cells, the attention and the output over
    /// the new token only (forward's step t, bit for bit) and reorder keeps the rows of the
    /// surviving prefixes. The initial state is initial_state(memory, mask) on the memory
    /// decoding starts with (zeros when empty). The state's step throws ShapeError (tokens not
    /// [N] for its N rows), DTypeError, IndexError; its reorder ShapeError / IndexError; the
    /// messages start with "LuongDecoder". The module must outlive it.
    IncrementalStart incremental_start(InitialState initial_state = {}) const;
    /// decode_step(initial_state) and incremental_start(initial_state) together.
    DecodeModel decode_model(InitialState initial_state = {}) const;

    std::string type_name() const override { return "LuongDecoder"; }
    std::string extra_repr() const override;
    const LuongDecoderOptions& options() const { return options_; }  ///< the options it was built with

protected:
    void dtype_changed(DType dtype) override { options_.dtype = dtype; }

private:
    friend class LuongDecodeState;
    // Checks initial_state for `batch` rows and appends each layer's h and c (zeros when undefined).
    void initial_layers(const LuongDecoderState& initial_state, std::int64_t batch, std::vector<Tensor>& h,
                        std::vector<Tensor>& c) const;
    // Step t: x = E y_{t-1} [B, E]; h, c (per layer [B, H]) and feed h~_{t-1} [B, H] become step
    // t's -> the weights alpha_t [B, 1, S] (undefined unless want_weights); feed is h~_t.
    // `rows` places the step among the forward's query rows: t = rows.first.
    Tensor step(Tensor x, const QueryRows& rows, std::vector<Tensor>& h, std::vector<Tensor>& c, Tensor& feed,
                const Tensor& memory, const Tensor& memory_key_padding_mask, const Tensor& additive_mask,
                bool want_weights) const;
    /// Attention of one step for the top state h_t [B, H] -> (c_t [B, A], weights [B, 1, S] when
    /// `want_weights` or global, else undefined).
    std::pair<Tensor, Tensor> attend(const Tensor& h_top, const QueryRows& rows, const Tensor& memory,
                                     const Tensor& memory_key_padding_mask, const Tensor& additive_mask,
                                     bool want_weights) const;
    std::pair<Tensor, Tensor> attend_local(const Tensor& query, const QueryRows& rows, const Tensor& memory,
                                           const Tensor& memory_key_padding_mask, bool want_weights) const;

    LuongDecoderOptions options_;
    std::shared_ptr<Embedding> embedding_;
    std::shared_ptr<ModuleList> cells_list_;
    std::vector<std::shared_ptr<LSTMCell>> lstm_cells_;  // the layers when options_.cell is LSTM
    std::vector<std::shared_ptr<GRUCell>> gru_cells_;    // ... when GRU
    std::shared_ptr<AttentionScore> attention_;
    Tensor W_p_, v_p_;
    std::shared_ptr<Linear> combine_;
    std::shared_ptr<Linear> out_;
};

}  // namespace attograd::nn

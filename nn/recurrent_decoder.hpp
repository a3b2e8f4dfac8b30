// What the recurrent attention decoders (BahdanauDecoder, LuongDecoder) share: the checks of
// their inputs, one step of global attention, and recording a whole [B, T, S] map per forward.
#pragma once

#include "nn/attention_intervention.hpp"
#include "nn/decoding.hpp"
#include "nn/module.hpp"

#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace attograd::nn::detail {

/// A recurrent decoder's checked inputs: B, T, S and the memory_key_padding_mask as one additive
/// mask [B, 1, S] (0 where allowed, -inf at padded positions; undefined when none was given).
struct DecoderInputs {
    std::int64_t batch = 0, steps = 0, src_len = 0;
    Tensor additive_mask{};
};

/// Checks the teacher-forced inputs of decoder `op`: tgt_in int64 [B, T] (T >= 1) with ids in
/// [0, vocab_size), memory [B, S, memory_dim] (S >= 1) of `dtype`, memory_key_padding_mask bool or
/// float [B, S] (or undefined). Throws ShapeError, DTypeError, IndexError (an id outside the
/// vocabulary), ValueError (undefined inputs, a float mask holding NaN or +inf); each message starts
/// with `op` and names the argument and the shapes.
DecoderInputs check_decoder_inputs(std::string_view op, const Tensor& tgt_in, const Tensor& memory,
                                   const Tensor& memory_key_padding_mask, std::int64_t vocab_size,
                                   std::int64_t memory_dim, DType dtype);

/// Checks an initial state `state` named `name` of decoder `op`: undefined, or `expected` of
/// `dtype`. Throws ShapeError / DTypeError naming both shapes.
void check_state(std::string_view op, std::string_view name, const Tensor& state, const Shape& expected,
                 DType dtype);

/// One step of global attention: scores [B, 1, S] plus the additive mask [B, 1, S] (undefined =
/// none) are normalised by softmax over the source (a row with every position masked gets zero
/// weights) and average memory [B, S, A]: -> (context [B, A], weights [B, 1, S]). While an
/// intervention names `layer` (the decoder's attention), the weights used are its replacement for
/// query row `rows` (see intervene_step).
std::pair<Tensor, Tensor> attend(const Tensor& scores, const Tensor& memory, const Tensor& additive_mask,
                                 const Module* layer, const QueryRows& rows);

/// Hands the steps' weights (each [B, 1, S]) to the active AttentionRecorder as ONE record
/// [B, T, S] under `layer`, detached. Does nothing when no recorder is active.
void record_steps(const Module* layer, const std::vector<Tensor>& step_weights);

/// Checks the tokens of an incremental step of decoder `op`: int64 [rows] with ids in
/// [0, vocab_size). Throws ShapeError (not [rows]: the state holds `rows` prefixes), DTypeError,
/// IndexError; messages start with "<op>::incremental step".
void check_step_tokens(std::string_view op, const Tensor& tokens, std::int64_t rows, std::int64_t vocab_size);

/// Checks reorder's `rows` for a state of `n` rows: int64 [N'] with every index in [0, n).
/// Throws ShapeError, IndexError; messages start with "<op>::reorder".
void check_reorder_rows(std::string_view op, const Tensor& rows, std::int64_t n);

/// The stateless DecodeStep of a recurrent decoder: decoder->forward(prefixes, memory, mask,
/// init(memory, mask)) over the whole prefix, with State{} (zeros) when `init` is empty.
template <class Decoder, class State>
DecodeStep stateless_step(const Decoder* decoder, std::function<State(const Tensor&, const Tensor&)> init) {
    return
        [decoder, init = std::move(init)](const Tensor& prefixes, const Tensor& memory, const Tensor& mask) {
            return decoder->forward(prefixes, memory, mask, init ? init(memory, mask) : State{});
        };
}

/// The IncrementalStart of a recurrent decoder: a fresh State(*decoder, memory, mask, init) per
/// decode.
template <class State, class Decoder, class Init>
IncrementalStart incremental_start(const Decoder* decoder, Init init) {
    return [decoder, init = std::move(init)](const Tensor& memory,
                                             const Tensor& mask) -> std::unique_ptr<IncrementalState> {
        return std::make_unique<State>(*decoder, memory, mask, init);
    };
}

}  // namespace attograd::nn::detail

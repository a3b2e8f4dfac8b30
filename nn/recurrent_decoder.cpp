// What the recurrent attention decoders share: input checks, a step of global attention, recording.
#include "nn/recurrent_decoder.hpp"

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops_index.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_shape.hpp"
#include "core/ops_softmax.hpp"
#include "nn/attention_mask.hpp"
#include "nn/attention_recorder.hpp"

namespace attograd::nn::detail {

DecoderInputs check_decoder_inputs(std::string_view op, const Tensor& tgt_in, const Tensor& memory,
                                   const Tensor& memory_key_padding_mask, std::int64_t vocab_size,
                                   std::int64_t memory_dim, DType dtype) {
    AG_CHECK(tgt_in.defined() && memory.defined(), ValueError, "{}: tgt_in and memory must be defined", op);
    AG_CHECK(tgt_in.dtype() == DType::Int64, DTypeError, "{}: tgt_in must hold int64 token ids, got {} {}",
             op, tgt_in.dtype(), tgt_in.shape());
    AG_CHECK(tgt_in.dim() == 2 && tgt_in.size(1) >= 1, ShapeError,
             "{}: tgt_in must be [B, T] with T >= 1, got {}", op, tgt_in.shape());
    const std::int64_t batch = tgt_in.size(0), steps = tgt_in.size(1);
    AG_CHECK(
        memory.dim() == 3 && memory.size(0) == batch && memory.size(1) >= 1 && memory.size(2) == memory_dim,
        ShapeError, "{}: memory must be [B, S, memory_dim] = [{}, S, {}] with S >= 1 (tgt_in {}), got {}", op,
        batch, memory_dim, tgt_in.shape(), memory.shape());
    check_input_dtype(memory, dtype, op, "memory");
    const std::int64_t* ids = tgt_in.data<std::int64_t>();
    for (std::int64_t i = 0; i < tgt_in.numel(); ++i)
        AG_CHECK(ids[i] >= 0 && ids[i] < vocab_size, IndexError,
                 "{}: tgt_in[{}, {}] = {} is outside the vocabulary [0, {})", op, i / steps, i % steps,
                 ids[i], vocab_size);
    const std::int64_t src_len = memory.size(1);
    check_key_padding_mask(memory_key_padding_mask, {.mask = "memory_key_padding_mask", .tk = "S"}, batch,
                           src_len, dtype, op);
    DecoderInputs in{.batch = batch, .steps = steps, .src_len = src_len};
    if (memory_key_padding_mask.defined())
        in.additive_mask = reshape(combine_attention_masks({.key_padding_mask = memory_key_padding_mask},
                                                           batch, 1, 1, src_len, dtype, op),
                                   {batch, 1, src_len});
    return in;
}

void check_state(std::string_view op, std::string_view name, const Tensor& state, const Shape& expected,
                 DType dtype) {
    if (!state.defined()) return;
    AG_CHECK(state.shape() == expected, ShapeError, "{}: {} must be {}, got {}", op, name, expected,
             state.shape());
    check_input_dtype(state, dtype, op, name);
}

std::pair<Tensor, Tensor> attend(const Tensor& scores, const Tensor& memory, const Tensor& additive_mask,
                                 const Module* layer, const QueryRows& rows) {
    Tensor weights = softmax(additive_mask.defined() ? scores + additive_mask : scores, -1);  // [B, 1, S]
    if (head_interventions(layer) != nullptr) {
        const std::int64_t batch = scores.size(0), src_len = scores.size(2);
        const Tensor mask =
            additive_mask.defined() ? reshape(additive_mask, {batch, 1, 1, src_len}) : Tensor();
        weights = intervene_step(
            layer, weights, reshape(allowed_keys(mask, batch, 1, 1, src_len), {batch, 1, src_len}), rows);
    }
    const Tensor context = matmul(weights, memory);  // [B, 1, S] x [B, S, A] -> [B, 1, A]
    return {reshape(context, {memory.size(0), memory.size(2)}), weights};
}

void record_steps(const Module* layer, const std::vector<Tensor>& step_weights) {
    if (!attention_recording() || step_weights.empty()) return;
    record_attention(layer, concat(step_weights, 1).detach());
}

void check_step_tokens(std::string_view op, const Tensor& tokens, std::int64_t rows,
                       std::int64_t vocab_size) {
    AG_CHECK(
        tokens.defined() && tokens.dim() == 1 && tokens.size(0) == rows, ShapeError,
        "{}::incremental step: tokens must be [N] = [{}] (one per prefix the state holds; reorder the state "
        "with the prefixes), got {}",
        op, rows, tokens.defined() ? fmt::format("{}", tokens.shape()) : "an undefined tensor");
    AG_CHECK(tokens.dtype() == DType::Int64, DTypeError, "{}::incremental step: tokens must be int64, got {}",
             op, tokens.dtype());
    const std::int64_t* ids = tokens.data<std::int64_t>();
    for (std::int64_t i = 0; i < rows; ++i)
        AG_CHECK(ids[i] >= 0 && ids[i] < vocab_size, IndexError,
                 "{}::incremental step: tokens[{}] = {} is outside the vocabulary [0, {})", op, i, ids[i],
                 vocab_size);
}

void check_reorder_rows(std::string_view op, const Tensor& rows, std::int64_t n) {
    AG_CHECK(rows.defined() && rows.dtype() == DType::Int64 && rows.dim() == 1, ShapeError,
             "{}::reorder: rows must be int64 [N'], got {}", op,
             rows.defined() ? fmt::format("{} {}", rows.dtype(), rows.shape()) : "an undefined tensor");
    const std::int64_t* r = rows.data<std::int64_t>();
    for (std::int64_t i = 0; i < rows.numel(); ++i)
        AG_CHECK(r[i] >= 0 && r[i] < n, IndexError,
                 "{}::reorder: row index {} at {} is outside the state's {} rows", op, r[i], i, n);
}

}  // namespace attograd::nn::detail

// Shape, dtype and length checks of the Transformer modules' sequences and masks.
#include "nn/transformer_inputs.hpp"

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops_shape.hpp"
#include "nn/attention_mask.hpp"

namespace attograd::nn {
namespace {

// A sequence [B, T, d_model] or [T, d_model] of the parameters' dtype with at least `min_len`
// positions (an attention needs one key).
void check_sequence(const Tensor& x, const char* name, const char* length, std::int64_t min_len,
                    const TransformerLayerOptions& o, std::string_view op) {
    AG_CHECK(x.defined(), ValueError, "{}: {} is undefined", op, name);
    AG_CHECK((x.dim() == 3 || x.dim() == 2) && x.size(-1) == o.d_model, ShapeError,
             "{}: {} must be [B, {}, d_model] or unbatched [{}, d_model] with d_model = {}, got {}", op, name,
             length, length, o.d_model, x.shape());
    AG_CHECK(x.dtype() == o.dtype, DTypeError, "{}: {} must have the parameters' dtype {}, got {} {}", op,
             name, o.dtype, x.dtype(), x.shape());
    AG_CHECK(x.size(-2) >= min_len, ShapeError,
             "{}: {} must hold at least one position ({} >= 1: attention needs a key), got {}", op, name,
             length, x.shape());
}

// A key padding mask of an unbatched input may be [T]: checked as [1, T], its own shape reported.
void check_padding(const Tensor& mask, const char* name, const char* length, std::int64_t batch,
                   std::int64_t len, bool unbatched, DType dtype, std::string_view op) {
    if (unbatched && mask.defined() && mask.dim() == 1) {
        AG_CHECK(mask.size(0) == len, ShapeError, "{}: {} of an unbatched input must be [{}] = [{}], got {}",
                 op, name, length, len, mask.shape());
    }
    const Tensor m = unbatched && mask.defined() && mask.dim() == 1 ? reshape(mask, {1, len}) : mask;
    check_key_padding_mask(m, {.mask = name, .tk = length}, batch, len, dtype, op);
}

}  // namespace

void check_encoder_inputs(const Tensor& src, const TransformerEncoderArgs& args,
                          const TransformerLayerOptions& o, std::string_view op) {
    check_sequence(src, "src", "S", 1, o, op);
    const bool unbatched = src.dim() == 2;
    const std::int64_t b = unbatched ? 1 : src.size(0), s = src.size(-2);
    check_attn_mask(args.src_mask, {.mask = "src_mask", .tq = "S", .tk = "S", .heads = "nhead"}, b, o.nhead,
                    s, s, o.dtype, op);
    check_padding(args.src_key_padding_mask, "src_key_padding_mask", "S", b, s, unbatched, o.dtype, op);
}

void check_decoder_inputs(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args,
                          const TransformerLayerOptions& o, std::string_view op) {
    check_sequence(tgt, "tgt", "T", o.self_attention ? 1 : 0, o, op);
    check_sequence(memory, "memory", "S", 1, o, op);
    AG_CHECK(tgt.dim() == memory.dim(), ShapeError,
             "{}: tgt {} and memory {} must both be batched [B, T, d_model] or both unbatched [T, d_model]",
             op, tgt.shape(), memory.shape());
    const bool unbatched = tgt.dim() == 2;
    AG_CHECK(unbatched || tgt.size(0) == memory.size(0), ShapeError,
             "{}: batch sizes differ: tgt {}, memory {}", op, tgt.shape(), memory.shape());
    const std::int64_t b = unbatched ? 1 : tgt.size(0), t = tgt.size(-2), s = memory.size(-2);
    check_attn_mask(args.tgt_mask, {.mask = "tgt_mask", .tq = "T", .tk = "T", .heads = "nhead"}, b, o.nhead,
                    t, t, o.dtype, op);
    check_attn_mask(args.memory_mask, {.mask = "memory_mask", .tq = "T", .tk = "S", .heads = "nhead"}, b,
                    o.nhead, t, s, o.dtype, op);
    check_padding(args.tgt_key_padding_mask, "tgt_key_padding_mask", "T", b, t, unbatched, o.dtype, op);
    check_padding(args.memory_key_padding_mask, "memory_key_padding_mask", "S", b, s, unbatched, o.dtype, op);
}

}  // namespace attograd::nn

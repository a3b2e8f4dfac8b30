// Checks of a Transformer encoder's or decoder's inputs and masks, shared by the layers, the
// stacks and nn::Transformer so that each names itself and the argument with PyTorch's name.
#pragma once

#include "nn/transformer.hpp"

#include <string_view>

namespace attograd::nn {

/// Checks the inputs of module `op` (TransformerEncoderLayer, TransformerEncoder, Transformer,
/// ...) built with layer options `o`: src [B, S, d_model] or unbatched [S, d_model] with S >= 1,
/// of dtype o.dtype; src_mask bool or float [S, S] or [B * nhead, S, S]; src_key_padding_mask bool
/// or float [B, S] ([S] unbatched). Throws ValueError (src undefined, a float mask holding NaN or
/// +inf), ShapeError, DTypeError; every message starts with `op` and names the argument, the
/// expected and the given shape.
void check_encoder_inputs(const Tensor& src, const TransformerEncoderArgs& args,
                          const TransformerLayerOptions& o, std::string_view op);

/// Checks the inputs of module `op` as check_encoder_inputs does: tgt [B, T, d_model] and memory
/// [B, S, d_model] (both unbatched, or both not) with S >= 1 and, when the layers have
/// self-attention, T >= 1; tgt_mask [T, T] or [B * nhead, T, T]; memory_mask [T, S] or
/// [B * nhead, T, S]; tgt_key_padding_mask [B, T]; memory_key_padding_mask [B, S].
void check_decoder_inputs(const Tensor& tgt, const Tensor& memory, const TransformerDecoderArgs& args,
                          const TransformerLayerOptions& o, std::string_view op);

}  // namespace attograd::nn

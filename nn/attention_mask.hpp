// Attention masks: causal and padding mask helpers, validating attn_mask / key_padding_mask /
// is_causal and combining them.
#pragma once

#include "core/tensor.hpp"

#include <string_view>

namespace attograd::nn {

/// The masks an attention call may take, with PyTorch's semantics (torch.nn.MultiheadAttention).
/// Boolean masks are `true` where attention is NOT allowed; float masks are added to the scores.
struct AttentionMasks {
    /// bool or float, [Tq, Tk] (every batch and head) or [B * h, Tq, Tk] (per batch and head,
    /// batch-major: index b * h + head). Undefined = none.
    Tensor attn_mask = {};
    /// bool or float, [B, Tk]: `true` (or the added float) at padded keys. Undefined = none.
    Tensor key_padding_mask = {};
    /// Query t may only attend to keys s <= t: the upper triangle s > t is masked, for any Tq
    /// and Tk.
    bool is_causal = false;

    /// True when no mask of any kind is set.
    bool empty() const { return !attn_mask.defined() && !key_padding_mask.defined() && !is_causal; }
};

/// Keyword arguments of an attention layer's forward, nn::Attention's and nn::MultiHeadAttention's
/// alike: torch.nn.MultiheadAttention.forward's names, defaults and mask semantics.
struct AttentionArgs {
    /// bool or float [B, Tk]: `true` (or the added float) at padded keys. Undefined = none.
    Tensor key_padding_mask{};
    /// bool (true = not allowed) or float (added): [Tq, Tk] for every batch and head, or
    /// [B * h, Tq, Tk] per batch and head (index b * h + head; h = 1 for nn::Attention).
    Tensor attn_mask{};
    /// Query t may not attend to keys s > t. Unlike PyTorch 2 it needs no attn_mask.
    bool is_causal = false;
    /// Return the weights (global attention computes them anyway; local attention builds its
    /// dense [B, (h,) Tq, Tk] view only when they are asked for or an AttentionRecorder is active).
    bool need_weights = true;
    /// Weights averaged over the heads [B, Tq, Tk] (true) or per head [B, h, Tq, Tk], as
    /// PyTorch's; with nn::Attention's one head, false gives [B, 1, Tq, Tk].
    bool average_attn_weights = true;

    /// The masks alone, as the mask checks and combine_attention_masks take them.
    AttentionMasks masks() const {
        return {.attn_mask = attn_mask, .key_padding_mask = key_padding_mask, .is_causal = is_causal};
    }
};

/// Boolean causal mask [size, size]: `true` above the diagonal (key s > query t, not allowed),
/// the form `attn_mask` takes (`AttentionMasks::is_causal` applies the same mask without building
/// it). Equals `triu(ones, 1)`. Throws ValueError when size is negative.
Tensor causal_mask(std::int64_t size);
/// PyTorch's `nn.Transformer.generate_square_subsequent_mask`: the float form of causal_mask,
/// [size, size] with -inf above the diagonal and 0 elsewhere, of `dtype` (float32 or float64).
/// Throws ValueError (size negative), DTypeError (dtype not float).
Tensor generate_square_subsequent_mask(std::int64_t size, DType dtype = DType::Float32);
/// key_padding_mask from sequence lengths: int64 lengths [B] -> bool [B, T], `true` at t >=
/// lengths[b] (padding). T = max_len, or the largest length when max_len < 0. Throws DTypeError
/// (lengths not int64), ShapeError (lengths not 1-D), ValueError (a length negative or above
/// max_len).
Tensor lengths_to_padding_mask(const Tensor& lengths, std::int64_t max_len = -1);

/// Checks a float mask named `name` (attn_mask, src_key_padding_mask, ...) for a layer `op`
/// computing in `dtype`: as PyTorch's scaled_dot_product_attention ("Expected attn_mask dtype to
/// be bool or float or to match query dtype"), a float mask must have the query's dtype (no
/// silent float64 -> float32 conversion): DTypeError naming the mask, the layer and both dtypes.
/// Its values must be finite or -inf (masked): ValueError on NaN or +inf, which would make the
/// row's weights NaN (core's check_additive_mask). Undefined, bool and other masks pass (their
/// dtype is checked by check_attention_masks).
void check_float_mask(const Tensor& mask, std::string_view name, DType dtype, std::string_view op);

/// How a mask check names things: the argument (attn_mask, tgt_mask, ...), the query and key
/// lengths (Tq and Tk, or T and S) and the head count (h, nhead).
struct MaskNames {
    std::string_view mask;         ///< the argument, e.g. "attn_mask"
    std::string_view tq = "Tq";    ///< name of the query length
    std::string_view tk = "Tk";    ///< name of the key length
    std::string_view heads = "h";  ///< name of the head count
};

/// Checks an attention mask `m` (undefined passes): bool or float, [Tq, Tk] or [B * h, Tq, Tk],
/// and check_float_mask. Throws DTypeError, ShapeError naming `op`, the mask, the expected and the
/// given shape ("Transformer: tgt_mask must be [T, T] = [4, 4] or [B * nhead, T, T] = [8, 4, 4],
/// got [3, 3]"), ValueError.
void check_attn_mask(const Tensor& m, const MaskNames& names, std::int64_t batch, std::int64_t heads,
                     std::int64_t tq, std::int64_t tk, DType dtype, std::string_view op);
/// Checks a key padding mask `m` (undefined passes): bool or float [B, Tk], and check_float_mask.
/// Throws as check_attn_mask.
void check_key_padding_mask(const Tensor& m, const MaskNames& names, std::int64_t batch, std::int64_t tk,
                            DType dtype, std::string_view op);

/// Checks the masks' shapes, dtypes and values for `batch` sequences, `heads` heads, `tq`
/// queries and `tk` keys of a layer computing in `dtype`. Throws ShapeError / DTypeError whose
/// message starts with `op` and names the argument, the expected and the given shape, and the
/// errors of check_float_mask.
void check_attention_masks(const AttentionMasks& masks, std::int64_t batch, std::int64_t heads,
                           std::int64_t tq, std::int64_t tk, DType dtype, std::string_view op);

/// The masks combined into one additive mask of `dtype`, shaped [B or 1, h or 1, Tq, Tk]
/// (broadcastable to the scores [B, h, Tq, Tk]): 0 where allowed, -inf where masked, float mask
/// values added. Undefined when `masks.empty()`. Validates first (check_attention_masks, so a
/// float mask must have `dtype`).
/// A row whose keys are all -inf yields zero weights through attograd's softmax.
Tensor combine_attention_masks(const AttentionMasks& masks, std::int64_t batch, std::int64_t heads,
                               std::int64_t tq, std::int64_t tk, DType dtype, std::string_view op);

}  // namespace attograd::nn

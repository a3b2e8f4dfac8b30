// Unbatched attention inputs ([T, E], PyTorch's unbatched form) run as a batch of one.
#pragma once

#include "core/tensor.hpp"

namespace attograd::nn {

/// query [Tq, Dq], key [Tk, Dk], value [Tk, Dv] as [1, T, D] (self-attention keeps one shared
/// handle, so the layers still see query, key and value as the same tensor) and a key_padding_mask
/// [Tk] as [1, Tk]. Shapes are checked afterwards by the batched path.
struct Unbatched {
    /// Adds the batch dimension to each defined argument.
    Unbatched(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& padding);
    /// the arguments with a batch of one
    /// @{
    Tensor query, key, value, key_padding_mask;
    /// @}
};

/// A key padding mask [T] of an unbatched input as [1, T]; undefined and other shapes are returned
/// unchanged (left for the batched path's check).
Tensor unbatched_padding(const Tensor& padding);

/// t [1, ...] -> [...]; undefined stays undefined.
Tensor drop_batch(const Tensor& t);

}  // namespace attograd::nn

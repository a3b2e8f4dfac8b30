// Positional ops: rotary position embeddings (RoPE) applied to whole projections.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// Rotary position embedding (Su et al. 2021, "RoFormer", eq. 34): each pair of columns
/// (2j, 2j + 1) of every head of width `head_dim` is rotated by the angle t * theta_j, with t the
/// position (index along dim -2) and theta_j = base^(-2j / head_dim), j in [0, head_dim / 2):
///   y[2j]     = x[2j] cos(t theta_j) - x[2j + 1] sin(t theta_j)
///   y[2j + 1] = x[2j] sin(t theta_j) + x[2j + 1] cos(t theta_j)
/// The pairs are adjacent columns, as in the paper (GPT-NeoX / LLaMA's code pairs j with
/// j + d / 2 instead). x [..., T, W] holds heads side by side; only the first `rotated_width`
/// columns (0 = all of W; a multiple of head_dim) are rotated, the rest are copied, so q and k
/// of a packed qkv projection [B, T, 3E] are rotated in place of two ops with rotated_width 2E.
/// Then q_t . k_s depends on t - s only. One tape entry; backward: the rotation is orthogonal,
/// dx = R(-t theta) dy. Throws ValueError (head_dim < 2 or odd, rotated_width negative, above
/// W or not a multiple of head_dim, base not finite and > 0), ShapeError (rank < 2),
/// DTypeError (not float).
Tensor rotary_embedding(const Tensor& x, std::int64_t head_dim, double base = 10000.0,
                        std::int64_t rotated_width = 0);

}  // namespace attograd

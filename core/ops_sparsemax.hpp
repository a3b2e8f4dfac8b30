// Sparsemax: the Euclidean projection onto the probability simplex, with exact zeros.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// Sparsemax along `axis` (Martins & Astudillo 2016, "From Softmax to Sparsemax", eq. 2-4):
/// p = argmin_{p in simplex} ||p - x||^2, i.e. p_i = max(x_i - tau, 0) with the threshold tau
/// chosen so that p sums to 1. Unlike softmax, low scores get probability exactly 0.
/// x [..] -> same shape. Entries equal to -inf (masked) get 0; a row that is entirely -inf
/// gives an all-zero row with zero gradient (softmax's convention here).
/// Backward (eq. 14): dx_i = s_i (dy_i - sum_{j in S} dy_j / |S|), S = {j : p_j > 0}, s its
/// indicator. Throws IndexError on a bad axis, DTypeError for non-float x, ValueError when x
/// holds NaN or +inf.
Tensor sparsemax(const Tensor& x, std::int64_t axis);

}  // namespace attograd

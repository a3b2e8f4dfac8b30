// Banded (local) attention kernels: scores, weighted sums and dense views over a window of keys.
#pragma once

#include "core/tensor.hpp"

#include <string_view>

namespace attograd {

// Local attention (Luong, Pham & Manning 2015, §3.2) looks at a window of `width` consecutive
// keys per query: slot j of query t of sequence n is key `window_start[n, t] + j`. Slots whose
// key falls outside [0, Tk) are "out of range": their score is 0 and they must be masked
// (-inf) before normalising; their weight is ignored. Only the band [N, Tq, width] is ever
// computed or stored, so time and memory grow as Tq * width, never Tq * Tk.

/// Band of dot-product scores: scores[n, t, j] = scale * q[n, t, :] . k[n, window_start[n, t] + j, :].
/// q [N, Tq, D], k [N, Tk, D], window_start int64 [N, Tq], width >= 1 -> [N, Tq, width]
/// (0 in out-of-range slots). scale = 1 gives the dot score, 1 / sqrt(D) the scaled dot score
/// (Vaswani et al. 2017), and q = W q' the bilinear score x^T W q' (Luong 2015 "general").
/// Backward: dq[t] = scale * sum_j ds[t, j] k[s_j], dk[s_j] += scale * ds[t, j] q[t].
/// Throws ShapeError (ranks, N / D mismatch, window_start not [N, Tq]), DTypeError, ValueError
/// (width < 1).
Tensor local_dot_score(const Tensor& q, const Tensor& k, const Tensor& window_start, std::int64_t width,
                       double scale = 1.0);

/// Weighted sum of the band's values: out[n, t, :] = sum_j weights[n, t, j] v[n, window_start[n, t] + j, :]
/// over in-range slots. weights [N, Tq, W], v [N, Tk, Dv], window_start int64 [N, Tq] ->
/// [N, Tq, Dv]. Backward: dweights[t, j] = dout[t] . v[s_j] (0 out of range),
/// dv[s_j] += weights[t, j] dout[t]. Throws ShapeError, DTypeError.
Tensor local_weighted_sum(const Tensor& weights, const Tensor& v, const Tensor& window_start);

/// The band as a dense [N, Tq, Tk] matrix (for inspection): dense[n, t, window_start + j] =
/// band[n, t, j], every other entry exactly 0. band [N, Tq, W] -> [N, Tq, Tk]; differentiable
/// (the gradient is gathered back from the band's positions). Costs Tq * Tk memory: call it only
/// when the weights are asked for. Throws ShapeError, DTypeError, ValueError (tk < 0).
Tensor local_band_to_dense(const Tensor& band, const Tensor& window_start, std::int64_t tk);

}  // namespace attograd

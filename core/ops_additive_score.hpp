// Additive (Bahdanau) attention scores: v^T tanh(W x + U q), fused, for all pairs or a band.
#pragma once

#include "core/tensor.hpp"

namespace attograd {

/// Additive attention scores (Bahdanau, Cho & Bengio 2015, eq. 6 / appendix A.1.2) from
/// projections computed once per query and once per key:
/// scores[n, t, s] = sum_h v[h] tanh(uq[n, t, h] + wx[n, s, h]), where uq = U q and wx = W x.
/// uq [N, Tq, H], wx [N, Tk, H], v [H] -> [N, Tq, Tk].
/// One fused op: the [N, Tq, Tk, H] pre-activations are never stored (the backward recomputes
/// the tanh row by row). With z = tanh(uq[t] + wx[s]) and g = dscores[t, s]:
/// d pre = g v (1 - z^2), duq[t] = sum_s d pre, dwx[s] = sum_t d pre, dv = sum_{t,s} g z.
/// Throws ShapeError (ranks, N or H mismatch, v not [H]) and DTypeError (dtypes differ or not float).
Tensor additive_score(const Tensor& uq, const Tensor& wx, const Tensor& v);

/// The same scores over a band of keys (local attention): slot j of query t is key
/// window_start[n, t] + j (see core/ops_local_attention.hpp); out-of-range slots are 0.
/// uq [N, Tq, H], wx [N, Tk, H], v [H], window_start int64 [N, Tq] -> [N, Tq, width].
/// Throws as additive_score, plus ValueError for width < 1.
Tensor local_additive_score(const Tensor& uq, const Tensor& wx, const Tensor& v, const Tensor& window_start,
                            std::int64_t width);

}  // namespace attograd

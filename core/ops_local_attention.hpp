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

namespace detail {
/// The keys query row `row` (= n * Tq + t) sees: all Tk of them (start == nullptr, width == Tk)
/// or `width` slots from start[row]; [lo, hi) is the in-range part, slot j = s - first.
struct KeyWindow {
    const std::int64_t* start = nullptr;
    std::int64_t width = 0;
    std::int64_t tk = 0;
    std::int64_t first(std::int64_t row) const { return start ? start[row] : 0; }
    std::int64_t lo(std::int64_t row) const {
        return first(row) < 0 ? 0 : (first(row) > tk ? tk : first(row));
    }
    std::int64_t hi(std::int64_t row) const {
        if (first(row) >= tk - width) return tk;  // compared this way round: no overflow
        const std::int64_t end = first(row) + width;
        return end < 0 ? 0 : end;
    }
};

/// Checks window_start is an int64 [n, tq] tensor and width >= 1; messages start with `op`.
void check_window(const Tensor& window_start, std::int64_t n, std::int64_t tq, std::int64_t width,
                  std::string_view op);
/// Checks a band about to be allocated: width <= 2 Tk - 1 (no window over Tk keys needs more
/// slots: a larger width only allocates slots outside the keys). Throws ValueError.
void check_band_width(std::int64_t width, std::int64_t tk, std::string_view op);
}  // namespace detail

}  // namespace attograd

// Internal: flash-style global attention kernels (Dao et al. 2022): keys in tiles, an online
// softmax, the log-sum-exp saved for backward, which recomputes the scores tile by tile, so
// that no [Tq, Tk] matrix is ever stored.
#pragma once

#include "core/detail/sdpa_common.hpp"

namespace attograd::detail {

/// Forward: out = dropout(softmax(scale q k^T + mask)) v for every (batch, head) block of `g`,
/// and lse [B * h, Tq] = log sum_s exp(score_ts) per query (-inf for a row whose every key is
/// masked: its output is 0). `mask` is the additive mask with g's strides, or null. Memory:
/// per-thread tiles only (Dao et al. 2022, Algorithm 1, with the 1 / l rescale at the end).
template <class T>
void flash_forward(const SdpaGeometry& g, const T* q, const T* k, const T* v, const T* mask, T* out, T* lse);

/// Inputs and outputs of flash_backward; dq, dk, dv may each be null (not needed).
template <class T>
struct FlashBackwardArgs {
    const T *q, *k, *v, *mask, *out, *lse, *dout;
    T *dq, *dk, *dv;
};

/// Backward from the saved output and lse: per key tile j and query tile i, P = exp(S - lse),
/// dV_j += Pd^T dO_i, dP = (dO_i V_j^T) * M / (1 - p), dS = P * (dP - D) with
/// D = rowsum(dO * O), dQ_i += scale dS K_j, dK_j += scale dS^T Q_i (Dao et al. 2022,
/// Algorithm 2 and its eq. for D). Every sum runs in a fixed tile order: deterministic.
template <class T>
void flash_backward(const SdpaGeometry& g, const FlashBackwardArgs<T>& a);

}  // namespace attograd::detail

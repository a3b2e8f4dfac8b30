// Flash-style global attention: forward and backward over key tiles with an online softmax.
#include "core/flash_attention.hpp"

#include "core/gemm.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attograd::detail {
namespace {

// Query rows and keys per tile: a [64, 128] score tile (32 KB in float32) and the tiles of q,
// k and v it reads stay in L2; measured against 32 and 256 on T = 512 ... 8192 (bench/README.md).
constexpr std::int64_t kQueryTile = 64;
constexpr std::int64_t kKeyTile = 128;

template <class T>
using RowArray = Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>>;
template <class T>
using ConstRowArray = Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>>;

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// row = scale * row + mask (the mask row of query t from key s0 on).
template <class T>
void scale_and_mask(const SdpaGeometry& g, const T* mask, std::int64_t b, std::int64_t h, std::int64_t t,
                    std::int64_t s0, T* row, std::int64_t cols) {
    RowArray<T> r(row, cols);
    r *= static_cast<T>(g.scale);
    if (mask == nullptr) return;
    const T* m = g.mask_row(mask, b, h, t);
    if (g.mask_s == 0)
        r += m[0];
    else
        r += ConstRowArray<T>(m + s0, cols);
}

// row = exp(row - shift), with exactly 0 where row is -inf: Eigen's vectorised exp clamps its
// argument, so exp(-inf) would be a denormal (see masked_softmax_rows in ops_attention.cpp).
template <class T>
void exp_shifted(T* row, std::int64_t cols, T shift, T* spare) {
    RowArray<T> r(row, cols);
    int masked = 0;  // a plain loop, so that the compiler vectorises the test
    for (std::int64_t s = 0; s < cols; ++s) masked |= row[s] == kNegInf<T>;
    if (masked == 0) {
        r = (r - shift).exp();
        return;
    }
    RowArray<T> saved(spare, cols);
    saved = r;
    r = (r - shift).exp();
    r = (saved == kNegInf<T>).select(T(0), r);
}

// One query tile [i0, i0 + rows) of block (b, h): the online softmax over all key tiles.
template <class T>
void forward_tile(const SdpaGeometry& g, const T* q, const T* k, const T* v, const T* mask, T* out, T* lse,
                  std::int64_t bh, std::int64_t i0, std::int64_t rows) {
    const std::int64_t b = bh / g.heads, h = bh % g.heads;
    T* S = sdpa_scratch<T>(0, kQueryTile * kKeyTile);
    T* dropped = sdpa_scratch<T>(1, kQueryTile * kKeyTile);
    T* acc = sdpa_scratch<T>(2, kQueryTile * g.dv);  // unnormalised output rows
    T* top = sdpa_scratch<T>(3, kQueryTile);         // running row maxima m
    T* total = sdpa_scratch<T>(4, kQueryTile);       // running sums l of exp(s - m)
    T* spare = sdpa_scratch<T>(5, kKeyTile);
    std::fill_n(acc, rows * g.dv, T(0));
    std::fill_n(top, rows, kNegInf<T>);
    std::fill_n(total, rows, T(0));
    const T* qi = q + g.q.at(b, h) + i0 * g.q.row;
    for (std::int64_t s0 = 0; s0 < g.tk; s0 += kKeyTile) {
        const std::int64_t cols = std::min(kKeyTile, g.tk - s0);
        // S [rows, cols] = Q_i K_j^T
        gemm(rows, cols, g.d, qi, g.q.row, false, k + g.k.at(b, h) + s0 * g.k.row, g.k.row, true, S, cols,
             false);
        for (std::int64_t r = 0; r < rows; ++r) {
            T* row = S + r * cols;
            scale_and_mask(g, mask, b, h, i0 + r, s0, row, cols);
            const T m_new = std::max(top[r], RowArray<T>(row, cols).maxCoeff());
            if (m_new == kNegInf<T>) {  // every key so far masked: nothing to add yet
                std::fill_n(row, cols, T(0));
                continue;
            }
            // m_new is finite here; exp(-inf - m_new) is exactly 0 for the first tile
            const T correction = top[r] == kNegInf<T> ? T(0) : std::exp(top[r] - m_new);
            exp_shifted(row, cols, m_new, spare);
            total[r] = total[r] * correction + RowArray<T>(row, cols).sum();
            if (correction != T(1)) RowArray<T>(acc + r * g.dv, g.dv) *= correction;
            top[r] = m_new;
        }
        const T* weights = S;
        if (g.dropout_active()) {
            const auto seed = g.seeds[static_cast<std::size_t>(bh)];
            for (std::int64_t r = 0; r < rows; ++r)
                apply_dropout(S + r * cols, dropped + r * cols, cols, g.dropout_p, seed,
                              (i0 + r) * g.tk + s0);
            weights = dropped;
        }
        // acc [rows, dv] += Pd_ij V_j
        gemm(rows, g.dv, cols, weights, cols, false, v + g.v.at(b, h) + s0 * g.v.row, g.v.row, false, acc,
             g.dv, true);
    }
    T* oi = out + g.out.at(b, h) + i0 * g.out.row;
    for (std::int64_t r = 0; r < rows; ++r) {
        const bool empty = total[r] == T(0);  // every key masked (or no keys): zero output
        const T inv = empty ? T(0) : T(1) / total[r];
        RowArray<T>(oi + r * g.out.row, g.dv) = ConstRowArray<T>(acc + r * g.dv, g.dv) * inv;
        lse[bh * g.tq + i0 + r] = empty ? kNegInf<T> : top[r] + std::log(total[r]);
    }
}

// Probabilities P = exp(scale q k^T + mask - lse) of tile S [rows, cols] in place; rows of
// lse -inf (fully masked) become 0.
template <class T>
void recompute_probabilities(const SdpaGeometry& g, const T* mask, const T* lse, std::int64_t b,
                             std::int64_t h, std::int64_t i0, std::int64_t s0, T* S, std::int64_t rows,
                             std::int64_t cols, T* spare) {
    for (std::int64_t r = 0; r < rows; ++r) {
        T* row = S + r * cols;
        const T shift = lse[i0 + r];
        if (shift == kNegInf<T>) {
            std::fill_n(row, cols, T(0));
            continue;
        }
        scale_and_mask(g, mask, b, h, i0 + r, s0, row, cols);
        exp_shifted(row, cols, shift, spare);
    }
}

template <class T>
void backward_block(const SdpaGeometry& g, const FlashBackwardArgs<T>& a, std::int64_t bh) {
    const std::int64_t b = bh / g.heads, h = bh % g.heads;
    T* P = sdpa_scratch<T>(0, kQueryTile * kKeyTile);
    T* dropped = sdpa_scratch<T>(1, kQueryTile * kKeyTile);
    T* dP = sdpa_scratch<T>(2, kQueryTile * kKeyTile);
    T* D = sdpa_scratch<T>(3, g.tq);
    T* spare = sdpa_scratch<T>(5, kKeyTile);
    const T scale = static_cast<T>(g.scale);
    const T* lse = a.lse + bh * g.tq;
    const T *q = a.q + g.q.at(b, h), *k = a.k + g.k.at(b, h), *v = a.v + g.v.at(b, h);
    const T *o = a.out + g.out.at(b, h), *dO = a.dout + g.out.at(b, h);
    T* dq = a.dq != nullptr ? a.dq + g.q.at(b, h) : nullptr;
    T* dk = a.dk != nullptr ? a.dk + g.k.at(b, h) : nullptr;
    T* dv = a.dv != nullptr ? a.dv + g.v.at(b, h) : nullptr;
    // D_t = rowsum(dP * P) = dO_t . O_t (the dropout mask cancels: O = Pd V)
    for (std::int64_t t = 0; t < g.tq; ++t)
        D[t] = (ConstRowArray<T>(dO + t * g.out.row, g.dv) * ConstRowArray<T>(o + t * g.out.row, g.dv)).sum();
    if (dq != nullptr) zero_block(dq, g.tq, g.d, g.q.row);
    const auto seed = g.dropout_active() ? g.seeds[static_cast<std::size_t>(bh)] : 0;
    for (std::int64_t s0 = 0; s0 < g.tk; s0 += kKeyTile) {
        const std::int64_t cols = std::min(kKeyTile, g.tk - s0);
        const T *kj = k + s0 * g.k.row, *vj = v + s0 * g.v.row;
        T* dkj = dk != nullptr ? dk + s0 * g.k.row : nullptr;
        T* dvj = dv != nullptr ? dv + s0 * g.v.row : nullptr;
        if (dkj != nullptr) zero_block(dkj, cols, g.d, g.k.row);
        if (dvj != nullptr) zero_block(dvj, cols, g.dv, g.v.row);
        for (std::int64_t i0 = 0; i0 < g.tq; i0 += kQueryTile) {
            const std::int64_t rows = std::min(kQueryTile, g.tq - i0);
            const T *qi = q + i0 * g.q.row, *dOi = dO + i0 * g.out.row;
            // P [rows, cols] = exp(S - lse), S = scale Q_i K_j^T + mask
            gemm(rows, cols, g.d, qi, g.q.row, false, kj, g.k.row, true, P, cols, false);
            recompute_probabilities(g, a.mask, lse, b, h, i0, s0, P, rows, cols, spare);
            const T* pd = P;
            if (g.dropout_active()) {
                for (std::int64_t r = 0; r < rows; ++r)
                    apply_dropout(P + r * cols, dropped + r * cols, cols, g.dropout_p, seed,
                                  (i0 + r) * g.tk + s0);
                pd = dropped;
            }
            // dV_j += Pd^T dO_i
            if (dvj != nullptr)
                gemm(cols, g.dv, rows, pd, cols, true, dOi, g.out.row, false, dvj, g.v.row, true);
            // dPd = dO_i V_j^T, dP = dPd * M / (1 - p), then dP becomes scale * dS = scale P (dP - D)
            gemm(rows, cols, g.dv, dOi, g.out.row, false, vj, g.v.row, true, dP, cols, false);
            for (std::int64_t r = 0; r < rows; ++r) {
                T* row = dP + r * cols;
                if (g.dropout_active())
                    apply_dropout(row, row, cols, g.dropout_p, seed, (i0 + r) * g.tk + s0);
                RowArray<T>(row, cols) =
                    scale * ConstRowArray<T>(P + r * cols, cols) * (RowArray<T>(row, cols) - D[i0 + r]);
            }
            // dQ_i += scale dS K_j; dK_j += scale dS^T Q_i
            if (dq != nullptr)
                gemm(rows, g.d, cols, dP, cols, false, kj, g.k.row, false, dq + i0 * g.q.row, g.q.row, true);
            if (dkj != nullptr) gemm(cols, g.d, rows, dP, cols, true, qi, g.q.row, false, dkj, g.k.row, true);
        }
    }
}

}  // namespace

template <class T>
void flash_forward(const SdpaGeometry& g, const T* q, const T* k, const T* v, const T* mask, T* out, T* lse) {
    // Work items are (block, query tile) pairs: the tiles of one block are independent, so a
    // single long sequence also spreads over the threads.
    const std::int64_t tiles = (g.tq + kQueryTile - 1) / kQueryTile;
    const std::int64_t items = g.blocks() * tiles;
    const bool parallel =
        items > 1 && worth_parallel(g.blocks() * g.tq * g.tk * (g.d + g.dv), kMinParallelGemmWork);
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
    for (std::int64_t item = 0; item < items; ++item) {
        const std::int64_t bh = item / tiles, i0 = (item % tiles) * kQueryTile;
        forward_tile(g, q, k, v, mask, out, lse, bh, i0, std::min(kQueryTile, g.tq - i0));
    }
}

template <class T>
void flash_backward(const SdpaGeometry& g, const FlashBackwardArgs<T>& a) {
#pragma omp parallel for schedule(dynamic, 1) if (g.parallel())
    for (std::int64_t bh = 0; bh < g.blocks(); ++bh) backward_block(g, a, bh);
}

template void flash_forward<float>(const SdpaGeometry&, const float*, const float*, const float*,
                                   const float*, float*, float*);
template void flash_forward<double>(const SdpaGeometry&, const double*, const double*, const double*,
                                    const double*, double*, double*);
template void flash_backward<float>(const SdpaGeometry&, const FlashBackwardArgs<float>&);
template void flash_backward<double>(const SdpaGeometry&, const FlashBackwardArgs<double>&);

}  // namespace attograd::detail

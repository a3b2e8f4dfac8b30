// Flash-style global attention: forward and backward over key tiles with an online softmax.
#include "core/detail/flash_attention.hpp"

#include "core/detail/gemm.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

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
            // A NaN score makes its row NaN, as the kernel that keeps the weights does; unchecked,
            // std::max and Eigen's exp (which clamps its argument) drop it, so a NaN query gave
            // a zero row and a NaN key finite outputs.
            const T tile_max = RowArray<T>(row, cols).template maxCoeff<Eigen::PropagateNaN>();
            if (std::isnan(tile_max) || std::isnan(top[r])) {
                top[r] = std::numeric_limits<T>::quiet_NaN();
                std::fill_n(row, cols, T(0));
                continue;
            }
            const T m_new = std::max(top[r], tile_max);
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
        if (std::isnan(top[r])) {
            std::fill_n(oi + r * g.out.row, g.dv, std::numeric_limits<T>::quiet_NaN());
            lse[bh * g.tq + i0 + r] = top[r];
            continue;
        }
        const bool empty = total[r] == T(0);  // every key masked (or no keys): zero output
        const T inv = empty ? T(0) : T(1) / total[r];
        RowArray<T>(oi + r * g.out.row, g.dv) = ConstRowArray<T>(acc + r * g.dv, g.dv) * inv;
        lse[bh * g.tq + i0 + r] = empty ? kNegInf<T> : top[r] + std::log(total[r]);
    }
}

// Probabilities P = exp(scale q k^T + mask - lse) of tile S [rows, cols] in place; rows of
// lse -inf (fully masked) become 0, rows of lse NaN (a NaN score) NaN.
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
        if (std::isnan(shift)) {  // a row made NaN in forward stays NaN here (exp would clamp it)
            std::fill_n(row, cols, std::numeric_limits<T>::quiet_NaN());
            continue;
        }
        scale_and_mask(g, mask, b, h, i0 + r, s0, row, cols);
        exp_shifted(row, cols, shift, spare);
    }
}

// Pointers of one (batch, head) block for backward, and its per-thread tiles.
template <class T>
struct BlockView {
    std::int64_t b, h, bh;
    const T *q, *k, *v, *dO, *lse, *D;
    T *dq, *dk, *dv;
    T *P, *dropped, *dP, *spare;

    BlockView(const SdpaGeometry& g, const FlashBackwardArgs<T>& a, const T* d_all, std::int64_t block)
        : b(block / g.heads), h(block % g.heads), bh(block) {
        q = a.q + g.q.at(b, h);
        k = a.k + g.k.at(b, h);
        v = a.v + g.v.at(b, h);
        dO = a.dout + g.out.at(b, h);
        lse = a.lse + bh * g.tq;
        D = d_all + bh * g.tq;
        dq = a.dq != nullptr ? a.dq + g.q.at(b, h) : nullptr;
        dk = a.dk != nullptr ? a.dk + g.k.at(b, h) : nullptr;
        dv = a.dv != nullptr ? a.dv + g.v.at(b, h) : nullptr;
        P = sdpa_scratch<T>(0, kQueryTile * kKeyTile);
        dropped = sdpa_scratch<T>(1, kQueryTile * kKeyTile);
        dP = sdpa_scratch<T>(2, kQueryTile * kKeyTile);
        spare = sdpa_scratch<T>(5, kKeyTile);
    }
};

// Tile (query rows [i0, i0 + rows), keys [s0, s0 + cols)) of a block: P = exp(S - lse) with
// S = scale Q_i K_j^T + mask; dP = (dO_i V_j^T) * M / (1 - p), then dP becomes
// scale * dS = scale P (dP - D). Returns the dropped weights Pd (P itself without dropout).
template <class T>
const T* tile_backward(const SdpaGeometry& g, const T* mask, const BlockView<T>& w, std::int64_t i0,
                       std::int64_t rows, std::int64_t s0, std::int64_t cols) {
    const T scale = static_cast<T>(g.scale);
    gemm(rows, cols, g.d, w.q + i0 * g.q.row, g.q.row, false, w.k + s0 * g.k.row, g.k.row, true, w.P, cols,
         false);
    recompute_probabilities(g, mask, w.lse, w.b, w.h, i0, s0, w.P, rows, cols, w.spare);
    const auto seed = g.dropout_active() ? g.seeds[static_cast<std::size_t>(w.bh)] : 0;
    const T* pd = w.P;
    if (g.dropout_active()) {
        for (std::int64_t r = 0; r < rows; ++r)
            apply_dropout(w.P + r * cols, w.dropped + r * cols, cols, g.dropout_p, seed,
                          (i0 + r) * g.tk + s0);
        pd = w.dropped;
    }
    gemm(rows, cols, g.dv, w.dO + i0 * g.out.row, g.out.row, false, w.v + s0 * g.v.row, g.v.row, true, w.dP,
         cols, false);
    for (std::int64_t r = 0; r < rows; ++r) {
        T* row = w.dP + r * cols;
        if (g.dropout_active()) apply_dropout(row, row, cols, g.dropout_p, seed, (i0 + r) * g.tk + s0);
        RowArray<T>(row, cols) =
            scale * ConstRowArray<T>(w.P + r * cols, cols) * (RowArray<T>(row, cols) - w.D[i0 + r]);
    }
    return pd;
}

// dK_j and dV_j of key tile [s0, s0 + cols): sums over the query tiles in order.
template <class T>
void key_tile_grads(const SdpaGeometry& g, const T* mask, const BlockView<T>& w, std::int64_t s0,
                    std::int64_t cols, bool with_dq) {
    T* dkj = w.dk != nullptr ? w.dk + s0 * g.k.row : nullptr;
    T* dvj = w.dv != nullptr ? w.dv + s0 * g.v.row : nullptr;
    if (dkj != nullptr) zero_block(dkj, cols, g.d, g.k.row);
    if (dvj != nullptr) zero_block(dvj, cols, g.dv, g.v.row);
    for (std::int64_t i0 = 0; i0 < g.tq; i0 += kQueryTile) {
        const std::int64_t rows = std::min(kQueryTile, g.tq - i0);
        const T* pd = tile_backward(g, mask, w, i0, rows, s0, cols);
        // dV_j += Pd^T dO_i; dK_j += scale dS^T Q_i; (one pass) dQ_i += scale dS K_j
        if (dvj != nullptr)
            gemm(cols, g.dv, rows, pd, cols, true, w.dO + i0 * g.out.row, g.out.row, false, dvj, g.v.row,
                 true);
        if (dkj != nullptr)
            gemm(cols, g.d, rows, w.dP, cols, true, w.q + i0 * g.q.row, g.q.row, false, dkj, g.k.row, true);
        if (with_dq && w.dq != nullptr)
            gemm(rows, g.d, cols, w.dP, cols, false, w.k + s0 * g.k.row, g.k.row, false, w.dq + i0 * g.q.row,
                 g.q.row, true);
    }
}

// dQ_i of query tile [i0, i0 + rows): sums over the key tiles in order.
template <class T>
void query_tile_grads(const SdpaGeometry& g, const T* mask, const BlockView<T>& w, std::int64_t i0,
                      std::int64_t rows) {
    T* dqi = w.dq + i0 * g.q.row;
    zero_block(dqi, rows, g.d, g.q.row);
    for (std::int64_t s0 = 0; s0 < g.tk; s0 += kKeyTile) {
        const std::int64_t cols = std::min(kKeyTile, g.tk - s0);
        tile_backward(g, mask, w, i0, rows, s0, cols);
        gemm(rows, g.d, cols, w.dP, cols, false, w.k + s0 * g.k.row, g.k.row, false, dqi, g.q.row, true);
    }
}

}  // namespace

template <class T>
void flash_forward(const SdpaGeometry& g, const T* q, const T* k, const T* v, const T* mask, T* out, T* lse) {
    // Work items are (block, query tile) pairs: the tiles of one block are independent, so a
    // single long sequence also spreads over the threads.
    const std::int64_t tiles = (g.tq + kQueryTile - 1) / kQueryTile;
    const std::int64_t items = g.blocks() * tiles;
    const int threads = threads_for(g.blocks() * g.tq * g.tk * (g.d + g.dv), kMinParallelGemmWork);
    parallel_for(
        items, threads,
        [&](std::int64_t item) {
            const std::int64_t bh = item / tiles, i0 = (item % tiles) * kQueryTile;
            forward_tile(g, q, k, v, mask, out, lse, bh, i0, std::min(kQueryTile, g.tq - i0));
        },
        Schedule::Dynamic);
}

template <class T>
void flash_backward(const SdpaGeometry& g, const FlashBackwardArgs<T>& a) {
    const std::int64_t query_tiles = (g.tq + kQueryTile - 1) / kQueryTile;
    const std::int64_t key_tiles = (g.tk + kKeyTile - 1) / kKeyTile;
    const int threads = threads_for(g.blocks() * g.tq * g.tk * (g.d + g.dv), kMinParallelGemmWork);
    // D_t = rowsum(dP * P) = dO_t . O_t for every query (the dropout mask cancels: O = Pd V)
    std::vector<T> d_all(static_cast<std::size_t>(g.blocks() * g.tq));
    for (std::int64_t bh = 0; bh < g.blocks(); ++bh) {
        const T* o = a.out + g.out.at(bh / g.heads, bh % g.heads);
        const T* dO = a.dout + g.out.at(bh / g.heads, bh % g.heads);
        for (std::int64_t t = 0; t < g.tq; ++t)
            d_all[static_cast<std::size_t>(bh * g.tq + t)] =
                (ConstRowArray<T>(dO + t * g.out.row, g.dv) * ConstRowArray<T>(o + t * g.out.row, g.dv))
                    .sum();
    }
    if (g.blocks() >= threads) {
        // One pass per block: key tiles outer, dQ summed over them in order.
        parallel_for(
            g.blocks(), threads,
            [&](std::int64_t bh) {
                const BlockView<T> w(g, a, d_all.data(), bh);
                if (w.dq != nullptr) zero_block(w.dq, g.tq, g.d, g.q.row);
                for (std::int64_t s0 = 0; s0 < g.tk; s0 += kKeyTile)
                    key_tile_grads(g, a.mask, w, s0, std::min(kKeyTile, g.tk - s0), true);
            },
            Schedule::Dynamic);
        return;
    }
    // Fewer blocks than threads (one long sequence): key tiles in parallel for dK and dV, then
    // query tiles in parallel for dQ. Each sum still runs over the same tiles in the same order,
    // so the result is the one-pass result, bit for bit; the scores are recomputed once more.
    parallel_for(
        g.blocks() * key_tiles, threads,
        [&](std::int64_t item) {
            const BlockView<T> w(g, a, d_all.data(), item / key_tiles);
            const std::int64_t s0 = (item % key_tiles) * kKeyTile;
            key_tile_grads(g, a.mask, w, s0, std::min(kKeyTile, g.tk - s0), false);
        },
        Schedule::Dynamic);
    if (a.dq == nullptr) return;
    parallel_for(
        g.blocks() * query_tiles, threads,
        [&](std::int64_t item) {
            const BlockView<T> w(g, a, d_all.data(), item / query_tiles);
            const std::int64_t i0 = (item % query_tiles) * kQueryTile;
            query_tile_grads(g, a.mask, w, i0, std::min(kQueryTile, g.tq - i0));
        },
        Schedule::Dynamic);
}

template void flash_forward<float>(const SdpaGeometry&, const float*, const float*, const float*,
                                   const float*, float*, float*);
template void flash_forward<double>(const SdpaGeometry&, const double*, const double*, const double*,
                                    const double*, double*, double*);
template void flash_backward<float>(const SdpaGeometry&, const FlashBackwardArgs<float>&);
template void flash_backward<double>(const SdpaGeometry&, const FlashBackwardArgs<double>&);

}  // namespace attograd::detail

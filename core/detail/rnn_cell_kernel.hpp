// Internal: one recurrent cell step for one sequence, forward and backward (the fused layers of
// core/rnn_kernel.cpp and the fused GRU cell of core/ops_rnn_cell.cpp).
#pragma once

#include "core/detail/chunks.hpp"
#include "core/detail/rnn_kernel.hpp"
#include "core/ops_rnn.hpp"

#include <Eigen/Core>

namespace attograd::detail {

template <class S>
using Seg = Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>>;
template <class S>
using ConstSeg = Eigen::Map<const Eigen::Array<S, Eigen::Dynamic, 1>>;

// One step's cell for one sequence: a = xp + hp (pre-activations; hp holds W_hh h + b_hh).
//   RNN:  h' = act(a)
//   GRU:  r = sigma(a_r), z = sigma(a_z), n = tanh(xp_n + r * hp_n), h' = (1 - z) n + z h
//   LSTM: i, f, o = sigma(a_.), g = tanh(a_g), c' = f c + i g, h' = o tanh(c')
// In chunks (core/detail/chunks.hpp): a unit's result depends on its operands alone, not on its
// index or the row's alignment, so a decoder's one-row step gives the bits of a batched one.
template <class S>
inline void cell_forward(const RnnDims& d, const S* xp, const S* hp, const S* h, const S* c, S* h_next,
                         S* c_next, S* gates, S* hn) {
    const std::int64_t H = d.h;
    // the pre-activation of gate k at units [i, i + n)
    const auto pre = [&](std::int64_t k, std::int64_t i, std::int64_t n) {
        return Chunk<S>(load_chunk(xp + k * H + i, n) + load_chunk(hp + k * H + i, n));
    };
    switch (d.mode) {
        case RnnMode::RnnTanh:
            for_chunks<S>(H, [&](std::int64_t i, std::int64_t n) {
                store_chunk<S>(pre(0, i, n).tanh(), h_next + i, n);
            });
            break;
        case RnnMode::RnnRelu:
            for_chunks<S>(H, [&](std::int64_t i, std::int64_t n) {
                store_chunk<S>(pre(0, i, n).max(S(0)), h_next + i, n);
            });
            break;
        case RnnMode::Gru:
            for_chunks<S>(H, [&](std::int64_t i, std::int64_t n) {
                const Chunk<S> r = pre(0, i, n).logistic(), z = pre(1, i, n).logistic();
                const Chunk<S> hp_n = load_chunk(hp + 2 * H + i, n);
                const Chunk<S> nn = (load_chunk(xp + 2 * H + i, n) + r * hp_n).tanh();
                store_chunk(r, gates + i, n);
                store_chunk(z, gates + H + i, n);
                store_chunk(nn, gates + 2 * H + i, n);
                store_chunk(hp_n, hn + i, n);
                store_chunk<S>((S(1) - z) * nn + z * load_chunk(h + i, n), h_next + i, n);
            });
            break;
        case RnnMode::Lstm:
            for_chunks<S>(H, [&](std::int64_t i, std::int64_t n) {
                const Chunk<S> ig = pre(0, i, n).logistic(), fg = pre(1, i, n).logistic();
                const Chunk<S> gg = pre(2, i, n).tanh(), og = pre(3, i, n).logistic();
                const Chunk<S> cn = fg * load_chunk(c + i, n) + ig * gg;
                store_chunk(ig, gates + i, n);
                store_chunk(fg, gates + H + i, n);
                store_chunk(gg, gates + 2 * H + i, n);
                store_chunk(og, gates + 3 * H + i, n);
                store_chunk(cn, c_next + i, n);
                store_chunk<S>(og * cn.tanh(), h_next + i, n);
            });
            break;
    }
}

// The same step backward for one sequence. dh [H] is dL/dh' (for an LSTM with a projection, the
// gradient of o tanh(c')); writes dxp and dhp [G*H] (d of xp and of hp) and returns the parts
// that bypass W_hh: GRU adds dh z to dh_prev, LSTM replaces dc with dc_prev = dc f.
//   RNN:  da = dh (1 - h'^2) or dh [h' > 0]
//   GRU:  dn = dh (1 - z), dz = dh (h - n), da_n = dn (1 - n^2), dr = da_n hp_n;
//         dxp = [dr r(1-r), dz z(1-z), da_n], dhp = [.., .., da_n r]
//   LSTM: dc += dh o (1 - tanh^2 c'), do = dh tanh c', di = dc g, dg = dc i, df = dc c;
//         through the activations: i(1-i), f(1-f), 1-g^2, o(1-o)
// In chunks as the forward, so tanh(c') recomputed here has the forward's bits.
template <class S>
inline void cell_backward(const RnnDims& d, const S* dh, const S* h, const S* h_next, const S* c,
                          const S* c_next, const S* gates, const S* hn, S* dxp, S* dhp, S* dh_direct, S* dc) {
    const std::int64_t H = d.h;
    switch (d.mode) {
        case RnnMode::RnnTanh:
        case RnnMode::RnnRelu: {
            const bool relu = d.mode == RnnMode::RnnRelu;
            for_chunks<S>(H, [&](std::int64_t i, std::int64_t n) {
                const Chunk<S> g = load_chunk(dh + i, n), y = load_chunk(h_next + i, n);
                const Chunk<S> da =
                    relu ? Chunk<S>((y > S(0)).select(g, S(0))) : Chunk<S>(g * (S(1) - y.square()));
                store_chunk(da, dxp + i, n);
                store_chunk(da, dhp + i, n);
            });
            break;
        }
        case RnnMode::Gru:
            for_chunks<S>(H, [&](std::int64_t i, std::int64_t n) {
                const Chunk<S> g = load_chunk(dh + i, n), r = load_chunk(gates + i, n);
                const Chunk<S> z = load_chunk(gates + H + i, n), nn = load_chunk(gates + 2 * H + i, n);
                const Chunk<S> dn = g * (S(1) - z) * (S(1) - nn.square());
                const Chunk<S> dr = dn * load_chunk(hn + i, n) * r * (S(1) - r);
                const Chunk<S> dz = g * (load_chunk(h + i, n) - nn) * z * (S(1) - z);
                store_chunk(dr, dxp + i, n);
                store_chunk(dz, dxp + H + i, n);
                store_chunk(dn, dxp + 2 * H + i, n);
                store_chunk(dr, dhp + i, n);
                store_chunk(dz, dhp + H + i, n);
                store_chunk<S>(dn * r, dhp + 2 * H + i, n);
                store_chunk<S>(g * z, dh_direct + i, n);
            });
            break;
        case RnnMode::Lstm:
            for_chunks<S>(H, [&](std::int64_t i, std::int64_t n) {
                const Chunk<S> g = load_chunk(dh + i, n);
                const Chunk<S> ig = load_chunk(gates + i, n), fg = load_chunk(gates + H + i, n);
                const Chunk<S> gg = load_chunk(gates + 2 * H + i, n), og = load_chunk(gates + 3 * H + i, n);
                const Chunk<S> tc = load_chunk(c_next + i, n).tanh();
                const Chunk<S> dcs = load_chunk(dc + i, n) + g * og * (S(1) - tc.square());
                const Chunk<S> di = dcs * gg * ig * (S(1) - ig);
                const Chunk<S> df = dcs * load_chunk(c + i, n) * fg * (S(1) - fg);
                const Chunk<S> dg = dcs * ig * (S(1) - gg.square());
                const Chunk<S> dout = g * tc * og * (S(1) - og);
                for (S* to : {dxp, dhp}) {
                    store_chunk(di, to + i, n);
                    store_chunk(df, to + H + i, n);
                    store_chunk(dg, to + 2 * H + i, n);
                    store_chunk(dout, to + 3 * H + i, n);
                }
                store_chunk<S>(dcs * fg, dc + i, n);
            });
            break;
    }
}

}  // namespace attograd::detail

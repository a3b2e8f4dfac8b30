// Internal: one recurrent cell step for one sequence, forward and backward (the fused layers of
// core/rnn_kernel.cpp and the fused GRU cell of core/ops_rnn_cell.cpp).
#pragma once

#include "core/ops_rnn.hpp"
#include "core/detail/rnn_kernel.hpp"

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
template <class S>
inline void cell_forward(const RnnDims& d, const S* xp, const S* hp, const S* h, const S* c, S* h_next,
                         S* c_next, S* gates, S* hn) {
    const std::int64_t H = d.h;
    switch (d.mode) {
        case RnnMode::RnnTanh:
            Seg<S>(h_next, H) = (ConstSeg<S>(xp, H) + ConstSeg<S>(hp, H)).tanh();
            break;
        case RnnMode::RnnRelu:
            Seg<S>(h_next, H) = (ConstSeg<S>(xp, H) + ConstSeg<S>(hp, H)).max(S(0));
            break;
        case RnnMode::Gru: {
            Seg<S> rz(gates, 2 * H), n(gates + 2 * H, H);
            rz = (ConstSeg<S>(xp, 2 * H) + ConstSeg<S>(hp, 2 * H)).logistic();
            Seg<S>(hn, H) = ConstSeg<S>(hp + 2 * H, H);
            n = (ConstSeg<S>(xp + 2 * H, H) + rz.head(H) * ConstSeg<S>(hp + 2 * H, H)).tanh();
            const auto z = rz.tail(H);
            Seg<S>(h_next, H) = (S(1) - z) * n + z * ConstSeg<S>(h, H);
            break;
        }
        case RnnMode::Lstm: {
            Seg<S> all(gates, 4 * H);
            all = ConstSeg<S>(xp, 4 * H) + ConstSeg<S>(hp, 4 * H);
            all.head(2 * H) = all.head(2 * H).logistic();
            all.segment(2 * H, H) = all.segment(2 * H, H).tanh();
            all.tail(H) = all.tail(H).logistic();
            Seg<S> cn(c_next, H);
            cn = all.segment(H, H) * ConstSeg<S>(c, H) + all.head(H) * all.segment(2 * H, H);
            Seg<S>(h_next, H) = all.tail(H) * cn.tanh();
            break;
        }
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
template <class S>
inline void cell_backward(const RnnDims& d, const S* dh, const S* h, const S* h_next, const S* c,
                          const S* c_next, const S* gates, const S* hn, S* dxp, S* dhp, S* dh_direct, S* dc) {
    const std::int64_t H = d.h;
    const ConstSeg<S> g(dh, H);
    switch (d.mode) {
        case RnnMode::RnnTanh:
            Seg<S>(dxp, H) = g * (S(1) - ConstSeg<S>(h_next, H).square());
            Seg<S>(dhp, H) = Seg<S>(dxp, H);
            break;
        case RnnMode::RnnRelu:
            Seg<S>(dxp, H) = (ConstSeg<S>(h_next, H) > S(0)).select(g, S(0));
            Seg<S>(dhp, H) = Seg<S>(dxp, H);
            break;
        case RnnMode::Gru: {
            const ConstSeg<S> r(gates, H), z(gates + H, H), n(gates + 2 * H, H);
            Seg<S> dr(dxp, H), dz(dxp + H, H), dn(dxp + 2 * H, H);
            dn = g * (S(1) - z) * (S(1) - n.square());
            dr = dn * ConstSeg<S>(hn, H) * r * (S(1) - r);
            dz = g * (ConstSeg<S>(h, H) - n) * z * (S(1) - z);
            Seg<S>(dhp, 2 * H) = Seg<S>(dxp, 2 * H);
            Seg<S>(dhp + 2 * H, H) = dn * r;
            Seg<S>(dh_direct, H) = g * z;
            break;
        }
        case RnnMode::Lstm: {
            const ConstSeg<S> i(gates, H), f(gates + H, H), gg(gates + 2 * H, H), o(gates + 3 * H, H);
            const auto tc = ConstSeg<S>(c_next, H).tanh();
            Seg<S> dcs(dc, H);
            dcs += g * o * (S(1) - tc.square());
            Seg<S>(dxp, H) = dcs * gg * i * (S(1) - i);
            Seg<S>(dxp + H, H) = dcs * ConstSeg<S>(c, H) * f * (S(1) - f);
            Seg<S>(dxp + 2 * H, H) = dcs * i * (S(1) - gg.square());
            Seg<S>(dxp + 3 * H, H) = g * tc * o * (S(1) - o);
            dcs *= f;
            Seg<S>(dhp, 4 * H) = Seg<S>(dxp, 4 * H);
            break;
        }
    }
}

}  // namespace attograd::detail

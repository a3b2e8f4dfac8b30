// Internal: one direction of a recurrent layer over a whole sequence, forward and backward
// through time (BPTT), for core/ops_rnn.cpp.
#pragma once

#include "core/ops_rnn.hpp"

#include <cstdint>

namespace attograd::detail {

/// Sizes of one layer: batch B, steps T, input width I, hidden width H, state width P (H, or the
/// LSTM projection), gate count G.
struct RnnDims {
    RnnMode mode;
    std::int64_t b, t, i, h, p, g;
    std::int64_t gh() const { return g * h; }
};

/// Where one direction reads its steps: sequence b runs lengths[b] steps (all T when lengths is
/// null); step s of a reversed direction is time lengths[b] - 1 - s.
struct RnnSchedule {
    const std::int64_t* lengths = nullptr;
    bool reverse = false;
    std::int64_t length(std::int64_t b, std::int64_t t) const { return lengths != nullptr ? lengths[b] : t; }
};

/// What one direction's forward keeps for its backward (step order s = 0 .. T-1).
struct RnnSaved {
    Tensor hs;     ///< [T+1, B, P]: h before step s (hs[0] = h0), frozen past a sequence's length
    Tensor cs;     ///< [T+1, B, H]: LSTM c likewise
    Tensor gates;  ///< [T, B, G*H]: activated gates (GRU r, z, n; LSTM i, f, g, o); RNN: none
    Tensor hn;     ///< [T, B, H]: GRU's W_hn h + b_hn
    Tensor hfull;  ///< [T, B, H]: LSTM o * tanh(c) before the projection W_hr
};

/// Where a direction writes its results: output rows of `out_stride` elements, this
/// direction's P columns from `out_offset`; h_n [B, P], c_n [B, H] (LSTM).
template <class S>
struct RnnSink {
    S* out;
    std::int64_t out_stride, out_offset;
    S* h_n;
    S* c_n;
};

/// Runs the recurrence of one direction. xp [B*T, G*H] holds W_ih x + b_ih of every step (time
/// order); h0 [B, P] and c0 [B, H] may be null (zeros). Writes the output rows of the active
/// steps (the caller zeroes the rest), h_n and c_n.
template <class S>
RnnSaved rnn_direction_forward(const RnnDims& d, const RnnSchedule& schedule, const S* xp,
                               const RnnDirectionWeights& w, const S* h0, const S* c0,
                               const RnnSink<S>& sink);

/// Gradients of one direction's pre-activations and initial state.
struct RnnDirectionGrads {
    Tensor dxp;     ///< [B*T, G*H]: d(W_ih x + b_ih), time order, 0 at padding
    Tensor dhp;     ///< [T+1, B, G*H]: d(W_hh h + b_hh), step order (slice T is 0, so that
                    ///< dW_hh is one product with saved.hs)
    Tensor dhproj;  ///< [T, B, P]: d(W_hr hfull) (LSTM projection only)
    Tensor dh0;     ///< [B, P]
    Tensor dc0;     ///< [B, H] (LSTM)
};

/// Backward through time of one direction: dy rows of `out_stride` elements (this direction's
/// columns from `out_offset`), dh_n [B, P], dc_n [B, H] (LSTM).
template <class S>
RnnDirectionGrads rnn_direction_backward(const RnnDims& d, const RnnSchedule& schedule, const RnnSaved& saved,
                                         const RnnDirectionWeights& w, const S* dy, std::int64_t out_stride,
                                         std::int64_t out_offset, const S* dh_n, const S* dc_n);

}  // namespace attograd::detail

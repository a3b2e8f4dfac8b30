// Internal: one direction of a recurrent layer over a whole sequence, forward and backward
// through time (BPTT), for core/ops_rnn.cpp.
#include "core/detail/rnn_kernel.hpp"

#include "core/detail/rnn_cell_kernel.hpp"

#include "core/detail/gemm.hpp"
#include "core/detail/parallel.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <utility>

namespace attograd::detail {
namespace {

// The per-step products read a weight as B [k, n] with its rows kPad elements longer than n:
// rows a power of two apart (1024 floats, 4 KB) fall into the same cache sets, and such a product
// ran ~20 % slower (AMD EPYC, [8, 256] x [256, 1024]).
constexpr std::int64_t kPad = 16;

// w [r, c] as B [c, r] (transposed) or B [r, c] (plain), rows r + kPad or c + kPad apart.
template <class S>
Tensor padded(const Tensor& w, bool transposed) {
    const std::int64_t r = w.size(0), c = w.size(1);
    if (transposed) {
        Tensor t = zeros({c, r + kPad}, {.dtype = w.dtype()});
        transpose<S>(r, c, w.data<S>(), c, t.data<S>(), r + kPad);
        return t;
    }
    Tensor t = zeros({r, c + kPad}, {.dtype = w.dtype()});
    for (std::int64_t i = 0; i < r; ++i)
        std::copy(w.data<S>() + i * c, w.data<S>() + (i + 1) * c, t.data<S>() + i * (c + kPad));
    return t;
}

// Sequence b's time index at step s, or -1 once it has ended.
inline std::int64_t time_at(const RnnDims& d, const RnnSchedule& sc, std::int64_t b, std::int64_t s) {
    const std::int64_t len = sc.length(b, d.t);
    if (s >= len) return -1;
    return sc.reverse ? len - 1 - s : s;
}

// Sequences do not meet in the recurrence, so each direction runs in blocks of kRowBlock
// sequences, each block through all its steps, the blocks on any threads. The blocks depend on
// the batch size alone: a product split into other rows may round differently in the last bits.
constexpr std::int64_t kRowBlock = 16;

// One per-step product shape C [rows, n] = A [rows, k] B [k, n] (B's rows ldb apart) for a whole
// block and for the last, shorter one.
template <class S>
struct BlockProduct {
    GemmKernel<S> full, tail;
    BlockProduct(std::int64_t batch, std::int64_t n, std::int64_t k, std::int64_t ldb)
        : full(std::min(batch, kRowBlock), n, k, k, false, ldb, false, n, false),
          tail(std::max<std::int64_t>(batch % kRowBlock, 1), n, k, k, false, ldb, false, n, false) {}
    void operator()(std::int64_t rows, const S* a, const S* b, S* c) const {
        (rows == kRowBlock ? full : tail)(a, b, c);
    }
};

// Calls fn(first, last) for each block of sequences, in parallel when the products are worth it.
template <class Fn>
void for_row_blocks(const RnnDims& d, Fn&& fn) {
    const std::int64_t blocks = (d.b + kRowBlock - 1) / kRowBlock;
    const int threads = threads_for(d.t * d.b * d.gh() * (d.p + d.i), kMinParallelGemmWork);
    parallel_for(blocks, threads,
                 [&](std::int64_t k) { fn(k * kRowBlock, std::min(d.b, (k + 1) * kRowBlock)); });
}

}  // namespace

template <class S>
RnnSaved rnn_direction_forward(const RnnDims& d, const RnnSchedule& sc, const S* xp,
                               const RnnDirectionWeights& w, const S* h0, const S* c0,
                               const RnnSink<S>& sink) {
    const std::int64_t B = d.b, T = d.t, H = d.h, P = d.p, GH = d.gh();
    const DType dtype = dtype_of<S>();
    const bool lstm = d.mode == RnnMode::Lstm, gru = d.mode == RnnMode::Gru, proj = w.w_hr.defined();
    RnnSaved saved;
    saved.hs = empty({T + 1, B, P}, {.dtype = dtype});
    if (lstm) saved.cs = empty({T + 1, B, H}, {.dtype = dtype});
    if (lstm || gru) saved.gates = empty({T, B, GH}, {.dtype = dtype});
    if (gru) saved.hn = empty({T, B, H}, {.dtype = dtype});
    if (proj) saved.hfull = empty({T, B, H}, {.dtype = dtype});
    S* hs = saved.hs.data<S>();
    S* cs = lstm ? saved.cs.data<S>() : nullptr;
    S* gates_all = saved.gates.defined() ? saved.gates.data<S>() : nullptr;
    S* hn_all = gru ? saved.hn.data<S>() : nullptr;
    S* hfull_all = proj ? saved.hfull.data<S>() : nullptr;
    if (h0 != nullptr)
        std::copy(h0, h0 + B * P, hs);
    else
        std::fill(hs, hs + B * P, S(0));
    if (lstm) {
        if (c0 != nullptr)
            std::copy(c0, c0 + B * H, cs);
        else
            std::fill(cs, cs + B * H, S(0));
    }

    // hp [B, G*H] = h W_hh^T + b_hh: one product per step on a transposed copy of W_hh.
    const Tensor w_hh_t = padded<S>(w.w_hh, true);
    const BlockProduct<S> recurrent(B, GH, P, GH + kPad);
    const Tensor w_hr_t = proj ? padded<S>(w.w_hr, true) : Tensor();
    const BlockProduct<S> projection(B, P, H, P + kPad);
    const S* b_hh = w.b_hh.defined() ? w.b_hh.data<S>() : nullptr;
    const S* w_hh_tp = w_hh_t.data<S>();
    const S* w_hr_tp = proj ? w_hr_t.data<S>() : nullptr;
    std::vector<S> hp_all(static_cast<std::size_t>(B * GH));
    for_row_blocks(d, [&](std::int64_t b0, std::int64_t b1) {
        S* hp = hp_all.data();
        for (std::int64_t s = 0; s < T; ++s) {
            const S* h = hs + s * B * P;
            S* h_next = hs + (s + 1) * B * P;
            recurrent(b1 - b0, h + b0 * P, w_hh_tp, hp + b0 * GH);
            S* gates = gates_all != nullptr ? gates_all + s * B * GH : nullptr;
            S* hn = gru ? hn_all + s * B * H : nullptr;
            S* hfull = proj ? hfull_all + s * B * H : nullptr;
            for (std::int64_t b = b0; b < b1; ++b) {
                S* hp_b = hp + b * GH;
                if (b_hh != nullptr) Seg<S>(hp_b, GH) += ConstSeg<S>(b_hh, GH);
                const std::int64_t t = time_at(d, sc, b, s);
                S* c_next = lstm ? cs + ((s + 1) * B + b) * H : nullptr;
                if (t < 0) {  // ended: the state stays as it was
                    std::copy(h + b * P, h + (b + 1) * P, h_next + b * P);
                    if (lstm) std::copy(cs + (s * B + b) * H, cs + (s * B + b + 1) * H, c_next);
                    if (proj) std::fill(hfull + b * H, hfull + (b + 1) * H, S(0));
                    continue;
                }
                cell_forward(d, xp + (b * T + t) * GH, hp_b, h + b * P, lstm ? cs + (s * B + b) * H : nullptr,
                             proj ? hfull + b * H : h_next + b * P, c_next, gates ? gates + b * GH : nullptr,
                             hn ? hn + b * H : nullptr);
            }
            if (proj) {  // h' = W_hr (o tanh c') for the running sequences
                projection(b1 - b0, hfull + b0 * H, w_hr_tp, h_next + b0 * P);
                for (std::int64_t b = b0; b < b1; ++b)
                    if (time_at(d, sc, b, s) < 0) std::copy(h + b * P, h + (b + 1) * P, h_next + b * P);
            }
            for (std::int64_t b = b0; b < b1; ++b) {
                const std::int64_t t = time_at(d, sc, b, s);
                if (t >= 0)
                    std::copy(h_next + b * P, h_next + (b + 1) * P,
                              sink.out + (b * T + t) * sink.out_stride + sink.out_offset);
            }
        }
    });
    std::copy(hs + T * B * P, hs + (T + 1) * B * P, sink.h_n);
    if (lstm) std::copy(cs + T * B * H, cs + (T + 1) * B * H, sink.c_n);
    return saved;
}

template <class S>
RnnDirectionGrads rnn_direction_backward(const RnnDims& d, const RnnSchedule& sc, const RnnSaved& saved,
                                         const RnnDirectionWeights& w, const S* dy, std::int64_t out_stride,
                                         std::int64_t out_offset, const S* dh_n, const S* dc_n) {
    const std::int64_t B = d.b, T = d.t, H = d.h, P = d.p, GH = d.gh();
    const DType dtype = dtype_of<S>();
    const bool lstm = d.mode == RnnMode::Lstm, proj = w.w_hr.defined();
    RnnDirectionGrads out;
    // dxp is written at every step of every sequence; padding steps must read 0.
    out.dxp =
        sc.lengths != nullptr ? zeros({B * T, GH}, {.dtype = dtype}) : empty({B * T, GH}, {.dtype = dtype});
    out.dhp = empty({T + 1, B, GH}, {.dtype = dtype});
    if (proj) out.dhproj = empty({T, B, P}, {.dtype = dtype});
    out.dh0 = empty({B, P}, {.dtype = dtype});
    S* dxp = out.dxp.data<S>();
    S* dhp = out.dhp.data<S>();
    S* dhproj = proj ? out.dhproj.data<S>() : nullptr;
    std::fill(dhp + T * B * GH, dhp + (T + 1) * B * GH, S(0));
    S* dh = out.dh0.data<S>();  // dL/dh before the current step, carried back to h0
    std::copy(dh_n, dh_n + B * P, dh);
    S* dc = nullptr;
    if (lstm) {
        out.dc0 = empty({B, H}, {.dtype = dtype});
        dc = out.dc0.data<S>();
        std::copy(dc_n, dc_n + B * H, dc);
    }
    const S* hs = saved.hs.data<S>();
    const S* cs = lstm ? saved.cs.data<S>() : nullptr;
    const S* gates = saved.gates.defined() ? saved.gates.data<S>() : nullptr;
    const S* hn = saved.hn.defined() ? saved.hn.data<S>() : nullptr;
    const Tensor w_hh_padded = padded<S>(w.w_hh, false);
    const Tensor w_hr_padded = proj ? padded<S>(w.w_hr, false) : Tensor();
    const S* w_hh = w_hh_padded.data<S>();
    const S* w_hr = proj ? w_hr_padded.data<S>() : nullptr;
    // dh_prev [B, P] = dhp W_hh; with a projection, dhfull [B, H] = dh W_hr.
    const BlockProduct<S> recurrent(B, P, GH, P + kPad);
    const BlockProduct<S> projection(B, H, P, H + kPad);
    std::vector<S> dh_prev(static_cast<std::size_t>(B * P)), direct(static_cast<std::size_t>(B * H));
    std::vector<S> dhfull(proj ? static_cast<std::size_t>(B * H) : 0);
    for_row_blocks(d, [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t s = T - 1; s >= 0; --s) {
            for (std::int64_t b = b0; b < b1; ++b) {
                const std::int64_t t = time_at(d, sc, b, s);
                if (t >= 0)
                    Seg<S>(dh + b * P, P) += ConstSeg<S>(dy + (b * T + t) * out_stride + out_offset, P);
            }
            const S* dcell = dh;
            if (proj) {
                S* dproj = dhproj + s * B * P;
                for (std::int64_t b = b0; b < b1; ++b) {
                    if (time_at(d, sc, b, s) >= 0)
                        std::copy(dh + b * P, dh + (b + 1) * P, dproj + b * P);
                    else
                        std::fill(dproj + b * P, dproj + (b + 1) * P, S(0));
                }
                projection(b1 - b0, dh + b0 * P, w_hr, dhfull.data() + b0 * H);
                dcell = dhfull.data();
            }
            S* dhp_s = dhp + s * B * GH;
            for (std::int64_t b = b0; b < b1; ++b) {
                const std::int64_t t = time_at(d, sc, b, s);
                if (t < 0) {
                    std::fill(dhp_s + b * GH, dhp_s + (b + 1) * GH, S(0));
                    continue;
                }
                const std::int64_t row = s * B + b;
                cell_backward(d, dcell + b * H, hs + row * P, hs + (row + B) * P,
                              lstm ? cs + row * H : nullptr, lstm ? cs + (row + B) * H : nullptr,
                              gates ? gates + row * GH : nullptr, hn ? hn + row * H : nullptr,
                              dxp + (b * T + t) * GH, dhp_s + b * GH, direct.data() + b * H,
                              lstm ? dc + b * H : nullptr);
            }
            recurrent(b1 - b0, dhp_s + b0 * GH, w_hh, dh_prev.data() + b0 * P);
            for (std::int64_t b = b0; b < b1; ++b) {
                S* row = dh_prev.data() + b * P;
                if (time_at(d, sc, b, s) < 0)
                    std::copy(dh + b * P, dh + (b + 1) * P, row);  // ended: dh passes unchanged
                else if (d.mode == RnnMode::Gru)
                    Seg<S>(row, P) += ConstSeg<S>(direct.data() + b * H, P);
            }
            std::copy(dh_prev.data() + b0 * P, dh_prev.data() + b1 * P, dh + b0 * P);
        }
    });
    return out;
}

template RnnSaved rnn_direction_forward<float>(const RnnDims&, const RnnSchedule&, const float*,
                                               const RnnDirectionWeights&, const float*, const float*,
                                               const RnnSink<float>&);
template RnnSaved rnn_direction_forward<double>(const RnnDims&, const RnnSchedule&, const double*,
                                                const RnnDirectionWeights&, const double*, const double*,
                                                const RnnSink<double>&);
template RnnDirectionGrads rnn_direction_backward<float>(const RnnDims&, const RnnSchedule&, const RnnSaved&,
                                                         const RnnDirectionWeights&, const float*,
                                                         std::int64_t, std::int64_t, const float*,
                                                         const float*);
template RnnDirectionGrads rnn_direction_backward<double>(const RnnDims&, const RnnSchedule&, const RnnSaved&,
                                                          const RnnDirectionWeights&, const double*,
                                                          std::int64_t, std::int64_t, const double*,
                                                          const double*);

}  // namespace attograd::detail

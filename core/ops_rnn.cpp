// Fused recurrent layers over whole sequences (Elman RNN, GRU, LSTM): one tape entry per layer,
// backpropagation through time written by hand.
#include "core/ops_rnn.hpp"

#include "core/autograd.hpp"
#include "core/detail/matmul_blocks.hpp"
#include "core/detail/rnn_kernel.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_shape.hpp"

#include <Eigen/Core>

#include <algorithm>

namespace attograd {
namespace {

constexpr const char* kOp = "rnn_layer";

void check_weight(const Tensor& t, const Shape& expected, const char* name, std::size_t dir, DType dtype) {
    AG_CHECK(t.shape() == expected, ShapeError, "{}: {} of direction {} must be {}, got {}", kOp, name, dir,
             expected, t.shape());
    AG_CHECK(t.dtype() == dtype, DTypeError, "{}: {} of direction {} is {} but the input is {}", kOp, name,
             dir, t.dtype(), dtype);
}

void check_state(const Tensor& t, const Shape& expected, const char* name, DType dtype) {
    if (!t.defined()) return;
    AG_CHECK(t.shape() == expected, ShapeError, "{}: {} must be {} ([directions, batch, width]), got {}", kOp,
             name, expected, t.shape());
    AG_CHECK(t.dtype() == dtype, DTypeError, "{}: {} is {} but the input is {}", kOp, name, t.dtype(), dtype);
}

// Checks every argument; returns the layer's sizes.
detail::RnnDims check_layer(RnnMode mode, const Tensor& input,
                            const std::vector<RnnDirectionWeights>& directions, const Tensor& h0,
                            const Tensor& c0, const Tensor& lengths) {
    AG_CHECK(input.defined(), ValueError, "{}: input is undefined", kOp);
    AG_CHECK(input.dim() == 3, ShapeError, "{}: input must be [B, T, I], got {}", kOp, input.shape());
    AG_CHECK(input.size(0) > 0 && input.size(1) > 0, ShapeError, "{}: input {} has no sequences or no steps",
             kOp, input.shape());
    const DType dtype = input.dtype();
    dispatch_floating(dtype, kOp, [](auto) {});
    AG_CHECK(directions.size() == 1 || directions.size() == 2, ShapeError,
             "{}: expected 1 or 2 directions, got {}", kOp, directions.size());
    const std::int64_t g = rnn_gate_count(mode);
    const Tensor& w_hh0 = directions[0].w_hh;
    AG_CHECK(w_hh0.defined() && w_hh0.dim() == 2 && w_hh0.size(0) % g == 0 && w_hh0.size(0) > 0, ShapeError,
             "{}: w_hh must be [G*H, P] with G = {}, got {}", kOp, g,
             w_hh0.defined() ? fmt::format("{}", w_hh0.shape()) : "undefined");
    const std::int64_t h = w_hh0.size(0) / g;
    const bool proj = directions[0].w_hr.defined();
    const std::int64_t p = proj ? directions[0].w_hr.size(0) : h;
    AG_CHECK(!proj || mode == RnnMode::Lstm, ValueError, "{}: w_hr (a projection) is for LSTM layers only",
             kOp);
    const detail::RnnDims d{mode, input.size(0), input.size(1), input.size(2), h, p, g};
    for (std::size_t k = 0; k < directions.size(); ++k) {
        const RnnDirectionWeights& w = directions[k];
        AG_CHECK(w.w_ih.defined() && w.w_hh.defined(), ValueError,
                 "{}: w_ih or w_hh of direction {} is undefined", kOp, k);
        check_weight(w.w_ih, {g * h, d.i}, "w_ih", k, dtype);
        check_weight(w.w_hh, {g * h, p}, "w_hh", k, dtype);
        AG_CHECK(w.b_ih.defined() == w.b_hh.defined() && w.b_ih.defined() == directions[0].b_ih.defined(),
                 ValueError, "{}: b_ih and b_hh must both be given or both be undefined, in every direction",
                 kOp);
        if (w.b_ih.defined()) {
            check_weight(w.b_ih, {g * h}, "b_ih", k, dtype);
            check_weight(w.b_hh, {g * h}, "b_hh", k, dtype);
        }
        AG_CHECK(w.w_hr.defined() == proj, ValueError, "{}: w_hr must be given in every direction or in none",
                 kOp);
        if (proj) {
            check_weight(w.w_hr, {p, h}, "w_hr", k, dtype);
            AG_CHECK(p < h, ShapeError, "{}: w_hr {} must project H = {} to fewer columns", kOp,
                     w.w_hr.shape(), h);
        }
    }
    const auto D = static_cast<std::int64_t>(directions.size());
    check_state(h0, {D, d.b, p}, "h0", dtype);
    AG_CHECK(!c0.defined() || mode == RnnMode::Lstm, ValueError, "{}: c0 is for LSTM layers only", kOp);
    check_state(c0, {D, d.b, h}, "c0", dtype);
    if (lengths.defined()) {
        AG_CHECK(lengths.dtype() == DType::Int64, DTypeError, "{}: lengths must be int64, got {}", kOp,
                 lengths.dtype());
        AG_CHECK(lengths.shape() == Shape{d.b}, ShapeError,
                 "{}: lengths must be [{}] (one per sequence), got {}", kOp, d.b, lengths.shape());
        const std::int64_t* len = lengths.data<std::int64_t>();
        for (std::int64_t b = 0; b < d.b; ++b)
            AG_CHECK(
                len[b] >= 1 && len[b] <= d.t, ValueError,
                "{}: lengths[{}] = {} is outside [1, {}] (input {}; zero-length sequences are not allowed)",
                kOp, b, len[b], d.t, input.shape());
    }
    return d;
}

// The column sums of m [rows, cols] (a bias gradient): whole rows added in order (Eigen's
// colwise sum of a row-major map walks down each column alone).
Tensor column_sum(const Tensor& m) {
    return dispatch_floating(m.dtype(), kOp, [&]<class S>(S) {
        using RowVector = Eigen::Matrix<S, 1, Eigen::Dynamic>;
        const std::int64_t cols = m.shape().back(), rows = m.numel() / cols;
        Tensor out = zeros({cols}, {.dtype = m.dtype()});
        Eigen::Map<RowVector> total(out.data<S>(), cols);
        for (std::int64_t r = 0; r < rows; ++r)
            total += Eigen::Map<const RowVector>(m.data<S>() + r * cols, cols);
        return out;
    });
}

Tensor rows_of(const Tensor& t) { return reshape(t, {t.numel() / t.shape().back(), t.shape().back()}); }

// The recorded inputs: input, h0, c0, then w_ih, w_hh, b_ih, b_hh, w_hr of each direction.
constexpr std::size_t kFirstWeight = 3, kWeightsPerDirection = 5;

std::vector<Tensor> recorded_inputs(const Tensor& input, const std::vector<RnnDirectionWeights>& directions,
                                    const Tensor& h0, const Tensor& c0) {
    std::vector<Tensor> inputs{input, h0, c0};
    for (const RnnDirectionWeights& w : directions)
        inputs.insert(inputs.end(), {w.w_ih, w.w_hh, w.b_ih, w.b_hh, w.w_hr});
    return inputs;
}

// Where the results sit in one buffer (the tape entry has one output): output [B, T, D*P], then
// h_n [D, B, P], then c_n [D, B, H].
struct Packing {
    std::int64_t out, h_n, c_n;
    explicit Packing(const detail::RnnDims& d, std::int64_t D)
        : out(d.b * d.t * D * d.p), h_n(D * d.b * d.p), c_n(d.mode == RnnMode::Lstm ? D * d.b * d.h : 0) {}
    std::int64_t total() const { return out + h_n + c_n; }
};

struct LayerState {
    detail::RnnDims d;
    Tensor input2, lengths;  // input as [B*T, I]
    std::vector<RnnDirectionWeights> directions;
    std::vector<detail::RnnSaved> saved;
    detail::RnnSchedule schedule(std::size_t k) const {
        return {lengths.defined() ? lengths.data<std::int64_t>() : nullptr, k == 1};
    }
};

// Adds the gradients of every input from the packed results' gradient (see Packing).
void rnn_layer_backward(const LayerState& st, const Tensor& dpacked, autograd::Gradients& g) {
    const detail::RnnDims& d = st.d;
    const auto D = static_cast<std::int64_t>(st.directions.size());
    const Packing pack(d, D);
    std::vector<Tensor> dh0, dc0;
    Tensor dx;
    for (std::size_t k = 0; k < st.directions.size(); ++k) {
        const RnnDirectionWeights& w = st.directions[k];
        const auto grads = dispatch_floating(dpacked.dtype(), kOp, [&]<class S>(S) {
            const S* base = dpacked.data<S>();
            const auto kk = static_cast<std::int64_t>(k);
            return detail::rnn_direction_backward<S>(
                d, st.schedule(k), st.saved[k], w, base, D * d.p, kk * d.p, base + pack.out + kk * d.b * d.p,
                pack.c_n > 0 ? base + pack.out + pack.h_n + kk * d.b * d.h : nullptr);
        });
        dh0.push_back(reshape(grads.dh0, {1, d.b, d.p}));
        if (grads.dc0.defined()) dc0.push_back(reshape(grads.dc0, {1, d.b, d.h}));
        const std::size_t first = kFirstWeight + k * kWeightsPerDirection;
        // dx = dxp W_ih, dW_ih = dxp^T x, dW_hh = dhp^T [h0; h_1 ..], dW_hr = dhproj^T hfull
        if (g.needs(0)) {
            const Tensor part = detail::matmul_kernel(grads.dxp, w.w_ih, false, false);
            dx = dx.defined() ? add(dx, part) : part;
        }
        if (g.needs(first)) g.add(first, detail::matmul_kernel(grads.dxp, st.input2, true, false));
        if (g.needs(first + 1))
            g.add(first + 1, detail::matmul_kernel(rows_of(grads.dhp), rows_of(st.saved[k].hs), true, false));
        if (g.needs(first + 2)) g.add(first + 2, column_sum(grads.dxp));
        if (g.needs(first + 3)) g.add(first + 3, column_sum(grads.dhp));
        if (g.needs(first + 4))
            g.add(first + 4,
                  detail::matmul_kernel(rows_of(grads.dhproj), rows_of(st.saved[k].hfull), true, false));
    }
    if (dx.defined()) g.add(0, reshape(dx, {d.b, d.t, d.i}));
    if (g.needs(1)) g.add(1, D == 1 ? dh0[0] : concat(dh0, 0));
    if (g.needs(2) && !dc0.empty()) g.add(2, D == 1 ? dc0[0] : concat(dc0, 0));
}

}  // namespace

std::int64_t rnn_gate_count(RnnMode mode) {
    switch (mode) {
        case RnnMode::Gru:
            return 3;
        case RnnMode::Lstm:
            return 4;
        default:
            return 1;
    }
}

RnnLayerResult rnn_layer(RnnMode mode, const Tensor& input,
                         const std::vector<RnnDirectionWeights>& directions, const Tensor& h0,
                         const Tensor& c0, const Tensor& lengths) {
    const detail::RnnDims d = check_layer(mode, input, directions, h0, c0, lengths);
    const auto D = static_cast<std::int64_t>(directions.size());
    const DType dtype = input.dtype();
    std::vector<Tensor> inputs = recorded_inputs(input, directions, h0, c0);
    const bool record = autograd::needs_record(inputs);
    LayerState st{
        d, reshape(input.detach(), {d.b * d.t, d.i}), lengths.defined() ? clone(lengths) : Tensor(), {}, {}};
    for (const RnnDirectionWeights& w : directions)
        st.directions.push_back(
            {w.w_ih.detach(), w.w_hh.detach(), w.b_ih.defined() ? w.b_ih.detach() : Tensor(),
             w.b_hh.defined() ? w.b_hh.detach() : Tensor(), w.w_hr.defined() ? w.w_hr.detach() : Tensor()});
    const Packing pack(d, D);
    // Every step of every sequence is written unless lengths leave padding, which must read 0.
    Tensor packed =
        lengths.defined() ? zeros({pack.total()}, {.dtype = dtype}) : empty({pack.total()}, {.dtype = dtype});
    dispatch_floating(dtype, kOp, [&]<class S>(S) {
        S* base = packed.data<S>();
        for (std::size_t k = 0; k < directions.size(); ++k) {
            const RnnDirectionWeights& w = st.directions[k];
            // xp [B*T, G*H] = x W_ih^T + b_ih: every step's input projection in one GEMM
            const Tensor xp = detail::matmul_kernel(st.input2, w.w_ih, false, true, w.b_ih);
            const auto kk = static_cast<std::int64_t>(k);
            const detail::RnnSink<S> sink{
                base, D * d.p, kk * d.p, base + pack.out + kk * d.b * d.p,
                pack.c_n > 0 ? base + pack.out + pack.h_n + kk * d.b * d.h : nullptr};
            st.saved.push_back(detail::rnn_direction_forward<S>(
                d, st.schedule(k), xp.data<S>(), w, h0.defined() ? h0.data<S>() + kk * d.b * d.p : nullptr,
                c0.defined() ? c0.data<S>() + kk * d.b * d.h : nullptr, sink));
        }
    });
    if (record)
        autograd::record(kOp, inputs, packed, [st = std::move(st)](const Tensor& dy, autograd::Gradients& g) {
            rnn_layer_backward(st, dy, g);
        });
    RnnLayerResult result;
    result.output = reshape(narrow(packed, 0, 0, pack.out), {d.b, d.t, D * d.p});
    result.h_n = reshape(narrow(packed, 0, pack.out, pack.h_n), {D, d.b, d.p});
    if (mode == RnnMode::Lstm)
        result.c_n = reshape(narrow(packed, 0, pack.out + pack.h_n, pack.c_n), {D, d.b, d.h});
    return result;
}

}  // namespace attograd

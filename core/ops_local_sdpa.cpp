// Fused local attention: one pass over each query's band of keys, heads read in place.
#include "core/ops_local_sdpa.hpp"

#include "core/autograd.hpp"
#include "core/fused_attention_common.hpp"
#include "core/ops_attention.hpp"
#include "core/ops_local_attention.hpp"
#include "core/parallel.hpp"

#include <Eigen/Core>

#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

namespace attograd {
namespace {

// Everything the kernels need to know about one call, besides the data pointers.
struct LocalGeometry : detail::HeadGeometry {
    detail::KeyWindow window{};  // row n * Tq + t, n = b * heads + i
    double scale = 1.0;
    std::int64_t width() const { return window.width; }
    bool parallel() const {
        return blocks() > 1 &&
               detail::worth_parallel(blocks() * tq * width() * (d + dv), detail::kMinParallelWork);
    }
};

// Head widths the kernels are compiled for (kD > 0, unrolled into registers); kD = 0 reads the
// width at run time.
inline constexpr int kFixedWidths[] = {8, 16, 32, 64};

template <int kD>
std::int64_t width_of(std::int64_t runtime) {
    return kD > 0 ? kD : runtime;
}

template <int kD, class T>
T dot(const T* a, const T* b, std::int64_t runtime_n) {
    const std::int64_t n = width_of<kD>(runtime_n);
    T acc = 0;
#pragma omp simd reduction(+ : acc)
    for (std::int64_t c = 0; c < n; ++c) acc += a[c] * b[c];
    return acc;
}

// y += alpha x over n elements.
template <int kD, class T>
void axpy(T alpha, const T* x, T* y, std::int64_t runtime_n) {
    const std::int64_t n = width_of<kD>(runtime_n);
#pragma omp simd
    for (std::int64_t c = 0; c < n; ++c) y[c] += alpha * x[c];
}

// Per-thread scratch of at least n elements, kept across calls (no allocation per step).
template <class T>
T* row_scratch(std::int64_t n) {
    thread_local std::vector<T> buffer;
    if (buffer.size() < static_cast<std::size_t>(n)) buffer.resize(static_cast<std::size_t>(n));
    return buffer.data();
}

// Softmax of the scores ps[lo, hi) (indexed by key) in place, `top` their max; slots the mask
// m sets to -inf get exactly 0 (Eigen's vectorised exp gives a denormal for exp(-inf)).
template <class T>
void softmax_in_place(T* ps, std::int64_t lo, std::int64_t hi, T top, const T* m) {
    Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>> span(ps + lo, hi - lo);
    span = (span - top).exp();
    if (m != nullptr)
        for (std::int64_t s = lo; s < hi; ++s)
            if (m[s] == -std::numeric_limits<T>::infinity()) ps[s] = T(0);
    span *= T(1) / span.sum();
}

template <class T>
struct ForwardArgs {
    const T *q, *k, *v, *mask, *factor;
    T *out, *probs, *weights;  // weights == probs without a factor
};

// Per row: scores over the in-range slots, masked softmax (masked slots exactly 0, a fully
// masked row all 0), times the factor, then the weighted sum of values.
template <int kD, class T>
void forward_kernel(const LocalGeometry& g, const ForwardArgs<T>& a) {
    const T scale = static_cast<T>(g.scale), neg_inf = -std::numeric_limits<T>::infinity();
    const std::int64_t w = g.width();
#pragma omp parallel for schedule(static) if (g.parallel())
    for (std::int64_t n = 0; n < g.blocks(); ++n) {
        const std::int64_t b = n / g.heads, h = n % g.heads;
        const T* kb = a.k + g.k.at(b, h);
        const T* vb = a.v + g.v.at(b, h);
        detail::zero_block(a.out + g.out.at(b, h), g.tq, g.dv, g.out.row);  // the rows add into it
        for (std::int64_t t = 0; t < g.tq; ++t) {
            const std::int64_t row = n * g.tq + t, lo = g.window.lo(row), hi = g.window.hi(row);
            const std::int64_t first = g.window.first(row);
            T* p = a.probs + row * w;
            std::fill(p, p + w, T(0));
            if (a.weights != a.probs) std::fill(a.weights + row * w, a.weights + (row + 1) * w, T(0));
            if (hi <= lo) continue;
            const T* qt = a.q + g.q.at(b, h) + t * g.q.row;
            const T* m = a.mask != nullptr ? a.mask + row * w - first : nullptr;  // indexed by key s
            T* ps = p - first;                                                    // indexed by key s
            T top = neg_inf;
            bool nan = false;  // a NaN score makes the whole row NaN, as a softmax does
            for (std::int64_t s = lo; s < hi; ++s) {
                ps[s] = scale * dot<kD>(qt, kb + s * g.k.row, g.d) + (m != nullptr ? m[s] : T(0));
                top = std::max(top, ps[s]);
                nan |= std::isnan(ps[s]);
            }
            if (top == neg_inf && !nan) {  // every slot masked: zero weights, zero output
                std::fill(ps + lo, ps + hi, T(0));
                continue;
            }
            if (nan) {  // as the global kernel: NaN weights but where the score is -inf
                for (std::int64_t s = lo; s < hi; ++s)
                    ps[s] = ps[s] == neg_inf ? T(0) : std::numeric_limits<T>::quiet_NaN();
            } else {
                softmax_in_place(ps, lo, hi, top, m);
            }
            const T* ws = ps;
            if (a.factor != nullptr) {
                T* wr = a.weights + row * w - first;
                const T* f = a.factor + row * w - first;
                for (std::int64_t s = lo; s < hi; ++s) wr[s] = ps[s] * f[s];
                ws = wr;
            }
            T* o = a.out + g.out.at(b, h) + t * g.out.row;
            for (std::int64_t s = lo; s < hi; ++s) axpy<kD>(ws[s], vb + s * g.v.row, o, g.dv);
        }
    }
}

// Gradients of one call; any of dout, dweights, dq, dk, dv, dfactor may be null. Each block
// zeroes its parts of dq, dk, dv and adds into them; dfactor must be zero on entry (only the
// in-range slots are written).
template <class T>
struct BackwardArgs {
    const T *q, *k, *v, *factor, *probs, *weights, *dout, *dweights;
    T *dq, *dk, *dv, *dfactor;
};

template <int kD, class T>
void backward_kernel(const LocalGeometry& g, const BackwardArgs<T>& a) {
    const T scale = static_cast<T>(g.scale);
    const std::int64_t w = g.width();
#pragma omp parallel for schedule(static) if (g.parallel())
    for (std::int64_t n = 0; n < g.blocks(); ++n) {
        const std::int64_t b = n / g.heads, h = n % g.heads;
        T* dp = row_scratch<T>(w);
        if (a.dq != nullptr) detail::zero_block(a.dq + g.q.at(b, h), g.tq, g.d, g.q.row);
        if (a.dk != nullptr) detail::zero_block(a.dk + g.k.at(b, h), g.tk, g.d, g.k.row);
        if (a.dv != nullptr) detail::zero_block(a.dv + g.v.at(b, h), g.tk, g.dv, g.v.row);
        for (std::int64_t t = 0; t < g.tq; ++t) {
            const std::int64_t row = n * g.tq + t, lo = g.window.lo(row), hi = g.window.hi(row);
            const std::int64_t first = g.window.first(row);
            if (hi <= lo) continue;
            const T* ps = a.probs + row * w - first;
            const T* ws = a.weights + row * w - first;
            const T* dO = a.dout != nullptr ? a.dout + g.out.at(b, h) + t * g.out.row : nullptr;
            T* dps = dp - first;
            // dL/d(weights), then through the factor to dL/d(probs)
            for (std::int64_t s = lo; s < hi; ++s) {
                T grad = dO != nullptr ? dot<kD>(dO, a.v + g.v.at(b, h) + s * g.v.row, g.dv) : T(0);
                if (a.dweights != nullptr) grad += a.dweights[row * w + (s - first)];
                dps[s] = grad;
            }
            if (a.factor != nullptr) {
                const T* f = a.factor + row * w - first;
                for (std::int64_t s = lo; s < hi; ++s) {
                    if (a.dfactor != nullptr) a.dfactor[row * w + (s - first)] = dps[s] * ps[s];
                    dps[s] *= f[s];
                }
            }
            T rowsum = 0;
            for (std::int64_t s = lo; s < hi; ++s) rowsum += dps[s] * ps[s];
            const T* qt = a.q + g.q.at(b, h) + t * g.q.row;
            T* dqt = a.dq != nullptr ? a.dq + g.q.at(b, h) + t * g.q.row : nullptr;
            for (std::int64_t s = lo; s < hi; ++s) {
                const T ds = scale * ps[s] * (dps[s] - rowsum);  // scale * dL/d(score)
                if (dqt != nullptr) axpy<kD>(ds, a.k + g.k.at(b, h) + s * g.k.row, dqt, g.d);
                if (a.dk != nullptr) axpy<kD>(ds, qt, a.dk + g.k.at(b, h) + s * g.k.row, g.d);
                if (dO != nullptr && a.dv != nullptr)
                    axpy<kD>(ws[s], dO, a.dv + g.v.at(b, h) + s * g.v.row, g.dv);
            }
        }
    }
}

// Calls kernel.template operator()<kD>() with kD the head width when it is one of
// kFixedWidths (and d == dv), else with kD = 0.
template <class Kernel>
void with_head_width(const LocalGeometry& g, Kernel&& kernel) {
    if (g.d == g.dv) {
        bool done = false;
        [&]<std::size_t... i>(std::index_sequence<i...>) {
            ((!done && g.d == kFixedWidths[i] ? (kernel.template operator()<kFixedWidths[i]>(), done = true)
                                              : false),
             ...);
        }
        (std::make_index_sequence<std::size(kFixedWidths)>());
        if (done) return;
    }
    kernel.template operator()<0>();
}

// Checks a [B * h, Tq, W] band operand (mask or factor) of q's dtype.
void check_band(const Tensor& t, const LocalGeometry& g, DType dtype, const char* name, const char* op) {
    if (!t.defined()) return;
    const Shape band{g.blocks(), g.tq, g.width()};
    AG_CHECK(t.shape() == band, ShapeError, "{}: {} must be [B * h, Tq, W] = {}, got {}", op, name, band,
             t.shape());
    AG_CHECK(t.dtype() == dtype, DTypeError, "{}: {} must have the inputs' dtype {}, got {}", op, name, dtype,
             t.dtype());
}

// Validates window, mask, factor and scale, runs the forward kernel and records the tape
// entries: one for the weights (run only when they are used) and one for the output.
SdpaResult run(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, bool packed,
               LocalGeometry g, const Tensor& window_start, std::int64_t width, const Shape& out_shape,
               const LocalSdpaOptions& o) {
    detail::check_window(window_start, g.blocks(), g.tq, width, op);
    detail::check_band_width(width, g.tk, op);
    g.window = detail::KeyWindow{window_start.data<std::int64_t>(), width, g.tk};
    check_band(o.band_mask, g, q.dtype(), "band_mask", op);
    check_band(o.factor, g, q.dtype(), "factor", op);
    AG_CHECK(!o.band_mask.defined() || !o.band_mask.requires_grad(), ValueError,
             "{}: band_mask receives no gradient; detach it first", op);
    check_additive_mask(o.band_mask, "band_mask", op);
    g.scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(g.d)));
    detail::check_scale(g.scale, q.dtype(), op);

    const Tensor mask = o.band_mask, factor = o.factor;
    const Shape band{g.blocks(), g.tq, width};
    Tensor out = empty(out_shape, {.dtype = q.dtype()});  // every block writes its part
    Tensor probs = empty(band, {.dtype = q.dtype()});
    Tensor weights = factor.defined() ? empty(band, {.dtype = q.dtype()}) : probs;
    dispatch_floating(q.dtype(), op, [&]<class T>(T) {
        const ForwardArgs<T> args{.q = q.data<T>(),
                                  .k = k.data<T>(),
                                  .v = v.data<T>(),
                                  .mask = detail::data_or_null<T>(mask),
                                  .factor = detail::data_or_null<T>(factor),
                                  .out = out.data<T>(),
                                  .probs = probs.data<T>(),
                                  .weights = weights.data<T>()};
        with_head_width(g, [&]<int kD>() { forward_kernel<kD>(g, args); });
    });
    std::vector<Tensor> inputs = packed ? std::vector<Tensor>{q} : std::vector<Tensor>{q, k, v};
    const std::size_t factor_index = inputs.size();
    if (factor.defined()) inputs.push_back(factor);
    if (!autograd::needs_record(inputs)) return {out, weights};

    // The window starts are read through g.window: the entries keep them alive.
    auto backward = [packed, q, k, v, factor, window_start, factor_index](
                        const LocalGeometry& geo, const Tensor& p, const Tensor& wts, const Tensor& dout,
                        const Tensor& dweights, autograd::Gradients& grads) {
        Tensor dq, dk, dv, dfactor;  // every block writes its parts of dq, dk, dv
        if (packed) {
            if (grads.needs(0)) dq = dk = dv = empty(q.shape(), {.dtype = q.dtype()});
        } else {
            if (grads.needs(0)) dq = empty(q.shape(), {.dtype = q.dtype()});
            if (grads.needs(1)) dk = empty(k.shape(), {.dtype = k.dtype()});
            if (dout.defined() && grads.needs(2)) dv = empty(v.shape(), {.dtype = v.dtype()});
        }
        if (factor.defined() && grads.needs(factor_index))
            dfactor = zeros(factor.shape(), {.dtype = q.dtype()});
        dispatch_floating(q.dtype(), "local attention backward", [&]<class T>(T) {
            const BackwardArgs<T> args{.q = q.data<T>(),
                                       .k = k.data<T>(),
                                       .v = v.data<T>(),
                                       .factor = detail::data_or_null<T>(factor),
                                       .probs = p.data<T>(),
                                       .weights = wts.data<T>(),
                                       .dout = detail::data_or_null<T>(dout),
                                       .dweights = detail::data_or_null<T>(dweights),
                                       .dq = detail::data_or_null<T>(dq),
                                       .dk = detail::data_or_null<T>(dk),
                                       .dv = detail::data_or_null<T>(dv),
                                       .dfactor = detail::data_or_null<T>(dfactor)};
            with_head_width(geo, [&]<int kD>() { backward_kernel<kD>(geo, args); });
        });
        if (dq.defined()) grads.add(0, dq);
        if (!packed && dk.defined()) grads.add(1, dk);
        if (!packed && dv.defined()) grads.add(2, dv);
        if (dfactor.defined()) grads.add(factor_index, dfactor);
    };
    // As in the global fused op (core/ops_attention.cpp): the weights' own entry holds them
    // weakly and is recorded first. Without a factor the probabilities are the weights.
    std::weak_ptr<detail::TensorImpl> weak_weights = weights.impl();
    const Tensor separate_probs = factor.defined() ? probs : Tensor();
    autograd::record(
        "local_attention_weights", inputs, weights,
        [backward, g, weak_weights, separate_probs](const Tensor& dw, autograd::Gradients& grads) {
            const Tensor wts(weak_weights.lock());
            AG_ASSERT(wts.defined(), "attention weights released before their backward");
            backward(g, separate_probs.defined() ? separate_probs : wts, wts, Tensor(), dw, grads);
        });
    autograd::record(op, inputs, out,
                     [backward, g, probs, weights](const Tensor& dy, autograd::Gradients& grads) {
                         backward(g, probs, weights, dy, Tensor(), grads);
                     });
    return {out, weights};
}

}  // namespace

SdpaResult local_scaled_dot_product_attention_heads(const Tensor& q, const Tensor& k, const Tensor& v,
                                                    std::int64_t num_heads, const Tensor& window_start,
                                                    std::int64_t width, const LocalSdpaOptions& options) {
    constexpr const char* op = "local_scaled_dot_product_attention_heads";
    const LocalGeometry g{detail::heads_last_geometry(op, q, k, v, num_heads)};
    return run(op, q, k, v, false, g, window_start, width, {g.batch, g.tq, g.heads * g.dv}, options);
}

SdpaResult local_scaled_dot_product_attention_packed(const Tensor& qkv, std::int64_t num_heads,
                                                     const Tensor& window_start, std::int64_t width,
                                                     const LocalSdpaOptions& options) {
    constexpr const char* op = "local_scaled_dot_product_attention_packed";
    const LocalGeometry g{detail::packed_geometry(op, qkv, num_heads)};
    return run(op, qkv, qkv, qkv, true, g, window_start, width, {g.batch, g.tq, g.heads * g.dv}, options);
}

}  // namespace attograd

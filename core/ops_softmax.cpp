// Softmax and log-softmax over one axis, forward and hand-written backward.
//
// Every kernel views x as [outer, n, inner] around the axis (AxisSplit) and walks a block of
// `inner` rows at once, k = 0..n-1 outside, i = 0..inner-1 inside, so memory is read in order
// whichever axis is reduced (inner = 1 for the last axis).
#include "core/ops_softmax.hpp"

#include "core/autograd.hpp"
#include "core/softmax_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace attograd {
namespace {

template <class T>
void softmax_forward(const T* x, T* y, const AxisSplit& s) {
    std::vector<T> shift(static_cast<std::size_t>(s.inner)), scale(static_cast<std::size_t>(s.inner));
    const std::int64_t block = s.size * s.inner;
    for (std::int64_t o = 0; o < s.outer; ++o) {
        const T* xo = x + o * block;
        T* yo = y + o * block;
        detail::softmax_row_shift(xo, s, shift.data());
        std::fill(scale.begin(), scale.end(), T(0));
        for (std::int64_t k = 0; k < s.size; ++k)
            for (std::int64_t i = 0; i < s.inner; ++i) {
                const std::int64_t j = k * s.inner + i;
                yo[j] = std::exp(xo[j] - shift[i]);
                scale[i] += yo[j];
            }
        // An all -inf row sums to 0: scale 0 leaves zeros. A NaN sum stays NaN.
        for (auto& v : scale) v = v == T(0) ? T(0) : T(1) / v;
        for (std::int64_t k = 0; k < s.size; ++k)
            for (std::int64_t i = 0; i < s.inner; ++i) yo[k * s.inner + i] *= scale[i];
    }
}

// dx = y * (dy - sum(dy * y)) along the axis.
template <class T>
void softmax_backward(const T* y, const T* dy, T* dx, const AxisSplit& s) {
    std::vector<T> dot(static_cast<std::size_t>(s.inner));
    const std::int64_t block = s.size * s.inner;
    for (std::int64_t o = 0; o < s.outer; ++o) {
        const T* yo = y + o * block;
        const T* go = dy + o * block;
        T* dxo = dx + o * block;
        std::fill(dot.begin(), dot.end(), T(0));
        for (std::int64_t k = 0; k < s.size; ++k)
            for (std::int64_t i = 0; i < s.inner; ++i) dot[i] += go[k * s.inner + i] * yo[k * s.inner + i];
        for (std::int64_t k = 0; k < s.size; ++k)
            for (std::int64_t i = 0; i < s.inner; ++i) {
                const std::int64_t j = k * s.inner + i;
                dxo[j] = yo[j] * (go[j] - dot[i]);
            }
    }
}

// dx = dy - exp(y) * sum(dy) along the axis.
template <class T>
void log_softmax_backward(const T* y, const T* dy, T* dx, const AxisSplit& s) {
    std::vector<T> total(static_cast<std::size_t>(s.inner));
    const std::int64_t block = s.size * s.inner;
    for (std::int64_t o = 0; o < s.outer; ++o) {
        const T* yo = y + o * block;
        const T* go = dy + o * block;
        T* dxo = dx + o * block;
        std::fill(total.begin(), total.end(), T(0));
        for (std::int64_t k = 0; k < s.size; ++k)
            for (std::int64_t i = 0; i < s.inner; ++i) total[i] += go[k * s.inner + i];
        for (std::int64_t k = 0; k < s.size; ++k)
            for (std::int64_t i = 0; i < s.inner; ++i) {
                const std::int64_t j = k * s.inner + i;
                dxo[j] = go[j] - std::exp(yo[j]) * total[i];
            }
    }
}

// Runs `forward` into a new tensor; records `backward(y, dy, dx, split)` under `op`.
template <class Forward, class Backward>
Tensor along_axis(const Tensor& x, std::int64_t axis, const char* op, Forward forward, Backward backward) {
    AG_CHECK(x.defined(), ValueError, "{}: undefined tensor argument", op);
    const AxisSplit split = split_at_axis(x.shape(), normalize_axis(axis, x.dim(), op));
    Tensor out = empty(x.shape(), {.dtype = x.dtype()});
    dispatch_floating(x.dtype(), op, [&]<class T>(T) { forward(x.data<T>(), out.data<T>(), split); });
    if (autograd::needs_record({&x})) {
        autograd::record(op, {x}, out,
                         [y = out.detach(), split, backward, op](const Tensor& dy, autograd::Gradients& g) {
                             Tensor dx = empty(dy.shape(), {.dtype = dy.dtype()});
                             dispatch_floating(dy.dtype(), op, [&]<class T>(T) {
                                 backward(y.data<T>(), dy.data<T>(), dx.data<T>(), split);
                             });
                             g.add(0, dx);
                         });
    }
    return out;
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t axis) {
    // dx = y * (dy - sum(dy * y))
    return along_axis(
        x, axis, "softmax", [](auto* px, auto* py, const AxisSplit& s) { softmax_forward(px, py, s); },
        [](auto* py, auto* pdy, auto* pdx, const AxisSplit& s) { softmax_backward(py, pdy, pdx, s); });
}

Tensor log_softmax(const Tensor& x, std::int64_t axis) {
    // dx = dy - softmax(x) * sum(dy), softmax(x) = exp(y)
    return along_axis(
        x, axis, "log_softmax",
        [](auto* px, auto* py, const AxisSplit& s) { detail::log_softmax_rows(px, py, s); },
        [](auto* py, auto* pdy, auto* pdx, const AxisSplit& s) { log_softmax_backward(py, pdy, pdx, s); });
}

}  // namespace attograd

// Softmax and log-softmax over one axis, forward and hand-written backward.
//
// x is viewed as [outer, n, inner] around the axis (AxisSplit); each row of n elements is
// `inner` apart, contiguous for the last axis (detail::for_each_row).
#include "core/ops_softmax.hpp"

#include "core/autograd.hpp"
#include "core/detail/softmax_kernel.hpp"

#include <cmath>

namespace attograd {
namespace {

// Row kernels: one row of n elements `stride` apart (a detail::UnitStride for the last axis).

template <class T, class Stride>
void softmax_row(const T* x, T* y, std::int64_t n, Stride stride) {
    const T shift = detail::softmax_shift(x, n, stride);
    T total = T(0);
    for (std::int64_t k = 0; k < n; ++k) {
        y[k * stride] = std::exp(x[k * stride] - shift);
        total += y[k * stride];
    }
    // An all -inf row sums to 0: scale 0 leaves zeros. A NaN sum stays NaN.
    const T scale = total == T(0) ? T(0) : T(1) / total;
    for (std::int64_t k = 0; k < n; ++k) y[k * stride] *= scale;
}

// dx = y * (dy - sum(dy * y))
template <class T, class Stride>
void softmax_backward_row(const T* y, const T* dy, T* dx, std::int64_t n, Stride stride) {
    T dot = T(0);
    for (std::int64_t k = 0; k < n; ++k) dot += dy[k * stride] * y[k * stride];
    for (std::int64_t k = 0; k < n; ++k) dx[k * stride] = y[k * stride] * (dy[k * stride] - dot);
}

// dx = dy - exp(y) * sum(dy)
template <class T, class Stride>
void log_softmax_backward_row(const T* y, const T* dy, T* dx, std::int64_t n, Stride stride) {
    T total = T(0);
    for (std::int64_t k = 0; k < n; ++k) total += dy[k * stride];
    for (std::int64_t k = 0; k < n; ++k) dx[k * stride] = dy[k * stride] - std::exp(y[k * stride]) * total;
}

// Runs the row kernel `forward(x, y, n, stride)` over every row into a new tensor and records
// `backward(y, dy, dx, n, stride)` under `op`.
template <class Forward, class Backward>
Tensor along_axis(const Tensor& x, std::int64_t axis, const char* op, Forward forward, Backward backward) {
    AG_CHECK(x.defined(), ValueError, "{}: undefined tensor argument", op);
    const AxisSplit split = split_at_axis(x.shape(), normalize_axis(axis, x.dim(), op));
    Tensor out = empty(x.shape(), {.dtype = x.dtype()});
    dispatch_floating(x.dtype(), op, [&]<class T>(T) {
        const T* px = x.data<T>();
        T* py = out.data<T>();
        detail::for_each_row(split, [&](std::int64_t base, auto stride) {
            forward(px + base, py + base, split.size, stride);
        });
    });
    if (autograd::needs_record({&x})) {
        autograd::record(op, {x}, out,
                         [y = out.detach(), split, backward, op](const Tensor& dy, autograd::Gradients& g) {
                             Tensor dx = empty(dy.shape(), {.dtype = dy.dtype()});
                             dispatch_floating(dy.dtype(), op, [&]<class T>(T) {
                                 const T* py = y.data<T>();
                                 const T* pd = dy.data<T>();
                                 T* px = dx.data<T>();
                                 detail::for_each_row(split, [&](std::int64_t base, auto stride) {
                                     backward(py + base, pd + base, px + base, split.size, stride);
                                 });
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
        x, axis, "softmax", [](auto... args) { softmax_row(args...); },
        [](auto... args) { softmax_backward_row(args...); });
}

Tensor log_softmax(const Tensor& x, std::int64_t axis) {
    // dx = dy - softmax(x) * sum(dy), softmax(x) = exp(y)
    return along_axis(
        x, axis, "log_softmax", [](auto... args) { detail::log_softmax_row(args...); },
        [](auto... args) { log_softmax_backward_row(args...); });
}

}  // namespace attograd

// Reductions: sum, mean, max / min and vector norms over axes, and sum_to for broadcast gradients.
#include "core/ops_reduce.hpp"

#include "core/autograd.hpp"
#include "core/detail/broadcast_iter.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_index.hpp"
#include "core/ops_shape.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attograd {
namespace {

struct ReducePlan {
    std::vector<bool> reduced;  // per input dimension
    Shape keep_shape;           // input shape with reduced dims set to 1
    Shape out_shape;            // keep_shape, or without the reduced dims
    std::int64_t count = 1;     // elements folded into each output
};

ReducePlan plan(const Shape& shape, const std::vector<std::int64_t>& axes, bool keepdim,
                std::string_view op) {
    const auto rank = static_cast<std::int64_t>(shape.size());
    ReducePlan r{std::vector<bool>(shape.size(), false), shape, {}, 1};
    for (auto axis : axes) {
        AG_CHECK(rank > 0, IndexError, "{}: axis {} given for a 0-d tensor", op, axis);
        const auto a = static_cast<std::size_t>(normalize_axis(axis, rank, op));
        AG_CHECK(!r.reduced[a], IndexError, "{}: axis {} listed twice for shape {}", op, axis, shape);
        r.reduced[a] = true;
        r.keep_shape[a] = 1;
        r.count *= shape[a];
    }
    for (std::size_t d = 0; d < shape.size(); ++d)
        if (keepdim || !r.reduced[d]) r.out_shape.push_back(r.keep_shape[d]);
    return r;
}

void check_floating(const Tensor& x, std::string_view op) {
    AG_CHECK(is_floating(x.dtype()), DTypeError, "{}: expected a float32 or float64 tensor, got {} {}", op,
             x.dtype(), x.shape());
}

// out[keep_shape] = sum of x over the reduced dims, accumulated in double.
Tensor sum_kernel(const Tensor& x, const ReducePlan& r) {
    return dispatch_floating(x.dtype(), "sum", [&]<class T>(T) {
        std::vector<double> acc(static_cast<std::size_t>(numel(r.keep_shape)), 0.0);
        const T* px = x.data<T>();
        const std::array<Shape, 1> strides{broadcast_strides(r.keep_shape, x.shape())};
        detail::for_each_run(x.shape(), strides,
                             [&](std::int64_t i, const auto& off, std::int64_t len, const auto& step) {
                                 double* dst = acc.data() + off[0];
                                 if (step[0] == 0) {
                                     double s = 0.0;
                                     for (std::int64_t k = 0; k < len; ++k) s += px[i + k];
                                     *dst += s;
                                 } else if (step[0] == 1) {  // the common case, vectorised
                                     for (std::int64_t k = 0; k < len; ++k) dst[k] += px[i + k];
                                 } else {
                                     for (std::int64_t k = 0; k < len; ++k) dst[k * step[0]] += px[i + k];
                                 }
                             });
        Tensor out = empty(r.out_shape, {.dtype = x.dtype()});
        T* po = out.data<T>();
        for (std::size_t k = 0; k < acc.size(); ++k) po[k] = static_cast<T>(acc[k]);
        return out;
    });
}

// Broadcasts dy (shaped like the reduction's output, or `keep_shape`) back to the input
// shape: dx = dy + 0 (the "+ 0" keeps the values of the broadcast add this replaces: -0 -> +0).
Tensor expand_back(const Tensor& dy, const Shape& keep_shape, const Shape& in_shape) {
    Tensor dx = empty(in_shape, {.dtype = dy.dtype()});
    dispatch_floating(dy.dtype(), "sum", [&]<class T>(T) {
        const T* pd = dy.data<T>();
        T* px = dx.data<T>();
        const std::array<Shape, 1> strides{broadcast_strides(keep_shape, in_shape)};
        detail::for_each_run(in_shape, strides,
                             [&](std::int64_t o, const auto& off, std::int64_t len, const auto& step) {
                                 const T* src = pd + off[0];
                                 for (std::int64_t k = 0; k < len; ++k) px[o + k] = src[k * step[0]] + T(0);
                             });
    });
    return dx;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim) {
    AG_CHECK(x.defined(), ValueError, "sum: undefined tensor argument");
    const ReducePlan r = plan(x.shape(), axes, keepdim, "sum");
    Tensor out = sum_kernel(x, r);
    if (autograd::needs_record({&x})) {
        autograd::record(
            "sum", {x}, out,
            [keep_shape = r.keep_shape, in_shape = x.shape()](const Tensor& dy, autograd::Gradients& g) {
                // dx = dy broadcast over the reduced dimensions
                g.add(0, expand_back(dy, keep_shape, in_shape));
            });
    }
    return out;
}

Tensor sum(const Tensor& x) {
    AG_CHECK(x.defined(), ValueError, "sum: undefined tensor argument");
    std::vector<std::int64_t> axes(x.shape().size());
    for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<std::int64_t>(i);
    return sum(x, axes, false);
}

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim) {
    AG_CHECK(x.defined(), ValueError, "mean: undefined tensor argument");
    check_floating(x, "mean");  // before sum, whose error would name "sum"
    const ReducePlan r = plan(x.shape(), axes, keepdim, "mean");
    return sum(x, axes, keepdim) / static_cast<double>(r.count);
}

Tensor mean(const Tensor& x) {
    AG_CHECK(x.defined(), ValueError, "mean: undefined tensor argument");
    check_floating(x, "mean");
    return sum(x) / static_cast<double>(x.numel());
}

namespace {

/// max (largest) or min over one axis; `op` names it in errors and on the tape.
MaxResult extreme(const Tensor& x, std::int64_t axis, bool keepdim, bool largest, const char* op) {
    AG_CHECK(x.defined(), ValueError, "{}: undefined tensor argument", op);
    const std::int64_t a = normalize_axis(axis, x.dim(), op);
    const Shape& shape = x.shape();
    const std::int64_t n = x.dim() == 0 ? 1 : shape[static_cast<std::size_t>(a)];
    AG_CHECK(n > 0, ShapeError, "{}: cannot reduce the empty axis {} of shape {}", op, axis, shape);
    const ReducePlan r =
        plan(shape, x.dim() == 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{a}, keepdim, op);
    // outer from the sizes themselves: x.numel() / (n * inner) divides by zero when inner is 0
    const AxisSplit split = split_at_axis(shape, a);
    const std::int64_t inner = split.inner, outer = split.outer;
    Tensor indices = empty(r.out_shape, {.dtype = DType::Int64});
    Tensor values = dispatch_floating(x.dtype(), op, [&]<class T>(T) {
        Tensor out = empty(r.out_shape, {.dtype = x.dtype()});
        const T* px = x.data<T>();
        T* pv = out.data<T>();
        auto* pi = indices.data<std::int64_t>();
        for (std::int64_t o = 0; o < outer; ++o) {
            for (std::int64_t i = 0; i < inner; ++i) {
                const T* base = px + o * n * inner + i;
                std::int64_t best = 0;
                // NaN propagates as in PyTorch: the first NaN wins.
                for (std::int64_t k = 1; k < n; ++k) {
                    const T current = base[best * inner], candidate = base[k * inner];
                    if (std::isnan(current)) break;
                    if ((largest ? candidate > current : candidate < current) || std::isnan(candidate))
                        best = k;
                }
                pv[o * inner + i] = base[best * inner];
                pi[o * inner + i] = best;
            }
        }
        return out;
    });
    if (autograd::needs_record({&x})) {
        autograd::record(op, {x}, values,
                         [indices, in_shape = x.shape(), n, inner](const Tensor& dy, autograd::Gradients& g) {
                             // dx = dy scattered to the position of each maximum (minimum)
                             Tensor dx = zeros(in_shape, {.dtype = dy.dtype()});
                             dispatch_floating(dy.dtype(), "max", [&]<class T>(T) {
                                 const T* pd = dy.data<T>();
                                 const auto* pi = indices.data<std::int64_t>();
                                 T* px = dx.data<T>();
                                 const std::int64_t m = dy.numel();
                                 for (std::int64_t j = 0; j < m; ++j) {
                                     const std::int64_t o = j / inner, i = j % inner;
                                     px[(o * n + pi[j]) * inner + i] += pd[j];
                                 }
                             });
                             g.add(0, dx);
                         });
    }
    return {values, indices};
}

/// max (largest) or min of every element -> 0-d; the gradient is shared evenly among the
/// elements equal to it (all NaNs when it is NaN), as PyTorch's evenly_distribute_backward.
Tensor extreme_all(const Tensor& x, bool largest, const char* op) {
    AG_CHECK(x.defined(), ValueError, "{}: undefined tensor argument", op);
    AG_CHECK(x.numel() > 0, ShapeError, "{}: cannot reduce an empty tensor of shape {}", op, x.shape());
    Tensor value;
    {
        NoGradGuard no_grad;
        value = extreme(reshape(x, {x.numel()}), 0, false, largest, op).values;
    }
    if (autograd::needs_record({&x})) {
        autograd::record(op, {x}, value, [x = x.detach(), value](const Tensor& dy, autograd::Gradients& g) {
            // dx = dy [x = value] / #{x = value}; NaN equals nothing, so NaNs are matched by x != x
            const Tensor hit = std::isnan(value.item()) ? ne(x, x) : eq(x, value);
            const Tensor share =
                div(dy, scalar(sum(to_dtype(hit, dy.dtype())).item(), {.dtype = dy.dtype()}));
            g.add(0, where(hit, share, 0.0));
        });
    }
    return value;
}

}  // namespace

MaxResult max(const Tensor& x, std::int64_t axis, bool keepdim) {
    return extreme(x, axis, keepdim, true, "max");
}
MaxResult min(const Tensor& x, std::int64_t axis, bool keepdim) {
    return extreme(x, axis, keepdim, false, "min");
}
Tensor max(const Tensor& x) { return extreme_all(x, true, "max"); }
Tensor min(const Tensor& x) { return extreme_all(x, false, "min"); }

Tensor argmax(const Tensor& x, std::int64_t axis, bool keepdim) {
    NoGradGuard no_grad;
    return max(x, axis, keepdim).indices;
}
Tensor argmin(const Tensor& x, std::int64_t axis, bool keepdim) {
    NoGradGuard no_grad;
    return min(x, axis, keepdim).indices;
}

namespace {

// Calls fn(i, o) for every input element i with o the flat index of its reduction's output
// (in keep_shape order), walking x's shape in row-major order.
template <class Fn>
void for_each_reduced(const Shape& in_shape, const Shape& keep_shape, Fn&& fn) {
    const std::array<Shape, 1> strides{broadcast_strides(keep_shape, in_shape)};
    detail::for_each_run(in_shape, strides,
                         [&](std::int64_t i, const auto& off, std::int64_t len, const auto& step) {
                             for (std::int64_t k = 0; k < len; ++k) fn(i + k, off[0] + k * step[0]);
                         });
}

}  // namespace

Tensor norm(const Tensor& x, double p, const std::vector<std::int64_t>& dims, bool keepdim) {
    AG_CHECK(x.defined(), ValueError, "norm: undefined tensor argument");
    const bool inf = p == std::numeric_limits<double>::infinity();
    AG_CHECK(p == 1.0 || p == 2.0 || inf, ValueError, "norm: p must be 1, 2 or inf, got {}", p);
    check_floating(x, "norm");
    std::vector<std::int64_t> axes = dims;
    if (axes.empty())
        for (std::int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
    const ReducePlan r = plan(x.shape(), axes, keepdim, "norm");
    AG_CHECK(!inf || r.count > 0 || numel(r.keep_shape) == 0, ShapeError,
             "norm: p = inf over an empty reduction of shape {} has no maximum", x.shape());
    Tensor out = dispatch_floating(x.dtype(), "norm", [&]<class T>(T) {
        std::vector<double> acc(static_cast<std::size_t>(numel(r.keep_shape)), 0.0);
        const T* px = x.data<T>();
        for_each_reduced(x.shape(), r.keep_shape, [&](std::int64_t i, std::int64_t o) {
            const double v = std::abs(static_cast<double>(px[i]));
            double& a = acc[static_cast<std::size_t>(o)];
            if (p == 1.0)
                a += v;
            else if (p == 2.0)
                a += v * v;
            else if (v > a || std::isnan(v))
                a = std::isnan(a) ? a : v;  // the first NaN stays
        });
        Tensor result = empty(r.out_shape, {.dtype = x.dtype()});
        T* po = result.data<T>();
        for (std::size_t k = 0; k < acc.size(); ++k)
            po[k] = static_cast<T>(p == 2.0 ? std::sqrt(acc[k]) : acc[k]);
        return result;
    });
    if (autograd::needs_record({&x})) {
        autograd::record(
            "norm", {x}, out,
            [x, n = out.detach(), p, keep_shape = r.keep_shape](const Tensor& dy, autograd::Gradients& g) {
                // p = 1: dx = dy sign(x); p = 2: dx = dy x / n (0 where n = 0);
                // p = inf: dx = dy sign(x) [|x| = n] / #{|x| = n}
                Tensor dx = empty(x.shape(), {.dtype = x.dtype()});
                dispatch_floating(x.dtype(), "norm", [&]<class T>(T) {
                    const T* px = x.data<T>();
                    const T* pn = n.data<T>();
                    const T* pd = dy.data<T>();
                    T* pg = dx.data<T>();
                    auto sign = [](T v) { return v > 0 ? T(1) : (v < 0 ? T(-1) : T(0)); };
                    std::vector<double> ties;
                    if (p != 1.0 && p != 2.0) {
                        ties.assign(static_cast<std::size_t>(n.numel()), 0.0);
                        for_each_reduced(x.shape(), keep_shape, [&](std::int64_t i, std::int64_t o) {
                            const T v = std::abs(px[i]);
                            if (v == pn[o] || std::isnan(v)) ties[static_cast<std::size_t>(o)] += 1.0;
                        });
                    }
                    for_each_reduced(x.shape(), keep_shape, [&](std::int64_t i, std::int64_t o) {
                        if (p == 1.0) {
                            pg[i] = pd[o] * sign(px[i]);
                        } else if (p == 2.0) {
                            pg[i] = pn[o] == T(0) ? T(0) : pd[o] * px[i] / pn[o];
                        } else {
                            const T v = std::abs(px[i]);
                            const bool tie = v == pn[o] || std::isnan(v);
                            pg[i] =
                                tie ? sign(px[i]) * static_cast<T>(pd[o] / ties[static_cast<std::size_t>(o)])
                                    : T(0);
                        }
                    });
                });
                g.add(0, dx);
            });
    }
    return out;
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
    if (grad.shape() == shape) return grad;
    const Shape& gs = grad.shape();
    AG_CHECK(shape.size() <= gs.size() && broadcast_shapes(shape, gs, "sum_to") == gs, ShapeError,
             "sum_to: shape {} does not broadcast to {}", shape, gs);
    std::vector<std::int64_t> axes;
    const std::size_t lead = gs.size() - shape.size();
    for (std::size_t d = 0; d < gs.size(); ++d)
        if (d < lead || (shape[d - lead] == 1 && gs[d] != 1)) axes.push_back(static_cast<std::int64_t>(d));
    return reshape(sum(grad, axes, true), shape);
}

bool all_finite(const Tensor& x) {
    AG_CHECK(x.defined(), ValueError, "all_finite: undefined tensor argument");
    if (!is_floating(x.dtype())) return true;
    return dispatch_floating(x.dtype(), "all_finite", [&]<class T>(T) {
        const T* p = x.data<T>();
        return std::all_of(p, p + x.numel(), [](T v) { return std::isfinite(v); });
    });
}

}  // namespace attograd

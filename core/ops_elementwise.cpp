// Elementwise ops: arithmetic with NumPy broadcasting, unary maths and activations.
#include "core/ops_elementwise.hpp"

#include "core/autograd.hpp"
#include "core/detail/broadcast_iter.hpp"
#include "core/ops_index.hpp"
#include "core/ops_reduce.hpp"

#include <cmath>
#include <cstring>
#include <numbers>
#include <type_traits>

namespace attograd {
namespace {

// out = f(a, b) over the broadcast shape; R is the result element type.
template <class T, class R, class F>
Tensor broadcast_map(const Tensor& a, const Tensor& b, std::string_view op, F f) {
    Tensor out = empty(broadcast_shapes(a.shape(), b.shape(), op), {.dtype = dtype_of<R>()});
    const Shape& out_shape = out.shape();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    R* po = out.data<R>();
    const std::int64_t n = out.numel();
    if (a.shape() == out_shape && b.shape() == out_shape) {
        for (std::int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    } else if (b.numel() == 1 && a.shape() == out_shape) {
        const T s = pb[0];
        for (std::int64_t i = 0; i < n; ++i) po[i] = f(pa[i], s);
    } else if (a.numel() == 1 && b.shape() == out_shape) {
        const T s = pa[0];
        for (std::int64_t i = 0; i < n; ++i) po[i] = f(s, pb[i]);
    } else {
        const std::array<Shape, 2> strides{broadcast_strides(a.shape(), out_shape),
                                           broadcast_strides(b.shape(), out_shape)};
        detail::for_each_run(out_shape, strides,
                             [&](std::int64_t o, const auto& off, std::int64_t len, const auto& step) {
                                 const T* ra = pa + off[0];
                                 const T* rb = pb + off[1];
                                 for (std::int64_t i = 0; i < len; ++i)
                                     po[o + i] = f(ra[i * step[0]], rb[i * step[1]]);
                             });
    }
    return out;
}

void check_defined(const Tensor& a, const Tensor& b, std::string_view op) {
    AG_CHECK(a.defined() && b.defined(), ValueError, "{}: undefined tensor argument", op);
}

// PyTorch's type promotion for two tensors: int64 or bool with a float -> that float, bool with
// int64 -> int64. float32 with float64 stays an error (a layer fed the wrong dtype should say so,
// not silently compute in float64).
DType promoted_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
    check_defined(a, b, op);
    const DType da = a.dtype(), db = b.dtype();
    if (da == db) return da;
    AG_CHECK(!(is_floating(da) && is_floating(db)), DTypeError, "{}: dtypes differ: {} {} and {} {}", op, da,
             a.shape(), db, b.shape());
    if (is_floating(da)) return da;
    if (is_floating(db)) return db;
    return DType::Int64;  // int64 with bool
}

// Wrapping int64 arithmetic (PyTorch wraps on overflow; signed overflow is undefined in C++).
template <class T, class F>
T wrapping(T x, T y, F f) {
    if constexpr (std::is_integral_v<T>)
        return static_cast<T>(f(static_cast<std::uint64_t>(x), static_cast<std::uint64_t>(y)));
    else
        return f(x, y);
}

// out = f(a, b) over the broadcast shape, in the promoted dtype: float, or int64 when
// `integer` allows it.
template <class F>
Tensor binary_arith(const Tensor& a, const Tensor& b, std::string_view op, F f, bool integer = true) {
    const DType dtype = promoted_dtype(a, b, op);
    const Tensor x = to_dtype(a, dtype), y = to_dtype(b, dtype);
    if (integer && dtype == DType::Int64) return broadcast_map<std::int64_t, std::int64_t>(x, y, op, f);
    AG_CHECK(is_floating(dtype), DTypeError, "{}: expected a float32, float64{} tensor, got {}", op,
             integer ? " or int64" : "", dtype);
    return dispatch_floating(dtype, op, [&]<class T>(T) { return broadcast_map<T, T>(x, y, op, f); });
}

// y = f(x) elementwise for a float tensor.
template <class F>
Tensor unary_map(const Tensor& x, std::string_view op, F f) {
    AG_CHECK(x.defined(), ValueError, "{}: undefined tensor argument", op);
    return dispatch_floating(x.dtype(), op, [&]<class T>(T) {
        Tensor out = empty(x.shape(), {.dtype = x.dtype()});
        const T* px = x.data<T>();
        T* po = out.data<T>();
        const std::int64_t n = x.numel();  // hoisted: numel() walks the shape
        for (std::int64_t i = 0; i < n; ++i) po[i] = static_cast<T>(f(px[i]));
        return out;
    });
}

// dx = g(dy, s) elementwise, where s is a saved tensor of the same shape (x or y).
template <class G>
Tensor backward_map(const Tensor& dy, const Tensor& saved, G g) {
    return dispatch_floating(dy.dtype(), "backward", [&]<class T>(T) {
        Tensor out = empty(dy.shape(), {.dtype = dy.dtype()});
        const T* pd = dy.data<T>();
        const T* ps = saved.data<T>();
        T* po = out.data<T>();
        const std::int64_t n = dy.numel();  // hoisted: numel() walks the shape
        for (std::int64_t i = 0; i < n; ++i) po[i] = static_cast<T>(g(pd[i], ps[i]));
        return out;
    });
}

// y = f(x, s) for a tensor x and a number s converted to x's dtype: the tensor-number
// operators, which need no 0-d tensor for s and no broadcast reduction in backward. Values,
// errors and op names are those of the tensor-tensor op with s as a 0-d tensor.
template <class F>
Tensor scalar_map(const Tensor& x, double s, std::string_view op, F f) {
    return dispatch_floating(x.dtype(), op, [&]<class T>(T) {
        Tensor out = empty(x.shape(), {.dtype = x.dtype()});
        const T* px = x.data<T>();
        const T v = static_cast<T>(s);
        T* po = out.data<T>();
        const std::int64_t n = x.numel();
        for (std::int64_t i = 0; i < n; ++i) po[i] = f(px[i], v);
        return out;
    });
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
    Tensor out = binary_arith(a, b, "add", [](auto x, auto y) { return wrapping(x, y, std::plus<>{}); });
    if (autograd::needs_record({&a, &b})) {
        autograd::record("add", {a, b}, out,
                         [sa = a.shape(), sb = b.shape()](const Tensor& dy, autograd::Gradients& g) {
                             // d(a+b)/da = 1, reduced over a's broadcast dimensions; likewise for b.
                             if (g.needs(0)) g.add(0, sum_to(dy, sa));
                             if (g.needs(1)) g.add(1, sum_to(dy, sb));
                         });
    }
    return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
    Tensor out = binary_arith(a, b, "sub", [](auto x, auto y) { return wrapping(x, y, std::minus<>{}); });
    if (autograd::needs_record({&a, &b})) {
        autograd::record("sub", {a, b}, out,
                         [sa = a.shape(), sb = b.shape()](const Tensor& dy, autograd::Gradients& g) {
                             if (g.needs(0)) g.add(0, sum_to(dy, sa));
                             if (g.needs(1)) g.add(1, neg(sum_to(dy, sb)));
                         });
    }
    return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
    Tensor out =
        binary_arith(a, b, "mul", [](auto x, auto y) { return wrapping(x, y, std::multiplies<>{}); });
    if (autograd::needs_record({&a, &b})) {
        autograd::record("mul", {a, b}, out, [a, b](const Tensor& dy, autograd::Gradients& g) {
            // da = dy * b, db = dy * a (each reduced to its own shape).
            if (g.needs(0)) g.add(0, sum_to(mul(dy, b), a.shape()));
            if (g.needs(1)) g.add(1, sum_to(mul(dy, a), b.shape()));
        });
    }
    return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
    // True division: two integer tensors divide as float32 (PyTorch's default float dtype).
    check_defined(a, b, "div");
    if (!is_floating(a.dtype()) && !is_floating(b.dtype()) && a.dtype() != DType::Bool &&
        b.dtype() != DType::Bool)
        return div(to_dtype(a, DType::Float32), to_dtype(b, DType::Float32));
    Tensor out = binary_arith(
        a, b, "div", [](auto x, auto y) { return x / y; }, false);
    if (autograd::needs_record({&a, &b})) {
        autograd::record("div", {a, b}, out, [a, b](const Tensor& dy, autograd::Gradients& g) {
            // da = dy / b, db = -dy * a / b^2.
            const Tensor da = div(dy, b);
            if (g.needs(0)) g.add(0, sum_to(da, a.shape()));
            if (g.needs(1)) g.add(1, neg(sum_to(mul(da, div(a, b)), b.shape())));
        });
    }
    return out;
}

Tensor neg(const Tensor& x) {
    Tensor out = unary_map(x, "neg", [](auto v) { return -v; });
    if (autograd::needs_record({&x}))
        autograd::record("neg", {x}, out,
                         [](const Tensor& dy, autograd::Gradients& g) { g.add(0, neg(dy)); });
    return out;
}

Tensor exp(const Tensor& x) {
    Tensor out = unary_map(x, "exp", [](auto v) { return std::exp(v); });
    if (autograd::needs_record({&x})) {
        // dx = dy * y
        autograd::record("exp", {x}, out, [y = out.detach()](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, y, [](auto d, auto s) { return d * s; }));
        });
    }
    return out;
}

Tensor log(const Tensor& x) {
    Tensor out = unary_map(x, "log", [](auto v) { return std::log(v); });
    if (autograd::needs_record({&x})) {
        // dx = dy / x
        autograd::record("log", {x}, out, [x](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, x, [](auto d, auto s) { return d / s; }));
        });
    }
    return out;
}

Tensor sqrt(const Tensor& x) {
    Tensor out = unary_map(x, "sqrt", [](auto v) { return std::sqrt(v); });
    if (autograd::needs_record({&x})) {
        // dx = dy / (2 y)
        autograd::record("sqrt", {x}, out, [y = out.detach()](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, y, [](auto d, auto s) { return d / (2 * s); }));
        });
    }
    return out;
}

Tensor pow(const Tensor& x, double exponent) {
    Tensor out =
        unary_map(x, "pow", [exponent](auto v) { return std::pow(v, static_cast<decltype(v)>(exponent)); });
    if (autograd::needs_record({&x})) {
        // dx = dy * p * x^(p-1)
        autograd::record("pow", {x}, out, [x, exponent](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, x, [exponent](auto d, auto s) {
                      using T = decltype(s);
                      if (exponent == 0.0) return T(0);
                      return d * static_cast<T>(exponent) * std::pow(s, static_cast<T>(exponent - 1.0));
                  }));
        });
    }
    return out;
}

Tensor abs(const Tensor& x) {
    Tensor out = unary_map(x, "abs", [](auto v) { return std::abs(v); });
    if (autograd::needs_record({&x})) {
        // dx = dy * sign(x), sign(0) = 0
        autograd::record("abs", {x}, out, [x](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, x, [](auto d, auto s) {
                      using T = decltype(s);
                      return s > 0 ? d : (s < 0 ? -d : T(0));
                  }));
        });
    }
    return out;
}

Tensor tanh(const Tensor& x) {
    Tensor out = unary_map(x, "tanh", [](auto v) { return std::tanh(v); });
    if (autograd::needs_record({&x})) {
        // dx = dy * (1 - y^2)
        autograd::record("tanh", {x}, out, [y = out.detach()](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, y, [](auto d, auto s) { return d * (1 - s * s); }));
        });
    }
    return out;
}

Tensor sigmoid(const Tensor& x) {
    // Branch on the sign so exp never overflows.
    Tensor out = unary_map(x, "sigmoid", [](auto v) {
        using T = decltype(v);
        if (v >= 0) return T(1) / (T(1) + std::exp(-v));
        const T e = std::exp(v);
        return e / (T(1) + e);
    });
    if (autograd::needs_record({&x})) {
        // dx = dy * y * (1 - y)
        autograd::record("sigmoid", {x}, out, [y = out.detach()](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, y, [](auto d, auto s) { return d * s * (1 - s); }));
        });
    }
    return out;
}

Tensor relu(const Tensor& x) {
    Tensor out = unary_map(x, "relu", [](auto v) { return v > 0 ? v : decltype(v)(0); });
    if (autograd::needs_record({&x})) {
        // dx = dy * [y > 0]
        autograd::record("relu", {x}, out, [y = out.detach()](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, y, [](auto d, auto s) { return s > 0 ? d : decltype(d)(0); }));
        });
    }
    return out;
}

Tensor gelu(const Tensor& x) {
    Tensor out = unary_map(x, "gelu", [](auto v) {
        using T = decltype(v);
        return T(0.5) * v * (T(1) + std::erf(v * static_cast<T>(std::numbers::sqrt2 / 2)));
    });
    if (autograd::needs_record({&x})) {
        // dx = dy * (Phi(x) + x * phi(x)), phi the standard normal density
        autograd::record("gelu", {x}, out, [x](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, backward_map(dy, x, [](auto d, auto s) {
                      using T = decltype(s);
                      const T cdf = T(0.5) * (T(1) + std::erf(s * static_cast<T>(std::numbers::sqrt2 / 2)));
                      const T pdf = std::exp(T(-0.5) * s * s) *
                                    static_cast<T>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
                      return d * (cdf + s * pdf);
                  }));
        });
    }
    return out;
}

namespace {
template <class Cmp>
Tensor compare(const Tensor& a, const Tensor& b, std::string_view op, Cmp cmp) {
    const DType dtype = promoted_dtype(a, b, op);
    const Tensor x = to_dtype(a, dtype), y = to_dtype(b, dtype);
    return dispatch_all(dtype, [&]<class T>(T) { return broadcast_map<T, bool>(x, y, op, cmp); });
}
}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) {
    return compare(a, b, "eq", [](auto x, auto y) { return x == y; });
}
Tensor lt(const Tensor& a, const Tensor& b) {
    return compare(a, b, "lt", [](auto x, auto y) { return x < y; });
}
Tensor gt(const Tensor& a, const Tensor& b) {
    return compare(a, b, "gt", [](auto x, auto y) { return x > y; });
}
Tensor ne(const Tensor& a, const Tensor& b) {
    return compare(a, b, "ne", [](auto x, auto y) { return x != y; });
}
Tensor le(const Tensor& a, const Tensor& b) {
    return compare(a, b, "le", [](auto x, auto y) { return x <= y; });
}
Tensor ge(const Tensor& a, const Tensor& b) {
    return compare(a, b, "ge", [](auto x, auto y) { return x >= y; });
}

namespace {
// A plain number compared with x: in x's dtype when x is float (as PyTorch converts it), in
// float64 otherwise (exact for integers below 2^53).
Tensor comparand(const Tensor& x, double b, std::string_view op) {
    AG_CHECK(x.defined(), ValueError, "{}: undefined tensor argument", op);
    return scalar(b, {.dtype = is_floating(x.dtype()) ? x.dtype() : DType::Float64});
}
}  // namespace

Tensor eq(const Tensor& a, double b) { return eq(a, comparand(a, b, "eq")); }
Tensor ne(const Tensor& a, double b) { return ne(a, comparand(a, b, "ne")); }
Tensor lt(const Tensor& a, double b) { return lt(a, comparand(a, b, "lt")); }
Tensor le(const Tensor& a, double b) { return le(a, comparand(a, b, "le")); }
Tensor gt(const Tensor& a, double b) { return gt(a, comparand(a, b, "gt")); }
Tensor ge(const Tensor& a, double b) { return ge(a, comparand(a, b, "ge")); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, double b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, double b) { return ne(a, b); }
Tensor operator<(const Tensor& a, double b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, double b) { return le(a, b); }
Tensor operator>(const Tensor& a, double b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, double b) { return ge(a, b); }
Tensor operator==(double a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(double a, const Tensor& b) { return ne(b, a); }
Tensor operator<(double a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(double a, const Tensor& b) { return ge(b, a); }
Tensor operator>(double a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(double a, const Tensor& b) { return le(b, a); }

namespace {
// Python's floor division and modulo: the quotient rounds toward -inf, the remainder takes the
// divisor's sign. Integer division by zero is refused (PyTorch: "ZeroDivisionError").
template <class T>
T floor_quotient(T x, T y) {
    if constexpr (std::is_integral_v<T>) {
        if (y == -1) return wrapping(T(0), x, std::minus<>{});  // -INT64_MIN wraps, as PyTorch
        const T q = x / y;
        return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
    } else {
        return std::floor(x / y);
    }
}
template <class T>
T python_remainder(T x, T y) {
    if constexpr (std::is_integral_v<T>) {
        if (y == -1) return T(0);
        const T r = x % y;
        return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
    } else {
        // PyTorch: a - floor(a / b) * b, which keeps the divisor's sign
        return x - std::floor(x / y) * y;
    }
}
void check_no_zero_divisor(const Tensor& b, std::string_view op) {
    if (b.dtype() != DType::Int64 && b.dtype() != DType::Bool) return;
    const Tensor d = to_dtype(b, DType::Int64);
    const auto* p = d.data<std::int64_t>();
    for (std::int64_t i = 0, n = d.numel(); i < n; ++i)
        AG_CHECK(p[i] != 0, ValueError, "{}: integer division by zero (divisor {} at flat index {})", op,
                 b.shape(), i);
}
}  // namespace

Tensor floor_divide(const Tensor& a, const Tensor& b) {
    if (promoted_dtype(a, b, "floor_divide") == DType::Int64) check_no_zero_divisor(b, "floor_divide");
    // piecewise constant: not recorded (PyTorch gives it no gradient either)
    return binary_arith(a, b, "floor_divide", [](auto x, auto y) { return floor_quotient(x, y); });
}

Tensor remainder(const Tensor& a, const Tensor& b) {
    if (promoted_dtype(a, b, "remainder") == DType::Int64) check_no_zero_divisor(b, "remainder");
    Tensor out = binary_arith(a, b, "remainder", [](auto x, auto y) { return python_remainder(x, y); });
    if (autograd::needs_record({&a, &b})) {
        autograd::record("remainder", {a, b}, out, [a, b](const Tensor& dy, autograd::Gradients& g) {
            // da = dy, db = -dy * floor(a / b)
            if (g.needs(0)) g.add(0, sum_to(dy, a.shape()));
            if (g.needs(1)) g.add(1, neg(sum_to(mul(dy, floor_divide(a, b)), b.shape())));
        });
    }
    return out;
}

namespace {

/// maximum (largest) or minimum, composed from where: the tie branch a + (b - a) / 2 equals a
/// there and sends half the gradient to each side; NaN fails both comparisons and lands there too.
Tensor extreme_of(const Tensor& a, const Tensor& b, bool largest, const char* op) {
    AG_CHECK(a.defined() && b.defined(), ValueError, "{}: undefined tensor argument", op);
    AG_CHECK(!is_floating(a.dtype()) || !is_floating(b.dtype()) || a.dtype() == b.dtype(), DTypeError,
             "{}: dtypes differ: {} {} and {} {}", op, a.dtype(), a.shape(), b.dtype(), b.shape());
    broadcast_shapes(a.shape(), b.shape(), op);  // throws ShapeError naming op
    const Tensor a_wins = largest ? gt(a, b) : lt(a, b), b_wins = largest ? lt(a, b) : gt(a, b);
    if (!is_floating(a.dtype()) && !is_floating(b.dtype())) return where(a_wins, a, b);
    return where(a_wins, a, where(b_wins, b, a + (b - a) * 0.5));
}

}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extreme_of(a, b, true, "maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extreme_of(a, b, false, "minimum"); }

// PyTorch's clamp: min(max(x, lo), hi), so lo > hi gives hi everywhere; dx = dy [lo <= x <= hi].
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
    AG_CHECK(x.defined(), ValueError, "clamp: undefined tensor argument");
    AG_CHECK(min.has_value() || max.has_value(), ValueError,
             "clamp: at least one of min and max must be given");
    AG_CHECK(!min || !std::isnan(*min), ValueError, "clamp: min is NaN");
    AG_CHECK(!max || !std::isnan(*max), ValueError, "clamp: max is NaN");
    Tensor y = x;
    if (min) y = where(lt(y, *min), *min, y);
    if (max) y = where(gt(y, *max), *max, y);
    return y;
}

Tensor clone(const Tensor& x) {
    AG_CHECK(x.defined(), ValueError, "clone: undefined tensor argument");
    Tensor out = empty(x.shape(), {.dtype = x.dtype()});
    std::memcpy(out.raw_data(), x.raw_data(), static_cast<std::size_t>(x.numel()) * dtype_size(x.dtype()));
    if (autograd::needs_record({&x}))
        autograd::record("clone", {x}, out, [](const Tensor& dy, autograd::Gradients& g) { g.add(0, dy); });
    return out;
}

Tensor to_dtype(const Tensor& x, DType dtype) {
    AG_CHECK(x.defined(), ValueError, "to_dtype: undefined tensor argument");
    if (x.dtype() == dtype) return x;
    Tensor out = empty(x.shape(), {.dtype = dtype});
    dispatch_all(x.dtype(), [&]<class S>(S) {
        dispatch_all(dtype, [&]<class D>(D) {
            const S* src = x.data<S>();
            D* dst = out.data<D>();
            const std::int64_t n = x.numel();  // hoisted: numel() walks the shape
            if constexpr (std::is_floating_point_v<S> && std::is_same_v<D, std::int64_t>) {
                // Casting NaN, inf or a value beyond int64's range is undefined behaviour in C++.
                constexpr double limit = 9223372036854775808.0;  // 2^63
                for (std::int64_t i = 0; i < n; ++i)
                    AG_CHECK(static_cast<double>(src[i]) >= -limit && static_cast<double>(src[i]) < limit,
                             ValueError, "to_dtype: {} at flat index {} of {} does not fit int64", src[i], i,
                             x.shape());
            }
            for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(src[i]);
        });
    });
    if (is_floating(dtype) && autograd::needs_record({&x})) {
        autograd::record("to_dtype", {x}, out, [from = x.dtype()](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, to_dtype(dy, from));
        });
    }
    return out;
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, double b) {
    if (a.defined() && !is_floating(a.dtype())) return to_dtype(a, DType::Float32) + b;
    Tensor out = scalar_map(a, b, "add", [](auto x, auto s) { return x + s; });
    if (autograd::needs_record({&a}))
        autograd::record("add", {a}, out, [](const Tensor& dy, autograd::Gradients& g) { g.add(0, dy); });
    return out;
}

Tensor operator-(const Tensor& a, double b) {
    if (a.defined() && !is_floating(a.dtype())) return to_dtype(a, DType::Float32) - b;
    Tensor out = scalar_map(a, b, "sub", [](auto x, auto s) { return x - s; });
    if (autograd::needs_record({&a}))
        autograd::record("sub", {a}, out, [](const Tensor& dy, autograd::Gradients& g) { g.add(0, dy); });
    return out;
}

Tensor operator*(const Tensor& a, double b) {
    if (a.defined() && !is_floating(a.dtype())) return to_dtype(a, DType::Float32) * b;
    Tensor out = scalar_map(a, b, "mul", [](auto x, auto s) { return x * s; });
    if (autograd::needs_record({&a})) {
        // da = dy * b
        autograd::record("mul", {a}, out, [b](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, scalar_map(dy, b, "mul", [](auto d, auto s) { return d * s; }));
        });
    }
    return out;
}

Tensor operator/(const Tensor& a, double b) {
    if (a.defined() && !is_floating(a.dtype())) return to_dtype(a, DType::Float32) / b;
    Tensor out = scalar_map(a, b, "div", [](auto x, auto s) { return x / s; });
    if (autograd::needs_record({&a})) {
        // da = dy / b
        autograd::record("div", {a}, out, [b](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, scalar_map(dy, b, "div", [](auto d, auto s) { return d / s; }));
        });
    }
    return out;
}

Tensor operator+(double a, const Tensor& b) {
    if (b.defined() && !is_floating(b.dtype())) return a + to_dtype(b, DType::Float32);
    Tensor out = scalar_map(b, a, "add", [](auto x, auto s) { return s + x; });
    if (autograd::needs_record({&b}))
        autograd::record("add", {b}, out, [](const Tensor& dy, autograd::Gradients& g) { g.add(0, dy); });
    return out;
}

Tensor operator-(double a, const Tensor& b) {
    if (b.defined() && !is_floating(b.dtype())) return a - to_dtype(b, DType::Float32);
    Tensor out = scalar_map(b, a, "sub", [](auto x, auto s) { return s - x; });
    if (autograd::needs_record({&b}))
        autograd::record("sub", {b}, out,
                         [](const Tensor& dy, autograd::Gradients& g) { g.add(0, neg(dy)); });
    return out;
}

Tensor operator*(double a, const Tensor& b) {
    if (b.defined() && !is_floating(b.dtype())) return a * to_dtype(b, DType::Float32);
    Tensor out = scalar_map(b, a, "mul", [](auto x, auto s) { return s * x; });
    if (autograd::needs_record({&b})) {
        // db = dy * a
        autograd::record("mul", {b}, out, [a](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, scalar_map(dy, a, "mul", [](auto d, auto s) { return d * s; }));
        });
    }
    return out;
}

Tensor operator/(double a, const Tensor& b) {
    if (b.defined() && !is_floating(b.dtype())) return a / to_dtype(b, DType::Float32);
    Tensor out = scalar_map(b, a, "div", [](auto x, auto s) { return s / x; });
    if (autograd::needs_record({&b})) {
        // db = -(dy / b) * (a / b), in the order the tensor-tensor div evaluates it
        autograd::record("div", {b}, out, [a, b](const Tensor& dy, autograd::Gradients& g) {
            g.add(0, dispatch_floating(dy.dtype(), "div", [&]<class T>(T) {
                      Tensor db = empty(dy.shape(), {.dtype = dy.dtype()});
                      const T* pd = dy.data<T>();
                      const T* pb = b.data<T>();
                      const T s = static_cast<T>(a);
                      T* po = db.data<T>();
                      for (std::int64_t i = 0, n = dy.numel(); i < n; ++i)
                          po[i] = -((pd[i] / pb[i]) * (s / pb[i]));
                      return db;
                  }));
        });
    }
    return out;
}

Tensor floor_divide(const Tensor& a, double b) {
    return floor_divide(a, detail::number_operand(a, b, "floor_divide"));
}
Tensor remainder(const Tensor& a, double b) {
    return remainder(a, detail::number_operand(a, b, "remainder"));
}
Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }

namespace detail {

Tensor number_operand(const Tensor& x, double value, std::string_view op) {
    AG_CHECK(x.defined(), ValueError, "{}: undefined tensor argument", op);
    return scalar(value, {.dtype = is_floating(x.dtype()) ? x.dtype() : DType::Float32});
}

Tensor integer_operand(const Tensor& x, std::int64_t value, std::string_view op) {
    AG_CHECK(x.defined(), ValueError, "{}: undefined tensor argument", op);
    return is_floating(x.dtype()) ? scalar(static_cast<double>(value), {.dtype = x.dtype()})
                                  : index_tensor({value}, {});
}

Tensor integer_arith(char op, const Tensor& a, std::int64_t b, bool number_first) {
    AG_CHECK(a.defined(), ValueError, "{}: undefined tensor argument", op);
    if (is_floating(a.dtype())) {
        const auto v = static_cast<double>(b);
        switch (op) {
            case '+':
                return number_first ? v + a : a + v;
            case '-':
                return number_first ? v - a : a - v;
            case '*':
                return number_first ? v * a : a * v;
            case '/':
                return number_first ? v / a : a / v;
            default:
                break;
        }
    }
    const Tensor n = integer_operand(a, b, "integer_arith");
    const Tensor& x = number_first ? n : a;
    const Tensor& y = number_first ? a : n;
    switch (op) {
        case '+':
            return add(x, y);
        case '-':
            return sub(x, y);
        case '*':
            return mul(x, y);
        case '/':
            return div(x, y);
        case '%':
            return remainder(x, y);
        case 'f':
            return floor_divide(x, y);
        default:
            break;
    }
    AG_ASSERT(false, "integer_arith: unknown operator {}", op);
    return {};
}

}  // namespace detail

}  // namespace attograd

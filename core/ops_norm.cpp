// Normalisation: layer normalisation over the last dimensions.
#include "core/ops_norm.hpp"

#include "core/autograd.hpp"
#include "core/detail/parallel.hpp"

#include <cmath>
#include <vector>

namespace attograd {
namespace {

void check_layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                      const Tensor& bias, double eps) {
    AG_CHECK(x.defined(), ValueError, "layer_norm: undefined tensor argument");
    AG_CHECK(!normalized_shape.empty(), ShapeError, "layer_norm: normalized_shape must not be empty (x {})",
             x.shape());
    const auto k = normalized_shape.size();
    AG_CHECK(x.shape().size() >= k &&
                 Shape(x.shape().end() - static_cast<std::ptrdiff_t>(k), x.shape().end()) == normalized_shape,
             ShapeError, "layer_norm: normalized_shape {} does not match the last dimensions of x {}",
             normalized_shape, x.shape());
    dispatch_floating(x.dtype(), "layer_norm", [](auto) {});
    for (const auto& [param, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
        if (!param->defined()) continue;
        AG_CHECK(param->shape() == normalized_shape, ShapeError,
                 "layer_norm: {} must have shape normalized_shape {}, got {}", name, normalized_shape,
                 param->shape());
        AG_CHECK(param->dtype() == x.dtype(), DTypeError, "layer_norm: dtypes differ: x {}, {} {}", x.dtype(),
                 name, param->dtype());
    }
    AG_CHECK(std::isfinite(eps) && eps >= 0, ValueError, "layer_norm: eps must be finite and >= 0, got {}",
             eps);
}

// Per-row statistics saved for backward.
struct RowStats {
    std::vector<double> mean;
    std::vector<double> rstd;  // 1 / sqrt(var + eps)
};

// x [M, N] -> y [M, N]: y = x^ * w + b with x^ = (x - mean) * rstd per row; fills `stats`.
// w, b [N] or null (1 and 0).
template <class T>
void layer_norm_forward(const T* x, const T* w, const T* b, T* y, std::int64_t m, std::int64_t n, double eps,
                        RowStats& stats) {
    const int threads = detail::threads_for(m * n, detail::kMinParallelWork);
    detail::parallel_for(m, threads, [&](std::int64_t r) {
        const T* row = x + r * n;
        double sum = 0.0;
        for (std::int64_t i = 0; i < n; ++i) sum += row[i];
        const double mean = sum / static_cast<double>(n);
        double sq = 0.0;
        for (std::int64_t i = 0; i < n; ++i) sq += (row[i] - mean) * (row[i] - mean);
        const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
        stats.mean[static_cast<std::size_t>(r)] = mean;
        stats.rstd[static_cast<std::size_t>(r)] = rstd;
        T* out = y + r * n;
        for (std::int64_t i = 0; i < n; ++i) {
            const double xhat = (row[i] - mean) * rstd;
            out[i] = static_cast<T>(xhat * (w ? w[i] : T(1)) + (b ? b[i] : T(0)));
        }
    });
}

// x, dy [M, N], w [N] or null -> dx [M, N] (when dx is not null), dw and db [N] summed over the
// rows in double (when not null):
//   g = dy * w; dx = rstd * (g - mean(g) - x^ * mean(g * x^))
//   dw = sum over rows of dy * x^, db = sum over rows of dy
template <class T>
void layer_norm_backward(const T* x, const T* w, const T* dy, const RowStats& stats, std::int64_t m,
                         std::int64_t n, T* dx, std::vector<double>* dw, std::vector<double>* db) {
    if (dx != nullptr) {
        const int threads = detail::threads_for(m * n, detail::kMinParallelWork);
        detail::parallel_for(m, threads, [&](std::int64_t r) {
            const double mean = stats.mean[static_cast<std::size_t>(r)];
            const double rstd = stats.rstd[static_cast<std::size_t>(r)];
            const T* row = x + r * n;
            const T* drow = dy + r * n;
            double sum_g = 0.0, sum_gx = 0.0;
            for (std::int64_t i = 0; i < n; ++i) {
                const double gi = drow[i] * (w ? w[i] : T(1));
                sum_g += gi;
                sum_gx += gi * (row[i] - mean) * rstd;
            }
            const double mean_g = sum_g / static_cast<double>(n);
            const double mean_gx = sum_gx / static_cast<double>(n);
            for (std::int64_t i = 0; i < n; ++i) {
                const double gi = drow[i] * (w ? w[i] : T(1));
                const double xhat = (row[i] - mean) * rstd;
                dx[r * n + i] = static_cast<T>(rstd * (gi - mean_g - xhat * mean_gx));
            }
        });
    }
    if (dw == nullptr && db == nullptr) return;
    for (std::int64_t r = 0; r < m; ++r) {
        const double mean = stats.mean[static_cast<std::size_t>(r)];
        const double rstd = stats.rstd[static_cast<std::size_t>(r)];
        for (std::int64_t i = 0; i < n; ++i) {
            const double d = dy[r * n + i];
            if (dw != nullptr) (*dw)[static_cast<std::size_t>(i)] += d * (x[r * n + i] - mean) * rstd;
            if (db != nullptr) (*db)[static_cast<std::size_t>(i)] += d;
        }
    }
}

// A [N] tensor of `dtype` holding v (a parameter's gradient summed in double).
template <class T>
Tensor as_param(const std::vector<double>& v, const Shape& shape, DType dtype) {
    Tensor t = empty(shape, {.dtype = dtype});
    T* p = t.data<T>();
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
    return t;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
    check_layer_norm(x, normalized_shape, weight, bias, eps);
    // x [..., d...] is read as M rows of N elements.
    const std::int64_t n = numel(normalized_shape);
    const std::int64_t m = n == 0 ? 0 : x.numel() / n;
    Tensor y = empty(x.shape(), {.dtype = x.dtype()});
    RowStats stats{std::vector<double>(static_cast<std::size_t>(m)),
                   std::vector<double>(static_cast<std::size_t>(m))};
    dispatch_floating(x.dtype(), "layer_norm", [&]<class T>(T) {
        layer_norm_forward(x.data<T>(), weight.defined() ? weight.data<T>() : nullptr,
                           bias.defined() ? bias.data<T>() : nullptr, y.data<T>(), m, n, eps, stats);
    });
    if (autograd::needs_record({&x, &weight, &bias})) {
        autograd::record("layer_norm", {x, weight, bias}, y,
                         [x, weight, normalized_shape, n, m, stats = std::move(stats)](
                             const Tensor& dy, autograd::Gradients& g) {
                             dispatch_floating(dy.dtype(), "layer_norm", [&]<class T>(T) {
                                 Tensor dx = g.needs(0) ? empty(x.shape(), {.dtype = x.dtype()}) : Tensor();
                                 std::vector<double> dw(g.needs(1) ? static_cast<std::size_t>(n) : 0, 0.0);
                                 std::vector<double> db(g.needs(2) ? static_cast<std::size_t>(n) : 0, 0.0);
                                 layer_norm_backward(
                                     x.data<T>(), weight.defined() ? weight.data<T>() : nullptr, dy.data<T>(),
                                     stats, m, n, dx.defined() ? dx.data<T>() : nullptr,
                                     g.needs(1) ? &dw : nullptr, g.needs(2) ? &db : nullptr);
                                 if (g.needs(0)) g.add(0, dx);
                                 if (g.needs(1)) g.add(1, as_param<T>(dw, normalized_shape, dy.dtype()));
                                 if (g.needs(2)) g.add(2, as_param<T>(db, normalized_shape, dy.dtype()));
                             });
                         });
    }
    return y;
}

}  // namespace attograd

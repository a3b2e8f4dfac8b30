// Banded (local) attention kernels: scores, weighted sums and dense views over a window of keys.
#include "core/ops_local_attention.hpp"

#include "core/autograd.hpp"
#include "core/detail/fused_attention_common.hpp"
#include "core/detail/key_window.hpp"
#include "core/detail/parallel.hpp"
#include "core/detail/parallel_rows.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <vector>

namespace attograd {
namespace {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixMap = Eigen::Map<RowMatrix<T>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const RowMatrix<T>>;
template <class T>
using VectorMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstVectorMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;

// Rows [N * Tq] of a band and the key block [lo, hi) each one sees.
struct Band {
    std::int64_t n, tq, tk;
    detail::KeyWindow window;
    std::int64_t rows() const { return n * tq; }
    // Offset (in rows of width `cols`) of key lo of row `row` in a [N, Tk, cols] tensor.
    std::int64_t key_row(std::int64_t row) const { return (row / tq) * tk + window.lo(row); }
    std::int64_t slot(std::int64_t row) const {
        return row * window.width + (window.lo(row) - window.first(row));
    }
};

Band band_of(const Tensor& window_start, std::int64_t n, std::int64_t tq, std::int64_t tk,
             std::int64_t width) {
    return Band{n, tq, tk, detail::KeyWindow{window_start.data<std::int64_t>(), width, tk}};
}

void check_float3(const Tensor& a, const Tensor& b, const char* names, std::string_view op) {
    AG_CHECK(a.defined() && b.defined(), ValueError, "{}: undefined tensor argument", op);
    AG_CHECK(a.dim() == 3 && b.dim() == 3, ShapeError, "{}: expected {}, got {} and {}", op, names, a.shape(),
             b.shape());
    AG_CHECK(a.size(0) == b.size(0), ShapeError, "{}: batch sizes differ: {} and {}", op, a.shape(),
             b.shape());
    AG_CHECK(a.dtype() == b.dtype(), DTypeError, "{}: dtypes differ: {} {} and {} {}", op, a.dtype(),
             a.shape(), b.dtype(), b.shape());
}

}  // namespace

namespace detail {

void check_window(const Tensor& window_start, std::int64_t n, std::int64_t tq, std::int64_t width,
                  std::string_view op) {
    AG_CHECK(window_start.defined(), ValueError, "{}: window_start is undefined", op);
    AG_CHECK(window_start.dtype() == DType::Int64, DTypeError, "{}: window_start must be int64, got {}", op,
             window_start.dtype());
    AG_CHECK(window_start.shape() == (Shape{n, tq}), ShapeError,
             "{}: window_start must be [N, Tq] = {}, got {}", op, Shape{n, tq}, window_start.shape());
    AG_CHECK(width >= 1, ValueError, "{}: window width must be >= 1, got {}", op, width);
}

void check_band_width(std::int64_t width, std::int64_t tk, std::string_view op) {
    const std::int64_t most = std::max<std::int64_t>(2 * tk - 1, 1);
    AG_CHECK(width <= most, ValueError,
             "{}: window width {} exceeds 2 Tk - 1 = {}: no window over Tk = {} keys needs more slots", op,
             width, most, tk);
}

}  // namespace detail

Tensor local_dot_score(const Tensor& q, const Tensor& k, const Tensor& window_start, std::int64_t width,
                       double scale) {
    constexpr const char* op = "local_dot_score";
    check_float3(q, k, "q [N, Tq, D] and k [N, Tk, D]", op);
    AG_CHECK(q.size(2) == k.size(2), ShapeError, "{}: query and key widths differ: {} and {}", op, q.shape(),
             k.shape());
    const std::int64_t d = q.size(2);
    detail::check_window(window_start, q.size(0), q.size(1), width, op);
    detail::check_band_width(width, k.size(1), op);
    detail::check_scale(scale, q.dtype(), op);
    const Band band = band_of(window_start, q.size(0), q.size(1), k.size(1), width);
    Tensor out = empty({band.n, band.tq, width}, {.dtype = q.dtype()});
    dispatch_floating(q.dtype(), op, [&]<class T>(T) {
        const T* pq = q.data<T>();
        const T* pk = k.data<T>();
        T* po = out.data<T>();
        std::fill(po, po + out.numel(), T(0));
        // scores[t, j] = scale * k[s_j] . q[t]
        const int threads = detail::threads_for(band.rows() * width * d, detail::kMinParallelWork);
        detail::parallel_for(band.rows(), threads, [&](std::int64_t row) {
            const std::int64_t len = band.window.hi(row) - band.window.lo(row);
            if (len <= 0) return;
            const ConstMatrixMap<T> keys(pk + band.key_row(row) * d, len, d);
            VectorMap<T>(po + band.slot(row), len).noalias() =
                static_cast<T>(scale) * (keys * ConstVectorMap<T>(pq + row * d, d));
        });
    });
    if (autograd::needs_record({&q, &k})) {
        autograd::record(
            op, {q, k}, out, [q, k, window_start, band, scale](const Tensor& dy, autograd::Gradients& g) {
                // dq[t] = scale * sum_j ds[t, j] k[s_j];  dk[s_j] += scale * ds[t, j] q[t]
                const std::int64_t d = q.size(2);
                Tensor dq = zeros(q.shape(), {.dtype = q.dtype()});
                Tensor dk = zeros(k.shape(), {.dtype = k.dtype()});
                dispatch_floating(dy.dtype(), "local_dot_score backward", [&]<class T>(T) {
                    const T* pq = q.data<T>();
                    const T* pk = k.data<T>();
                    const T* pd = dy.data<T>();
                    T* pdq = dq.data<T>();
                    const T s = static_cast<T>(scale);
                    detail::for_rows_scattering(
                        band.rows(),
                        detail::blocks_for(band.rows() * band.window.width * d, detail::kMinParallelWork),
                        dk.data<T>(), dk.numel(), [&](std::int64_t row, T* acc) {
                            const std::int64_t len = band.window.hi(row) - band.window.lo(row);
                            if (len <= 0) return;
                            const ConstMatrixMap<T> keys(pk + band.key_row(row) * d, len, d);
                            const ConstVectorMap<T> ds(pd + band.slot(row), len);
                            VectorMap<T>(pdq + row * d, d).noalias() = s * (keys.transpose() * ds);
                            MatrixMap<T>(acc + band.key_row(row) * d, len, d).noalias() +=
                                (s * ds) * ConstVectorMap<T>(pq + row * d, d).transpose();
                        });
                });
                g.add(0, dq);
                g.add(1, dk);
            });
    }
    return out;
}

Tensor local_weighted_sum(const Tensor& weights, const Tensor& v, const Tensor& window_start) {
    constexpr const char* op = "local_weighted_sum";
    check_float3(weights, v, "weights [N, Tq, W] and v [N, Tk, Dv]", op);
    const std::int64_t width = weights.size(2), dv = v.size(2);
    detail::check_window(window_start, weights.size(0), weights.size(1), width, op);
    const Band band = band_of(window_start, weights.size(0), weights.size(1), v.size(1), width);
    Tensor out = zeros({band.n, band.tq, dv}, {.dtype = v.dtype()});
    dispatch_floating(v.dtype(), op, [&]<class T>(T) {
        const T* pw = weights.data<T>();
        const T* pv = v.data<T>();
        T* po = out.data<T>();
        // out[t] = sum_j w[t, j] v[s_j]
        const int threads = detail::threads_for(band.rows() * width * dv, detail::kMinParallelWork);
        detail::parallel_for(band.rows(), threads, [&](std::int64_t row) {
            const std::int64_t len = band.window.hi(row) - band.window.lo(row);
            if (len <= 0) return;
            const ConstMatrixMap<T> values(pv + band.key_row(row) * dv, len, dv);
            VectorMap<T>(po + row * dv, dv).noalias() =
                values.transpose() * ConstVectorMap<T>(pw + band.slot(row), len);
        });
    });
    if (autograd::needs_record({&weights, &v})) {
        autograd::record(
            op, {weights, v}, out,
            [weights, v, window_start, band](const Tensor& dy, autograd::Gradients& g) {
                // dw[t, j] = dout[t] . v[s_j] (0 out of range);  dv[s_j] += w[t, j] dout[t]
                const std::int64_t dv = v.size(2);
                Tensor dw = zeros(weights.shape(), {.dtype = weights.dtype()});
                Tensor dvalues = zeros(v.shape(), {.dtype = v.dtype()});
                dispatch_floating(dy.dtype(), "local_weighted_sum backward", [&]<class T>(T) {
                    const T* pw = weights.data<T>();
                    const T* pv = v.data<T>();
                    const T* pd = dy.data<T>();
                    T* pdw = dw.data<T>();
                    detail::for_rows_scattering(
                        band.rows(),
                        detail::blocks_for(band.rows() * band.window.width * dv, detail::kMinParallelWork),
                        dvalues.data<T>(), dvalues.numel(), [&](std::int64_t row, T* acc) {
                            const std::int64_t len = band.window.hi(row) - band.window.lo(row);
                            if (len <= 0) return;
                            const ConstMatrixMap<T> values(pv + band.key_row(row) * dv, len, dv);
                            const ConstVectorMap<T> dout(pd + row * dv, dv);
                            VectorMap<T>(pdw + band.slot(row), len).noalias() = values * dout;
                            MatrixMap<T>(acc + band.key_row(row) * dv, len, dv).noalias() +=
                                ConstVectorMap<T>(pw + band.slot(row), len) * dout.transpose();
                        });
                });
                g.add(0, dw);
                g.add(1, dvalues);
            });
    }
    return out;
}

Tensor local_band_to_dense(const Tensor& band_values, const Tensor& window_start, std::int64_t tk) {
    constexpr const char* op = "local_band_to_dense";
    AG_CHECK(band_values.defined(), ValueError, "{}: undefined tensor argument", op);
    AG_CHECK(band_values.dim() == 3, ShapeError, "{}: expected band [N, Tq, W], got {}", op,
             band_values.shape());
    AG_CHECK(tk >= 0, ValueError, "{}: Tk must be >= 0, got {}", op, tk);
    const std::int64_t width = band_values.size(2);
    detail::check_window(window_start, band_values.size(0), band_values.size(1), width, op);
    const Band band = band_of(window_start, band_values.size(0), band_values.size(1), tk, width);
    Tensor out = zeros({band.n, band.tq, tk}, {.dtype = band_values.dtype()});
    dispatch_floating(band_values.dtype(), op, [&]<class T>(T) {
        const T* pb = band_values.data<T>();
        T* po = out.data<T>();
        for (std::int64_t row = 0; row < band.rows(); ++row) {
            const std::int64_t lo = band.window.lo(row), hi = band.window.hi(row);
            if (hi > lo) std::copy(pb + band.slot(row), pb + band.slot(row) + (hi - lo), po + row * tk + lo);
        }
    });
    if (autograd::needs_record({&band_values})) {
        autograd::record(
            op, {band_values}, out, [window_start, band](const Tensor& dy, autograd::Gradients& g) {
                // dband[t, j] = ddense[t, s_j] (0 out of range)
                Tensor db = zeros({band.n, band.tq, band.window.width}, {.dtype = dy.dtype()});
                dispatch_floating(dy.dtype(), "local_band_to_dense backward", [&]<class T>(T) {
                    const T* pd = dy.data<T>();
                    T* pdb = db.data<T>();
                    for (std::int64_t row = 0; row < band.rows(); ++row) {
                        const std::int64_t lo = band.window.lo(row), hi = band.window.hi(row);
                        if (hi > lo)
                            std::copy(pd + row * band.tk + lo, pd + row * band.tk + hi, pdb + band.slot(row));
                    }
                });
                g.add(0, db);
            });
    }
    return out;
}

}  // namespace attograd

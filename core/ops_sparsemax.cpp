// Sparsemax: the Euclidean projection onto the probability simplex, with exact zeros.
#include "core/ops_sparsemax.hpp"

#include "core/autograd.hpp"
#include "core/detail/parallel.hpp"
#include "core/detail/scratch.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace attograd {
namespace {

// A tensor seen as rows along one axis: element k of row (o, r) sits at
// o * n * inner + k * inner + r.
struct Rows {
    std::int64_t outer = 1, n = 1, inner = 1;
    std::int64_t count() const { return outer * inner; }
    std::int64_t base(std::int64_t row) const { return (row / inner) * n * inner + row % inner; }
};

Rows rows_of(const Shape& shape, std::int64_t axis) {
    Rows r;
    for (std::int64_t d = 0; d < static_cast<std::int64_t>(shape.size()); ++d) {
        const std::int64_t size = shape[static_cast<std::size_t>(d)];
        if (d < axis) r.outer *= size;
        if (d == axis) r.n = size;
        if (d > axis) r.inner *= size;
    }
    return r;
}

// One row: p_i = max(x_i - tau, 0), tau from the sorted finite entries (Martins & Astudillo,
// Algorithm 1): k = max{k : 1 + k z_(k) > sum_{j <= k} z_(j)}, tau = (sum_{j <= k} z_(j) - 1) / k.
template <class T>
void sparsemax_row(const T* x, T* p, std::int64_t n, std::int64_t stride, std::vector<T>& sorted) {
    sorted.clear();
    for (std::int64_t i = 0; i < n; ++i)
        if (x[i * stride] != -std::numeric_limits<T>::infinity()) sorted.push_back(x[i * stride]);
    if (sorted.empty()) {
        for (std::int64_t i = 0; i < n; ++i) p[i * stride] = T(0);
        return;
    }
    std::sort(sorted.begin(), sorted.end(), std::greater<T>());
    // Sparsemax is shift-invariant: work with z = x - max (so 1 + k z_(k) is not lost against
    // large x), accumulating in double (float32 sums of 1e5 entries drift).
    const double top = static_cast<double>(sorted[0]);
    double cumulative = 0, tau_sum = 0;
    std::size_t support = 1;
    for (std::size_t k = 0; k < sorted.size(); ++k) {
        const double z = static_cast<double>(sorted[k]) - top;
        cumulative += z;
        if (1.0 + static_cast<double>(k + 1) * z > cumulative) {
            support = k + 1;
            tau_sum = cumulative;
        }
    }
    const double tau = (tau_sum - 1.0) / static_cast<double>(support);
    for (std::int64_t i = 0; i < n; ++i)
        p[i * stride] = static_cast<T>(std::max(static_cast<double>(x[i * stride]) - top - tau, 0.0));
}

// One row's backward (n elements `stride` apart): p the row's sparsemax, dy its gradient ->
//   dx_i = s_i (dy_i - sum_{j in S} dy_j / |S|), S = support of p, s_i = [p_i > 0]
template <class T>
void sparsemax_backward_row(const T* p, const T* dy, T* dx, std::int64_t n, std::int64_t stride) {
    T total = 0;
    std::int64_t support = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        if (p[i * stride] > T(0)) {
            total += dy[i * stride];
            ++support;
        }
    }
    const T mean = support > 0 ? total / static_cast<T>(support) : T(0);
    for (std::int64_t i = 0; i < n; ++i) dx[i * stride] = p[i * stride] > T(0) ? dy[i * stride] - mean : T(0);
}

}  // namespace

Tensor sparsemax(const Tensor& x, std::int64_t axis) {
    AG_CHECK(x.defined(), ValueError, "sparsemax: undefined tensor argument");
    AG_CHECK(x.dim() > 0, IndexError, "sparsemax: axis {} given for a 0-d tensor", axis);
    const std::int64_t a = normalize_axis(axis, x.dim(), "sparsemax");
    const Rows rows = rows_of(x.shape(), a);
    Tensor out = empty(x.shape(), {.dtype = x.dtype()});
    dispatch_floating(x.dtype(), "sparsemax", [&]<class T>(T) {
        const T* px = x.data<T>();
        const std::int64_t n = x.numel();  // hoisted: numel() walks the shape
        for (std::int64_t i = 0; i < n; ++i)
            AG_CHECK(!std::isnan(px[i]) && px[i] != std::numeric_limits<T>::infinity(), ValueError,
                     "sparsemax: input {} holds NaN or +inf", x.shape());
        T* po = out.data<T>();
        const int threads = detail::threads_for(rows.count() * rows.n, detail::kMinParallelWork);
        detail::parallel_for(rows.count(), threads, [&](std::int64_t row) {
            thread_local detail::Scratch<T> sorted;  // each thread's scratch, kept between rows
            const std::int64_t base = rows.base(row);
            sparsemax_row(px + base, po + base, rows.n, rows.inner, sorted.buffer);
        });
    });
    if (autograd::needs_record({&x})) {
        autograd::record("sparsemax", {x}, out, [p = out, rows](const Tensor& dy, autograd::Gradients& g) {
            Tensor dx = empty(dy.shape(), {.dtype = dy.dtype()});
            dispatch_floating(dy.dtype(), "sparsemax backward", [&]<class T>(T) {
                const T* pp = p.data<T>();
                const T* pd = dy.data<T>();
                T* pdx = dx.data<T>();
                const int threads = detail::threads_for(rows.count() * rows.n, detail::kMinParallelWork);
                detail::parallel_for(rows.count(), threads, [&](std::int64_t row) {
                    const std::int64_t base = rows.base(row);
                    sparsemax_backward_row(pp + base, pd + base, pdx + base, rows.n, rows.inner);
                });
            });
            g.add(0, dx);
        });
    }
    return out;
}

}  // namespace attograd

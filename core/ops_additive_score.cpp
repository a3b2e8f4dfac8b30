// Additive (Bahdanau) attention scores: v^T tanh(W x + U q), fused, for all pairs or a band.
#include "core/ops_additive_score.hpp"

#include "core/autograd.hpp"
#include "core/detail/chunks.hpp"
#include "core/detail/key_window.hpp"
#include "core/detail/parallel.hpp"
#include "core/detail/parallel_rows.hpp"
#include "core/detail/scratch.hpp"
#include "core/ops_local_attention.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <vector>

namespace attograd {
namespace {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using RowVector = Eigen::Matrix<T, 1, Eigen::Dynamic>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

struct Dims {
    std::int64_t n, tq, tk, h;
};

// z = tanh(uq[row] + wx[lo:hi]) -> [hi - lo, H], into a per-thread scratch buffer. In chunks
// (core/detail/chunks.hpp): Eigen's packet tanh, with each element's bits independent of its
// block's size and alignment, so that a decode step's block (one query) gives the bits of the
// whole sequence's.
template <class T>
Eigen::Map<RowMatrix<T>> tanh_block(const T* uq, const T* wx, const Dims& d, std::int64_t row,
                                    std::int64_t lo, std::int64_t hi) {
    thread_local detail::Scratch<T> scratch;
    T* block = scratch.at_least(static_cast<std::size_t>((hi - lo) * d.h));
    const T* query = uq + row * d.h;
    for (std::int64_t j = 0; j < hi - lo; ++j) {
        const T* key = wx + ((row / d.tq) * d.tk + lo + j) * d.h;
        detail::for_chunks<T>(d.h, [&](std::int64_t i, std::int64_t n) {
            detail::store_chunk<T>((detail::load_chunk(key + i, n) + detail::load_chunk(query + i, n)).tanh(),
                                   block + j * d.h + i, n);
        });
    }
    return Eigen::Map<RowMatrix<T>>(block, hi - lo, d.h);
}

// scores[row, j] = v . tanh(uq[row] + wx[first + j]); 0 in out-of-range slots.
template <class T>
void additive_forward(const T* uq, const T* wx, const T* v, T* out, const Dims& d,
                      const detail::KeyWindow& keys) {
    const std::int64_t rows = d.n * d.tq;
    const Eigen::Map<const Vector<T>> vv(v, d.h);
    const int threads = detail::threads_for(rows * keys.width * d.h, detail::kMinParallelTranscendentalWork);
    detail::parallel_for(rows, threads, [&](std::int64_t row) {
        T* o = out + row * keys.width;
        std::fill(o, o + keys.width, T(0));
        const std::int64_t lo = keys.lo(row), hi = keys.hi(row);
        if (hi <= lo) return;
        const auto z = tanh_block(uq, wx, d, row, lo, hi);
        Eigen::Map<Vector<T>>(o + (lo - keys.first(row)), hi - lo).noalias() = z * vv;
    });
}

// One row t of the backward, with z = tanh(uq[t] + wx[s]) and g = dscores[t, s]:
// d pre = g v (1 - z^2); duq[t] = sum_s d pre; dwx[s] += d pre; dv += z^T g.
template <class T>
void additive_row_backward(const T* uq, const T* wx, const T* v, const T* dscores, T* duq, T* dwx, T* dv,
                           const Dims& d, const detail::KeyWindow& keys, std::int64_t row) {
    const std::int64_t lo = keys.lo(row), hi = keys.hi(row);
    if (hi <= lo) return;
    auto z = tanh_block(uq, wx, d, row, lo, hi);
    const Eigen::Map<const Vector<T>> g(dscores + row * keys.width + (lo - keys.first(row)), hi - lo);
    Eigen::Map<RowVector<T>>(dv, d.h).noalias() += g.transpose() * z;
    // z becomes d pre in place: g_j v_h (1 - z_jh^2)
    z.array() = T(1) - z.array().square();
    z.array().rowwise() *= Eigen::Map<const RowVector<T>>(v, d.h).array();
    z.array().colwise() *= g.array();
    Eigen::Map<RowVector<T>>(duq + row * d.h, d.h) = z.colwise().sum();
    Eigen::Map<RowMatrix<T>>(dwx + ((row / d.tq) * d.tk + lo) * d.h, hi - lo, d.h) += z;
}

// duq and dv are written, dwx is added into (the keys' gradient buffer). The rows of one batch
// element scatter into its own keys only, so blocks of whole batch elements write disjoint parts
// of dwx in place and only dv is summed from per-block partials; with fewer batch elements than
// blocks, for_rows_scattering gives the blocks private copies. Either way the blocks depend on
// the work alone and are summed in block order: the same bits on any thread count.
template <class T>
void additive_backward(const T* uq, const T* wx, const T* v, const T* dscores, T* duq, T* dwx, T* dv,
                       const Dims& d, const detail::KeyWindow& keys) {
    const std::int64_t rows = d.n * d.tq;
    const std::int64_t wx_size = d.n * d.tk * d.h;
    const std::int64_t blocks =
        detail::blocks_for(rows * keys.width * d.h, detail::kMinParallelTranscendentalWork);
    std::fill(duq, duq + rows * d.h, T(0));
    const auto row_backward = [&](std::int64_t row, T* dwx_to, T* dv_to) {
        additive_row_backward(uq, wx, v, dscores, duq, dwx_to, dv_to, d, keys, row);
    };
    if (d.n >= blocks) {
        std::vector<T> dv_parts(static_cast<std::size_t>(blocks * d.h), T(0));
        detail::parallel_for(
            blocks, detail::available_threads(),
            [&](std::int64_t block) {
                for (std::int64_t row = d.n * block / blocks * d.tq; row < d.n * (block + 1) / blocks * d.tq;
                     ++row)
                    row_backward(row, dwx, dv_parts.data() + block * d.h);
            },
            detail::Schedule::Dynamic);
        std::fill(dv, dv + d.h, T(0));
        for (std::int64_t block = 0; block < blocks; ++block)
            for (std::int64_t i = 0; i < d.h; ++i)
                dv[i] += dv_parts[static_cast<std::size_t>(block * d.h + i)];
        return;
    }
    std::vector<T> acc(static_cast<std::size_t>(wx_size + d.h), T(0));  // dwx then dv
    detail::for_rows_scattering(rows, blocks, acc.data(), wx_size + d.h,
                                [&](std::int64_t row, T* a) { row_backward(row, a, a + wx_size); });
    for (std::int64_t i = 0; i < wx_size; ++i) dwx[i] += acc[static_cast<std::size_t>(i)];
    std::copy(acc.begin() + wx_size, acc.end(), dv);
}

Tensor additive_impl(const Tensor& uq, const Tensor& wx, const Tensor& v, const Tensor& window_start,
                     std::int64_t width, const char* op) {
    AG_CHECK(uq.defined() && wx.defined() && v.defined(), ValueError, "{}: undefined tensor argument", op);
    AG_CHECK(uq.dim() == 3 && wx.dim() == 3 && v.dim() == 1, ShapeError,
             "{}: expected uq [N, Tq, H], wx [N, Tk, H], v [H], got {}, {}, {}", op, uq.shape(), wx.shape(),
             v.shape());
    AG_CHECK(uq.size(0) == wx.size(0) && uq.size(2) == wx.size(2) && v.size(0) == uq.size(2), ShapeError,
             "{}: expected uq [N, Tq, H], wx [N, Tk, H], v [H] with equal N and H, got {}, {}, {}", op,
             uq.shape(), wx.shape(), v.shape());
    AG_CHECK(uq.dtype() == wx.dtype() && uq.dtype() == v.dtype(), DTypeError, "{}: dtypes differ: {}, {}, {}",
             op, uq.dtype(), wx.dtype(), v.dtype());
    const Dims d{uq.size(0), uq.size(1), wx.size(1), uq.size(2)};
    const bool local = window_start.defined();
    if (local) {
        detail::check_window(window_start, d.n, d.tq, width, op);
        detail::check_band_width(width, d.tk, op);
    }
    const std::int64_t slots = local ? width : d.tk;
    Tensor out = empty({d.n, d.tq, slots}, {.dtype = uq.dtype()});
    auto range = [window_start, slots, tk = d.tk] {
        return detail::KeyWindow{window_start.defined() ? window_start.data<std::int64_t>() : nullptr, slots,
                                 tk};
    };
    dispatch_floating(uq.dtype(), op, [&]<class T>(T) {
        additive_forward(uq.data<T>(), wx.data<T>(), v.data<T>(), out.data<T>(), d, range());
    });
    if (autograd::needs_record({&uq, &wx, &v})) {
        autograd::record(
            op, {uq, wx, v}, out, [uq, wx, v, d, range](const Tensor& dy, autograd::Gradients& g) {
                Tensor duq = empty(uq.shape(), {.dtype = uq.dtype()});
                // the keys serve every query step of a decoder: add into their gradient
                Tensor dwx = g.needs(1) ? g.accumulator(1) : zeros(wx.shape(), {.dtype = wx.dtype()});
                Tensor dv = empty(v.shape(), {.dtype = v.dtype()});
                dispatch_floating(dy.dtype(), "additive_score backward", [&]<class T>(T) {
                    additive_backward(uq.data<T>(), wx.data<T>(), v.data<T>(), dy.data<T>(), duq.data<T>(),
                                      dwx.data<T>(), dv.data<T>(), d, range());
                });
                g.add(0, duq);
                g.add(2, dv);
            });
    }
    return out;
}

}  // namespace

Tensor additive_score(const Tensor& uq, const Tensor& wx, const Tensor& v) {
    return additive_impl(uq, wx, v, Tensor(), 0, "additive_score");
}

Tensor local_additive_score(const Tensor& uq, const Tensor& wx, const Tensor& v, const Tensor& window_start,
                            std::int64_t width) {
    AG_CHECK(window_start.defined(), ValueError, "local_additive_score: window_start is undefined");
    return additive_impl(uq, wx, v, window_start, width, "local_additive_score");
}

}  // namespace attograd

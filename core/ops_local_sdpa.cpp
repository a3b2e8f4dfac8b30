// Fused local attention: one pass over each query's band of keys, heads read in place.
#include "core/ops_local_sdpa.hpp"

#include "core/autograd.hpp"
#include "core/detail/fused_attention_common.hpp"
#include "core/detail/gemm.hpp"
#include "core/detail/key_window.hpp"
#include "core/detail/parallel.hpp"
#include "core/detail/scratch.hpp"
#include "core/ops_attention.hpp"
#include "core/ops_local_attention.hpp"

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
    /// Threads worth starting for one call (1: the calling thread alone).
    int threads() const {
        return blocks() > 1
                   ? detail::threads_for(blocks() * tq * width() * (d + dv), detail::kMinParallelWork)
                   : 1;
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
    thread_local detail::Scratch<T> buffer;
    return buffer.at_least(static_cast<std::size_t>(n));
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

// Queries per GEMM block (measured with bench_local_attention and bench_train_step local,
// bench/README.md): for D = 8 a block of 32 queries sees 32 + 2D = 48 keys.
inline constexpr std::int64_t kQueryBlock = 32;

// The keys [lo, hi) queries [t0, t1) of sequence n see together (lo >= hi: none).
struct KeyRange {
    std::int64_t lo = 0, hi = 0;
    std::int64_t size() const { return hi - lo; }
};

KeyRange block_keys(const LocalGeometry& g, std::int64_t n, std::int64_t t0, std::int64_t t1) {
    KeyRange r{g.tk, 0};
    for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t row = n * g.tq + t, lo = g.window.lo(row), hi = g.window.hi(row);
        if (hi <= lo) continue;
        r.lo = std::min(r.lo, lo);
        r.hi = std::max(r.hi, hi);
    }
    return r;
}

// A block runs on GEMMs when its queries' windows overlap enough: the sliding windows of local-m
// give nq + W - 1 keys (about 2 nq + W when Tk = 2 Tq). Windows placed anywhere (local-p's
// predicted centres far apart) would make the block's key range, and the GEMMs' wasted
// out-of-band products, as long as Tk: those blocks keep the per-query loops.
bool gemm_block(const LocalGeometry& g, std::int64_t nq, const KeyRange& keys) {
    return keys.size() > 0 && keys.size() <= 2 * nq + g.width();
}

// True when every element of the rows x cols block (rows ld apart) is finite. The GEMMs multiply
// every key of a block's range with every query, so a NaN or inf outside some query's window
// would leak into that query's results through a 0 * inf; such heads keep the per-query loops,
// which touch in-band products only (a NaN stays in the rows whose band holds it).
template <class T>
bool finite_block(const T* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    // x * 0 is 0 for finite x, NaN for NaN and +-inf; 16 lanes kept in a register across rows
    constexpr int kLanes = 16;
    T lanes[kLanes] = {};
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* row = p + r * ld;
        std::int64_t c = 0;
        for (; c + kLanes <= cols; c += kLanes)
#pragma omp simd
            for (int l = 0; l < kLanes; ++l) lanes[l] += row[c + l] * T(0);
        for (; c < cols; ++c) lanes[0] += row[c] * T(0);
    }
    T acc = 0;
    for (const T x : lanes) acc += x;
    return acc == T(0);
}

// Normalises one row: ps (indexed by key) holds the masked scores over [lo, hi) and gets the
// probabilities (masked slots exactly 0, a fully masked row all 0, a NaN score a NaN row but
// where the score is -inf, as the global kernel); returns the weights (indexed by key): the
// probabilities, or them times the factor.
template <class T>
const T* normalise_row(const ForwardArgs<T>& a, std::int64_t row, std::int64_t w, std::int64_t first,
                       std::int64_t lo, std::int64_t hi, T* ps) {
    const T neg_inf = -std::numeric_limits<T>::infinity();
    const T* m = a.mask != nullptr ? a.mask + row * w - first : nullptr;  // indexed by key s
    T top = neg_inf;
    bool nan = false;  // a NaN score makes the whole row NaN, as a softmax does
    for (std::int64_t s = lo; s < hi; ++s) {
        top = std::max(top, ps[s]);
        nan |= std::isnan(ps[s]);
    }
    if (top == neg_inf && !nan) {  // every slot masked: zero weights, zero output
        std::fill(ps + lo, ps + hi, T(0));
        return ps;  // with a factor, the weights are already 0
    }
    if (nan) {
        for (std::int64_t s = lo; s < hi; ++s)
            ps[s] = ps[s] == neg_inf ? T(0) : std::numeric_limits<T>::quiet_NaN();
    } else {
        softmax_in_place(ps, lo, hi, top, m);
    }
    if (a.factor == nullptr) return ps;
    T* wr = a.weights + row * w - first;
    const T* f = a.factor + row * w - first;
    for (std::int64_t s = lo; s < hi; ++s) wr[s] = ps[s] * f[s];
    return wr;
}

// Queries [t0, t1) of sequence n one by one: dot products over each band, then the weighted
// sum of values (for blocks whose windows do not overlap, and heads holding NaN or inf).
template <int kD, class T>
void forward_rows(const LocalGeometry& g, const ForwardArgs<T>& a, std::int64_t n, std::int64_t t0,
                  std::int64_t t1) {
    const T scale = static_cast<T>(g.scale);
    const std::int64_t w = g.width(), b = n / g.heads, h = n % g.heads;
    const T* kb = a.k + g.k.at(b, h);
    const T* vb = a.v + g.v.at(b, h);
    detail::zero_block(a.out + g.out.at(b, h) + t0 * g.out.row, t1 - t0, g.dv, g.out.row);
    for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t row = n * g.tq + t, lo = g.window.lo(row), hi = g.window.hi(row);
        const std::int64_t first = g.window.first(row);
        if (hi <= lo) continue;
        const T* qt = a.q + g.q.at(b, h) + t * g.q.row;
        const T* m = a.mask != nullptr ? a.mask + row * w - first : nullptr;
        T* ps = a.probs + row * w - first;  // indexed by key s
        for (std::int64_t s = lo; s < hi; ++s)
            ps[s] = scale * dot<kD>(qt, kb + s * g.k.row, g.d) + (m != nullptr ? m[s] : T(0));
        const T* ws = normalise_row(a, row, w, first, lo, hi, ps);
        T* o = a.out + g.out.at(b, h) + t * g.out.row;
        for (std::int64_t s = lo; s < hi; ++s) axpy<kD>(ws[s], vb + s * g.v.row, o, g.dv);
    }
}

// Queries [t0, t1) of sequence n as one block over the keys [keys.lo, keys.hi) they see: scores
// S = Q K^T [nq, L] by one GEMM, each row masked to its band and normalised, then out = P V by
// one GEMM with P's entries outside each band exactly 0 (products through the GEMM
// layer).
template <class T>
void forward_block(const LocalGeometry& g, const ForwardArgs<T>& a, std::int64_t n, std::int64_t t0,
                   std::int64_t t1, const KeyRange& keys) {
    const T scale = static_cast<T>(g.scale);
    const std::int64_t w = g.width(), b = n / g.heads, h = n % g.heads, nq = t1 - t0, len = keys.size();
    T* sc = row_scratch<T>(nq * len);
    detail::gemm<T>(nq, len, g.d, a.q + g.q.at(b, h) + t0 * g.q.row, g.q.row, false,
                    a.k + g.k.at(b, h) + keys.lo * g.k.row, g.k.row, true, sc, len, false);
    for (std::int64_t r = 0; r < nq; ++r) {
        const std::int64_t row = n * g.tq + t0 + r, lo = g.window.lo(row), hi = g.window.hi(row);
        const std::int64_t first = g.window.first(row);
        T* sr = sc + r * len - keys.lo;  // row r of S, indexed by key s
        if (hi <= lo) {
            std::fill(sc + r * len, sc + (r + 1) * len, T(0));
            continue;
        }
        const T* m = a.mask != nullptr ? a.mask + row * w - first : nullptr;
        T* ps = a.probs + row * w - first;
        for (std::int64_t s = lo; s < hi; ++s) ps[s] = scale * sr[s] + (m != nullptr ? m[s] : T(0));
        const T* ws = normalise_row(a, row, w, first, lo, hi, ps);
        // S's row becomes P's: the weights in the band, 0 around it
        std::fill(sc + r * len, sr + lo, T(0));
        std::copy(ws + lo, ws + hi, sr + lo);
        std::fill(sr + hi, sc + (r + 1) * len, T(0));
    }
    detail::gemm<T>(nq, g.dv, len, sc, len, false, a.v + g.v.at(b, h) + keys.lo * g.v.row, g.v.row, false,
                    a.out + g.out.at(b, h) + t0 * g.out.row, g.out.row, false);
}

// Cuts the queries of sequence n into blocks of kQueryBlock and runs them in order: gemms(t0, t1,
// keys) on the blocks that run on GEMMs (gemm_block, and only when the head is `finite`),
// rows(t0, t1) on the others.
template <class Gemms, class Rows>
void for_query_blocks(const LocalGeometry& g, std::int64_t n, bool finite, Gemms&& gemms, Rows&& rows) {
    for (std::int64_t t0 = 0; t0 < g.tq; t0 += kQueryBlock) {
        const std::int64_t t1 = std::min(g.tq, t0 + kQueryBlock);
        const KeyRange keys = block_keys(g, n, t0, t1);
        if (finite && gemm_block(g, t1 - t0, keys))
            gemms(t0, t1, keys);
        else
            rows(t0, t1);
    }
}

// Per (batch, head) sequence, blocks of kQueryBlock queries in order. Every band slot of probs
// and weights is written (0 outside the keys).
template <int kD, class T>
void forward_kernel(const LocalGeometry& g, const ForwardArgs<T>& a) {
    const std::int64_t w = g.width();
    detail::parallel_for(g.blocks(), g.threads(), [&](std::int64_t n) {
        const std::int64_t b = n / g.heads, h = n % g.heads;
        std::fill(a.probs + n * g.tq * w, a.probs + (n + 1) * g.tq * w, T(0));
        if (a.weights != a.probs) std::fill(a.weights + n * g.tq * w, a.weights + (n + 1) * g.tq * w, T(0));
        const bool finite = finite_block(a.q + g.q.at(b, h), g.tq, g.d, g.q.row) &&
                            finite_block(a.k + g.k.at(b, h), g.tk, g.d, g.k.row) &&
                            finite_block(a.v + g.v.at(b, h), g.tk, g.dv, g.v.row);
        for_query_blocks(
            g, n, finite,
            [&](std::int64_t t0, std::int64_t t1, const KeyRange& keys) {
                forward_block(g, a, n, t0, t1, keys);
            },
            [&](std::int64_t t0, std::int64_t t1) { forward_rows<kD>(g, a, n, t0, t1); });
    });
}

// Gradients of one call; any of dout, dweights, dq, dk, dv, dfactor may be null. Each block
// zeroes its parts of dq, dk, dv and adds into them; dfactor must be zero on entry (only the
// in-range slots are written).
template <class T>
struct BackwardArgs {
    const T *q, *k, *v, *factor, *probs, *weights, *dout, *dweights;
    T *dq, *dk, *dv, *dfactor;
};

// dL/d(score) of one row, times the scale: dps (indexed by key) holds dL/d(weights) over
// [lo, hi) on entry and gets ds = scale * p * (dp - sum(p * dp)), dp = dL/d(weights) * factor;
// dfactor gets dL/d(weights) * p.
template <class T>
void score_gradient_row(const LocalGeometry& g, const BackwardArgs<T>& a, std::int64_t row,
                        std::int64_t first, std::int64_t lo, std::int64_t hi, T* dps) {
    const std::int64_t w = g.width();
    const T* ps = a.probs + row * w - first;
    if (a.dweights != nullptr) {
        const T* dw = a.dweights + row * w - first;
        for (std::int64_t s = lo; s < hi; ++s) dps[s] += dw[s];
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
    const T scale = static_cast<T>(g.scale);
    for (std::int64_t s = lo; s < hi; ++s) dps[s] = scale * ps[s] * (dps[s] - rowsum);
}

// Queries [t0, t1) of sequence n one by one (see forward_rows).
template <int kD, class T>
void backward_rows(const LocalGeometry& g, const BackwardArgs<T>& a, std::int64_t n, std::int64_t t0,
                   std::int64_t t1) {
    const std::int64_t w = g.width(), b = n / g.heads, h = n % g.heads;
    T* dp = row_scratch<T>(w);
    for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t row = n * g.tq + t, lo = g.window.lo(row), hi = g.window.hi(row);
        const std::int64_t first = g.window.first(row);
        if (hi <= lo) continue;
        const T* ws = a.weights + row * w - first;
        const T* dO = a.dout != nullptr ? a.dout + g.out.at(b, h) + t * g.out.row : nullptr;
        T* dps = dp - first;
        for (std::int64_t s = lo; s < hi; ++s)
            dps[s] = dO != nullptr ? dot<kD>(dO, a.v + g.v.at(b, h) + s * g.v.row, g.dv) : T(0);
        score_gradient_row(g, a, row, first, lo, hi, dps);
        const T* qt = a.q + g.q.at(b, h) + t * g.q.row;
        T* dqt = a.dq != nullptr ? a.dq + g.q.at(b, h) + t * g.q.row : nullptr;
        for (std::int64_t s = lo; s < hi; ++s) {
            if (dqt != nullptr) axpy<kD>(dps[s], a.k + g.k.at(b, h) + s * g.k.row, dqt, g.d);
            if (a.dk != nullptr) axpy<kD>(dps[s], qt, a.dk + g.k.at(b, h) + s * g.k.row, g.d);
            if (dO != nullptr && a.dv != nullptr)
                axpy<kD>(ws[s], dO, a.dv + g.v.at(b, h) + s * g.v.row, g.dv);
        }
    }
}

// Queries [t0, t1) of sequence n as one block (see forward_block): dP = dO V^T by one GEMM, the
// score gradients dS on each band (0 around it), then dQ = dS K, dK += dS^T Q and dV += P^T dO
// by one GEMM each over the block's keys.
template <class T>
void backward_block(const LocalGeometry& g, const BackwardArgs<T>& a, std::int64_t n, std::int64_t t0,
                    std::int64_t t1, const KeyRange& keys) {
    const std::int64_t w = g.width(), b = n / g.heads, h = n % g.heads, nq = t1 - t0, len = keys.size();
    const bool with_dv = a.dout != nullptr && a.dv != nullptr;
    T* ds = row_scratch<T>(2 * nq * len);  // dP, then dS, [nq, L]
    T* pw = ds + nq * len;                 // the weights P [nq, L] for dV
    const T* dob = a.dout != nullptr ? a.dout + g.out.at(b, h) + t0 * g.out.row : nullptr;
    const T* kr = a.k + g.k.at(b, h) + keys.lo * g.k.row;
    const T* qb = a.q + g.q.at(b, h) + t0 * g.q.row;
    if (dob != nullptr)
        detail::gemm<T>(nq, len, g.dv, dob, g.out.row, false, a.v + g.v.at(b, h) + keys.lo * g.v.row, g.v.row,
                        true, ds, len, false);
    else
        std::fill(ds, ds + nq * len, T(0));
    for (std::int64_t r = 0; r < nq; ++r) {
        const std::int64_t row = n * g.tq + t0 + r, lo = g.window.lo(row), hi = g.window.hi(row);
        const std::int64_t first = g.window.first(row);
        T* dsr = ds + r * len - keys.lo;  // indexed by key s; [lo, hi) lies in the block's keys
        T* pr = pw + r * len - keys.lo;
        if (hi <= lo) {  // no keys: no gradient
            std::fill(ds + r * len, ds + (r + 1) * len, T(0));
            if (with_dv) std::fill(pw + r * len, pw + (r + 1) * len, T(0));
            continue;
        }
        score_gradient_row(g, a, row, first, lo, hi, dsr);
        std::fill(ds + r * len, dsr + lo, T(0));
        std::fill(dsr + hi, ds + (r + 1) * len, T(0));
        if (with_dv) {
            const T* ws = a.weights + row * w - first;
            std::fill(pw + r * len, pr + lo, T(0));
            std::copy(ws + lo, ws + hi, pr + lo);
            std::fill(pr + hi, pw + (r + 1) * len, T(0));
        }
    }
    if (a.dq != nullptr)
        detail::gemm<T>(nq, g.d, len, ds, len, false, kr, g.k.row, false, a.dq + g.q.at(b, h) + t0 * g.q.row,
                        g.q.row, false);
    if (a.dk != nullptr)
        detail::gemm<T>(len, g.d, nq, ds, len, true, qb, g.q.row, false,
                        a.dk + g.k.at(b, h) + keys.lo * g.k.row, g.k.row, true);
    if (with_dv)
        detail::gemm<T>(len, g.dv, nq, pw, len, true, dob, g.out.row, false,
                        a.dv + g.v.at(b, h) + keys.lo * g.v.row, g.v.row, true);
}

// Per (batch, head) sequence, blocks of kQueryBlock queries in order: the overlapping key ranges
// of consecutive blocks add into dK and dV in one fixed order, on any thread count.
template <int kD, class T>
void backward_kernel(const LocalGeometry& g, const BackwardArgs<T>& a) {
    detail::parallel_for(g.blocks(), g.threads(), [&](std::int64_t n) {
        const std::int64_t b = n / g.heads, h = n % g.heads;
        if (a.dq != nullptr) detail::zero_block(a.dq + g.q.at(b, h), g.tq, g.d, g.q.row);
        if (a.dk != nullptr) detail::zero_block(a.dk + g.k.at(b, h), g.tk, g.d, g.k.row);
        if (a.dv != nullptr) detail::zero_block(a.dv + g.v.at(b, h), g.tk, g.dv, g.v.row);
        const bool finite =
            finite_block(a.q + g.q.at(b, h), g.tq, g.d, g.q.row) &&
            finite_block(a.k + g.k.at(b, h), g.tk, g.d, g.k.row) &&
            finite_block(a.v + g.v.at(b, h), g.tk, g.dv, g.v.row) &&
            (a.dout == nullptr || finite_block(a.dout + g.out.at(b, h), g.tq, g.dv, g.out.row));
        for_query_blocks(
            g, n, finite,
            [&](std::int64_t t0, std::int64_t t1, const KeyRange& keys) {
                backward_block(g, a, n, t0, t1, keys);
            },
            [&](std::int64_t t0, std::int64_t t1) { backward_rows<kD>(g, a, n, t0, t1); });
    });
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

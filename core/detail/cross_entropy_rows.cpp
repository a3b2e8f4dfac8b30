// Cross-entropy rows of contiguous classes on Eigen's SIMD packets.
#include "core/detail/cross_entropy_rows.hpp"

#include "core/detail/gcc12_avx512_warning.hpp"
#include "core/detail/parallel.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attograd::detail {
namespace {

// Rows [first, first + count) (count <= the packet size): for row r with shift m_r (its max,
// NaN skipped; 0 for an all -inf row) and total z_r = sum_c exp(x_rc - m_r), -log p_rc = log z_r
// - (x_rc - m_r) (log 0 read as 0, as log_softmax), the loss is (1 - eps)(-log p_rt) + eps / C
// sum_c (-log p_rc) (PyTorch's formula; 0 for an ignored target), and the gradient row factor,
// when `grad` is not null, softmax(x_r) - (1 - eps) onehot(t) - eps / C (0 for an ignored target). The logs
// of a group share one packet log: libm's scalar logf took ~40 % of a 16-class row.
template <class T>
void class_row_group(const T* x, const ClassRows& c, std::int64_t first, std::int64_t count, T* losses,
                     T* grad) {
    using namespace Eigen::internal;
    using Packet = typename packet_traits<T>::type;
    constexpr std::int64_t N = packet_traits<T>::size;
    constexpr T kNegInf = -std::numeric_limits<T>::infinity();
    const std::int64_t n = c.classes, body = n / N * N, rest = n - body;
    const T eps = static_cast<T>(c.label_smoothing), per_class = eps / static_cast<T>(n);
    T shift[N], total[N];
    for (std::int64_t r = 0; r < count; ++r) {
        const T* row = x + (first + r) * n;
        T pad[N];  // the last partial packet, padded with -inf
        if (rest > 0) {
            std::fill_n(pad, N, kNegInf);
            std::copy_n(row + body, rest, pad);
        }
        const auto packet = [&](std::int64_t k) {
            return k < body ? ploadu<Packet>(row + k) : ploadu<Packet>(pad);
        };
        // Eigen's pmax(a, b) returns a when either is NaN (std::max's rule): the running max
        // first, so a NaN entry is skipped; it then reaches the total
        Packet vmax = pset1<Packet>(kNegInf);
        for (std::int64_t k = 0; k < n; k += N) vmax = pmax(vmax, packet(k));
        const T top = predux_max(vmax);
        shift[r] = top == kNegInf ? T(0) : top;
        const Packet vshift = pset1<Packet>(shift[r]), vneginf = pset1<Packet>(kNegInf);
        Packet vsum = pset1<Packet>(T(0));
        T* g = grad != nullptr ? grad + (first + r) * n : nullptr;
        for (std::int64_t k = 0; k < n; k += N) {
            const Packet xk = packet(k);
            // exactly 0 at -inf (Eigen's exp clamps its argument: exp(-inf) alone is a denormal)
            const Packet e = pandnot(pexp(psub(xk, vshift)), pcmp_eq(xk, vneginf));
            vsum = padd(vsum, e);
            if (g == nullptr) continue;
            if (k < body) {
                pstoreu(g + k, e);
            } else {
                T lanes[N];
                pstoreu(lanes, e);
                std::copy_n(lanes, rest, g + k);
            }
        }
        total[r] = predux(vsum);
    }
    T log_total[N];
    std::fill_n(log_total, N, T(1));
    std::copy_n(total, count, log_total);
    if constexpr (packet_traits<T>::HasLog)
        pstoreu(log_total, plog(ploadu<Packet>(log_total)));
    else
        for (std::int64_t r = 0; r < count; ++r) log_total[r] = std::log(log_total[r]);
    for (std::int64_t r = 0; r < count; ++r) {
        const std::int64_t j = first + r, t = c.targets[j];
        const T* row = x + j * n;
        T* g = grad != nullptr ? grad + j * n : nullptr;
        if (t == c.ignore_index) {
            losses[j] = T(0);
            if (g != nullptr) std::fill_n(g, n, T(0));
            continue;
        }
        // -log p_k = log z - (x_k - m), in this order: m + log z first would round away the
        // loss of a confident row
        const T log_z = total[r] == T(0) ? T(0) : log_total[r];
        T loss = log_z - (row[t] - shift[r]);
        if (eps != T(0)) {
            T smooth = T(0);
            for (std::int64_t k = 0; k < n; ++k) smooth += log_z - (row[k] - shift[r]);
            loss = (T(1) - eps) * loss + per_class * smooth;
        }
        losses[j] = loss;
        if (g == nullptr) continue;
        const T inv = total[r] == T(0) ? T(0) : T(1) / total[r];
        for (std::int64_t k = 0; k < n; ++k) g[k] = g[k] * inv - per_class;
        g[t] -= T(1) - eps;
    }
}

}  // namespace

template <class T>
void cross_entropy_rows(const T* x, const ClassRows& c, T* losses, T* grad) {
    constexpr std::int64_t group = Eigen::internal::packet_traits<T>::size;
    const std::int64_t groups = (c.rows + group - 1) / group;
    parallel_for(groups, threads_for(c.rows * c.classes, kMinParallelTranscendentalWork),
                 [&](std::int64_t i) {
                     class_row_group(x, c, i * group, std::min(group, c.rows - i * group), losses, grad);
                 });
}

template void cross_entropy_rows<float>(const float*, const ClassRows&, float*, float*);
template void cross_entropy_rows<double>(const double*, const ClassRows&, double*, double*);

}  // namespace attograd::detail

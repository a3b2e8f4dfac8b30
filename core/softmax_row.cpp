// Softmax rows on Eigen's SIMD packets: three passes of whole packets per row.
#include "core/softmax_row.hpp"

#include "core/error.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attograd::detail {
namespace {

// Why packets by hand: with Eigen's array expressions a 32-key row took six passes (scale, max,
// a -inf test, exp, sum, normalise), each with its own set-up and alignment peeling, ~20 ns a
// row, 11 % of the small training step; Eigen's rowwise() reductions over a row-major block are
// not vectorised at all (4x slower again). Here a row is three passes of whole packets from the
// row's first element: no scalar steps up to an aligned address, so the sums add in an order
// fixed by n alone, whatever buffer (and thread) holds the row. The last partial packet is
// padded through a small buffer. Eigen picks the packets for the build's CPU (SSE, AVX2,
// AVX-512, NEON); without SIMD exp the rows take the scalar loops below.

// One row of softmax_rows.
template <class T>
void row_softmax(T* row, std::int64_t n, T scale, const T* mask, std::int64_t mask_stride) {
    using namespace Eigen::internal;
    using Packet = typename packet_traits<T>::type;
    constexpr T kNegInf = -std::numeric_limits<T>::infinity();
    const auto score = [&](std::int64_t k) {
        return row[k] * scale + (mask == nullptr ? T(0) : mask[k * mask_stride]);
    };
    if constexpr (!(packet_traits<T>::Vectorizable && packet_traits<T>::HasExp)) {
        T top = kNegInf;
        for (std::int64_t k = 0; k < n; ++k) {
            row[k] = score(k);
            top = row[k] > top ? row[k] : top;
        }
        T sum = 0;
        for (std::int64_t k = 0; k < n; ++k) {
            row[k] = row[k] == kNegInf ? T(0) : std::exp(row[k] - top);
            sum += row[k];
        }
        const T inv = sum == T(0) ? T(0) : T(1) / sum;
        for (std::int64_t k = 0; k < n; ++k) row[k] *= inv;
    } else {
        constexpr std::int64_t N = packet_traits<T>::size;
        const std::int64_t body = n / N * N, rest = n - body;
        T pad[N];  // the last partial packet, padded with -inf (exp gives 0 there)
        // pass 1: x = scale s + m, stored, and the row's max
        const Packet vscale = pset1<Packet>(scale);
        Packet vmax = pset1<Packet>(kNegInf);
        for (std::int64_t k = 0; k < body; k += N) {
            Packet x = pmul(ploadu<Packet>(row + k), vscale);
            if (mask != nullptr)
                x = padd(x, mask_stride == 0 ? pset1<Packet>(mask[0]) : ploadu<Packet>(mask + k));
            pstoreu(row + k, x);
            vmax = pmax(vmax, x);
        }
        if (rest > 0) {
            std::fill_n(pad, N, kNegInf);
            for (std::int64_t k = 0; k < rest; ++k) pad[k] = score(body + k);
            vmax = pmax(vmax, ploadu<Packet>(pad));
        }
        const T top = predux_max(vmax);
        // pass 2: e = exp(x - top), exactly 0 where x = -inf (Eigen's exp clamps its argument,
        // so exp(-inf) alone would be a denormal), and the row's sum
        const Packet vtop = pset1<Packet>(top), vneginf = pset1<Packet>(kNegInf);
        const auto exp_of = [&](const Packet& x) {
            return pandnot(pexp(psub(x, vtop)), pcmp_eq(x, vneginf));
        };
        Packet vsum = pset1<Packet>(T(0));
        for (std::int64_t k = 0; k < body; k += N) {
            const Packet e = exp_of(ploadu<Packet>(row + k));
            pstoreu(row + k, e);
            vsum = padd(vsum, e);
        }
        if (rest > 0) {
            const Packet e = exp_of(ploadu<Packet>(pad));
            vsum = padd(vsum, e);
            pstoreu(pad, e);
            std::copy_n(pad, rest, row + body);
        }
        const T sum = predux(vsum);
        // pass 3: normalise; an all -inf row sums to 0 and stays 0
        const T inv = sum == T(0) ? T(0) : T(1) / sum;
        const Packet vinv = pset1<Packet>(inv);
        for (std::int64_t k = 0; k < body; k += N) pstoreu(row + k, pmul(ploadu<Packet>(row + k), vinv));
        for (std::int64_t k = body; k < n; ++k) row[k] *= inv;
    }
}

// One row of softmax_rows_backward.
template <class T>
void row_backward(const T* p, T* dp, std::int64_t n, T scale) {
    using namespace Eigen::internal;
    using Packet = typename packet_traits<T>::type;
    constexpr std::int64_t N = packet_traits<T>::Vectorizable ? packet_traits<T>::size : 1;
    const std::int64_t body = packet_traits<T>::Vectorizable ? n / N * N : 0;
    T dot = 0;
    if constexpr (packet_traits<T>::Vectorizable) {
        Packet acc = pset1<Packet>(T(0));
        for (std::int64_t k = 0; k < body; k += N)
            acc = pmadd(ploadu<Packet>(dp + k), ploadu<Packet>(p + k), acc);
        dot = predux(acc);
    }
    for (std::int64_t k = body; k < n; ++k) dot += dp[k] * p[k];
    if constexpr (packet_traits<T>::Vectorizable) {
        const Packet vdot = pset1<Packet>(dot), vscale = pset1<Packet>(scale);
        for (std::int64_t k = 0; k < body; k += N)
            pstoreu(dp + k, pmul(pmul(vscale, ploadu<Packet>(p + k)), psub(ploadu<Packet>(dp + k), vdot)));
    }
    for (std::int64_t k = body; k < n; ++k) dp[k] = scale * p[k] * (dp[k] - dot);
}

}  // namespace

template <class T>
void softmax_rows(T* rows, std::int64_t count, std::int64_t n, T scale, const T* mask,
                  std::int64_t mask_row_stride, std::int64_t mask_stride) {
    AG_ASSERT(mask_stride == 0 || mask_stride == 1, "softmax_rows: mask stride must be 0 or 1");
    for (std::int64_t r = 0; r < count; ++r)
        row_softmax(rows + r * n, n, scale, mask != nullptr ? mask + r * mask_row_stride : nullptr,
                    mask_stride);
}

template <class T>
void softmax_rows_backward(const T* p, T* dp, std::int64_t count, std::int64_t n, T scale) {
    for (std::int64_t r = 0; r < count; ++r) row_backward(p + r * n, dp + r * n, n, scale);
}

template void softmax_rows<float>(float*, std::int64_t, std::int64_t, float, const float*, std::int64_t,
                                  std::int64_t);
template void softmax_rows<double>(double*, std::int64_t, std::int64_t, double, const double*, std::int64_t,
                                   std::int64_t);
template void softmax_rows_backward<float>(const float*, float*, std::int64_t, std::int64_t, float);
template void softmax_rows_backward<double>(const double*, double*, std::int64_t, std::int64_t, double);

}  // namespace attograd::detail

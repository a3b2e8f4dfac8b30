// Softmax rows on Eigen's SIMD packets: three passes of whole packets per row.
#include "core/detail/softmax_row.hpp"

#include "core/detail/exp_packet.hpp"
#include "core/detail/gcc12_avx512_warning.hpp"
#include "core/error.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

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
        // pass 2: e = exp(x - top), exactly 0 where x = -inf (also in a row all -inf, where
        // x - top is NaN), and the row's sum
        const Packet vtop = pset1<Packet>(top), vneginf = pset1<Packet>(kNegInf);
        const auto exp_of = [&](const Packet& x) {
            return pandnot(exp_nonpositive(psub(x, vtop)), pcmp_eq(x, vneginf));
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

// R rows of at most P packets each (n > (P - 1) N), held in registers from one load to one
// store: the same arithmetic, in the same order, as row_softmax (so the same bits), without its
// three passes of loads and stores. A short row is one chain of dependent steps (max, its
// horizontal reduction, exp, the sum's reduction, a division); R rows at a time overlap R
// chains. The small training step's 32-key rows are two AVX-512 packets.
template <class T, int P, int R>
void register_rows_softmax(T* rows, std::int64_t n, T scale, const T* mask, std::int64_t mask_row_stride,
                           std::int64_t mask_stride) {
    using namespace Eigen::internal;
    using Packet = typename packet_traits<T>::type;
    constexpr T kNegInf = -std::numeric_limits<T>::infinity();
    constexpr std::int64_t N = packet_traits<T>::size;
    const std::int64_t rest = n - (P - 1) * N;  // elements in the last packet, 1 ... N
    const Packet vscale = pset1<Packet>(scale), vneginf = pset1<Packet>(kNegInf);
    const Packet in_row =
        pcmp_lt(plset<Packet>(T(0)), pset1<Packet>(static_cast<T>(rest)));  // last packet's lanes
    const auto load = [&](const T* from, std::int64_t j, T fill) {
        if (j + 1 < P || rest == N) return ploadu<Packet>(from + j * N);
        T pad[N];  // the last packet when partial, padded with `fill`
        std::fill_n(pad, N, fill);
        std::copy_n(from + j * N, rest, pad);
        return ploadu<Packet>(pad);
    };
    Packet x[R][P], vmax[R], vsum[R];
    for (int r = 0; r < R; ++r) {
        T* row = rows + r * n;
        const T* m = mask == nullptr ? nullptr : mask + r * mask_row_stride;
        vmax[r] = vneginf;
        for (int j = 0; j < P; ++j) {
            x[r][j] = pmul(load(row, j, T(0)), vscale);
            if (m != nullptr)
                x[r][j] = padd(x[r][j], mask_stride == 0 ? pset1<Packet>(m[0]) : load(m, j, T(0)));
            if (j + 1 == P && rest < N) x[r][j] = pselect(in_row, x[r][j], vneginf);  // exp gives 0 there
            vmax[r] = pmax(vmax[r], x[r][j]);
        }
    }
    for (int r = 0; r < R; ++r) {
        const Packet vtop = pset1<Packet>(predux_max(vmax[r]));
        vsum[r] = pset1<Packet>(T(0));
        for (int j = 0; j < P; ++j) {
            x[r][j] = pandnot(exp_nonpositive(psub(x[r][j], vtop)), pcmp_eq(x[r][j], vneginf));
            vsum[r] = padd(vsum[r], x[r][j]);
        }
    }
    for (int r = 0; r < R; ++r) {
        T* row = rows + r * n;
        const T sum = predux(vsum[r]);
        const Packet vinv = pset1<Packet>(sum == T(0) ? T(0) : T(1) / sum);
        for (int j = 0; j + 1 < P; ++j) pstoreu(row + j * N, pmul(x[r][j], vinv));
        if (rest == N) {
            pstoreu(row + (P - 1) * N, pmul(x[r][P - 1], vinv));
        } else {
            T pad[N];
            pstoreu(pad, pmul(x[r][P - 1], vinv));
            std::copy_n(pad, rest, row + (P - 1) * N);
        }
    }
}

// Short rows per group: enough independent chains to hide a row's latencies.
constexpr int kRowGroup = 4;

// Calls rows(r, group) for r = 0, kRowGroup, ... with group a std::integral_constant of
// kRowGroup, then for the remaining rows one at a time (group 1).
template <class Rows>
void in_row_groups(std::int64_t count, Rows&& rows) {
    std::int64_t r = 0;
    for (; r + kRowGroup <= count; r += kRowGroup) rows(r, std::integral_constant<int, kRowGroup>{});
    for (; r < count; ++r) rows(r, std::integral_constant<int, 1>{});
}

// fn(std::integral_constant<int, P>) for the P in 1 ... sizeof...(Ps) that equals `packets`;
// false when none does.
template <class Fn, int... Ps>
bool call_with_packets(std::int64_t packets, Fn& fn, std::integer_sequence<int, Ps...>) {
    return ((packets == Ps + 1 ? (fn(std::integral_constant<int, Ps + 1>{}), true) : false) || ...);
}

// Calls fn(std::integral_constant<int, P>) for rows of n elements that fit in P <= 4 packets of
// T and returns true; false for longer rows or without SIMD (`exp`: also needs a packet exp).
template <class T, bool exp, class Fn>
bool with_packets_per_row(std::int64_t n, Fn&& fn) {
    using namespace Eigen::internal;
    if constexpr (packet_traits<T>::Vectorizable && (!exp || packet_traits<T>::HasExp)) {
        constexpr std::int64_t N = packet_traits<T>::size;
        return call_with_packets((n + N - 1) / N, fn, std::make_integer_sequence<int, 4>{});
    }
    return false;
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

// R rows of softmax_rows_backward of at most P packets each, held in registers: the same
// arithmetic, in the same order, as row_backward, with one load of p and dp.
template <class T, int P, int R>
void register_rows_backward(const T* p, T* dp, std::int64_t n, T scale) {
    using namespace Eigen::internal;
    using Packet = typename packet_traits<T>::type;
    constexpr std::int64_t N = packet_traits<T>::size;
    const std::int64_t body = n / N * N;
    Packet vp[R][P], vdp[R][P];
    T dot[R];
    for (int r = 0; r < R; ++r) {
        Packet acc = pset1<Packet>(T(0));
        for (int j = 0; j < P; ++j) {
            if ((j + 1) * N > n) break;  // the partial last packet goes element by element
            vp[r][j] = ploadu<Packet>(p + r * n + j * N);
            vdp[r][j] = ploadu<Packet>(dp + r * n + j * N);
            acc = pmadd(vdp[r][j], vp[r][j], acc);
        }
        dot[r] = predux(acc);
        for (std::int64_t k = body; k < n; ++k) dot[r] += dp[r * n + k] * p[r * n + k];
    }
    const Packet vscale = pset1<Packet>(scale);
    for (int r = 0; r < R; ++r) {
        const Packet vdot = pset1<Packet>(dot[r]);
        for (int j = 0; j < P; ++j) {
            if ((j + 1) * N > n) break;
            pstoreu(dp + r * n + j * N, pmul(pmul(vscale, vp[r][j]), psub(vdp[r][j], vdot)));
        }
        for (std::int64_t k = body; k < n; ++k)
            dp[r * n + k] = scale * p[r * n + k] * (dp[r * n + k] - dot[r]);
    }
}

}  // namespace

template <class T>
void softmax_rows(T* rows, std::int64_t count, std::int64_t n, T scale, const T* mask,
                  std::int64_t mask_row_stride, std::int64_t mask_stride) {
    AG_ASSERT(mask_stride == 0 || mask_stride == 1, "softmax_rows: mask stride must be 0 or 1");
    const auto mask_at = [&](std::int64_t r) {
        return mask == nullptr ? nullptr : mask + r * mask_row_stride;
    };
    const bool done = with_packets_per_row<T, true>(n, [&](auto packets) {
        in_row_groups(count, [&](std::int64_t r, auto group) {
            register_rows_softmax<T, packets(), group()>(rows + r * n, n, scale, mask_at(r), mask_row_stride,
                                                         mask_stride);
        });
    });
    if (done) return;
    for (std::int64_t r = 0; r < count; ++r) row_softmax(rows + r * n, n, scale, mask_at(r), mask_stride);
}

template <class T>
void softmax_rows_backward(const T* p, T* dp, std::int64_t count, std::int64_t n, T scale) {
    const bool done = with_packets_per_row<T, false>(n, [&](auto packets) {
        in_row_groups(count, [&](std::int64_t r, auto group) {
            register_rows_backward<T, packets(), group()>(p + r * n, dp + r * n, n, scale);
        });
    });
    if (done) return;
    for (std::int64_t r = 0; r < count; ++r) row_backward(p + r * n, dp + r * n, n, scale);
}

template void softmax_rows<float>(float*, std::int64_t, std::int64_t, float, const float*, std::int64_t,
                                  std::int64_t);
template void softmax_rows<double>(double*, std::int64_t, std::int64_t, double, const double*, std::int64_t,
                                   std::int64_t);
template void softmax_rows_backward<float>(const float*, float*, std::int64_t, std::int64_t, float);
template void softmax_rows_backward<double>(const double*, double*, std::int64_t, std::int64_t, double);

}  // namespace attograd::detail

// Internal: a packet exp for the softmax kernels' arguments x - max(x) <= 0, float32.
#pragma once

#include <Eigen/Core>

#include <type_traits>

namespace attograd::detail {

/// exp(x) of every lane, for x <= 0 (softmax's x - max), -inf or NaN. float32: n = rint(x log2 e),
/// r = x - n ln 2 (Cody-Waite, ln 2 in two parts), e^r by its Taylor series to degree 7 on
/// |r| <= ln 2 / 2 (truncation < 5e-9 relative), times 2^n built in the exponent bits. Where
/// n = rint(x log2 e) is -126 (x down to about -87.68) the result is the denormal exp(x); below,
/// where n would be -127 or less, it is exactly 0 (flushed: off by under 6e-39 from std::exp,
/// which keeps the denormals), and so is exp(-inf): a weight behind a finite mask such as -1e4
/// is 0, as in PyTorch, not 2^-126 / sum. No extra operation: x is clamped to ln(2^-127), and
/// n = -127 builds 2^n as +0 in the exponent bits. NaN stays NaN. Why not Eigen's pexp: its
/// general 2^n (pldexp, any exponent) took half its time; 65536 exps took 43 µs with it, 20 µs
/// here (AMD EPYC Zen 3, AVX2). Other lane types (float64) take Eigen's pexp, likewise 0 below
/// ln(2^-1022) (Eigen clamps there and would give about 2^-1022).
template <class Packet>
Packet exp_nonpositive(const Packet& x) {
    using namespace Eigen::internal;
    using Scalar = typename unpacket_traits<Packet>::type;
    if constexpr (std::is_same_v<Scalar, float> && !std::is_same_v<Packet, float>) {
        using IntPacket = typename unpacket_traits<Packet>::integer_packet;
        // clamped to ln(2^-127): n >= -127, and n = -127 builds 2^n as +0
        const Packet clamped = pmax<Eigen::PropagateNaN>(x, pset1<Packet>(-88.02969f));
        const Packet n = print(pmul(clamped, pset1<Packet>(1.44269504088896341f)));
        Packet r = pmadd(n, pset1<Packet>(-0.693359375f), clamped);  // ln 2 = 0.693359375 - 2.12194440e-4
        r = pmadd(n, pset1<Packet>(2.12194440e-4f), r);
        Packet p = pset1<Packet>(1.0f / 5040);
        p = pmadd(p, r, pset1<Packet>(1.0f / 720));
        p = pmadd(p, r, pset1<Packet>(1.0f / 120));
        p = pmadd(p, r, pset1<Packet>(1.0f / 24));
        p = pmadd(p, r, pset1<Packet>(1.0f / 6));
        p = pmadd(p, r, pset1<Packet>(0.5f));
        p = pmadd(p, r, pset1<Packet>(1.0f));
        p = pmadd(p, r, pset1<Packet>(1.0f));
        const IntPacket biased = padd(pcast<Packet, IntPacket>(n), pset1<IntPacket>(127));
        return pmul(p, preinterpret<Packet>(plogical_shift_left<23>(biased)));
    } else if constexpr (std::is_arithmetic_v<Packet>) {
        return pexp(x);  // one scalar: std::exp
    } else {
        return pandnot(pexp(x), pcmp_lt(x, pset1<Packet>(Scalar(-708.3964185322641))));
    }
}

}  // namespace attograd::detail

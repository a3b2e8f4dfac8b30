// Internal: a packet exp for the softmax kernels' arguments x - max(x) <= 0, float32.
#pragma once

#include <Eigen/Core>

#include <type_traits>

namespace attograd::detail {

/// exp(x) of every lane, for x <= 0 (softmax's x - max), -inf or NaN. float32: n = rint(x log2 e),
/// r = x - n ln 2 (Cody-Waite, ln 2 in two parts), e^r by its Taylor series to degree 7 on
/// |r| <= ln 2 / 2 (truncation < 5e-9 relative), times 2^n built in the exponent bits. x is
/// clamped to ln(2^-126) first, so the result is never a denormal (Eigen's pexp clamps too) and
/// -inf gives about 2^-126: callers mask it to exactly 0. NaN stays NaN. Why not Eigen's pexp: its
/// general 2^n (pldexp, any exponent) took half its time; 65536 exps took 43 µs with it, 20 µs
/// here (AMD EPYC Zen 3, AVX2). Other lanes types (float64) take Eigen's pexp.
template <class Packet>
Packet exp_nonpositive(const Packet& x) {
    using namespace Eigen::internal;
    using Scalar = typename unpacket_traits<Packet>::type;
    if constexpr (std::is_same_v<Scalar, float> && !std::is_same_v<Packet, float>) {
        using IntPacket = typename unpacket_traits<Packet>::integer_packet;
        const Packet clamped =
            pmax<Eigen::PropagateNaN>(x, pset1<Packet>(-87.33654f));  // just above ln(2^-126)
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
    } else {
        return pexp(x);
    }
}

}  // namespace attograd::detail

// The softmax kernels' packet exp (core/detail/exp_packet.hpp): accuracy over its whole range against
// std::exp in float64, and its special values.
// GCC 12 warns inside its own AVX-512 intrinsics once they are inlined here (the
// self-initialised value of _mm512_undefined_*, GCC bug 105593): about its header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "core/detail/exp_packet.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

using Eigen::internal::ploadu;
using Eigen::internal::pstoreu;

// exp_nonpositive of each value, a packet at a time.
template <class T>
std::vector<T> packet_exp(const std::vector<T>& x) {
    using Packet = typename Eigen::internal::packet_traits<T>::type;
    constexpr std::size_t N = Eigen::internal::packet_traits<T>::size;
    REQUIRE(x.size() % N == 0);
    std::vector<T> out(x.size());
    for (std::size_t i = 0; i < x.size(); i += N)
        pstoreu(out.data() + i, attograd::detail::exp_nonpositive(ploadu<Packet>(x.data() + i)));
    return out;
}

}  // namespace

TEST_CASE("exp_nonpositive is within 1.2e-7 relative of exp on [-87.3, 0] in float32") {
    // Eigen's pexp, which it replaces, is off by up to 1.18e-7 here
    std::vector<float> x;
    for (int i = 0; i < 873 * 1024; ++i) x.push_back(-static_cast<float>(i) / 10240.0f);
    while (x.size() % 16 != 0) x.push_back(0.0f);
    const auto e = packet_exp(x);
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double want = std::exp(static_cast<double>(x[i]));
        worst = std::max(worst, std::abs(static_cast<double>(e[i]) - want) / want);
    }
    CHECK(worst < 1.2e-7);
}

TEST_CASE("exp_nonpositive: exp(0) = 1, NaN stays NaN, exactly 0 below about -87.7 and at -inf") {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {0.0f,    std::nanf(""), -kInf, -1000.0f, -87.7f,
                            -1e-30f, -0.5f,         -1.0f, -1e4f,    -std::numeric_limits<float>::max(),
                            -87.33f, -87.5f};
    while (x.size() % 16 != 0) x.push_back(-2.0f);
    const auto e = packet_exp(x);
    CHECK(e[0] == 1.0f);
    CHECK(std::isnan(e[1]));
    for (const std::size_t i : {2, 3, 4, 8, 9}) {
        INFO("x = ", x[i]);
        CHECK(e[i] == 0.0f);  // a finite mask of -1e4 gives a weight of exactly 0
    }
    CHECK(e[5] == 1.0f);
    CHECK(std::abs(e[7] - std::exp(-1.0f)) < 1e-7f);
    // the lowest normal results, and a denormal one: within 1.2e-7 relative of exp, and no
    // further off than the flushed values
    CHECK(std::abs(e[10] - std::exp(-87.33f)) <= 1.2e-7f * std::exp(-87.33f));
    CHECK(e[11] > 0.0f);
    CHECK(std::abs(static_cast<double>(e[11]) - std::exp(-87.5)) < 6e-39);
}

TEST_CASE("exp_nonpositive in float64 is Eigen's exp, and exactly 0 below ln(2^-1022) and at -inf") {
    std::vector<double> x = {0.0, -1.0, -10.0, -700.0};
    while (x.size() % 8 != 0) x.push_back(-0.25);
    const auto e = packet_exp(x);
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(e[i] == doctest::Approx(std::exp(x[i])).epsilon(1e-15));
    std::vector<double> low = {-709.0, -1e4, -std::numeric_limits<double>::infinity(), std::nan("")};
    while (low.size() % 8 != 0) low.push_back(-1e300);
    const auto z = packet_exp(low);
    for (std::size_t i = 0; i < low.size(); ++i) {
        INFO("x = ", low[i]);
        if (std::isnan(low[i]))
            CHECK(std::isnan(z[i]));
        else
            CHECK(z[i] == 0.0);
    }
}

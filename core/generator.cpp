// Seeded random number generators.
#include "core/generator.hpp"

#include <cmath>
#include <numbers>

namespace attograd {

double Generator::normal() {
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();  // log(0) is -inf
    const double u2 = uniform();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
}

std::int64_t Generator::randint(std::int64_t low, std::int64_t high) {
    const auto span = static_cast<std::uint64_t>(high - low);
    // Rejection sampling removes modulo bias.
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    std::uint64_t r = engine_();
    while (r >= limit) r = engine_();
    return low + static_cast<std::int64_t>(r % span);
}

Generator& default_generator() {
    static Generator generator(0);
    return generator;
}

}  // namespace attograd

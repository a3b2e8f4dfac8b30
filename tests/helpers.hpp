// Shared test helpers: gradcheck assertions and float64 random inputs.
#pragma once

#include "attograd.hpp"

#include <doctest/doctest.h>

#include <cmath>

namespace testing {

using namespace attograd;

/// A float64 leaf of `shape` with normal entries, requiring grad.
inline Tensor rand64(const Shape& shape, std::uint64_t seed) {
    Generator gen(seed);
    return randn(shape, gen, {.dtype = DType::Float64, .requires_grad = true});
}

/// True when no element is NaN or infinite.
inline bool all_finite(const Tensor& t) {
    for (double v : t.to_vector<double>())
        if (!std::isfinite(v)) return false;
    return true;
}

/// Asserts that gradcheck passes, printing its report (worst input and element) when not.
#define CHECK_GRADCHECK(fn, inputs)                                      \
    do {                                                                 \
        const auto gradcheck_result = ::attograd::gradcheck(fn, inputs); \
        INFO(gradcheck_result.report);                                   \
        CHECK(gradcheck_result.ok);                                      \
    } while (0)

}  // namespace testing

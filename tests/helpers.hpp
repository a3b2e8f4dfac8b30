// Shared test helpers: gradcheck assertions and float64 random inputs.
#pragma once

#include "attograd.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace testing {

using namespace attograd;

/// A float64 leaf of `shape` with normal entries, requiring grad.
inline Tensor rand64(const Shape& shape, std::uint64_t seed) {
    Generator gen(seed);
    return randn(shape, gen, {.dtype = DType::Float64, .requires_grad = true});
}

/// Leaves freed float64 blocks of `shape` full of NaN for the next allocations of that size:
/// the allocator hands a freed block of the same size class out again (last in, first out), so
/// an op that leaves part of an uninitialised output unwritten shows NaN there.
inline void leave_nan_blocks(const Shape& shape) {
    std::vector<Tensor> blocks;
    for (int i = 0; i < 4; ++i) blocks.push_back(full(shape, std::nan(""), {.dtype = DType::Float64}));
}

/// A bool tensor of `shape` whose element (row, column) of the trailing dimension is
/// masked(row, column), rows counted over all leading dimensions together.
template <class Fn>
Tensor bool_mask(const Shape& shape, Fn masked) {
    Tensor m = zeros(shape, {.dtype = DType::Bool});
    bool* p = m.data<bool>();
    const std::int64_t cols = shape.back();
    for (std::int64_t i = 0; i < m.numel(); ++i) p[i] = masked(i / cols, i % cols);
    return m;
}

/// `inputs` followed by every parameter of `m`: gradcheck checks them all.
inline std::vector<Tensor> with_parameters(const nn::Module& m, std::vector<Tensor> inputs) {
    for (const Tensor& p : m.parameters()) inputs.push_back(p);
    return inputs;
}

/// Gives every parameter of `m` float64 normal values times `scale` (seeds from `seed` on), so
/// that zero-initialised biases and unit LayerNorm weights are exercised too. `m` must be float64.
inline void randomize_parameters(nn::Module& m, std::uint64_t seed, double scale = 0.5) {
    nn::StateDict state;
    for (const auto& [name, p] : m.named_parameters())
        state[name] = rand64(p.shape(), seed++).detach() * scale;
    m.load_state_dict(state, /*strict=*/false);
}

/// Asserts that gradcheck passes, printing its report (worst input and element) when not.
#define CHECK_GRADCHECK(fn, inputs)                                      \
    do {                                                                 \
        const auto gradcheck_result = ::attograd::gradcheck(fn, inputs); \
        INFO(gradcheck_result.report);                                   \
        CHECK(gradcheck_result.ok);                                      \
    } while (0)

}  // namespace testing

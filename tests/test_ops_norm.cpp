// layer_norm: values against the composed formula, gradcheck, numerics and bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>

using namespace attograd;
using testing::max_abs_diff;
using testing::rand64;
using Inputs = std::vector<Tensor>;

namespace {
// (x - mean) / sqrt(var + eps) over the last `dims` axes, composed from primitive ops.
Tensor composed(const Tensor& x, int dims, double eps) {
    std::vector<std::int64_t> axes;
    for (int d = 1; d <= dims; ++d) axes.push_back(-d);
    const Tensor centred = x - mean(x, axes, true);
    const Tensor var = mean(centred * centred, axes, true);
    return centred / sqrt(var + eps);
}
}  // namespace

TEST_CASE("layer_norm equals the composed formula with PyTorch's biased variance") {
    const Tensor x = rand64({3, 2, 5}, 1).detach();
    const Tensor w = rand64({2, 5}, 2).detach(), b = rand64({2, 5}, 3).detach();
    CHECK(max_abs_diff(layer_norm(x, {5}), composed(x, 1, 1e-5)) < 1e-13);
    CHECK(max_abs_diff(layer_norm(x, {2, 5}, w, b, 0.1), composed(x, 2, 0.1) * w + b) < 1e-13);
    CHECK(max_abs_diff(layer_norm(x, {2, 5}, w), composed(x, 2, 1e-5) * w) < 1e-13);
    CHECK(max_abs_diff(layer_norm(x, {2, 5}, {}, b), composed(x, 2, 1e-5) + b) < 1e-13);
    // float32 agrees with float64.
    const Tensor x32 = to_dtype(x, DType::Float32);
    CHECK(max_abs_diff(layer_norm(x32, {5}), layer_norm(x, {5})) < 1e-5);
}

TEST_CASE("layer_norm passes gradcheck for x, weight and bias in every combination") {
    const Tensor w = rand64({4}, 4), b = rand64({4}, 5);
    auto both = [](const Inputs& in) { return layer_norm(in[0], {4}, in[1], in[2]); };
    CHECK_GRADCHECK(both, (Inputs{rand64({3, 4}, 6), w, b}));
    auto weight_only = [](const Inputs& in) { return layer_norm(in[0], {4}, in[1]); };
    CHECK_GRADCHECK(weight_only, (Inputs{rand64({2, 3, 4}, 7), w}));
    auto bias_only = [](const Inputs& in) { return layer_norm(in[0], {4}, {}, in[1]); };
    CHECK_GRADCHECK(bias_only, (Inputs{rand64({3, 4}, 8), b}));
    auto plain = [](const Inputs& in) { return layer_norm(in[0], {2, 3}, {}, {}, 0.5); };
    CHECK_GRADCHECK(plain, (Inputs{rand64({4, 2, 3}, 9)}));
    auto params_only = [](const Inputs& in) { return layer_norm(in[0], {4}, in[1], in[2]); };
    CHECK_GRADCHECK(params_only, (Inputs{rand64({3, 4}, 10).detach(), w, b}));
}

TEST_CASE("layer_norm records one tape entry, stays finite on constant rows and handles empty batches") {
    const Tensor w = rand64({3}, 11), b = rand64({3}, 12);
    Tensor x = full({2, 3}, 7.0, {.dtype = DType::Float64, .requires_grad = true});
    const std::size_t before = autograd::tape_size();
    const Tensor y = layer_norm(x, {3}, w, b);
    CHECK(autograd::tape_size() == before + 1);
    CHECK(max_abs_diff(y, b.detach() + zeros({2, 3}, {.dtype = DType::Float64})) == 0);  // x^ = 0
    sum(y * y).backward();
    for (double g : x.grad().to_vector<double>()) CHECK(std::isfinite(g));
    CHECK(layer_norm(zeros({0, 3}), {3}).shape() == Shape{0, 3});
    // A large common offset does not cost float32 its precision (statistics in double).
    const Tensor offset = rand64({4, 8}, 13).detach() + 1e4;
    CHECK(max_abs_diff(layer_norm(to_dtype(offset, DType::Float32), {8}), layer_norm(offset, {8})) < 2e-3);
}

TEST_CASE("layer_norm rejects bad shapes, dtypes and eps") {
    const Tensor x = zeros({2, 3});
    CHECK_THROWS_WITH_AS(layer_norm(x, {}),
                         doctest::Contains("layer_norm: normalized_shape must not be empty"), ShapeError);
    CHECK_THROWS_WITH_AS(
        layer_norm(x, {2}),
        doctest::Contains("layer_norm: normalized_shape [2] does not match the last dimensions of x [2, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(layer_norm(x, {1, 2, 3}),
                         doctest::Contains("layer_norm: normalized_shape [1, 2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(
        layer_norm(x, {3}, zeros({2})),
        doctest::Contains("layer_norm: weight must have shape normalized_shape [3], got [2]"), ShapeError);
    CHECK_THROWS_WITH_AS(layer_norm(x, {3}, zeros({3}), zeros({1, 3})), doctest::Contains("layer_norm: bias"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(layer_norm(x, {3}, zeros({3}, {.dtype = DType::Float64})),
                         doctest::Contains("layer_norm: dtypes differ"), DTypeError);
    CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 3}, {.dtype = DType::Int64}), {3}),
                         doctest::Contains("layer_norm: expected a float32 or float64 tensor"), DTypeError);
    CHECK_THROWS_WITH_AS(layer_norm(x, {3}, {}, {}, -1.0), doctest::Contains("layer_norm: eps"), ValueError);
    CHECK_THROWS_WITH_AS(layer_norm(x, {3}, {}, {}, NAN), doctest::Contains("layer_norm: eps"), ValueError);
}

// clip_grad_norm: zero and absent gradients, shared gradient buffers, float32, bad input.
// (Its values against PyTorch are checked by the trajectories in test_optim.cpp.)
#include "helpers.hpp"

#include "fixtures.hpp"

#include <limits>

using namespace attograd;
using testing::max_abs_diff;
using testing::rand64;

TEST_CASE("clip_grad_norm returns 0 and changes nothing when every gradient is zero or absent") {
    Tensor a = rand64({3, 2}, 1), b = rand64({4}, 2), c = rand64({2}, 3);
    CHECK(optim::clip_grad_norm({a, b, c}, 1.0) == 0.0);
    a.set_grad(zeros({3, 2}, {.dtype = DType::Float64}));
    b.set_grad(zeros({4}, {.dtype = DType::Float64}));
    for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
        CHECK(optim::clip_grad_norm({a, b, c}, 0.5, p) == 0.0);
        CHECK(a.grad().to_vector<double>() == std::vector<double>(6, 0.0));
        CHECK(b.grad().to_vector<double>() == std::vector<double>(4, 0.0));
        CHECK_FALSE(c.grad().defined());
    }
    CHECK(optim::clip_grad_norm({a, b, c}, 0.0) == 0.0);  // max_norm 0 on zero gradients stays finite
    CHECK(a.grad().to_vector<double>() == std::vector<double>(6, 0.0));
}

TEST_CASE("clip_grad_norm measures the global norm and scales to max_norm / (norm + 1e-6)") {
    Tensor a = rand64({3}, 4), b = rand64({2}, 5);
    a.set_grad(tensor({3.0, 0.0, -4.0}, {3}, {.dtype = DType::Float64}));
    b.set_grad(tensor({0.0, 12.0}, {2}, {.dtype = DType::Float64}));
    const double total = optim::clip_grad_norm({a, b}, 6.5);  // sqrt(9 + 16 + 144) = 13
    CHECK(total == 13.0);
    const double coef = 6.5 / (13.0 + 1e-6);
    CHECK(a.grad().to_vector<double>() == std::vector<double>{3.0 * coef, 0.0, -4.0 * coef});
    CHECK(b.grad().at({1}) == 12.0 * coef);
    // below max_norm: untouched
    const double again = optim::clip_grad_norm({a, b}, 100.0);
    CHECK(again == doctest::Approx(13.0 * coef).epsilon(1e-15));
    CHECK(b.grad().at({1}) == 12.0 * coef);
}

TEST_CASE("clip_grad_norm never writes into a gradient buffer another tensor holds") {
    Tensor a = rand64({2}, 6);
    const Tensor shared = tensor({6.0, 8.0}, {2}, {.dtype = DType::Float64});
    a.set_grad(shared);
    CHECK(optim::clip_grad_norm({a}, 5.0) == 10.0);
    CHECK(shared.to_vector<double>() == std::vector<double>{6.0, 8.0});
    CHECK(a.grad().at({1}) == 8.0 * (5.0 / (10.0 + 1e-6)));
    CHECK(a.grad().impl() != shared.impl());
}

TEST_CASE("clip_grad_norm works on float32 gradients (sums in double)") {
    Generator gen(7);
    Tensor a = randn({100}, gen, {.requires_grad = true});
    a.set_grad(full({100}, 1e20f));  // squares overflow float32, not the double sum
    const double total = optim::clip_grad_norm({a}, 1.0);
    CHECK(total == doctest::Approx(1e21).epsilon(1e-6));
    CHECK(a.grad().dtype() == DType::Float32);
    CHECK(a.grad().at({0}) == doctest::Approx(0.1).epsilon(1e-6));
}

TEST_CASE("clip_grad_norm rejects a non-finite norm and bad arguments, changing nothing") {
    Tensor a = rand64({2}, 8), b = rand64({2}, 9);
    a.set_grad(tensor({1.0, std::nan("")}, {2}, {.dtype = DType::Float64}));
    b.set_grad(tensor({3.0, 4.0}, {2}, {.dtype = DType::Float64}));
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm({a, b}, 1.0),
                         doctest::Contains("clip_grad_norm: the total norm"), ValueError);
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm({a, b}, 1.0, std::numeric_limits<double>::infinity()),
                         doctest::Contains("NaN or Inf"), ValueError);
    CHECK(b.grad().to_vector<double>() == std::vector<double>{3.0, 4.0});
    a.set_grad(tensor({1.0, std::numeric_limits<double>::infinity()}, {2}, {.dtype = DType::Float64}));
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm({a, b}, 1.0, 1.0), doctest::Contains("is inf"), ValueError);
    CHECK(b.grad().to_vector<double>() == std::vector<double>{3.0, 4.0});

    // finite gradients whose sum of squares overflows a double: the message says so, not "NaN or Inf"
    a.set_grad(tensor({1e160, 2e160}, {2}, {.dtype = DType::Float64}));
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm({a, b}, 1.0),
                         doctest::Contains("every gradient is finite, but the sum of their powers overflows"),
                         ValueError);
    CHECK(a.grad().to_vector<double>() == std::vector<double>{1e160, 2e160});

    CHECK_THROWS_WITH_AS(optim::clip_grad_norm({b}, -1.0),
                         doctest::Contains("max_norm must be a finite number >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm({b}, 1.0, 0.0), doctest::Contains("norm_type must be > 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm({b, Tensor()}, 1.0),
                         doctest::Contains("parameter 1 is an undefined"), ValueError);
}

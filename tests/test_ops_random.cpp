// Dropout: seeded masks, inverted scaling, eval identity, p = 0 and p = 1, gradient.
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace attograd;

TEST_CASE("dropout zeroes about p of the elements and scales the rest by 1 / (1 - p)") {
    Generator gen(5);
    Tensor x = ones({200000});
    Tensor y = dropout(x, 0.3, true, gen);
    std::int64_t dropped = 0;
    bool values_ok = true;
    for (double v : y.to_vector<double>()) {
        if (v == 0.0)
            ++dropped;
        else
            values_ok = values_ok && std::abs(v - 1.0 / 0.7) < 1e-6;
    }
    CHECK(values_ok);
    // Binomial(200000, 0.3): the standard deviation is about 205, so 0.3 +- 0.005 is ~5 sigma.
    CHECK(static_cast<double>(dropped) / 200000 == doctest::Approx(0.3).epsilon(0.005 / 0.3));
}

TEST_CASE("dropout is reproducible from the generator's seed") {
    Generator g1(42), g2(42), g3(43);
    Tensor x = ones({64}, {.dtype = DType::Float64});
    const auto a = dropout(x, 0.5, true, g1).to_vector<double>();
    const auto b = dropout(x, 0.5, true, g2).to_vector<double>();
    const auto c = dropout(x, 0.5, true, g3).to_vector<double>();
    CHECK(a == b);
    CHECK(a != c);
    // The second call continues the stream: a different mask.
    CHECK(dropout(x, 0.5, true, g1).to_vector<double>() != a);
}

TEST_CASE("dropout's gradient is the same mask and scale") {
    Generator gen(7);
    Tensor x = testing::rand64({4, 5}, 1);
    Tensor y = dropout(x, 0.4, true, gen);
    sum(y * 2.0).backward();
    const auto vy = y.to_vector<double>(), vx = x.to_vector<double>(), g = x.grad().to_vector<double>();
    for (std::size_t i = 0; i < vy.size(); ++i) {
        if (vy[i] == 0.0)
            CHECK(g[i] == 0.0);
        else
            CHECK(g[i] == doctest::Approx(2.0 / 0.6));
        CHECK((vy[i] == 0.0 || vy[i] == doctest::Approx(vx[i] / 0.6)));
    }
    // gradcheck with the mask fixed by reseeding the generator before each evaluation.
    auto fn = [](const std::vector<Tensor>& in) {
        Generator fixed(9);
        return dropout(in[0], 0.5, true, fixed);
    };
    CHECK_GRADCHECK(fn, std::vector<Tensor>{testing::rand64({3, 4}, 2)});
}

TEST_CASE("dropout: eval mode and p = 0 return the input untouched, p = 1 gives zeros") {
    Generator gen(1);
    Tensor x = testing::rand64({3, 3}, 3);
    CHECK(dropout(x, 0.5, false, gen).impl() == x.impl());
    CHECK(dropout(x, 0.0, true, gen).impl() == x.impl());
    Tensor inf = tensor({std::numeric_limits<double>::infinity(), 1.0}, {2},
                        {.dtype = DType::Float64, .requires_grad = true});
    Tensor y = dropout(inf, 1.0, true, gen);
    CHECK(y.to_vector<double>() == std::vector<double>{0.0, 0.0});
    sum(y).backward();
    CHECK(inf.grad().to_vector<double>() == std::vector<double>{0.0, 0.0});
}

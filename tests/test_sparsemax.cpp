// sparsemax: the simplex projection's values, exact zeros, masked entries, gradients, bad input.
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace attograd;
using testing::rand64;

namespace {

// The Euclidean projection of `z` onto the simplex by bisection on the threshold tau, an
// algorithm independent of the sort-based one under test: sum_i max(z_i - tau, 0) = 1.
std::vector<double> project_by_bisection(const std::vector<double>& z) {
    double lo = *std::min_element(z.begin(), z.end()) - 1.0, hi = *std::max_element(z.begin(), z.end());
    for (int it = 0; it < 200; ++it) {
        const double tau = 0.5 * (lo + hi);
        double total = 0.0;
        for (double v : z) total += std::max(v - tau, 0.0);
        (total > 1.0 ? lo : hi) = tau;
    }
    std::vector<double> p;
    for (double v : z) p.push_back(std::max(v - 0.5 * (lo + hi), 0.0));
    return p;
}

}  // namespace

TEST_CASE("sparsemax matches the simplex projection computed by bisection, on either axis") {
    Tensor x = rand64({4, 7}, 11) * 2.0;
    for (std::int64_t axis : {-1, 0}) {
        Tensor p = sparsemax(x, axis);
        Tensor moved = axis == 0 ? transpose(x, 0, 1) : x;
        Tensor pm = axis == 0 ? transpose(p, 0, 1) : p;
        for (std::int64_t r = 0; r < moved.size(0); ++r) {
            std::vector<double> row;
            for (std::int64_t i = 0; i < moved.size(1); ++i) row.push_back(moved.at({r, i}));
            const auto expected = project_by_bisection(row);
            double total = 0.0;
            for (std::int64_t i = 0; i < moved.size(1); ++i) {
                CHECK(pm.at({r, i}) == doctest::Approx(expected[static_cast<std::size_t>(i)]).epsilon(1e-12));
                total += pm.at({r, i});
            }
            CHECK(total == doctest::Approx(1.0).epsilon(1e-14));
        }
    }
}

TEST_CASE("sparsemax of two entries follows the paper's closed form and gives exact zeros") {
    // Martins & Astudillo 2016, eq. 7: sparsemax([t, 0])_1 = 1 (t > 1), (t + 1) / 2 (|t| <= 1), 0 (t < -1).
    for (double t : {-3.0, -1.5, -0.5, 0.0, 0.25, 0.9, 1.5, 4.0}) {
        Tensor p = sparsemax(tensor({t, 0.0}, {2}, {.dtype = DType::Float64}), 0);
        const double expected = t > 1 ? 1.0 : (t < -1 ? 0.0 : (t + 1) / 2);
        CHECK(p.at({0}) == doctest::Approx(expected).epsilon(1e-15));
        CHECK(p.at({1}) == doctest::Approx(1.0 - expected).epsilon(1e-15));
    }
    // Low scores get probability exactly 0 (softmax never does).
    Tensor p = sparsemax(tensor({3.0, 2.5, -1.0, 0.0}, {4}), 0);
    CHECK(p.at({2}) == 0.0);
    CHECK(p.at({3}) == 0.0);
    CHECK(p.at({0}) > 0.0);
}

TEST_CASE("sparsemax passes float64 gradcheck on the last and a middle axis") {
    Tensor x = rand64({2, 5, 3}, 12);
    for (std::int64_t axis : {-1, 1}) {
        auto fn = [axis](const std::vector<Tensor>& in) { return sparsemax(in[0], axis); };
        CHECK_GRADCHECK(fn, std::vector<Tensor>{x});
    }
}

TEST_CASE("sparsemax ignores -inf entries, and an all -inf row gives zeros and finite zero gradients") {
    const double inf = std::numeric_limits<double>::infinity();
    Tensor x =
        tensor({0.3, -inf, 0.1, -inf, -inf, -inf}, {2, 3}, {.dtype = DType::Float64, .requires_grad = true});
    Tensor p = sparsemax(x, -1);
    CHECK(p.at({0, 1}) == 0.0);
    CHECK(p.at({0, 0}) + p.at({0, 2}) == doctest::Approx(1.0));
    for (std::int64_t i = 0; i < 3; ++i) CHECK(p.at({1, i}) == 0.0);
    sum(p * tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3}, {.dtype = DType::Float64})).backward();
    for (double g : x.grad().to_vector<double>()) CHECK(std::isfinite(g));
    CHECK(x.grad().at({1, 0}) == 0.0);
    CHECK(x.grad().at({0, 1}) == 0.0);
}

TEST_CASE("sparsemax over large rows (parallel path) still sums to one") {
    Generator gen(3);
    Tensor x = randn({64, 2048}, gen);
    Tensor total = sum(sparsemax(x, -1), {-1});
    for (double v : total.to_vector<double>()) CHECK(v == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("sparsemax rejects bad input with the right error") {
    CHECK_THROWS_WITH_AS(sparsemax(zeros({2, 3}), 2), doctest::Contains("sparsemax"), IndexError);
    CHECK_THROWS_WITH_AS(sparsemax(index_tensor({1, 2}, {2}), 0), doctest::Contains("sparsemax"), DTypeError);
    CHECK_THROWS_WITH_AS(sparsemax(tensor({1.0, NAN}, {2}), 0), doctest::Contains("[2]"), ValueError);
    CHECK_THROWS_WITH_AS(sparsemax(scalar(1.0), 0), doctest::Contains("0-d"), IndexError);
}

TEST_CASE("sparsemax of large, equal or long rows still sums to one (float32 and float64)") {
    const auto row_sum = [](const Tensor& p) {
        double total = 0;
        for (const double v : p.to_vector<double>()) total += v;
        return total;
    };
    for (DType dtype : {DType::Float32, DType::Float64}) {
        INFO(static_cast<int>(dtype));
        const TensorOptions o{.dtype = dtype};
        const Tensor big = sparsemax(tensor({1e8, 0.0}, {1, 2}, o), 1);  // once [0, 0]
        CHECK(big.at({0, 0}) == 1.0);
        CHECK(big.at({0, 1}) == 0.0);
        CHECK(row_sum(sparsemax(tensor({-1e7, -1e7}, {1, 2}, o), 1)) == doctest::Approx(1.0));  // once [1, 1]
        CHECK(row_sum(sparsemax(tensor({-3e38, -3e38}, {1, 2}, o), 1)) == doctest::Approx(1.0));
        CHECK(row_sum(sparsemax(full({1, 100000}, 1000.0, o), 1)) == doctest::Approx(1.0).epsilon(1e-4));
        CHECK(row_sum(sparsemax(full({1, 100000}, 100.0, o), 1)) == doctest::Approx(1.0).epsilon(1e-4));
    }
}

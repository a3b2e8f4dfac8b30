// Softmax and log-softmax: gradcheck over every axis, stability for huge and -inf logits.
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace attograd;
using testing::rand64;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("softmax and log_softmax pass gradcheck along every axis, negative axes included") {
    Tensor x = rand64({2, 3, 4}, 11);
    for (std::int64_t axis : {0, 1, 2, -1, -2, -3}) {
        CAPTURE(axis);
        auto fs = [axis](const std::vector<Tensor>& in) { return softmax(in[0], axis); };
        auto fl = [axis](const std::vector<Tensor>& in) { return log_softmax(in[0], axis); };
        CHECK_GRADCHECK(fs, std::vector<Tensor>{x});
        CHECK_GRADCHECK(fl, std::vector<Tensor>{x});
    }
    auto scalar_fn = [](const std::vector<Tensor>& in) { return softmax(in[0], 0); };
    CHECK_GRADCHECK(scalar_fn, std::vector<Tensor>{rand64({}, 3)});
}

TEST_CASE("softmax rows sum to one and match exp(log_softmax) along a middle axis") {
    Tensor x = rand64({3, 5, 2}, 12);
    Tensor s = softmax(x, 1);
    Tensor totals = sum(s, {1});
    for (double v : totals.to_vector<double>()) CHECK(v == doctest::Approx(1.0).epsilon(1e-14));
    Tensor l = exp(log_softmax(x, -2));
    const auto a = s.to_vector<double>(), b = l.to_vector<double>();
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-14));
}

TEST_CASE("log_softmax is exact and finite for logits of magnitude 1e8 and very negative logits") {
    for (DType dtype : {DType::Float64, DType::Float32}) {
        CAPTURE(dtype);
        Tensor x =
            tensor({1e8, 0.0, -1e8, -1e8, -1e8, -1e8}, {2, 3}, {.dtype = dtype, .requires_grad = true});
        Tensor y = log_softmax(x, 1);
        // Row 0: the max dominates, log(1 + e^-1e8 + e^-2e8) = 0 exactly.
        CHECK(y.at({0, 0}) == 0.0);
        CHECK(y.at({0, 1}) == -1e8);
        CHECK(y.at({0, 2}) == doctest::Approx(-2e8));
        // Row 1: three equal very negative logits give log(1/3) each.
        CHECK(y.at({1, 0}) == doctest::Approx(-std::log(3.0)));
        Generator gen(1);
        Tensor r = randn({2, 3}, gen, {.dtype = dtype});
        sum(y * r).backward();
        CHECK(all_finite(x.grad()));
        // Row 0 softmax is one-hot, so dx = r - onehot * sum(r).
        const double r0 = r.at({0, 0}), r1 = r.at({0, 1}), r2 = r.at({0, 2});
        CHECK(x.grad().at({0, 0}) == doctest::Approx(r0 - (r0 + r1 + r2)));
        CHECK(x.grad().at({0, 1}) == doctest::Approx(r1));
        Tensor s = softmax(tensor({1e8, -1e8, 1e8 - 1}, {3}, {.dtype = dtype}), 0);
        CHECK(all_finite(s));
        CHECK(s.at({1}) == 0.0);
    }
}

TEST_CASE("a softmax row of all -inf gives zeros and zero gradient, never NaN") {
    Tensor x = tensor({-kInf, -kInf, -kInf, 1.0, -kInf, 2.0}, {2, 3},
                      {.dtype = DType::Float64, .requires_grad = true});
    Tensor y = softmax(x, 1);
    for (std::int64_t j = 0; j < 3; ++j) CHECK(y.at({0, j}) == 0.0);
    CHECK(y.at({1, 1}) == 0.0);
    CHECK(y.at({1, 0}) + y.at({1, 2}) == doctest::Approx(1.0));
    Tensor r = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, {.dtype = DType::Float64});
    sum(y * r).backward();
    CHECK(all_finite(x.grad()));
    for (std::int64_t j = 0; j < 3; ++j) CHECK(x.grad().at({0, j}) == 0.0);
    CHECK(x.grad().at({1, 1}) == 0.0);

    // log_softmax of an all -inf row is -inf (log of the zeros above), its gradient dy.
    Tensor z = tensor({-kInf, -kInf}, {1, 2}, {.dtype = DType::Float64, .requires_grad = true});
    Tensor lz = log_softmax(z, 1);
    CHECK(lz.at({0, 0}) == -kInf);
    sum(lz * tensor({2.0, 3.0}, {1, 2}, {.dtype = DType::Float64})).backward();
    CHECK(z.grad().at({0, 0}) == 2.0);
    CHECK(z.grad().at({0, 1}) == 3.0);

    // Column-wise (inner > 1) as well.
    Tensor c = softmax(tensor({-kInf, 0.0, -kInf, 0.0}, {2, 2}), 0);
    CHECK(c.at({0, 0}) == 0.0);
    CHECK(c.at({1, 0}) == 0.0);
    CHECK(c.at({0, 1}) == doctest::Approx(0.5));
}

TEST_CASE("softmax propagates NaN instead of hiding it") {
    Tensor y = softmax(tensor({1.0, std::nan(""), 2.0}, {3}), 0);
    for (std::int64_t j = 0; j < 3; ++j) CHECK(std::isnan(y.at({j})));
}

TEST_CASE("softmax of an empty tensor is empty") {
    CHECK(softmax(zeros({0, 3}), 1).shape() == Shape{0, 3});
    CHECK(log_softmax(zeros({2, 0}), 1).shape() == Shape{2, 0});
}

TEST_CASE("large tensors (rows split over threads) give the same values as one row at a time") {
    Generator gen(13);
    Tensor x = randn({400, 200}, gen);
    for (std::int64_t axis : {1, 0}) {
        CAPTURE(axis);
        const Tensor y = softmax(x, axis), l = log_softmax(x, axis);
        for (const std::int64_t row : std::initializer_list<std::int64_t>{0, 17, axis == 1 ? 399 : 199}) {
            const Tensor piece = narrow(x, 1 - axis, row, 1);
            CHECK(narrow(y, 1 - axis, row, 1).to_vector<float>() == softmax(piece, axis).to_vector<float>());
            CHECK(narrow(l, 1 - axis, row, 1).to_vector<float>() ==
                  log_softmax(piece, axis).to_vector<float>());
        }
    }
}

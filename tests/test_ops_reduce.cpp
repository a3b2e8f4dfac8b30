// Reductions: vector norms (values, float64 gradcheck, zero vector, errors) and max / min.
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace attograd;
using testing::rand64;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

TEST_CASE("norm computes the 1, 2 and inf norms over the given dims") {
    const Tensor x = tensor({3, -4, 0, 1, -2, 2}, {2, 3});
    CHECK(norm(x).item() == doctest::Approx(std::sqrt(34.0)));
    CHECK(norm(x, 1.0).item() == doctest::Approx(12.0));
    CHECK(norm(x, kInf).item() == doctest::Approx(4.0));
    const Tensor rows = norm(x, 2.0, {1});
    CHECK(rows.shape() == Shape{2});
    CHECK(rows.to_vector<double>()[0] == doctest::Approx(5.0));
    CHECK(rows.to_vector<double>()[1] == doctest::Approx(3.0));
    CHECK(norm(x, 1.0, {0}, true).shape() == Shape{1, 3});
    CHECK(norm(x, kInf, {-1}).to_vector<double>() == std::vector<double>{4.0, 2.0});
}

TEST_CASE("norm passes gradcheck for every p and several dims") {
    for (double p : {1.0, 2.0, kInf}) {
        for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{}, {1}, {0, 2}, {-1}}) {
            CAPTURE(p);
            CAPTURE(dims.size());
            const Tensor x = rand64({2, 3, 4}, 3);
            CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return norm(in[0], p, dims, true); },
                            std::vector<Tensor>{x});
        }
    }
}

TEST_CASE("norm of the zero vector has gradient 0, not NaN") {
    for (double p : {1.0, 2.0, kInf}) {
        CAPTURE(p);
        const Tensor x = zeros({2, 4}, {.dtype = DType::Float64, .requires_grad = true});
        Tensor n = norm(x, p, {1});
        CHECK(n.to_vector<double>() == std::vector<double>{0.0, 0.0});
        sum(n).backward();
        CHECK(x.grad().to_vector<double>() == std::vector<double>(8, 0.0));
    }
    // The route norm replaces: sqrt(sum(x * x)) gives NaN there.
    const Tensor x = zeros({3}, {.dtype = DType::Float64, .requires_grad = true});
    sqrt(sum(x * x)).backward();
    CHECK_FALSE(all_finite(x.grad()));
}

TEST_CASE("norm with p = inf shares the gradient among tied maxima") {
    const Tensor x = tensor({2, -2, 1}, {3}, {.dtype = DType::Float64, .requires_grad = true});
    norm(x, kInf).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0.5, -0.5, 0.0});
}

TEST_CASE("norm works in float32 and is one tape entry") {
    const Tensor x = tensor({3, 4}, {2}, {.requires_grad = true});
    const std::size_t before = autograd::tape_size();
    const Tensor n = norm(x);
    CHECK(autograd::tape_size() == before + 1);
    CHECK(n.dtype() == DType::Float32);
    CHECK(n.item() == doctest::Approx(5.0));
    n.backward();
    CHECK(x.grad().to_vector<float>() == std::vector<float>{0.6f, 0.8f});
}

TEST_CASE("norm rejects bad p, dtypes, dims and an empty inf reduction") {
    const Tensor x = zeros({2, 3});
    CHECK_THROWS_WITH_AS(norm(x, 3.0), doctest::Contains("norm: p must be 1, 2 or inf"), ValueError);
    CHECK_THROWS_WITH_AS(norm(index_tensor({1, 2}, {2})), doctest::Contains("norm"), DTypeError);
    CHECK_THROWS_WITH_AS(norm(x, 2.0, {2}), doctest::Contains("norm"), IndexError);
    CHECK_THROWS_WITH_AS(norm(x, 2.0, {1, -1}), doctest::Contains("twice"), IndexError);
    CHECK_THROWS_WITH_AS(norm(zeros({2, 0}), kInf, {1}), doctest::Contains("no maximum"), ShapeError);
    CHECK(norm(zeros({2, 0}), 2.0, {1}).to_vector<double>() == std::vector<double>{0.0, 0.0});
}

TEST_CASE("max and min over a dim return values and first indices, gradient to that index") {
    const Tensor x = tensor({1, 3, 3, 2, 0, 0}, {2, 3}, {.dtype = DType::Float64, .requires_grad = true});
    const MaxResult hi = max(x, 1), lo = min(x, 1, true);
    CHECK(hi.values.to_vector<double>() == std::vector<double>{3, 2});
    CHECK(hi.indices.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
    CHECK(lo.values.shape() == Shape{2, 1});
    CHECK(lo.values.to_vector<double>() == std::vector<double>{1, 0});
    CHECK(lo.indices.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1});  // the first minimum
    CHECK(argmin(x, 0).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 1});
    sum(lo.values).backward();  // PyTorch: the gradient goes to the returned index only
    CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 0, 0, 0, 1, 0});
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return min(in[0], -2, true).values; },
                    std::vector<Tensor>{rand64({2, 3, 4}, 11)});
    CHECK_THROWS_WITH_AS(min(zeros({2, 0}), 1), doctest::Contains("min: cannot reduce the empty axis"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(min(x, 2), doctest::Contains("min"), IndexError);
}

TEST_CASE("max and min of every element share the gradient among ties as PyTorch") {
    const Tensor x =
        tensor({1, 3, 3, 2, -4, -4, -4, 0}, {2, 4}, {.dtype = DType::Float64, .requires_grad = true});
    const Tensor hi = max(x);
    CHECK(hi.dim() == 0);
    CHECK(hi.item() == 3.0);
    hi.backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0, 0, 0, 0, 0});
    const Tensor y = x.detach().requires_grad_(true);
    (min(y) * 3.0).backward();
    CHECK(min(y).item() == -4.0);
    CHECK(y.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 0, 1, 1, 1, 0});
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return max(in[0]); },
                    std::vector<Tensor>{rand64({3, 4}, 12)});
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return min(in[0]); },
                    std::vector<Tensor>{rand64({5}, 13)});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(std::isnan(max(tensor({1, nan, 2}, {3})).item()));
    CHECK(std::isnan(min(tensor({1, 2, nan}, {3})).item()));
    CHECK(max(tensor({2.5f}, {1})).dtype() == DType::Float32);
    CHECK_THROWS_WITH_AS(max(zeros({0, 3})), doctest::Contains("max: cannot reduce an empty tensor"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(min(index_tensor({1, 2}, {2})), doctest::Contains("min"), DTypeError);
}

TEST_CASE("all_finite finds a NaN or an infinity anywhere, in either float dtype") {
    for (const DType dtype : {DType::Float32, DType::Float64}) {
        CHECK(all_finite(tensor({1, -2, 3e30}, {3}, {.dtype = dtype})));
        CHECK(all_finite(zeros({0, 4}, {.dtype = dtype})));
        for (const double bad : {std::nan(""), kInf, -kInf}) {
            Tensor x = zeros({2, 5}, {.dtype = dtype});
            dispatch_floating(dtype, "test", [&]<class T>(T) { x.data<T>()[7] = static_cast<T>(bad); });
            CHECK_FALSE(all_finite(x));
        }
    }
    CHECK(all_finite(index_tensor({1, 2}, {2})));
    CHECK_THROWS_AS(all_finite(Tensor()), ValueError);
}

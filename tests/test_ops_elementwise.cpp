// Integer arithmetic, floor division and remainder, type promotion, comparisons, where with
// plain numbers, maximum / minimum and clamp.
#include "helpers.hpp"

#include <cmath>
#include <limits>
#include <optional>

using namespace attograd;
using testing::rand64;

namespace {
std::vector<std::int64_t> ints(const Tensor& t) {
    REQUIRE(t.dtype() == DType::Int64);
    return t.to_vector<std::int64_t>();
}
std::vector<int> bools(const Tensor& t) {
    REQUIRE(t.dtype() == DType::Bool);
    return t.to_vector<int>();
}
}  // namespace

TEST_CASE("int64 arithmetic stays int64 with Python's floor division and remainder") {
    const Tensor a = index_tensor({7, -7, 7, -7}, {4}), b = index_tensor({2, 2, -2, -2}, {4});
    CHECK(ints(a + b) == std::vector<std::int64_t>{9, -5, 5, -9});
    CHECK(ints(a - b) == std::vector<std::int64_t>{5, -9, 9, -5});
    CHECK(ints(a * b) == std::vector<std::int64_t>{14, -14, -14, 14});
    // Python: 7 // 2 = 3, -7 // 2 = -4, 7 // -2 = -4, -7 // -2 = 3; % has the divisor's sign
    CHECK(ints(floor_divide(a, b)) == std::vector<std::int64_t>{3, -4, -4, 3});
    CHECK(ints(a % b) == std::vector<std::int64_t>{1, 1, -1, -1});
    CHECK(ints(a + 1) == std::vector<std::int64_t>{8, -6, 8, -6});
    CHECK(ints(10 - a) == std::vector<std::int64_t>{3, 17, 3, 17});
    CHECK(ints(a % 3) == std::vector<std::int64_t>{1, 2, 1, 2});
    CHECK(ints(floor_divide(a, 3)) == std::vector<std::int64_t>{2, -3, 2, -3});
    // true division gives float32, as PyTorch's `/` with its default dtype
    const Tensor q = a / b;
    CHECK(q.dtype() == DType::Float32);
    CHECK(q.to_vector<float>() == std::vector<float>{3.5f, -3.5f, -3.5f, 3.5f});
    CHECK((a / 2).dtype() == DType::Float32);
    // overflow wraps as in PyTorch (no undefined behaviour)
    const auto big = std::numeric_limits<std::int64_t>::max();
    CHECK(ints(index_tensor({big}, {1}) + 1) ==
          std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()});
    CHECK(ints(floor_divide(index_tensor({std::numeric_limits<std::int64_t>::min()}, {1}), -1)) ==
          std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()});
    CHECK_THROWS_WITH_AS(floor_divide(a, index_tensor({1, 0, 1, 1}, {4})),
                         doctest::Contains("floor_divide: integer division by zero"), ValueError);
    CHECK_THROWS_WITH_AS(a % 0, doctest::Contains("remainder: integer division by zero"), ValueError);
}

TEST_CASE("int64 with a float promotes to that float and gradients reach the float side") {
    const Tensor ids = index_tensor({1, 2, 3}, {3});
    const Tensor x = rand64({3}, 1);
    const Tensor y = ids * x;
    CHECK(y.dtype() == DType::Float64);
    CHECK((ids + 0.5).dtype() == DType::Float32);
    CHECK((ids + 0.5).to_vector<float>() == std::vector<float>{1.5f, 2.5f, 3.5f});
    CHECK((x + 1).dtype() == DType::Float64);
    sum(y).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 2, 3});
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return ids * in[0] - in[0] / ids; },
                    std::vector<Tensor>{x});
    // bool with int64 -> int64; bool with bool arithmetic is refused
    const Tensor m = ones({3}, {.dtype = DType::Bool});
    CHECK(ints(m + ids) == std::vector<std::int64_t>{2, 3, 4});
    CHECK_THROWS_WITH_AS(m * m, doctest::Contains("mul: expected a float32, float64 or int64"), DTypeError);
    CHECK_THROWS_WITH_AS(x + zeros({3}), doctest::Contains("add: dtypes differ: float64 [3] and float32 [3]"),
                         DTypeError);
}

TEST_CASE("remainder in float follows Python's sign rule and passes gradcheck") {
    const Tensor a = tensor({5.5, -5.5, 5.5, -5.5}, {4}), b = tensor({2, 2, -2, -2}, {4});
    CHECK((a % b).to_vector<float>() == std::vector<float>{1.5f, 0.5f, -0.5f, -1.5f});
    CHECK(floor_divide(a, b).to_vector<float>() == std::vector<float>{2, -3, -3, 2});
    CHECK(remainder(a, 2.0).to_vector<float>() == std::vector<float>{1.5f, 0.5f, 1.5f, 0.5f});
    const Tensor x = tensor({2.3, -1.7, 4.9}, {3}, {.dtype = DType::Float64, .requires_grad = true});
    const Tensor d = tensor({1.1, 0.6, -2.2}, {3}, {.dtype = DType::Float64, .requires_grad = true});
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return remainder(in[0], in[1]); },
                    (std::vector<Tensor>{x, d}));
    CHECK_FALSE(floor_divide(x, d).requires_grad());
}

TEST_CASE("comparisons with tensors and plain numbers give bool tensors") {
    const Tensor x = tensor({0.25, 0.5, 0.75}, {3});
    CHECK(bools(x > 0.5) == std::vector<int>{0, 0, 1});
    CHECK(bools(x >= 0.5) == std::vector<int>{0, 1, 1});
    CHECK(bools(x < 0.5) == std::vector<int>{1, 0, 0});
    CHECK(bools(x <= 0.5) == std::vector<int>{1, 1, 0});
    CHECK(bools(x == 0.5) == std::vector<int>{0, 1, 0});
    CHECK(bools(x != 0.5) == std::vector<int>{1, 0, 1});
    CHECK(bools(0.5 < x) == std::vector<int>{0, 0, 1});
    CHECK(bools(0.5 >= x) == std::vector<int>{1, 1, 0});
    // the number is converted to x's dtype first, as PyTorch does: float32(0.1) == 0.1
    CHECK(bools(tensor({0.1}, {1}) == 0.1) == std::vector<int>{1});
    const Tensor ids = index_tensor({3, 1, 3}, {3});
    CHECK(bools(eq(ids, 3)) == std::vector<int>{1, 0, 1});
    CHECK(bools(ids == x * 4) == std::vector<int>{0, 0, 1});  // int64 vs float32 promotes
    CHECK(bools(ne(ids, ids)) == std::vector<int>{0, 0, 0});
    CHECK(bools(le(ids, 2.5)) == std::vector<int>{0, 1, 0});
    CHECK(bools(ge(x, tensor({0.5}, {1}))) == std::vector<int>{0, 1, 1});
    CHECK_THROWS_WITH_AS(gt(Tensor{}, 1.0), doctest::Contains("gt: undefined"), ValueError);
}

TEST_CASE("where takes plain numbers on either side") {
    const Tensor x = tensor({-1, 2, -3}, {3}, {.dtype = DType::Float64, .requires_grad = true});
    const Tensor y = where(x > 0, x, 0.0);
    CHECK(y.dtype() == DType::Float64);
    CHECK(y.to_vector<double>() == std::vector<double>{0, 2, 0});
    CHECK(where(x > 0, -1, x).to_vector<double>() == std::vector<double>{-1, -1, -3});
    sum(y).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0});
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return where(in[0] > 0, in[0], 0.5); },
                    std::vector<Tensor>{x});
    const Tensor ids = index_tensor({4, 5, 6}, {3});
    const Tensor kept = where(ids > 4, ids, 0);
    CHECK(ints(kept) == std::vector<std::int64_t>{0, 5, 6});
    CHECK(where(ids > 4, ids, 0.5).dtype() == DType::Float32);  // a double promotes int64, as in PyTorch
    CHECK(where(ids > 4, ids, x.detach()).dtype() == DType::Float64);
    CHECK_THROWS_WITH_AS(where(ids, ids, 0), doctest::Contains("where: condition must be bool"), DTypeError);
}

TEST_CASE("where with two plain numbers has the condition's shape and PyTorch's dtypes") {
    const Tensor cond = tensor({1, 0, 0, 1}, {2, 2}) > 0.5;
    const Tensor f = where(cond, 1.5, -2.0);
    CHECK(f.dtype() == DType::Float32);
    CHECK(f.shape() == Shape{2, 2});
    CHECK(f.to_vector<double>() == std::vector<double>{1.5, -2, -2, 1.5});
    CHECK(ints(where(cond, 1, 0)) == std::vector<std::int64_t>{1, 0, 0, 1});
    CHECK(ints(where(cond, std::int64_t{7}, 3u)) == std::vector<std::int64_t>{7, 3, 3, 7});
    CHECK(where(cond, 1, 0.5).dtype() == DType::Float32);
    CHECK_THROWS_WITH_AS(where(zeros({2}), 1.0, 0.0), doctest::Contains("where: condition must be bool"),
                         DTypeError);
}

TEST_CASE("maximum and minimum broadcast, propagate NaN and split the gradient at ties") {
    const Tensor a = tensor({1, 2, 3}, {3}, {.dtype = DType::Float64, .requires_grad = true});
    const Tensor b = tensor({2, 2, 1}, {3}, {.dtype = DType::Float64, .requires_grad = true});
    const Tensor hi = maximum(a, b);
    CHECK(hi.to_vector<double>() == std::vector<double>{2, 2, 3});
    sum(hi).backward();  // PyTorch: the larger input gets dy, a tie gives each dy / 2
    CHECK(a.grad().to_vector<double>() == std::vector<double>{0, 0.5, 1});
    CHECK(b.grad().to_vector<double>() == std::vector<double>{1, 0.5, 0});
    CHECK(minimum(a, b).to_vector<double>() == std::vector<double>{1, 2, 1});
    const Tensor col = tensor({0, 5}, {2, 1}, {.dtype = DType::Float64});
    CHECK(maximum(col, a.detach()).shape() == Shape{2, 3});
    CHECK(maximum(col, a.detach()).to_vector<double>() == std::vector<double>{1, 2, 3, 5, 5, 5});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto with_nan = minimum(tensor({nan, 1}, {2}), tensor({0, nan}, {2})).to_vector<double>();
    CHECK(std::isnan(with_nan[0]));
    CHECK(std::isnan(with_nan[1]));
    CHECK(ints(maximum(index_tensor({1, 5}, {2}), index_tensor({3, 4}, {2}))) ==
          std::vector<std::int64_t>{3, 5});
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return maximum(in[0], in[1]); },
                    (std::vector<Tensor>{rand64({2, 3}, 21), rand64({3}, 22)}));
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return minimum(in[0], in[1]); },
                    (std::vector<Tensor>{rand64({2, 1}, 23), rand64({2, 3}, 24)}));
    CHECK_THROWS_WITH_AS(maximum(zeros({2}), zeros({3})), doctest::Contains("maximum"), ShapeError);
    CHECK_THROWS_WITH_AS(minimum(zeros({2}), zeros({2}, {.dtype = DType::Float64})),
                         doctest::Contains("minimum: dtypes differ"), DTypeError);
}

TEST_CASE("clamp limits values and passes the gradient inside and on the boundary") {
    const Tensor x = tensor({-1, -0.5, 0, 0.5, 1}, {5}, {.dtype = DType::Float64, .requires_grad = true});
    const Tensor y = clamp(x, -0.5, 0.5);
    CHECK(y.to_vector<double>() == std::vector<double>{-0.5, -0.5, 0, 0.5, 0.5});
    sum(y).backward();  // PyTorch: dx = dy where min <= x <= max
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 1, 1, 0});
    CHECK(clamp(x.detach(), std::nullopt, 0.0).to_vector<double>() == std::vector<double>{-1, -0.5, 0, 0, 0});
    CHECK(clamp(x.detach(), 0.0).to_vector<double>() == std::vector<double>{0, 0, 0, 0.5, 1});
    CHECK(clamp(x.detach(), 2.0, 1.0).to_vector<double>() == std::vector<double>(5, 1.0));  // min > max
    CHECK(clamp(x.detach(), 0.0).dtype() == DType::Float64);
    CHECK(std::isnan(clamp(tensor({std::nan("")}, {1}), 0.0, 1.0).item()));
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return clamp(in[0], -0.7, 0.4); },
                    std::vector<Tensor>{rand64({4, 5}, 25)});
    CHECK_THROWS_WITH_AS(clamp(x, std::nullopt), doctest::Contains("clamp: at least one"), ValueError);
    CHECK_THROWS_WITH_AS(clamp(x, std::nan("")), doctest::Contains("clamp: min is NaN"), ValueError);
}

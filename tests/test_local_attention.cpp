// Local attention: the banded kernels against dense references, gradients, and bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>

using namespace attograd;
using testing::rand64;

namespace {

// Window starts for N = 2 sequences of Tq = 5 queries, including windows hanging off both ends
// and one entirely outside the keys.
Tensor starts() { return index_tensor({-2, 0, 1, 3, 5, -9, 4, 2, 6, -1}, {2, 5}); }

// Dense [N, Tq, Tk] scores gathered into the band [N, Tq, W] (0 out of range).
Tensor gather_band(const Tensor& dense, const Tensor& window_start, std::int64_t width) {
    const std::int64_t n = dense.size(0), tq = dense.size(1), tk = dense.size(2);
    std::vector<double> out;
    for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t t = 0; t < tq; ++t)
            for (std::int64_t j = 0; j < width; ++j) {
                const auto s = static_cast<std::int64_t>(window_start.at({b, t})) + j;
                out.push_back(s >= 0 && s < tk ? dense.at({b, t, s}) : 0.0);
            }
    return tensor(out, {n, tq, width}, {.dtype = DType::Float64});
}

}  // namespace

TEST_CASE("local_dot_score equals the dense scaled scores gathered into the band") {
    Tensor q = rand64({2, 5, 4}, 1), k = rand64({2, 6, 4}, 2);
    const double scale = 0.5;
    Tensor band = local_dot_score(q, k, starts(), 3, scale);
    CHECK(band.shape() == Shape{2, 5, 3});
    Tensor dense = matmul(q, transpose(k, 1, 2)) * scale;
    CHECK(testing::max_abs_diff(band, gather_band(dense, starts(), 3)) < 1e-14);
}

TEST_CASE("local_band_to_dense scatters the band and leaves every other entry exactly 0") {
    Tensor band = rand64({2, 5, 3}, 3);
    Tensor dense = local_band_to_dense(band, starts(), 6);
    CHECK(dense.shape() == Shape{2, 5, 6});
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t t = 0; t < 5; ++t) {
            const auto first = static_cast<std::int64_t>(starts().at({b, t}));
            for (std::int64_t s = 0; s < 6; ++s) {
                const bool inside = s >= first && s < first + 3;
                CHECK(dense.at({b, t, s}) == (inside ? band.at({b, t, s - first}) : 0.0));
            }
        }
}

TEST_CASE("local_weighted_sum equals the dense weighted sum of the scattered band") {
    Tensor w = rand64({2, 5, 3}, 4), v = rand64({2, 6, 3}, 5);
    Tensor out = local_weighted_sum(w, v, starts());
    CHECK(out.shape() == Shape{2, 5, 3});
    CHECK(testing::max_abs_diff(out, matmul(local_band_to_dense(w, starts(), 6), v)) < 1e-14);
    // Row (1, 0) has no key in its window: its output is exactly zero.
    for (std::int64_t e = 0; e < 3; ++e) CHECK(out.at({1, 0, e}) == 0.0);
}

TEST_CASE("additive_score equals v^T tanh(uq + wx) composed from elementwise ops") {
    Tensor uq = rand64({2, 5, 3}, 6), wx = rand64({2, 4, 3}, 7), v = rand64({3}, 8);
    Tensor fused = additive_score(uq, wx, v);
    Tensor pre = reshape(uq, {2, 5, 1, 3}) + reshape(wx, {2, 1, 4, 3});
    Tensor composed = reshape(matmul(tanh(pre), reshape(v, {3, 1})), {2, 5, 4});
    CHECK(testing::max_abs_diff(fused, composed) < 1e-14);
    Tensor wx6 = rand64({2, 6, 3}, 9);
    Tensor band = local_additive_score(uq, wx6, v, starts(), 3);
    CHECK(testing::max_abs_diff(band, gather_band(additive_score(uq, wx6, v), starts(), 3)) < 1e-14);
}

TEST_CASE("the banded kernels and the fused additive score pass float64 gradcheck") {
    Tensor q = rand64({2, 5, 4}, 10), k = rand64({2, 6, 4}, 11), v = rand64({2, 6, 2}, 12);
    Tensor w = rand64({2, 5, 3}, 13), h = rand64({4}, 14), wx = rand64({2, 6, 4}, 15);
    auto dot = [](const std::vector<Tensor>& in) { return local_dot_score(in[0], in[1], starts(), 3, 0.7); };
    auto wsum = [](const std::vector<Tensor>& in) { return local_weighted_sum(in[0], in[1], starts()); };
    auto dense = [](const std::vector<Tensor>& in) { return local_band_to_dense(in[0], starts(), 6); };
    auto add_local = [](const std::vector<Tensor>& in) {
        return local_additive_score(in[0], in[1], in[2], starts(), 3);
    };
    auto add_all = [](const std::vector<Tensor>& in) { return additive_score(in[0], in[1], in[2]); };
    CHECK_GRADCHECK(dot, (std::vector<Tensor>{q, k}));
    CHECK_GRADCHECK(wsum, (std::vector<Tensor>{w, v}));
    CHECK_GRADCHECK(dense, (std::vector<Tensor>{w}));
    CHECK_GRADCHECK(add_local, (std::vector<Tensor>{q, wx, h}));
    CHECK_GRADCHECK(add_all, (std::vector<Tensor>{q, wx, h}));
}

TEST_CASE("the banded kernels' parallel paths agree with the dense reference on long sequences") {
    Generator gen(4);
    const std::int64_t t = 300, d = 16, width = 17;
    Tensor q = randn({2, t, d}, gen, {.dtype = DType::Float64, .requires_grad = true});
    Tensor k = randn({2, t, d}, gen, {.dtype = DType::Float64, .requires_grad = true});
    std::vector<std::int64_t> first;
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t i = 0; i < t; ++i) first.push_back(i - 8);
    Tensor ws = index_tensor(first, {2, t});
    Tensor r = randn({2, t, width}, gen, {.dtype = DType::Float64});
    sum(local_dot_score(q, k, ws, width) * r).backward();
    Tensor dq = q.grad(), dk = k.grad();
    q.zero_grad();
    k.zero_grad();
    sum(matmul(q, transpose(k, 1, 2)) * local_band_to_dense(r, ws, t)).backward();
    CHECK(testing::max_abs_diff(dq, q.grad()) < 1e-11);
    CHECK(testing::max_abs_diff(dk, k.grad()) < 1e-11);
}

TEST_CASE("the banded kernels reject bad input with shapes in the message") {
    Tensor q = zeros({2, 5, 4}), k = zeros({2, 6, 4});
    CHECK_THROWS_WITH_AS(local_dot_score(q, zeros({2, 6, 3}), starts(), 3),
                         doctest::Contains("[2, 5, 4] and [2, 6, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(local_dot_score(q, k, index_tensor({0, 1}, {1, 2}), 3),
                         doctest::Contains("window_start must be [N, Tq] = [2, 5], got [1, 2]"), ShapeError);
    CHECK_THROWS_WITH_AS(local_dot_score(q, k, zeros({2, 5}), 3), doctest::Contains("int64"), DTypeError);
    CHECK_THROWS_WITH_AS(local_dot_score(q, k, starts(), 0), doctest::Contains("width must be >= 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(local_dot_score(zeros({5, 4}), k, starts(), 3), doctest::Contains("[5, 4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(local_weighted_sum(zeros({2, 5, 3}), zeros({3, 6, 2}), starts()),
                         doctest::Contains("batch sizes differ"), ShapeError);
    CHECK_THROWS_WITH_AS(additive_score(zeros({2, 5, 3}), zeros({2, 4, 3}), zeros({4})),
                         doctest::Contains("v [H]"), ShapeError);
    CHECK_THROWS_WITH_AS(
        additive_score(zeros({2, 5, 3}), zeros({2, 4, 3}, {.dtype = DType::Float64}), zeros({3})),
        doctest::Contains("dtypes differ"), DTypeError);
}

// Elementwise, reduction, shape and matmul ops: values, broadcasting and float64 gradcheck.
#include "helpers.hpp"

using namespace attograd;
using testing::rand64;
using UnaryOp = Tensor (*)(const Tensor&);
using BinaryOp = Tensor (*)(const Tensor&, const Tensor&);

TEST_CASE("binary ops broadcast and pass gradcheck with broadcast shapes") {
    const std::vector<std::pair<Shape, Shape>> cases = {
        {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{2, 3, 4}, {3, 1}}, {{1, 4}, {3, 1}}, {{3, 4}, {}}};
    for (const auto& [sa, sb] : cases) {
        Tensor a = rand64(sa, 1), b = rand64(sb, 2);
        b = add(b.detach(), full(sb, 3.0, {.dtype = DType::Float64}))
                .detach()
                .requires_grad_();  // keep div away from 0
        for (BinaryOp op : {add, sub, mul, div}) {
            auto fn = [op](const std::vector<Tensor>& in) { return op(in[0], in[1]); };
            CHECK_GRADCHECK(fn, (std::vector<Tensor>{a, b}));
        }
    }
}

TEST_CASE("a broadcast bias gets its gradient summed back to its own shape") {
    Tensor x = rand64({5, 3}, 1);
    Tensor bias = rand64({3}, 2);
    sum(x + bias).backward();
    CHECK(bias.grad().shape() == Shape{3});
    CHECK(bias.grad().at({0}) == doctest::Approx(5.0));
}

TEST_CASE("unary ops pass gradcheck") {
    Tensor x = rand64({3, 4}, 3);
    Tensor positive = add(abs(x.detach()), scalar(0.5, {.dtype = DType::Float64})).detach().requires_grad_();
    for (UnaryOp op : std::initializer_list<UnaryOp>{neg, exp, tanh, sigmoid, relu, gelu, abs}) {
        auto fn = [op](const std::vector<Tensor>& in) { return op(in[0]); };
        CHECK_GRADCHECK(fn, std::vector<Tensor>{x});
    }
    for (UnaryOp op : std::initializer_list<UnaryOp>{log, sqrt}) {
        auto fn = [op](const std::vector<Tensor>& in) { return op(in[0]); };
        CHECK_GRADCHECK(fn, std::vector<Tensor>{positive});
    }
    auto cube = [](const std::vector<Tensor>& in) { return pow(in[0], 3.0); };
    CHECK_GRADCHECK(cube, std::vector<Tensor>{x});
}

TEST_CASE("tanh and sigmoid saturate without NaN for |x| up to 1e4") {
    Tensor x = tensor({-1e4, -50.0, 0.0, 50.0, 1e4}, {5}, {.requires_grad = true});
    Tensor t = tanh(x), s = sigmoid(x);
    sum(t + s).backward();
    for (std::int64_t i = 0; i < 5; ++i) {
        CHECK(std::isfinite(t.at({i})));
        CHECK(std::isfinite(s.at({i})));
        CHECK(std::isfinite(x.grad().at({i})));
    }
    CHECK(s.at({0}) == 0.0);
    CHECK(s.at({4}) == 1.0);
    CHECK(t.at({0}) == -1.0);
}

TEST_CASE("reductions: sum, mean and max over axes with keepdim") {
    Tensor x = rand64({2, 3, 4}, 4);
    CHECK(sum(x, {1}, true).shape() == Shape{2, 1, 4});
    CHECK(sum(x, {-1, 0}).shape() == Shape{3});
    CHECK(mean(x).item() == doctest::Approx(sum(x).item() / 24));
    for (bool keepdim : {false, true}) {
        auto fs = [keepdim](const std::vector<Tensor>& in) { return sum(in[0], {0, 2}, keepdim); };
        auto fm = [keepdim](const std::vector<Tensor>& in) { return mean(in[0], {1}, keepdim); };
        auto fx = [keepdim](const std::vector<Tensor>& in) { return max(in[0], -1, keepdim).values; };
        CHECK_GRADCHECK(fs, std::vector<Tensor>{x});
        CHECK_GRADCHECK(fm, std::vector<Tensor>{x});
        CHECK_GRADCHECK(fx, std::vector<Tensor>{x});
    }
    Tensor m = tensor({1.0, 5.0, 5.0, 2.0}, {2, 2});
    auto r = max(m, 1);
    CHECK(r.indices.at({0}) == 1);
    CHECK(r.values.at({1}) == 5.0);
    CHECK(r.indices.at({1}) == 0);
    CHECK_THROWS_WITH_AS(sum(x, {3}), doctest::Contains("axis 3"), IndexError);
    CHECK_THROWS_WITH_AS(max(zeros({2, 0}), 1), doctest::Contains("empty"), ShapeError);
}

TEST_CASE("matmul: 2-D, batched and broadcast batch dims pass gradcheck") {
    const std::vector<std::pair<Shape, Shape>> cases = {{{3, 4}, {4, 5}},
                                                        {{2, 3, 4}, {2, 4, 5}},
                                                        {{2, 3, 4}, {4, 5}},
                                                        {{2, 1, 3, 4}, {3, 4, 2}},
                                                        {{3, 4}, {2, 4, 2}}};
    for (const auto& [sa, sb] : cases) {
        auto fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
        CHECK_GRADCHECK(fn, (std::vector<Tensor>{rand64(sa, 5), rand64(sb, 6)}));
    }
    Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = tensor({1, 0, 0, 1, 1, 1}, {3, 2});
    Tensor c = matmul(a, b);
    CHECK(c.at({0, 0}) == 4.0);
    CHECK(c.at({1, 1}) == 11.0);
    CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({4, 5})),
                         doctest::Contains("matmul: inner dimensions differ: [2, 3] x [4, 5]"), ShapeError);
    CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({3, 5}, {.dtype = DType::Float64})),
                         doctest::Contains("dtypes differ"), DTypeError);
    CHECK_THROWS_AS(matmul(zeros({3}), zeros({3, 5})), ShapeError);
}

TEST_CASE("permute and transpose accept negative axes and pass gradcheck") {
    Tensor x = rand64({2, 3, 4}, 7);
    CHECK(permute(x, {-1, 0, 1}).shape() == Shape{4, 2, 3});
    CHECK(permute(x, {2, 0, 1}).at({3, 1, 2}) == x.at({1, 2, 3}));
    auto fp = [](const std::vector<Tensor>& in) { return permute(in[0], {-1, 0, -2}); };
    auto ft = [](const std::vector<Tensor>& in) { return transpose(in[0], 0, -1); };
    auto fr = [](const std::vector<Tensor>& in) { return reshape(in[0], {4, -1}); };
    CHECK_GRADCHECK(fp, std::vector<Tensor>{x});
    CHECK_GRADCHECK(ft, std::vector<Tensor>{x});
    CHECK_GRADCHECK(fr, std::vector<Tensor>{x});
    CHECK_THROWS_AS(permute(x, {0, 0, 1}), IndexError);
    CHECK_THROWS_WITH_AS(reshape(x, {5, 5}), doctest::Contains("[2, 3, 4]"), ShapeError);
}

TEST_CASE("unsqueeze and squeeze follow PyTorch: negative dims, size-1 dims only, gradcheck, errors") {
    const Tensor x = rand64({2, 1, 3}, 11);
    CHECK(unsqueeze(x, 0).shape() == Shape{1, 2, 1, 3});
    CHECK(unsqueeze(x, 3).shape() == Shape{2, 1, 3, 1});
    CHECK(unsqueeze(x, -1).shape() == Shape{2, 1, 3, 1});  // -1 is the new last dimension
    CHECK(unsqueeze(x, -4).shape() == Shape{1, 2, 1, 3});
    CHECK(unsqueeze(scalar(2.0), 0).shape() == Shape{1});
    CHECK(unsqueeze(x, 1).at({1, 0, 0, 2}) == x.at({1, 0, 2}));
    CHECK(squeeze(x).shape() == Shape{2, 3});
    CHECK(squeeze(x, 1).shape() == Shape{2, 3});
    CHECK(squeeze(x, -2).shape() == Shape{2, 3});
    CHECK(squeeze(x, 0).shape() == Shape{2, 1, 3});  // size 2: unchanged
    CHECK(squeeze(zeros({1, 1})).shape() == Shape{});
    CHECK(squeeze(scalar(1.0), -1).shape() == Shape{});
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return unsqueeze(in[0], -2) * 2.0; },
                    std::vector<Tensor>{x});
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return squeeze(in[0]) * 3.0; },
                    std::vector<Tensor>{x});
    CHECK_GRADCHECK([](const std::vector<Tensor>& in) { return squeeze(in[0], 1) * 3.0; },
                    std::vector<Tensor>{x});
    CHECK_THROWS_WITH_AS(
        unsqueeze(x, 4),
        doctest::Contains("unsqueeze: dim 4 is out of range [-4, 3] for a tensor of shape [2, 1, 3]"),
        IndexError);
    CHECK_THROWS_WITH_AS(unsqueeze(x, -5), doctest::Contains("unsqueeze: dim -5"), IndexError);
    CHECK_THROWS_WITH_AS(
        squeeze(x, 3),
        doctest::Contains("squeeze: dim 3 is out of range [-3, 2] for a tensor of shape [2, 1, 3]"),
        IndexError);
    CHECK_THROWS_WITH_AS(squeeze(scalar(1.0), 1), doctest::Contains("squeeze: dim 1 is out of range [-1, 0]"),
                         IndexError);
}

TEST_CASE("tensors format with shape and dtype, truncated when large") {
    const std::string small = fmt::format("{}", tensor({1.0, 2.5}, {2}));
    CHECK(small.find("[1.0000, 2.5000]") != std::string::npos);
    CHECK(small.find("dtype=float32") != std::string::npos);
    const std::string large = fmt::format("{}", zeros({1001}));
    CHECK(large.find("...") != std::string::npos);
    CHECK(large.size() < 120);
}

// Mask helpers: causal masks (bool and PyTorch's float form), padding masks from lengths, and
// the layers' checks of float masks (dtype, NaN and +inf).
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace attograd;

TEST_CASE("causal_mask is true above the diagonal") {
    const Tensor m = nn::causal_mask(3);
    CHECK(m.dtype() == DType::Bool);
    CHECK(m.shape() == Shape{3, 3});
    CHECK(m.to_vector<int>() == std::vector<int>{0, 1, 1, 0, 0, 1, 0, 0, 0});
    CHECK(nn::causal_mask(0).shape() == Shape{0, 0});
    CHECK_THROWS_WITH_AS(nn::causal_mask(-1), doctest::Contains("causal_mask"), ValueError);
}

TEST_CASE("generate_square_subsequent_mask is PyTorch's float form") {
    // torch.nn.Transformer.generate_square_subsequent_mask(3):
    // [[0, -inf, -inf], [0, 0, -inf], [0, 0, 0]]
    const double inf = std::numeric_limits<double>::infinity();
    const Tensor m = nn::generate_square_subsequent_mask(3, DType::Float64);
    CHECK(m.dtype() == DType::Float64);
    CHECK(m.to_vector<double>() == std::vector<double>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0});
    CHECK(nn::generate_square_subsequent_mask(2).dtype() == DType::Float32);
    CHECK_THROWS_WITH_AS(nn::generate_square_subsequent_mask(2, DType::Int64),
                         doctest::Contains("generate_square_subsequent_mask"), DTypeError);
}

TEST_CASE("a causal attn_mask gives the same attention as is_causal") {
    Generator gen(1);
    nn::MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = DType::Float64}, gen);
    const Tensor x = randn({2, 3, 4}, gen, {.dtype = DType::Float64});
    const auto with_bool = mha.forward(x, x, x, {.attn_mask = nn::causal_mask(3)});
    const auto with_float =
        mha.forward(x, x, x, {.attn_mask = nn::generate_square_subsequent_mask(3, DType::Float64)});
    const auto with_flag = mha.forward(x, x, x, {.is_causal = true});
    CHECK(with_bool.output.to_vector<double>() == with_flag.output.to_vector<double>());
    CHECK(with_float.output.to_vector<double>() == with_flag.output.to_vector<double>());
}

TEST_CASE("lengths_to_padding_mask marks the positions past each length") {
    const Tensor m = nn::lengths_to_padding_mask(index_tensor({2, 0, 3}, {3}));
    CHECK(m.dtype() == DType::Bool);
    CHECK(m.shape() == Shape{3, 3});
    CHECK(m.to_vector<int>() == std::vector<int>{0, 0, 1, 1, 1, 1, 0, 0, 0});
    CHECK(nn::lengths_to_padding_mask(index_tensor({1}, {1}), 3).to_vector<int>() ==
          std::vector<int>{0, 1, 1});
    CHECK_THROWS_WITH_AS(nn::lengths_to_padding_mask(index_tensor({4}, {1}), 3),
                         doctest::Contains("lengths_to_padding_mask: length 4"), ValueError);
    CHECK_THROWS_WITH_AS(nn::lengths_to_padding_mask(index_tensor({-1}, {1})), doctest::Contains("length -1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(nn::lengths_to_padding_mask(tensor({1, 2}, {2})), doctest::Contains("int64"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(nn::lengths_to_padding_mask(index_tensor({1, 2}, {1, 2})), doctest::Contains("[B]"),
                         ShapeError);
}

TEST_CASE("a float mask holding NaN or +inf is refused naming the mask and the layer, -inf is allowed") {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    Generator gen(2);
    nn::MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2}, gen);
    nn::MultiHeadAttention local(
        {.embed_dim = 4, .num_heads = 2, .scoring = {.local = nn::LocalMode::Monotonic, .window = 1}}, gen);
    nn::Attention single({.query_dim = 4}, gen);
    const Tensor x = randn({2, 3, 4}, gen);
    for (const double bad : {nan, inf}) {
        CAPTURE(bad);
        const Tensor padding = tensor({0, 0, bad, 0, 0, 0}, {2, 3});
        const Tensor square = tensor({0, 0, 0, 0, bad, 0, 0, 0, 0}, {3, 3});
        CHECK_THROWS_WITH_AS(mha.forward(x, {.key_padding_mask = padding}),
                             doctest::Contains("MultiHeadAttention: key_padding_mask holds"), ValueError);
        CHECK_THROWS_WITH_AS(mha.forward(x, {.attn_mask = square}),
                             doctest::Contains("MultiHeadAttention: attn_mask holds"), ValueError);
        CHECK_THROWS_WITH_AS(local.forward(x, {.attn_mask = square}),
                             doctest::Contains("MultiHeadAttention: attn_mask holds"), ValueError);
        CHECK_THROWS_WITH_AS(single.forward(x, x, {.key_padding_mask = padding}),
                             doctest::Contains("Attention: key_padding_mask holds"), ValueError);
    }
    // -inf masks: the output equals the bool mask's and is finite.
    const Tensor minus = tensor({0, 0, -inf, 0, -inf, 0}, {2, 3});
    const Tensor as_bool = minus < 0.0;
    const Tensor with_float = mha.forward(x, {.key_padding_mask = minus}).output;
    CHECK(with_float.to_vector<double>() ==
          mha.forward(x, {.key_padding_mask = as_bool}).output.to_vector<double>());
    for (const double v : with_float.to_vector<double>()) CHECK(std::isfinite(v));
}

TEST_CASE("a float mask of another dtype than the layer's is a DTypeError, as PyTorch's sdpa") {
    Generator gen(3);
    nn::MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2}, gen);
    nn::Attention single({.query_dim = 4}, gen);
    const Tensor x = randn({2, 3, 4}, gen);
    const Tensor padding64 = zeros({2, 3}, {.dtype = DType::Float64});
    CHECK_THROWS_WITH_AS(
        mha.forward(x, {.key_padding_mask = padding64}),
        doctest::Contains("MultiHeadAttention: key_padding_mask is float64 but the layer computes "
                          "in float32"),
        DTypeError);
    CHECK_THROWS_WITH_AS(
        mha.forward(x, {.attn_mask = nn::generate_square_subsequent_mask(3, DType::Float64)}),
        doctest::Contains("expected attn_mask dtype to be bool or float to match the query dtype "
                          "float32"),
        DTypeError);
    CHECK_THROWS_WITH_AS(single.forward(x, x, {.attn_mask = zeros({3, 3}, {.dtype = DType::Float64})}),
                         doctest::Contains("Attention: attn_mask is float64"), DTypeError);
    // The layer's own dtype and bool pass.
    CHECK(mha.forward(x, {.attn_mask = nn::generate_square_subsequent_mask(3)}).output.shape() ==
          Shape{2, 3, 4});
    CHECK(mha.forward(x, {.key_padding_mask = zeros({2, 3}) > 1.0}).output.shape() == Shape{2, 3, 4});
    CHECK_THROWS_WITH_AS(nn::check_float_mask(padding64, "memory_mask", DType::Float32, "Layer"),
                         doctest::Contains("Layer: memory_mask is float64"), DTypeError);
}

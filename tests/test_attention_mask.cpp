// Mask helpers: causal masks (bool and PyTorch's float form) and padding masks from lengths.
#include "helpers.hpp"

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

// Attention layers on unbatched inputs ([T, E] -> [T, E]), as PyTorch's MultiheadAttention.
#include "helpers.hpp"

using namespace attograd;
using testing::rand64;

namespace {
Tensor first(const Tensor& t) { return select(t, 0, 0); }
}  // namespace

TEST_CASE("MultiHeadAttention takes [T, E] inputs and returns [T, E] and [Tq, Tk] or [h, Tq, Tk]") {
    Generator gen(1);
    nn::MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = DType::Float64}, gen);
    const Tensor q = rand64({3, 4}, 2), kv = rand64({5, 4}, 3);
    const Tensor padding = ones({5}, {.dtype = DType::Bool}) > 1.0;  // all false
    const Tensor pad = index_tensor({0, 0, 0, 1, 1}, {5}) == 1;
    const auto out = mha.forward(q, kv, kv, {.key_padding_mask = pad});
    CHECK(out.output.shape() == Shape{3, 4});
    CHECK(out.weights.shape() == Shape{3, 5});
    const auto batched = mha.forward(reshape(q, {1, 3, 4}), reshape(kv, {1, 5, 4}), reshape(kv, {1, 5, 4}),
                                     {.key_padding_mask = reshape(pad, {1, 5})});
    CHECK(out.output.to_vector<double>() == first(batched.output).to_vector<double>());
    CHECK(out.weights.to_vector<double>() == first(batched.weights).to_vector<double>());
    CHECK(out.weights.at({0, 4}) == 0.0);
    const auto per_head = mha.forward(q, {.is_causal = true, .average_attn_weights = false});
    CHECK(per_head.weights.shape() == Shape{2, 3, 3});
    CHECK(per_head.output.shape() == Shape{3, 4});
    CHECK(mha.forward(q, kv, kv, {.key_padding_mask = padding}).output.shape() == Shape{3, 4});
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return mha.forward(in[0], in[1], in[1]).output; },
                    (std::vector<Tensor>{q, kv}));
    CHECK_THROWS_WITH_AS(mha.forward(q, reshape(kv, {1, 5, 4}), reshape(kv, {1, 5, 4})),
                         doctest::Contains("MultiHeadAttention: query must be [B, Tq, E]"), ShapeError);
}

TEST_CASE("Attention takes [T, D] inputs and returns [Tq, Dv] and [Tq, Tk]") {
    Generator gen(4);
    nn::Attention attention(
        {.query_dim = 4, .project_query = true, .project_key = true, .dtype = DType::Float64}, gen);
    const Tensor q = rand64({3, 4}, 5), kv = rand64({6, 4}, 6);
    const auto out = attention.forward(q, kv);
    CHECK(out.output.shape() == Shape{3, 4});
    CHECK(out.weights.shape() == Shape{3, 6});
    const auto batched = attention.forward(reshape(q, {1, 3, 4}), reshape(kv, {1, 6, 4}));
    CHECK(out.output.to_vector<double>() == first(batched.output).to_vector<double>());
    nn::Attention local({.query_dim = 4,
                         .scoring = {.local = nn::LocalMode::Monotonic, .window = 1},
                         .dtype = DType::Float64},
                        gen);
    const auto banded = local.forward(
        q, kv, nn::AttentionArgs{.key_padding_mask = index_tensor({0, 0, 0, 0, 0, 1}, {6}) == 1});
    CHECK(banded.band_weights.shape() == Shape{3, 3});
    CHECK(banded.window_start.shape() == Shape{3});
    CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return attention.forward(in[0], in[1]).output; },
                    (std::vector<Tensor>{q, kv}));
}

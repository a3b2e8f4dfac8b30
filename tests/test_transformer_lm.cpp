// nn::TransformerLM: PyTorch's state_dict keys, causality (a later token never changes an earlier
// position's logits), padding, the option and input errors, and sampling through nn::generate.
#include "nn/transformer_lm.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"
#include "nn/attention_recorder.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <set>

using namespace attograd;
using namespace attograd::nn;

namespace {

TransformerLMOptions small_options() {
    return {.vocab_size = 7, .max_len = 6, .d_model = 8, .nhead = 2, .num_layers = 2, .dim_feedforward = 16};
}

// Largest |a - b| over the first `positions` positions of two [1, T, V] logits.
double max_diff(const Tensor& a, const Tensor& b, std::int64_t positions) {
    const auto x = a.to_vector<float>(), y = b.to_vector<float>();
    const auto per_position = static_cast<std::size_t>(a.size(-1));
    double worst = 0.0;
    for (std::size_t i = 0; i < per_position * static_cast<std::size_t>(positions); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(x[i]) - static_cast<double>(y[i])));
    return worst;
}

}  // namespace

TEST_CASE("TransformerLM: word_language_model's keys, attention-only layers without feed-forward keys") {
    Generator generator(0);
    const TransformerLM model(small_options(), generator);
    std::set<std::string> keys;
    for (const auto& [name, p] : model.named_parameters()) keys.insert(name);
    for (const char* key :
         {"input_emb.weight", "pos_encoder.weight", "encoder.layers.0.self_attn.in_proj_weight",
          "encoder.layers.1.linear1.weight", "encoder.norm.weight", "decoder.weight", "decoder.bias"})
        CHECK_MESSAGE(keys.count(key) == 1, key);
    CHECK(model.state_dict().at("pos_encoder.weight").shape() == Shape{6, 8});

    TransformerLMOptions attention_only = small_options();
    attention_only.dim_feedforward = 0;
    const TransformerLM bare(attention_only, generator);
    for (const auto& [name, p] : bare.named_parameters()) CHECK(name.find("linear") == std::string::npos);
}

TEST_CASE("TransformerLM: logits [B, T, V], and position t does not depend on tokens after t") {
    Generator generator(1);
    TransformerLM model(small_options(), generator);
    model.eval();
    const Tensor ids = index_tensor({1, 2, 3, 4, 5, 6}, {1, 6});
    const Tensor changed = index_tensor({1, 2, 3, 0, 0, 0}, {1, 6});
    const Tensor a = model.forward(ids), b = model.forward(changed);
    CHECK(a.shape() == Shape{1, 6, 7});
    CHECK(max_diff(a, b, 3) < 1e-6);  // positions 0..2 see only 1 2 3
    CHECK(max_diff(a, b, 6) > 1e-3);  // position 3 sees the change
    // Right padding leaves the real positions as they are.
    const Tensor padded = model.forward(index_tensor({1, 2, 3, 0, 0, 0}, {1, 6}),
                                        tensor({0, 0, 0, 1, 1, 1}, {1, 6}, {.dtype = DType::Bool}));
    CHECK(max_diff(padded, b, 3) < 1e-6);
    // The embeddings path gives the same logits.
    CHECK(max_diff(model.forward_embeds(model.embed(ids)), a, 6) < 1e-6);
    // Unbatched ids give the same logits.
    CHECK(max_diff(reshape(model.forward(index_tensor({1, 2, 3}, {3})), {1, 3, 7}), a, 3) < 1e-6);
}

TEST_CASE("TransformerLM: the recorder sees each layer's causal self-attention [B, nhead, T, T]") {
    Generator generator(2);
    const TransformerLM model(small_options(), generator);
    AttentionRecorder recorder(model);
    model.forward(index_tensor({1, 2, 3, 4}, {1, 4}));
    const auto weights = recorder.weights("encoder.layers.1.self_attn");
    REQUIRE(weights.size() == 1);
    REQUIRE(weights[0].shape() == Shape{1, 2, 4, 4});
    const auto w = weights[0].to_vector<float>();
    CHECK(w[0 * 4 + 1] == 0.0f);  // query 0 never sees key 1
    CHECK(w[2 * 4 + 3] == 0.0f);  // query 2 never sees key 3
}

TEST_CASE("TransformerLM: bad options and inputs name the option or the shapes") {
    Generator generator(3);
    TransformerLMOptions o = small_options();
    o.vocab_size = 0;
    CHECK_THROWS_WITH_AS(TransformerLM(o, generator),
                         doctest::Contains("TransformerLM: vocab_size must be >= 1"), ValueError);
    o = small_options();
    o.nhead = 3;
    CHECK_THROWS_WITH_AS(TransformerLM(o, generator),
                         doctest::Contains("nhead 3 must be >= 1 and divide d_model 8"), ValueError);
    o = small_options();
    o.max_len = 0;
    CHECK_THROWS_WITH_AS(TransformerLM(o, generator), doctest::Contains("max_len must be >= 1"), ValueError);

    const TransformerLM model(small_options(), generator);
    CHECK_THROWS_WITH_AS(
        model.forward(index_tensor({1, 2, 3, 4, 5, 6, 1}, {1, 7})),
        doctest::Contains("TransformerLM: input [1, 7] must hold 1 to max_len = 6 positions, got 7"),
        ShapeError);
    CHECK_THROWS_WITH_AS(model.forward(zeros({1, 3})), doctest::Contains("TransformerLM: ids must be int64"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(model.forward(index_tensor({1, 2}, {1, 1, 2})),
                         doctest::Contains("TransformerLM: ids must be [B, T] or [T]"), ShapeError);
    CHECK_THROWS_AS(model.forward(index_tensor({1, 7}, {1, 2})), IndexError);
    CHECK_THROWS_WITH_AS(
        model.forward_embeds(zeros({1, 3, 4})),
        doctest::Contains("inputs_embeds must be [B, T, d_model = 8] or [T, 8], got [1, 3, 4]"), ShapeError);
}

TEST_CASE("TransformerLM: generate samples through next_token_logits, the same seed the same text") {
    Generator init(4);
    TransformerLM model(small_options(), init);
    model.eval();
    const GenerateOptions options{.max_new_tokens = 10, .max_context = 6, .sampling = {.temperature = 1.5}};
    Generator a(9), b(9), c(10);
    const auto first = generate(model.next_token_logits(), {1, 2}, options, a);
    CHECK(first.size() == 12);  // longer than max_len: the context is cropped
    CHECK(std::vector<std::int64_t>(first.begin(), first.begin() + 2) == std::vector<std::int64_t>{1, 2});
    CHECK(generate(model.next_token_logits(), {1, 2}, options, b) == first);
    CHECK(generate(model.next_token_logits(), {1, 2}, options, c) != first);
}

// nn::Attention: global soft and sparse attention, every score and mask, projections, gradients,
// fully masked rows, dropout semantics, and bad input.
#include "attention_helpers.hpp"
#include "fixtures.hpp"

#include <cmath>

using namespace testing;

namespace {

// Inputs for B = 2, Tq = 3, Tk = 4 with widths 3 (query), 5 (key) and 2 (value).
struct Inputs {
    Tensor q = rand64({2, 3, 3}, 11), k = rand64({2, 4, 5}, 12), v = rand64({2, 4, 2}, 13);
};

// Options with projections so that every score fits query width 3 and key width 5.
AttentionOptions projected(Score score, Normalizer normalizer) {
    return {.query_dim = 3,
            .key_dim = 5,
            .value_dim = 2,
            .scoring = {.score = score},
            .hidden = 4,
            .project_query = true,
            .project_key = true,
            .project_value = true,
            .embed_dim = 3,
            .normalizer = normalizer};
}

void check_finite(const Tensor& t) {
    REQUIRE(t.defined());
    for (double x : t.to_vector<double>()) REQUIRE(std::isfinite(x));
}

}  // namespace

TEST_CASE("scaled-dot soft attention equals softmax(q k^T / sqrt(d) + mask) v") {
    auto layer = make_layer64({.query_dim = 4, .value_dim = 3});
    Tensor q = rand64({2, 3, 4}, 1), k = rand64({2, 5, 4}, 2), v = rand64({2, 5, 3}, 3);
    const AttentionArgs masks{.key_padding_mask = bool_tensor({0, 0, 0, 0, 1, 1, 0, 0, 0, 0}, {2, 5})};
    const auto out = layer->forward(q, k, v, masks);
    Tensor pad = zeros({2, 1, 5}, {.dtype = DType::Float64});
    pad.data<double>()[4] = -INFINITY;  // batch 0, key 4
    pad.data<double>()[5] = -INFINITY;  // batch 1, key 0
    Tensor expected_w = softmax(matmul(q, transpose(k, 1, 2)) / 2.0 + pad, -1);
    CHECK(max_abs_diff(out.weights, expected_w) < 1e-14);
    CHECK(max_abs_diff(out.output, matmul(expected_w, v)) < 1e-14);
    CHECK(out.weights.at({0, 1, 4}) == 0.0);
    CHECK(out.weights.at({1, 2, 0}) == 0.0);
}

TEST_CASE("sparse attention equals sparsemax of the scores and gives exact zeros") {
    auto layer =
        make_layer64({.query_dim = 4, .scoring = {.score = Score::Dot}, .normalizer = Normalizer::Sparse});
    Tensor q = rand64({2, 3, 4}, 4) * 3.0, k = rand64({2, 6, 4}, 5);
    const auto out = layer->forward(q, k);
    CHECK(max_abs_diff(out.weights, sparsemax(matmul(q, transpose(k, 1, 2)), -1)) < 1e-14);
    CHECK(max_abs_diff(out.output, matmul(out.weights, k)) < 1e-14);
    int zeros_found = 0;
    for (double w : out.weights.to_vector<double>()) zeros_found += w == 0.0;
    CHECK(zeros_found > 0);
}

TEST_CASE(
    "soft and sparse attention pass gradcheck for every score and mask kind, w.r.t. inputs and parameters") {
    for (Score score : kAllScores)
        for (Normalizer normalizer : {Normalizer::Soft, Normalizer::Sparse})
            for (const auto& [name, masks] : mask_cases()) {
                INFO(to_string(score) << " " << to_string(normalizer) << " " << name);
                auto layer = make_layer64(projected(score, normalizer));
                Inputs in;
                auto fn = [&layer, masks = masks](const std::vector<Tensor>& x) {
                    return layer->forward(x[0], x[1], x[2], masks).output;
                };
                CHECK_GRADCHECK(fn, with_parameters(*layer.attention, {in.q, in.k, in.v}));
            }
}

TEST_CASE("unprojected attention passes gradcheck for every score (the score's own parameters)") {
    for (Score score : kAllScores) {
        INFO(to_string(score));
        const bool same = score == Score::Dot || score == Score::ScaledDot;
        auto layer = make_layer64(
            {.query_dim = 3, .key_dim = same ? 3 : 5, .value_dim = 2, .scoring = {.score = score}});
        Tensor q = rand64({2, 3, 3}, 1), k = rand64({2, 4, same ? 3 : 5}, 2), v = rand64({2, 4, 2}, 3);
        auto fn = [&layer](const std::vector<Tensor>& x) { return layer->forward(x[0], x[1], x[2]).output; };
        CHECK_GRADCHECK(fn, with_parameters(*layer.attention, {q, k, v}));
    }
}

TEST_CASE("a fully masked row gives zero weights, zero output and finite gradients (soft, sparse)") {
    for (Score score : kAllScores)
        for (Normalizer normalizer : {Normalizer::Soft, Normalizer::Sparse}) {
            INFO(to_string(score) << " " << to_string(normalizer));
            auto layer = make_layer64(projected(score, normalizer));
            Inputs in;
            const auto out = layer->forward(in.q, in.k, in.v, fully_masked_row());
            for (std::int64_t s = 0; s < 4; ++s) CHECK(out.weights.at({0, 1, s}) == 0.0);
            for (std::int64_t e = 0; e < 3; ++e) CHECK(out.output.at({0, 1, e}) == 0.0);
            sum(out.output * rand64({2, 3, 3}, 5).detach()).backward();
            check_finite(in.q.grad());
            check_finite(in.k.grad());
            check_finite(in.v.grad());
            for (const Tensor& p : layer->parameters()) check_finite(p.grad());
            auto fn = [&layer](const std::vector<Tensor>& x) {
                return layer->forward(x[0], x[1], x[2], fully_masked_row()).output;
            };
            CHECK_GRADCHECK(fn, with_parameters(*layer.attention, {in.q, in.k, in.v}));
        }
}

TEST_CASE("the plain form uses the inputs as keys and values") {
    auto layer = make_layer64({.query_dim = 3, .key_dim = 4, .scoring = {.score = Score::Bilinear}});
    Tensor q = rand64({2, 3, 3}, 1), x = rand64({2, 5, 4}, 2);
    const auto plain = layer->forward(q, x);
    const auto kv = layer->forward(q, x, x);
    CHECK(plain.output.shape() == Shape{2, 3, 4});
    CHECK(max_abs_diff(plain.output, kv.output) == 0.0);
    CHECK(max_abs_diff(plain.weights, kv.weights) == 0.0);
}

TEST_CASE("projections and scores are named parameters") {
    Generator gen(1);
    Attention layer(projected(Score::Additive, Normalizer::Soft), gen);
    std::vector<std::string> names;
    for (const auto& [name, p] : layer.named_parameters()) names.push_back(name);
    const std::vector<std::string> expected{"q_proj.weight", "q_proj.bias",   "k_proj.weight",
                                            "k_proj.bias",   "v_proj.weight", "v_proj.bias",
                                            "score.W",       "score.U",       "score.v"};
    CHECK(names == expected);
    Attention local_p({.query_dim = 4, .scoring = {.local = LocalMode::Predictive, .window = 2}}, gen);
    CHECK(local_p.named_parameters().at(0).first == "W_p");
    CHECK(local_p.named_parameters().at(1).first == "v_p");
    CHECK(fmt::format("{}", local_p).find("local=local-p, window=2") != std::string::npos);
}

TEST_CASE("weights are returned before dropout, and need_weights = false returns none") {
    auto layer = make_layer64({.query_dim = 4, .dropout = 0.5});
    Tensor q = rand64({2, 6, 4}, 1), k = rand64({2, 8, 4}, 2);
    const auto out = layer->forward(q, k);
    for (double total : sum(out.weights, {-1}).to_vector<double>()) CHECK(total == doctest::Approx(1.0));
    CHECK(max_abs_diff(out.output, matmul(out.weights, k)) > 1e-3);  // the output used dropped weights
    layer->eval();
    const auto eval_out = layer->forward(q, k);
    CHECK(max_abs_diff(eval_out.output, matmul(eval_out.weights, k)) < 1e-14);
    CHECK_FALSE(layer->forward(q, k, AttentionArgs{.need_weights = false}).weights.defined());
}

TEST_CASE("average_attn_weights = false gives the one head's weights [B, 1, Tq, Tk], as MultiHeadAttention") {
    Generator gen(4);
    const std::int64_t E = 4;
    Attention single({.query_dim = E}, gen);
    MultiHeadAttention mha({.embed_dim = E, .num_heads = 1, .dtype = DType::Float64}, gen);
    const Tensor q = rand64({2, 3, E}, 1), k = rand64({2, 5, E}, 2);
    const AttentionArgs per_head{.is_causal = true, .average_attn_weights = false};
    const Tensor averaged = single.forward(q, k, AttentionArgs{.is_causal = true}).weights;
    const Tensor heads = single.forward(q, k, per_head).weights;
    CHECK(heads.shape() == Shape{2, 1, 3, 5});
    CHECK(max_abs_diff(heads, reshape(averaged, {2, 1, 3, 5})) == 0.0);
    CHECK(heads.shape() == mha.forward(q, k, k, per_head).weights.shape());  // the same arguments
    CHECK(single.forward(q.index({0}), k.index({0}), per_head).weights.shape() ==
          Shape{1, 3, 5});  // unbatched
}

TEST_CASE("attention rejects bad input with the right error and the shapes") {
    Generator gen(1);
    Attention layer({.query_dim = 3, .key_dim = 4, .value_dim = 2, .scoring = {.score = Score::Additive}},
                    gen);
    Tensor q = zeros({2, 3, 3}), k = zeros({2, 5, 4}), v = zeros({2, 5, 2});
    CHECK_THROWS_WITH_AS(layer.forward(zeros({2, 3}), k, v),
                         doctest::Contains("got [2, 3], [2, 5, 4], [2, 5, 2]"), ShapeError);
    CHECK_THROWS_WITH_AS(layer.forward(q, zeros({2, 5, 3}), v), doctest::Contains("key [B, Tk, 4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(layer.forward(q, k, zeros({2, 6, 2})), doctest::Contains("value [2, 6, 2]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(layer.forward(zeros({1, 3, 3}), k, v), doctest::Contains("query [1, 3, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(layer.forward(q, zeros({2, 0, 4}), zeros({2, 0, 2})), doctest::Contains("no keys"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(layer.forward(q, k, v, {.attn_mask = zeros({3, 4}, {.dtype = DType::Bool})}),
                         doctest::Contains("attn_mask must be [Tq, Tk] = [3, 5]"), ShapeError);
    CHECK_THROWS_WITH_AS(layer.forward(q, k, v, {.key_padding_mask = zeros({2, 5}, {.dtype = DType::Int64})}),
                         doctest::Contains("key_padding_mask must be bool"), DTypeError);
    CHECK_THROWS_WITH_AS(layer.forward(q, k, v, {.key_padding_mask = zeros({5, 2}, {.dtype = DType::Bool})}),
                         doctest::Contains("[B, Tk] = [2, 5], got [5, 2]"), ShapeError);
    CHECK_THROWS_WITH_AS(
        layer.forward(q, k, zeros({2, 5, 2}, {.dtype = DType::Float64})),
        doctest::Contains("Attention: value is float64 [2, 5, 2] but the layer's parameters are float32"),
        DTypeError);
    CHECK_THROWS_WITH_AS(Attention({.query_dim = 3, .key_dim = 4, .scoring = {.score = Score::Dot}}, gen),
                         doctest::Contains("query_dim=3 key_dim=4"), ShapeError);
    CHECK_THROWS_WITH_AS(Attention({.query_dim = 0}, gen), doctest::Contains("query_dim=0"), ValueError);
    CHECK_THROWS_WITH_AS(Attention({.query_dim = 3, .dropout = 1.5}, gen), doctest::Contains("dropout"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Attention({.query_dim = 3, .normalizer = Normalizer::Hard, .temperature = 0}, gen),
                         doctest::Contains("temperature"), ValueError);
    CHECK_THROWS_WITH_AS(Attention({.query_dim = 4, .scoring = {.positional = Positional::Rotary}}, gen),
                         doctest::Contains("Attention: positional rotary is not supported"), ValueError);
    CHECK_THROWS_WITH_AS(parse_normalizer("max"), doctest::Contains("unknown normaliser 'max'"), ValueError);
    CHECK(parse_normalizer(to_string(Normalizer::Sparse)) == Normalizer::Sparse);
}

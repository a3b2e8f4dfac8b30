// inspect/head_scores: previous-token and induction scores of hand-built attention maps, each
// expected value worked out in the comment above its check.
#include "inspect/head_scores.hpp"

#include "inspect/head_score_curves.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>

#include <functional>

using namespace attograd;
using namespace attograd::inspect;

namespace {

// One head's [T, T] weights, row t from `row(t, key)`.
std::vector<double> head(std::int64_t length, const std::function<double(std::int64_t, std::int64_t)>& row) {
    std::vector<double> weights;
    for (std::int64_t t = 0; t < length; ++t)
        for (std::int64_t k = 0; k < length; ++k) weights.push_back(row(t, k));
    return weights;
}

// Row t all on key `target(t)`.
std::vector<double> one_hot(std::int64_t length, const std::function<std::int64_t(std::int64_t)>& target) {
    return head(length, [&](std::int64_t t, std::int64_t k) { return k == target(t) ? 1.0 : 0.0; });
}

// A causal head that spreads row t evenly over keys 0..t.
std::vector<double> uniform_causal(std::int64_t length) {
    return head(length, [](std::int64_t t, std::int64_t k) {
        return k <= t ? 1.0 / static_cast<double>(t + 1) : 0.0;
    });
}

std::vector<double> concat(const std::vector<std::vector<double>>& parts) {
    std::vector<double> out;
    for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
    return out;
}

const auto previous = [](std::int64_t t) { return t == 0 ? std::int64_t{0} : t - 1; };

}  // namespace

TEST_CASE("previous_token_scores: 1 for a previous-token head, the mean of 1/(t+1) for a uniform one") {
    const std::int64_t T = 4;
    // [B = 1, h = 3, T, T]: previous token, uniform causal, attention to itself.
    const Tensor attention = tensor(
        concat({one_hot(T, previous), uniform_causal(T), one_hot(T, [](std::int64_t t) { return t; })}),
        {1, 3, T, T});
    const std::vector<double> scores = previous_token_scores(attention);
    REQUIRE(scores.size() == 3);
    CHECK(scores[0] == doctest::Approx(1.0));
    // Uniform: A[t, t-1] = 1/(t+1) for t = 1, 2, 3 -> (1/2 + 1/3 + 1/4) / 3 = 13/36.
    CHECK(scores[1] == doctest::Approx(13.0 / 36.0));
    CHECK(scores[2] == 0.0);
    // float32, and [B, T, T] read as one head.
    const Tensor single = tensor(uniform_causal(T), {1, T, T}, {.dtype = DType::Float32});
    REQUIRE(previous_token_scores(single).size() == 1);
    CHECK(previous_token_scores(single)[0] == doctest::Approx(13.0 / 36.0));
    // T = 1: no query has a previous token.
    CHECK(previous_token_scores(tensor({1.0}, {1, 1, 1, 1})) == std::vector<double>{0.0});
}

TEST_CASE("induction_scores: 1 for an induction head on a repeated sequence, 0 for a previous-token head") {
    // tokens a b c d a b c d (ids 5 6 7 8 5 6 7 8), T = 8. Targets: t = 4 (a) -> {1}, 5 -> {2},
    // 6 -> {3}, 7 (d, first seen at 3) -> {4}; t < 4 has none. An induction head puts row t >= 4
    // on t - 3 (and row t < 4 on itself): score (1 + 1 + 1 + 1) / 4 = 1. The previous-token head
    // puts row t on t - 1, never a target: 0. The uniform head: row t gives 1/(t+1) to its one
    // target: (1/5 + 1/6 + 1/7 + 1/8) / 4.
    const std::int64_t T = 8;
    const Tensor tokens = index_tensor({5, 6, 7, 8, 5, 6, 7, 8}, {1, T});
    const auto induction = [](std::int64_t t) { return t >= 4 ? t - 3 : t; };
    const Tensor attention =
        tensor(concat({one_hot(T, induction), one_hot(T, previous), uniform_causal(T)}), {1, 3, T, T});
    const std::vector<double> scores = induction_scores(attention, tokens);
    REQUIRE(scores.size() == 3);
    CHECK(scores[0] == doctest::Approx(1.0));
    CHECK(scores[1] == 0.0);
    CHECK(scores[2] == doctest::Approx((1.0 / 5 + 1.0 / 6 + 1.0 / 7 + 1.0 / 8) / 4));
    // The induction head is no previous-token head: rows t >= 1 never look at t - 1.
    CHECK(previous_token_scores(attention)[0] == 0.0);
}

TEST_CASE("induction_scores: every earlier occurrence counts, attention to itself does not") {
    // tokens a b a b (T = 4): t = 2 (a) -> {1}, t = 3 (b) -> {2}. Uniform: (1/3 + 1/4) / 2 = 7/24.
    const Tensor abab = index_tensor({1, 2, 1, 2}, {1, 4});
    CHECK(induction_scores(tensor(uniform_causal(4), {1, 1, 4, 4}), abab)[0] == doctest::Approx(7.0 / 24.0));
    // tokens a x a x a (T = 5): t = 2 -> {1}; t = 3 (x) -> {2}; t = 4 (a) -> {1, 3}. A head with
    // half of row 4 on key 1 and half on key 3 (rows 2, 3 on their targets) scores (1 + 1 + 1) / 3.
    const Tensor axaxa = index_tensor({1, 9, 1, 9, 1}, {1, 5});
    const std::vector<double> split = head(5, [](std::int64_t t, std::int64_t k) {
        if (t == 4) return k == 1 || k == 3 ? 0.5 : 0.0;
        return k == (t >= 2 ? t - 1 : t) ? 1.0 : 0.0;
    });
    CHECK(induction_scores(tensor(split, {1, 1, 5, 5}), axaxa)[0] == doctest::Approx(1.0));
    // tokens a a: the target of t = 1 would be 1 itself; left out, so no query has a target.
    CHECK(induction_scores(tensor(one_hot(2, [](std::int64_t t) { return t; }), {1, 1, 2, 2}),
                           index_tensor({3, 3}, {1, 2})) == std::vector<double>{0.0});
}

TEST_CASE("head scores average over the batch and leave padding out") {
    // Batch of 2, T = 4, one uniform causal head in both rows; row 1 has its last position padded.
    // Previous token: row 0 gives 1/2, 1/3, 1/4; row 1 gives 1/2, 1/3 (t = 3 is padding) ->
    // (1/2 + 1/3 + 1/4 + 1/2 + 1/3) / 5 = 23/12 / 5 = 23/60.
    // Induction on a b a b in both rows: row 0 targets t = 2 -> 1/3, t = 3 -> 1/4; row 1 only
    // t = 2 -> 1/3: (1/3 + 1/4 + 1/3) / 3 = 11/36.
    const Tensor attention = tensor(concat({uniform_causal(4), uniform_causal(4)}), {2, 1, 4, 4});
    const Tensor mask = tensor({0, 0, 0, 0, 0, 0, 0, 1}, {2, 4}, {.dtype = DType::Bool});
    const Tensor tokens = index_tensor({1, 2, 1, 2, 1, 2, 1, 0}, {2, 4});
    CHECK(previous_token_scores(attention, mask)[0] == doctest::Approx(23.0 / 60.0));
    CHECK(induction_scores(attention, tokens, mask)[0] == doctest::Approx(11.0 / 36.0));
    // Without the mask the padded query counts: previous token (13/12 * 2) / 6 = 13/36.
    CHECK(previous_token_scores(attention)[0] == doctest::Approx(13.0 / 36.0));
}

TEST_CASE("head scores: bad arguments are refused with their shapes") {
    const Tensor attention = tensor(uniform_causal(3), {1, 1, 3, 3});
    const Tensor tokens = index_tensor({1, 2, 3}, {1, 3});
    CHECK_THROWS_WITH_AS(previous_token_scores(index_tensor({1}, {1, 1, 1})),
                         doctest::Contains("previous_token_scores: attention has dtype int64"), DTypeError);
    CHECK_THROWS_WITH_AS(
        previous_token_scores(tensor({1, 0, 0, 1}, {2, 2})),
        doctest::Contains("attention has shape [2, 2] (rank 2); expected [B, h, T, T] or [B, T, T]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        previous_token_scores(tensor({1, 0, 0, 1, 0, 0}, {1, 1, 2, 3})),
        doctest::Contains("attention has shape [1, 1, 2, 3]; self-attention weights must be square"),
        ShapeError);
    CHECK_THROWS_WITH_AS(previous_token_scores(tensor({}, {1, 0, 3, 3})), doctest::Contains("no heads"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(previous_token_scores(Tensor()), doctest::Contains("undefined"), ValueError);
    CHECK_THROWS_WITH_AS(previous_token_scores(attention, tensor({0, 0}, {1, 2}, {.dtype = DType::Bool})),
                         doctest::Contains("key_padding_mask has shape [1, 2]; expected [B, T] = [1, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(previous_token_scores(attention, tensor({0, 0, 0}, {1, 3})),
                         doctest::Contains("key_padding_mask has dtype float32; expected bool"), DTypeError);
    CHECK_THROWS_WITH_AS(induction_scores(attention, tensor({1, 2, 3}, {1, 3})),
                         doctest::Contains("induction_scores: tokens must be int64"), DTypeError);
    CHECK_THROWS_WITH_AS(
        induction_scores(attention, index_tensor({1, 2}, {1, 2})),
        doctest::Contains("induction_scores: tokens have shape [1, 2]; expected [B, T] = [1, 3]"),
        ShapeError);
    CHECK(induction_scores(attention, tokens) == std::vector<double>{0.0});
}

TEST_CASE("head_score_curves: each self-attention head's scores per snapshot, averaged over probes") {
    // Tokens a b c a b c: queries 3, 4, 5 have induction targets 1, 2, 3 (after each earlier a, b, c).
    const std::vector<std::string> tokens{"a", "b", "c", "a", "b", "c"};
    const auto map = [&](std::int64_t layer, std::int64_t h, std::vector<double> weights) {
        return AttentionMap{.module = fmt::format("encoder.layers.{}.self_attn", layer),
                            .layer = layer,
                            .head = h,
                            .queries = tokens,
                            .keys = tokens,
                            .weights = std::move(weights)};
    };
    const auto previous = one_hot(6, [](std::int64_t t) { return t > 0 ? t - 1 : 0; });
    // Induction rows 3..5 on keys 1..3 (the token after the earlier copy); rows 0..2 on themselves.
    const auto induction = one_hot(6, [](std::int64_t t) { return t >= 3 ? t - 2 : t; });
    AttentionSnapshot early{.step = 0, .probes = {}};
    early.probes.push_back({.source = tokens, .maps = {map(0, 0, previous), map(1, 0, previous)}});
    AttentionSnapshot late{.step = 100, .probes = {}};
    late.probes.push_back({.source = tokens, .maps = {map(0, 0, previous), map(1, 0, induction)}});
    late.probes.push_back({.source = tokens, .maps = {map(0, 0, previous), map(1, 0, previous)}});
    // A cross-attention map (rows are not the keys) is left out.
    late.probes[0].maps.push_back(AttentionMap{
        .module = "x", .layer = 2, .head = 0, .queries = {"q"}, .keys = {"a", "b"}, .weights = {0.5, 0.5}});

    const auto curves = head_score_curves({early, late});
    REQUIRE(curves.size() == 2);
    CHECK(curves[0].module == "encoder.layers.0.self_attn");
    CHECK(curves[1].steps == std::vector<double>{0.0, 100.0});
    CHECK(curves[0].previous_token == std::vector<double>{1.0, 1.0});
    CHECK(curves[0].induction == std::vector<double>{0.0, 0.0});
    // Layer 1 at step 100: one probe induction (score 1, previous-token 0), one previous-token
    // (induction 0; its previous-token rows 1..5 all score 1): means 0.5 and 0.5.
    CHECK(curves[1].induction == std::vector<double>{0.0, 0.5});
    CHECK(curves[1].previous_token == std::vector<double>{1.0, 0.5});

    const auto charts = head_score_charts({early, late});
    REQUIRE(charts.size() == 2);
    CHECK(charts[1].title == "induction score per head");
    REQUIRE(charts[1].series.size() == 2);
    CHECK(charts[1].series[1].name == "L1.H0");
    CHECK(charts[1].series[1].y == curves[1].induction);
    CHECK(head_score_charts({}).empty());
}

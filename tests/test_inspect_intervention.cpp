// Attention intervention: replaced weights reach the output as weights @ values on every global
// path, masks are respected, gradients reach a replacement, guards nest, bad input is refused.
#include "helpers.hpp"

#include "inspect/intervention.hpp"
#include "inspect/knockout.hpp"

#include <algorithm>

using namespace testing;
using namespace attograd::nn;
using namespace attograd::inspect;

namespace {

constexpr auto f64 = DType::Float64;

double max_abs(const Tensor& t) {
    double m = 0.0;
    for (const double v : to_dtype(t, f64).to_vector<double>()) m = std::max(m, std::abs(v));
    return m;
}

// Single-head dot attention without parameters: keys = values = x.
Attention plain_attention() {
    return Attention({.query_dim = 2, .scoring = {.score = Score::Dot}, .dtype = f64});
}

// out[b, q, :] = sum_k w[b, q, k] v[b, k, :], by loops.
std::vector<double> weighted_values(const std::vector<double>& w, const std::vector<double>& v,
                                    std::int64_t b, std::int64_t tq, std::int64_t tk, std::int64_t d) {
    std::vector<double> out(static_cast<std::size_t>(b * tq * d), 0.0);
    for (std::int64_t i = 0; i < b; ++i)
        for (std::int64_t q = 0; q < tq; ++q)
            for (std::int64_t k = 0; k < tk; ++k)
                for (std::int64_t j = 0; j < d; ++j)
                    out[static_cast<std::size_t>((i * tq + q) * d + j)] +=
                        w[static_cast<std::size_t>((i * tq + q) * tk + k)] *
                        v[static_cast<std::size_t>((i * tk + k) * d + j)];
    return out;
}

// [B, Tq, h * d] heads of a packed MultiHeadAttention recomputed by hand from weights [B, h, Tq, Tk].
Tensor heads_by_hand(const MultiHeadAttention& mha, const Tensor& x, const std::vector<double>& w) {
    const std::int64_t b = x.size(0), t = x.size(1), e = mha.options().embed_dim, h = mha.options().num_heads,
                       d = e / h;
    const auto v =
        narrow(linear(x, mha.in_proj_weight(), mha.in_proj_bias()), 2, 2 * e, e).to_vector<double>();
    Tensor heads = zeros({b, t, e}, {.dtype = f64});
    for (std::int64_t i = 0; i < b; ++i)
        for (std::int64_t head = 0; head < h; ++head)
            for (std::int64_t q = 0; q < t; ++q)
                for (std::int64_t j = 0; j < d; ++j) {
                    double total = 0.0;
                    for (std::int64_t k = 0; k < t; ++k)
                        total += w[static_cast<std::size_t>(((i * h + head) * t + q) * t + k)] *
                                 v[static_cast<std::size_t>((i * t + k) * e + head * d + j)];
                    heads.data<double>()[(i * t + q) * e + head * d + j] = total;
                }
    return heads;
}

struct Stack : Module {
    std::shared_ptr<MultiHeadAttention> first;
    std::shared_ptr<MultiHeadAttention> local;
    explicit Stack(Generator& gen) {
        first = register_module(
            "first", std::make_shared<MultiHeadAttention>(
                         MultiHeadAttentionOptions{.embed_dim = 4, .num_heads = 2, .dtype = f64}, gen));
        local = register_module(
            "local", std::make_shared<MultiHeadAttention>(
                         MultiHeadAttentionOptions{.embed_dim = 4,
                                                   .num_heads = 2,
                                                   .scoring = {.local = LocalMode::Monotonic, .window = 1},
                                                   .dtype = f64},
                         gen));
    }
    std::string type_name() const override { return "Stack"; }
};

}  // namespace

TEST_CASE("intervention: a fixed matrix reproduces the hand computation, and the recorder sees it") {
    const Attention attention = plain_attention();
    const Tensor x = tensor({1, 0, 0, 1, 2, 3, -1, 2, 0.5, 0.5, 1, -1}, {2, 3, 2}, {.dtype = f64});
    const Tensor query = tensor({1, 1, 0, 2}, {2, 1, 2}, {.dtype = f64});
    const std::vector<double> fixed{0.2, 0.5, 0.3};  // [Tq, Tk] = [1, 3], for both sequences
    AttentionRecorder recorder(attention);
    AttentionIntervention intervention(
        attention, {{"", {{0, Replacement::fixed(tensor(fixed, {1, 3}, {.dtype = f64}))}}}});
    const AttentionOutput out = attention.forward(query, x);
    const std::vector<double> w{0.2, 0.5, 0.3, 0.2, 0.5, 0.3};
    const auto expected = weighted_values(w, x.to_vector<double>(), 2, 1, 3, 2);
    const auto got = out.output.to_vector<double>();
    for (std::size_t i = 0; i < expected.size(); ++i)
        CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-14));
    CHECK(out.weights.to_vector<double>() == w);
    REQUIRE(recorder.records().size() == 1);
    CHECK(recorder.records()[0].weights.to_vector<double>() == w);
}

TEST_CASE("intervention: uniform weights give the mean of the allowed values, masked keys get 0") {
    const Attention attention = plain_attention();
    Generator gen(1);
    const Tensor x = randn({2, 4, 2}, gen, {.dtype = f64}), query = randn({2, 3, 2}, gen, {.dtype = f64});
    const Tensor padding = bool_mask({2, 4}, [](std::int64_t b, std::int64_t k) { return b == 1 && k >= 2; });
    AttentionIntervention uniform(attention, {{"", {{0, Replacement::uniform()}}}});
    const AttentionOutput out = attention.forward(query, x, AttentionArgs{.key_padding_mask = padding});
    const auto xv = x.to_vector<double>(), got = out.output.to_vector<double>(),
               w = out.weights.to_vector<double>();
    for (std::int64_t b = 0; b < 2; ++b) {
        const std::int64_t n = b == 0 ? 4 : 2;
        for (std::int64_t q = 0; q < 3; ++q) {
            for (std::int64_t j = 0; j < 2; ++j) {
                double mean = 0.0;
                for (std::int64_t k = 0; k < n; ++k)
                    mean += xv[static_cast<std::size_t>((b * 4 + k) * 2 + j)] / n;
                CHECK(got[static_cast<std::size_t>((b * 3 + q) * 2 + j)] ==
                      doctest::Approx(mean).epsilon(1e-14));
            }
            for (std::int64_t k = 0; k < 4; ++k)
                CHECK(w[static_cast<std::size_t>((b * 3 + q) * 4 + k)] == (k < n ? 1.0 / n : 0.0));
        }
    }
}

TEST_CASE("intervention: a permutation permutes each row's allowed weights and keeps masked keys at 0") {
    Generator gen(2);
    MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = f64}, gen);
    const Tensor x = randn({2, 5, 4}, gen, {.dtype = f64});
    const Tensor padding = bool_mask({2, 5}, [](std::int64_t b, std::int64_t k) { return b == 0 && k == 4; });
    const AttentionArgs args{.key_padding_mask = padding, .average_attn_weights = false};
    const auto own = mha.forward(x, args).weights.to_vector<double>();
    Generator shuffle(3);
    AttentionIntervention permuted(mha, {{"", {{1, Replacement::permuted(shuffle)}}}});
    AttentionRecorder recorder(mha);
    const auto used = mha.forward(x, args).weights.to_vector<double>();
    REQUIRE(recorder.records().size() == 1);
    CHECK(recorder.records()[0].weights.to_vector<double>() == used);  // the weights actually used
    bool any_moved = false;
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t h = 0; h < 2; ++h)
            for (std::int64_t q = 0; q < 5; ++q) {
                const auto at = static_cast<std::ptrdiff_t>(((b * 2 + h) * 5 + q) * 5);
                std::vector<double> a(own.begin() + at, own.begin() + at + 5),
                    u(used.begin() + at, used.begin() + at + 5);
                if (h == 0) CHECK(a == u);  // head 0 untouched
                if (b == 0) CHECK(u[4] == 0.0);
                any_moved = any_moved || a != u;
                std::sort(a.begin(), a.end());
                std::sort(u.begin(), u.end());
                CHECK(a == u);
            }
    CHECK(any_moved);
}

TEST_CASE("intervention: the fused packed MultiHeadAttention gives the unfused, hand-computed output") {
    Generator gen(4);
    MultiHeadAttention mha({.embed_dim = 8, .num_heads = 4, .dtype = f64}, gen);
    const Tensor x = randn({2, 5, 8}, gen, {.dtype = f64});
    const auto fused = mha.forward(x, {.average_attn_weights = false});
    {  // the identity replacement through the unfused path: the fused output
        AttentionIntervention same(
            mha, {{"", {{2, Replacement::function([](const Tensor& w, const Tensor&) { return w; })}}}});
        CHECK(max_abs(mha.forward(x).output - fused.output) < 1e-13);
    }
    AttentionIntervention uniform(mha, {{"", {{0, Replacement::uniform()}, {3, Replacement::uniform()}}}});
    const auto out = mha.forward(x, {.average_attn_weights = false});
    std::vector<double> w = fused.weights.to_vector<double>();
    for (std::int64_t b = 0; b < 2; ++b)
        for (const std::int64_t h : {0, 3})
            for (std::int64_t i = 0; i < 25; ++i) w[static_cast<std::size_t>((b * 4 + h) * 25 + i)] = 0.2;
    CHECK(max_abs(out.weights - tensor(w, {2, 4, 5, 5}, {.dtype = f64})) < 1e-15);
    CHECK(max_abs(out.output - mha.out_proj().forward(heads_by_hand(mha, x, w))) < 1e-12);
}

TEST_CASE("intervention: gradients reach a replacement that requires grad (finite differences)") {
    const Attention attention = plain_attention();
    Generator gen(5);
    const Tensor x = randn({2, 3, 2}, gen, {.dtype = f64}), query = randn({2, 2, 2}, gen, {.dtype = f64});
    Tensor logits = randn({2, 2, 3}, gen, {.dtype = f64});
    logits.requires_grad_();
    const auto result = gradcheck(
        [&](const std::vector<Tensor>& in) {
            AttentionIntervention fixed(attention, {{"", {{0, Replacement::fixed(softmax(in[0], -1))}}}});
            return attention.forward(query, x).output;
        },
        {logits});
    CHECK_MESSAGE(result.ok, result.report);
}

TEST_CASE("intervention: guards nest, the inner head overrides, the outer's others stay, scope ends each") {
    Generator gen(6);
    MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = f64}, gen);
    const Tensor x = randn({1, 3, 4}, gen, {.dtype = f64});
    const auto own = mha.forward(x, {.average_attn_weights = false}).weights;
    const Tensor one_hot = tensor({1, 0, 0, 1, 0, 0, 1, 0, 0}, {3, 3}, {.dtype = f64});
    auto head = [&](const Tensor& w, std::int64_t h) { return select(select(w, 0, 0), 0, h); };
    {
        AttentionIntervention outer(mha, {{"", {{0, Replacement::uniform()}, {1, Replacement::uniform()}}}});
        {
            AttentionIntervention inner(mha, {{"", {{1, Replacement::fixed(one_hot)}}}});
            const auto w = mha.forward(x, {.average_attn_weights = false}).weights;
            CHECK(max_abs(head(w, 0) - 1.0 / 3) < 1e-15);
            CHECK(max_abs(head(w, 1) - one_hot) == 0.0);
        }
        const auto w = mha.forward(x, {.average_attn_weights = false}).weights;
        CHECK(max_abs(head(w, 1) - 1.0 / 3) < 1e-15);
        HeadKnockout knockout(mha, {{"", {0}}});
        const auto k = mha.forward(x, {.average_attn_weights = false}).weights;
        CHECK(max_abs(head(k, 0)) == 0.0);
        CHECK(max_abs(head(k, 1) - 1.0 / 3) < 1e-15);
    }
    CHECK(max_abs(mha.forward(x, {.average_attn_weights = false}).weights - own) == 0.0);
}

TEST_CASE("intervention beneath: outer replacements see this guard's weights, outer silence stays") {
    Generator gen(7);
    MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = f64}, gen);
    const Tensor x = randn({1, 3, 4}, gen, {.dtype = f64});
    const auto own = mha.forward(x, {.average_attn_weights = false}).weights;
    auto head = [&](const Tensor& w, std::int64_t h) { return select(select(w, 0, 0), 0, h); };
    // The outer guard doubles the weight on key 0 of its own weights and renormalises; it records
    // the weights it was handed as the head's own.
    Tensor seen;
    const auto tilt = Replacement::function([&seen](const Tensor& w, const Tensor&) {
        seen = w;
        const Tensor scale = tensor({2, 1, 1}, {1, 1, 3}, {.dtype = f64});
        const Tensor t = w * scale;
        return t / sum(t, {-1}, true);
    });
    AttentionIntervention outer(mha, {{"", {{0, tilt}, {1, Replacement::silence()}}}});
    {
        AttentionIntervention uniform(mha, {{"", {{0, Replacement::uniform()}, {1, Replacement::uniform()}}}},
                                      {.beneath = true});
        const auto w = mha.forward(x, {.average_attn_weights = false}).weights;
        CHECK(max_abs(seen - 1.0 / 3) < 1e-15);  // the outer replacement was handed uniform weights
        const Tensor expected = tensor({0.5, 0.25, 0.25}, {1, 3}, {.dtype = f64});
        CHECK(max_abs(head(w, 0) - expected) < 1e-15);
        CHECK(max_abs(head(w, 1)) == 0.0);  // silenced from outside, beneath or not
    }
    {  // without beneath the inner guard overrides the outer for the heads it names
        AttentionIntervention uniform(mha,
                                      {{"", {{0, Replacement::uniform()}, {1, Replacement::uniform()}}}});
        const auto w = mha.forward(x, {.average_attn_weights = false}).weights;
        CHECK(max_abs(head(w, 0) - 1.0 / 3) < 1e-15);
        CHECK(max_abs(head(w, 1) - 1.0 / 3) < 1e-15);
    }
    // outside both inner guards the outer one tilts the head's own weights
    const auto w = mha.forward(x, {.average_attn_weights = false}).weights;
    CHECK(max_abs(seen - head(own, 0)) < 1e-15);
    CHECK(max_abs(head(w, 0) - head(own, 0)) > 1e-3);
}

TEST_CASE("intervention: sparse and hard attention attend with the replacement too") {
    for (const Normalizer normalizer : {Normalizer::Sparse, Normalizer::Hard}) {
        Attention attention(
            {.query_dim = 2, .scoring = {.score = Score::Dot}, .normalizer = normalizer, .dtype = f64});
        attention.eval();
        const Tensor x = tensor({1, 0, 0, 1, 2, 2}, {1, 3, 2}, {.dtype = f64});
        AttentionIntervention uniform(attention, {{"", {{0, Replacement::uniform()}}}});
        const auto out =
            attention.forward(tensor({1, 0}, {1, 1, 2}, {.dtype = f64}), x).output.to_vector<double>();
        CHECK(out[0] == doctest::Approx(1.0).epsilon(1e-14));
        CHECK(out[1] == doctest::Approx(1.0).epsilon(1e-14));
    }
}

TEST_CASE("intervention refuses missing layers and heads, bad shapes, non-distributions, masked keys") {
    Generator gen(7);
    const Stack model(gen);
    const Tensor x = randn({2, 3, 4}, gen, {.dtype = f64});
    auto run = [&] { (void)model.first->forward(x); };
    CHECK_THROWS_WITH_AS(
        AttentionIntervention(model, {{"third", {{0, Replacement::uniform()}}}}),
        doctest::Contains("AttentionIntervention: 'third' is not an attention layer of the model; "
                          "its layers: 'first' (2 heads), 'local' (2 heads)"),
        ValueError);
    CHECK_THROWS_WITH_AS(AttentionIntervention(model, {{"first", {{2, Replacement::uniform()}}}}),
                         doctest::Contains("layer 'first' has 2 heads, no head 2"), IndexError);
    CHECK_THROWS_WITH_AS(AttentionIntervention(model, {}),
                         doctest::Contains("names no layer and head to intervene on"), ValueError);
    CHECK_THROWS_WITH_AS(AttentionIntervention(model, {{"first", {}}}),
                         doctest::Contains("layer 'first' names no head"), ValueError);
    CHECK_THROWS_WITH_AS(
        AttentionIntervention(model, {{"first", {{0, Replacement::uniform()}}}}, {.tolerance = 0}),
        doctest::Contains("tolerance must be in (0, 0.5), got 0"), ValueError);
    CHECK_THROWS_WITH_AS(Replacement::fixed(zeros({3}, {.dtype = f64})),
                         doctest::Contains("weights must be [Tq, Tk] or [B, Tq, Tk], got [3]"), ShapeError);
    const Linear no_attention({.in_features = 2, .out_features = 2}, gen);
    CHECK_THROWS_WITH_AS(AttentionIntervention(no_attention, {{"", {{0, Replacement::uniform()}}}}),
                         doctest::Contains("the model (Linear) has no attention layer"), ValueError);
    {
        AttentionIntervention wrong(
            model, {{"first", {{1, Replacement::fixed(full({3, 2}, 0.5, {.dtype = f64}))}}}});
        CHECK_THROWS_WITH_AS(
            run(),
            doctest::Contains(
                "layer 'first' head 1: Replacement::fixed: fixed weights must be [Tq, Tk] = [3, 3] or "
                "[B, Tq, Tk] = [2, 3, 3], got [3, 2]"),
            ShapeError);
    }
    {
        AttentionIntervention wrong(model,
                                    {{"first", {{0, Replacement::function([](const Tensor& w, const Tensor&) {
                                                     return reshape(w, {-1});
                                                 })}}}});
        CHECK_THROWS_WITH_AS(
            run(),
            doctest::Contains("layer 'first' head 0: replacement weights must be [B, Tq, Tk] = "
                              "[2, 3, 3], got [18]"),
            ShapeError);
    }
    {
        AttentionIntervention wrong(
            model,
            {{"first",
              {{0, Replacement::fixed(tensor({1.5, -0.5, 0, 0, 1, 0, 0, 0, 1}, {3, 3}, {.dtype = f64}))}}}});
        CHECK_THROWS_WITH_AS(
            run(), doctest::Contains("replacement weight [0, 0, 1] is -0.5; weights must be finite and >= 0"),
            ValueError);
    }
    {
        AttentionIntervention wrong(
            model, {{"first", {{0, Replacement::fixed(full({3, 3}, 0.3, {.dtype = f64}))}}}});
        CHECK_THROWS_WITH_AS(run(), doctest::Contains("replacement row [0, 0] sums to 0.9"), ValueError);
    }
    {
        AttentionIntervention wrong(
            model, {{"first", {{0, Replacement::fixed(full({3, 3}, 1.0 / 3, {.dtype = f64}))}}}});
        CHECK_THROWS_WITH_AS(
            (void)model.first->forward(x, {.is_causal = true}),
            doctest::Contains("layer 'first' head 0: replacement weight [0, 0, 1] is 0.333333333333"),
            ValueError);
        CHECK_THROWS_WITH_AS((void)model.first->forward(x, {.is_causal = true}),
                             doctest::Contains("on a masked key; masked keys must get 0"), ValueError);
    }
    {
        AttentionIntervention wrong(model, {{"first", {{0, Replacement::fixed(full({3, 3}, 1.0 / 3))}}}});
        CHECK_THROWS_WITH_AS(run(),
                             doctest::Contains("layer 'first' head 0: Replacement::fixed: fixed weights are "
                                               "float32, the layer computes in float64"),
                             DTypeError);
    }
}

TEST_CASE("head knockout through the intervention still silences local attention") {
    Generator gen(8);
    const Stack model(gen);
    const Tensor x = randn({1, 4, 4}, gen, {.dtype = f64});
    HeadKnockout knockout(model, {{"local", {0, 1}}});
    CHECK(max_abs(model.local->forward(x).weights) == 0.0);
}

TEST_CASE(
    "intervention: the score-module and key-value paths of MultiHeadAttention, with bias_k, recompute their "
    "own output") {
    Generator gen(9);
    for (const Score score : {Score::Additive, Score::ScaledDot}) {
        MultiHeadAttention mha({.embed_dim = 4,
                                .num_heads = 2,
                                .add_bias_kv = true,
                                .kdim = 3,
                                .vdim = 5,
                                .scoring = {.score = score},
                                .dtype = f64},
                               gen);
        const Tensor q = randn({2, 3, 4}, gen, {.dtype = f64}), k = randn({2, 6, 3}, gen, {.dtype = f64}),
                     v = randn({2, 6, 5}, gen, {.dtype = f64});
        const auto own = mha.forward(q, k, v, {.average_attn_weights = false});
        AttentionIntervention same(
            mha, {{"",
                   {{0, Replacement::function([](const Tensor& w, const Tensor&) { return w; })},
                    {1, Replacement::function([](const Tensor& w, const Tensor&) { return w; })}}}});
        const auto out = mha.forward(q, k, v, {.average_attn_weights = false});
        CHECK(max_abs(out.output - own.output) < 1e-13);
        CHECK(max_abs(out.weights - own.weights) == 0.0);
    }
}

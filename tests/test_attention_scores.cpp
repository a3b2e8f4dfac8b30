// Attention score modules: PyTorch parity, gradients w.r.t. inputs and parameters, the banded
// form, names, and bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

using namespace attograd;
using namespace attograd::nn;
using testing::rand64;

namespace {

std::shared_ptr<AttentionScore> score64(Score kind, std::int64_t dq, std::int64_t dk,
                                        std::int64_t hidden = 0) {
    Generator gen(7);
    auto s = make_score(kind, {.query_dim = dq, .key_dim = dk, .hidden = hidden}, gen);
    s->to(DType::Float64);
    return s;
}

constexpr Score kAll[] = {Score::Additive, Score::Dot, Score::ScaledDot, Score::Bilinear};

// Window starts for B = 2, Tq = 3 (partly outside the Tk = 4 keys).
Tensor starts() { return index_tensor({-1, 0, 2, 1, 3, -4}, {2, 3}); }

}  // namespace

TEST_CASE("scores match the hand-written PyTorch versions: values and all gradients to 1e-10") {
    const auto fixture = testing::load_fixture("attention_scores");
    for (const auto& c : fixture.at("cases")) {
        const Score kind = parse_score(c.at("score").get<std::string>());
        INFO("score " << to_string(kind));
        Tensor q = testing::fixture_tensor(c.at("query")).requires_grad_();
        Tensor k = testing::fixture_tensor(c.at("key")).requires_grad_();
        auto s = score64(kind, q.size(2), k.size(2), kind == Score::Additive ? 7 : 0);
        StateDict state;
        for (const auto& [name, value] : c.at("params").items()) state[name] = testing::fixture_tensor(value);
        s->load_state_dict(state);
        Tensor scores = s->forward(q, k);
        CHECK(testing::max_abs_diff(scores, testing::fixture_tensor(c.at("scores"))) < 1e-10);
        sum(scores * testing::fixture_tensor(c.at("R"))).backward();
        CHECK(testing::max_abs_diff(q.grad(), testing::fixture_tensor(c.at("grad_query"))) < 1e-10);
        CHECK(testing::max_abs_diff(k.grad(), testing::fixture_tensor(c.at("grad_key"))) < 1e-10);
        for (const auto& [name, param] : s->named_parameters())
            CHECK(testing::max_abs_diff(param.grad(), testing::fixture_tensor(c.at("grad_params").at(name))) <
                  1e-10);
    }
}

TEST_CASE("every score passes float64 gradcheck w.r.t. query, key and every parameter, global and banded") {
    for (Score kind : kAll) {
        INFO("score " << to_string(kind));
        const bool same = kind == Score::Dot || kind == Score::ScaledDot;
        auto s = score64(kind, 3, same ? 3 : 5, 4);
        Tensor q = rand64({2, 3, 3}, 1), k = rand64({2, 4, same ? 3 : 5}, 2);
        std::vector<Tensor> inputs{q, k};
        for (const Tensor& p : s->parameters()) inputs.push_back(p);
        auto global = [s](const std::vector<Tensor>& in) { return s->forward(in[0], in[1]); };
        auto local = [s](const std::vector<Tensor>& in) {
            return s->forward_local(in[0], in[1], starts(), 3);
        };
        CHECK_GRADCHECK(global, inputs);
        CHECK_GRADCHECK(local, inputs);
    }
}

TEST_CASE("the banded scores equal the all-pairs scores at the band's positions") {
    for (Score kind : kAll) {
        INFO("score " << to_string(kind));
        auto s = score64(kind, 4, 4, 6);
        Tensor q = rand64({2, 3, 4}, 3), k = rand64({2, 4, 4}, 4);
        Tensor band = s->forward_local(q, k, starts(), 3);
        Tensor dense = s->forward(q, k);
        for (std::int64_t b = 0; b < 2; ++b)
            for (std::int64_t t = 0; t < 3; ++t)
                for (std::int64_t j = 0; j < 3; ++j) {
                    const auto key = static_cast<std::int64_t>(starts().at({b, t})) + j;
                    const double expected = key >= 0 && key < 4 ? dense.at({b, t, key}) : 0.0;
                    CHECK(band.at({b, t, j}) == doctest::Approx(expected).epsilon(1e-13));
                }
    }
}

TEST_CASE(
    "the additive score with biases: v^T tanh(W x + b_W + U q + b_U) + b_v, gradcheck global and banded") {
    Generator gen(2);
    AdditiveScore s({.query_dim = 3, .key_dim = 5, .hidden = 4, .bias = true}, gen);
    s.to(DType::Float64);
    const auto p = s.named_parameters();
    REQUIRE(p.size() == 6);
    CHECK(p[3].first == "W_bias");
    CHECK(p[3].second.shape() == Shape{4});
    CHECK(p[4].first == "U_bias");
    CHECK(p[5].first == "v_bias");
    CHECK(p[5].second.shape() == Shape{1});
    Tensor q = rand64({2, 3, 3}, 1), k = rand64({2, 4, 5}, 2);
    // the formula, composed from public ops: [B, Tq, 1, H] + [B, 1, Tk, H] -> tanh -> . v
    const Tensor pre = reshape(linear(q, s.U(), s.U_bias()), {2, 3, 1, 4}) +
                       reshape(linear(k, s.W(), s.W_bias()), {2, 1, 4, 4});
    const Tensor expected = reshape(matmul(tanh(pre), reshape(s.v(), {4, 1})), {2, 3, 4}) + s.v_bias();
    CHECK(testing::max_abs_diff(s.forward(q, k), expected) < 1e-13);
    // keys projected once, then scored (a recurrent decoder's steps): the same scores
    CHECK(testing::max_abs_diff(s.forward_projected(q, s.project_keys(k)), s.forward(q, k)) == 0.0);
    CHECK_THROWS_WITH_AS(
        s.forward_projected(q, rand64({2, 4, 5}, 3)),
        doctest::Contains("AdditiveScore: expected query [B, Tq, 3] and projected keys [B, Tk, 4], "
                          "got [2, 3, 3] and [2, 4, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(s.project_keys(rand64({2, 4, 3}, 3)),
                         doctest::Contains("AdditiveScore: expected key [B, Tk, 5], got [2, 4, 3]"),
                         ShapeError);
    const auto global = [&s](const std::vector<Tensor>& in) { return s.forward(in[0], in[1]); };
    const auto local = [&s](const std::vector<Tensor>& in) {
        return s.forward_local(in[0], in[1], starts(), 3);
    };
    const auto inputs = testing::with_parameters(s, {q, k});
    CHECK_GRADCHECK(global, inputs);
    CHECK_GRADCHECK(local, inputs);
}

TEST_CASE("score parameters carry their formula names and shapes") {
    Generator gen(1);
    auto additive = make_score(Score::Additive, {.query_dim = 3, .key_dim = 5, .hidden = 8}, gen);
    const auto p = additive->named_parameters();
    REQUIRE(p.size() == 3);
    CHECK(p[0].first == "W");
    CHECK(p[0].second.shape() == Shape{8, 5});
    CHECK(p[1].first == "U");
    CHECK(p[1].second.shape() == Shape{8, 3});
    CHECK(p[2].first == "v");
    CHECK(p[2].second.shape() == Shape{8});
    auto bilinear = make_score(Score::Bilinear, {.query_dim = 3, .key_dim = 5}, gen);
    REQUIRE(bilinear->named_parameters().size() == 1);
    CHECK(bilinear->named_parameters()[0].second.shape() == Shape{5, 3});
    CHECK(make_score(Score::Dot, {.query_dim = 3})->named_parameters().empty());
    CHECK(fmt::format("{}", *additive) == "AdditiveScore(query_dim=3, key_dim=5)");
}

TEST_CASE("score names parse and print") {
    for (Score kind : kAll) CHECK(parse_score(to_string(kind)) == kind);
    CHECK(to_string(Score::ScaledDot) == "scaled-dot");
    CHECK_THROWS_WITH_AS(parse_score("cosine"), doctest::Contains("unknown score 'cosine'"), ValueError);
}

TEST_CASE("scores reject bad input with shapes in the message") {
    CHECK_THROWS_WITH_AS(make_score(Score::Dot, {.query_dim = 3, .key_dim = 4}),
                         doctest::Contains("query_dim=3 key_dim=4"), ShapeError);
    CHECK_THROWS_WITH_AS(make_score(Score::ScaledDot, {.query_dim = 3, .key_dim = 4}),
                         doctest::Contains("ScaledDot"), ShapeError);
    CHECK_THROWS_WITH_AS(make_score(Score::Bilinear, {.query_dim = 0}), doctest::Contains("query_dim"),
                         ValueError);
    CHECK_THROWS_WITH_AS(make_score(Score::Additive, {.query_dim = 2, .hidden = -1}),
                         doctest::Contains("hidden"), ValueError);
    for (Score kind : kAll) {
        auto s = make_score(kind, {.query_dim = 3});
        CHECK_THROWS_WITH_AS(s->forward(zeros({2, 3, 3}), zeros({2, 4, 5})),
                             doctest::Contains("got query [2, 3, 3] and key [2, 4, 5]"), ShapeError);
        CHECK_THROWS_WITH_AS(s->forward(zeros({3, 3}), zeros({2, 4, 3})), doctest::Contains("[3, 3]"),
                             ShapeError);
        CHECK_THROWS_WITH_AS(s->forward(zeros({1, 3, 3}), zeros({2, 4, 3})), doctest::Contains("[1, 3, 3]"),
                             ShapeError);
        CHECK_THROWS_WITH_AS(s->forward_local(zeros({2, 3, 3}), zeros({2, 4, 3}), starts(), 0),
                             doctest::Contains("width"), ValueError);
    }
}

// The score registry: a program's own score, registered once, is parsed, named, built and used by
// every attention layer (global and local), with gradients; and bad registrations are refused.
#include "fixtures.hpp"
#include "helpers.hpp"

using namespace attograd;
using namespace attograd::nn;
using testing::rand64;

namespace {

// s(x, q) = exp(log_tau) x^T q: a dot score with a learned temperature (log_tau starts at 0, so
// the score starts equal to Dot's).
class TemperatureDotScore final : public AttentionScore {
public:
    TemperatureDotScore(Score kind, const AttentionScoreOptions& o)
        : AttentionScore(kind, o.query_dim, o.key_dim) {
        log_tau_ = register_parameter("log_tau", zeros({1}));
    }
    Tensor forward(const Tensor& query, const Tensor& key) const override {
        check_inputs(query, key);
        return matmul(query, transpose(key, 1, 2)) * exp(log_tau_);
    }
    Tensor forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                         std::int64_t width) const override {
        check_inputs(query, key);
        return local_dot_score(query * exp(log_tau_), key, window_start, width);
    }
    std::string type_name() const override { return "TemperatureDotScore"; }
    Tensor log_tau_;
};

Score temperature_dot() {
    static const Score score = register_score(
        {.name = "temperature-dot", .make = [](Score kind, const AttentionScoreOptions& o, Generator&) {
             return std::make_shared<TemperatureDotScore>(kind, o);
         }});
    return score;
}

}  // namespace

TEST_CASE("a registered score is parsed, named, listed last and built by make_score") {
    const Score score = temperature_dot();
    CHECK(static_cast<int>(score) > static_cast<int>(Score::Bilinear));
    CHECK(parse_score("temperature-dot") == score);
    CHECK(to_string(score) == "temperature-dot");
    const auto names = score_names();
    REQUIRE(names.size() >= 5);
    CHECK(names.front() == "additive");
    CHECK(names.back() == "temperature-dot");
    auto module = make_score(score, {.query_dim = 4});
    CHECK(module->kind() == score);
    CHECK(module->type_name() == "TemperatureDotScore");
    CHECK(module->named_parameters().at(0).first == "log_tau");
    // the built-in ones keep their values
    CHECK(parse_score("bilinear") == Score::Bilinear);
    CHECK(to_string(Score::ScaledDot) == "scaled-dot");
}

TEST_CASE(
    "Attention and MultiHeadAttention use a registered score: equal to Dot at log_tau 0, global and local") {
    const Score score = temperature_dot();
    const Tensor q = rand64({2, 3, 4}, 1), k = rand64({2, 5, 4}, 2), v = rand64({2, 5, 4}, 3);
    for (LocalMode local : {LocalMode::None, LocalMode::Monotonic}) {
        INFO("local " << to_string(local));
        Attention custom({.query_dim = 4,
                          .scoring = {.score = score, .local = local, .window = 1},
                          .dtype = DType::Float64});
        Attention dot({.query_dim = 4,
                       .scoring = {.score = Score::Dot, .local = local, .window = 1},
                       .dtype = DType::Float64});
        custom.to(DType::Float64);
        const auto a = custom.forward(q, k, v), b = dot.forward(q, k, v);
        CHECK(testing::max_abs_diff(a.output, b.output) < 1e-13);
        // a temperature of e sharpens the weights exactly as scaling the query by e does
        custom.load_state_dict({{"score.log_tau", full({1}, 1.0, {.dtype = DType::Float64})}}, false);
        CHECK(testing::max_abs_diff(custom.forward(q, k, v).output,
                                    dot.forward(q * std::exp(1.0), k, v).output) < 1e-12);
    }
    Generator g1(5), g2(5);
    MultiHeadAttention custom(
        {.embed_dim = 8, .num_heads = 2, .scoring = {.score = score}, .dtype = DType::Float64}, g1);
    MultiHeadAttention dot(
        {.embed_dim = 8, .num_heads = 2, .scoring = {.score = Score::Dot}, .dtype = DType::Float64}, g2);
    custom.to(DType::Float64);
    const Tensor x = rand64({2, 5, 8}, 4);
    CHECK(testing::max_abs_diff(custom.forward(x, {.is_causal = true}).output,
                                dot.forward(x, {.is_causal = true}).output) < 1e-12);
}

TEST_CASE("a registered score passes float64 gradcheck inside Attention, its parameter included") {
    Attention attention({.query_dim = 3, .scoring = {.score = temperature_dot()}, .dtype = DType::Float64});
    attention.to(DType::Float64);
    attention.load_state_dict({{"score.log_tau", full({1}, 0.3, {.dtype = DType::Float64})}}, false);
    const auto fn = [&](const std::vector<Tensor>& in) {
        return attention.forward(in[0], in[1], in[2]).output;
    };
    CHECK_GRADCHECK(fn, testing::with_parameters(
                            attention, {rand64({2, 2, 3}, 1), rand64({2, 4, 3}, 2), rand64({2, 4, 3}, 3)}));
}

TEST_CASE("register_score and make_score refuse bad entries with ValueError naming the score") {
    const auto factory = [](Score kind, const AttentionScoreOptions& o, Generator&) {
        return std::make_shared<TemperatureDotScore>(kind, o);
    };
    (void)temperature_dot();
    CHECK_THROWS_WITH_AS(register_score({.name = "temperature-dot", .make = factory}),
                         doctest::Contains("score 'temperature-dot' is registered already"), ValueError);
    CHECK_THROWS_WITH_AS(register_score({.name = "dot", .make = factory}),
                         doctest::Contains("score 'dot' is registered already"), ValueError);
    CHECK_THROWS_WITH_AS(register_score({.name = "", .make = factory}),
                         doctest::Contains("register_score: the name must be non-empty"), ValueError);
    CHECK_THROWS_WITH_AS(register_score({.name = "two words", .make = factory}),
                         doctest::Contains("without spaces or control characters"), ValueError);
    CHECK_THROWS_WITH_AS(register_score({.name = "nothing"}),
                         doctest::Contains("score 'nothing' has no make function"), ValueError);
    const Score null_score =
        register_score({.name = "returns-null", .make = [](Score, const AttentionScoreOptions&, Generator&) {
                            return std::shared_ptr<AttentionScore>();
                        }});
    CHECK_THROWS_WITH_AS(make_score(null_score, {.query_dim = 2}),
                         doctest::Contains("the factory of score 'returns-null' returned no module"),
                         ValueError);
    const Score liar =
        register_score({.name = "makes-dot", .make = [](Score, const AttentionScoreOptions& o, Generator&) {
                            return std::make_shared<DotScore>(o);
                        }});
    CHECK_THROWS_WITH_AS(make_score(liar, {.query_dim = 2}),
                         doctest::Contains("the factory of score 'makes-dot' made a module of score 'dot'"),
                         ValueError);
    CHECK_THROWS_WITH_AS(to_string(static_cast<Score>(1000)),
                         doctest::Contains("to_string: no score is registered as Score value 1000"),
                         ValueError);
    CHECK_THROWS_WITH_AS(parse_score("cosine"),
                         doctest::Contains("unknown score 'cosine' (choose additive, dot"), ValueError);
}

// Faithfulness measures against hand computations in float64: TVD, JSD, Kendall tau-b, leave-one-
// out and gradient importance, permutations (all 6 of 3 keys), adversarial weights (a grid over
// the 3-key simplex), erasure on a model whose answer is known; and their refusals.
#include "helpers.hpp"

#include "inspect/faithfulness.hpp"
#include "inspect/faithfulness_evidence.hpp"
#include "inspect/faithfulness_stats.hpp"
#include "inspect/faithfulness_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <tuple>

using namespace testing;
using namespace attograd::nn;
using namespace attograd::inspect;

namespace {

constexpr auto f64 = DType::Float64;
using Row = std::vector<double>;

// probabilities = softmax(W c), c = sum_s w_s x_s, w = softmax(q . x_s): one query, 3 keys of width 2.
struct Tiny {
    Attention attention{AttentionOptions{.query_dim = 2, .scoring = {.score = Score::Dot}, .dtype = f64}};
    std::array<double, 2> q;
    std::array<double, 4> W;  // row-major [2, 2]

    Tensor probabilities(const Tensor& x) const {
        const std::int64_t b = x.size(0);
        const Tensor query = zeros({b, 1, 2}, {.dtype = f64}) + tensor({q[0], q[1]}, {2}, {.dtype = f64});
        const Tensor c = reshape(attention.forward(query, x).output, {b, 2});
        return softmax(linear(c, tensor({W[0], W[1], W[2], W[3]}, {2, 2}, {.dtype = f64})), -1);
    }
    ExplainedModel explained() const {
        return {.model = &attention,
                .probabilities = [this](const Tensor& x) { return probabilities(x); },
                .query = 0};
    }
    // The same model by hand, for one example x [3][2] and weights w.
    Row output(const std::vector<std::array<double, 2>>& x, const Row& w) const {
        double c0 = 0, c1 = 0;
        for (std::size_t s = 0; s < x.size(); ++s) {
            c0 += w[s] * x[s][0];
            c1 += w[s] * x[s][1];
        }
        const double l0 = W[0] * c0 + W[1] * c1, l1 = W[2] * c0 + W[3] * c1, m = std::max(l0, l1);
        const double e0 = std::exp(l0 - m), e1 = std::exp(l1 - m);
        return {e0 / (e0 + e1), e1 / (e0 + e1)};
    }
    Row weights(const std::vector<std::array<double, 2>>& x) const {
        Row s;
        for (const auto& k : x) s.push_back(q[0] * k[0] + q[1] * k[1]);
        const double m = *std::max_element(s.begin(), s.end());
        double total = 0;
        for (double& v : s) total += (v = std::exp(v - m));
        for (double& v : s) v /= total;
        return s;
    }
};

Tensor inputs_of(const std::vector<std::array<double, 2>>& x) {
    std::vector<double> flat;
    for (const auto& k : x) flat.insert(flat.end(), k.begin(), k.end());
    return tensor(flat, {1, static_cast<std::int64_t>(x.size()), 2}, {.dtype = f64});
}

// Row with key s removed and the rest renormalised.
Row without(const Row& w, std::size_t s) {
    Row out = w;
    out[s] = 0;
    const double total = 1 - w[s];
    for (double& v : out) v /= total;
    return out;
}

// tau-b in its covariance form, sum sgn sgn / sqrt(sum sgn^2 sum sgn^2) over ordered pairs.
double tau_by_covariance(const Row& a, const Row& b) {
    double cross = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a.size(); ++j) {
            const double sa = (a[i] > a[j]) - (a[i] < a[j]), sb = (b[i] > b[j]) - (b[i] < b[j]);
            cross += sa * sb;
            aa += sa * sa;
            bb += sb * sb;
        }
    return cross / std::sqrt(aa * bb);
}

}  // namespace

TEST_CASE("faithfulness statistics: TVD, JSD and quantiles by hand, Kendall tau-b with ties") {
    CHECK(total_variation({0.5, 0.5}, {1, 0}) == 0.5);
    CHECK(total_variation({0.2, 0.3, 0.5}, {0.2, 0.3, 0.5}) == 0.0);
    // m = (0.75, 0.25): KL(p || m) = 0.5 ln(2/3) + 0.5 ln 2, KL(q || m) = ln(4/3)
    const double jsd = 0.5 * (0.5 * std::log(2.0 / 3) + 0.5 * std::log(2.0)) + 0.5 * std::log(4.0 / 3);
    CHECK(jensen_shannon({0.5, 0.5}, {1, 0}) == doctest::Approx(jsd).epsilon(1e-15));
    CHECK(jensen_shannon({1, 0}, {0, 1}) == doctest::Approx(std::log(2.0)).epsilon(1e-15));
    CHECK(*kendall_tau_b({1, 2, 2, 3}, {1, 2, 3, 3}) ==
          doctest::Approx(0.8).epsilon(1e-15));  // 4 / sqrt(5 * 5)
    CHECK(*kendall_tau_b({1, 2, 3}, {3, 2, 1}) == -1.0);
    CHECK(!kendall_tau_b({1, 1, 1}, {1, 2, 3}).has_value());
    CHECK(!kendall_tau_b({1}, {2}).has_value());
    Generator gen(1);
    for (int trial = 0; trial < 20; ++trial) {
        Row a, b;
        for (int i = 0; i < 9; ++i) {
            a.push_back(static_cast<double>(gen.randint(0, 4)));
            b.push_back(static_cast<double>(gen.randint(0, 4)));
        }
        const auto tau = kendall_tau_b(a, b);
        REQUIRE(tau.has_value());
        CHECK(*tau == doctest::Approx(tau_by_covariance(a, b)).epsilon(1e-14));
    }
    CHECK(quantile({4, 1, 3, 2}, 0.5) == 2.5);
    CHECK(quantile({4, 1, 3, 2}, 0.25) == 1.75);
    CHECK_THROWS_WITH_AS(total_variation({1}, {0.5, 0.5}), doctest::Contains("different lengths, 1 and 2"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(quantile({}, 0.5), doctest::Contains("quantile: no values"), ValueError);
}

TEST_CASE("observation, leave-one-out and gradient importance match the hand computation") {
    Tiny m{.q = {1.0, -0.5}, .W = {2, -1, 0.5, 1}};
    const std::vector<std::array<double, 2>> x{{1.0, 0.0}, {0.5, 2.0}, {-1.0, 1.0}};
    const Tensor inputs = inputs_of(x);
    const Row w = m.weights(x), y = m.output(x, w);
    const HeadObservation seen = observe_head(m.explained(), inputs, {"", 0});
    for (std::size_t s = 0; s < 3; ++s) CHECK(seen.weights[0][s] == doctest::Approx(w[s]).epsilon(1e-14));
    CHECK(seen.allowed[0] == std::vector<bool>{true, true, true});
    const auto loo = leave_one_out(m.explained(), inputs, {"", 0});
    const auto grad = gradient_importance(m.explained(), inputs, {"", 0});
    // dy/dc for y = p_k: W^T (p_k (e_k - p)); dy/dx_s through the values = w_s dy/dc
    const std::size_t k = y[0] > y[1] ? 0 : 1;
    const double d0 = y[k] * ((k == 0) - y[0]), d1 = y[k] * ((k == 1) - y[1]);
    const double dc0 = m.W[0] * d0 + m.W[2] * d1, dc1 = m.W[1] * d0 + m.W[3] * d1;
    Row expected_grad, expected_loo;
    for (std::size_t s = 0; s < 3; ++s) {
        CHECK(loo[0][s] == doctest::Approx(total_variation(y, m.output(x, without(w, s)))).epsilon(1e-12));
        expected_grad.push_back(std::abs(w[s] * (x[s][0] * dc0 + x[s][1] * dc1)));
        expected_loo.push_back(loo[0][s]);
        CHECK(grad[0][s] == doctest::Approx(expected_grad[s]).epsilon(1e-12));
    }
    const auto tau = attention_agreement(seen, grad);
    CHECK(*tau[0] == doctest::Approx(*kendall_tau_b(w, expected_grad)).epsilon(1e-15));
}

TEST_CASE("permutation test: on 3 keys every TVD is one of the 6 permutations', all of them drawn") {
    Tiny m{.q = {1.0, 0.5}, .W = {3, 0, 0, 3}};
    const std::vector<std::array<double, 2>> x{{1.0, 0.0}, {0.0, 1.0}, {0.3, -0.4}};
    const Row w = m.weights(x), y = m.output(x, w);
    std::vector<double> by_hand;
    std::array<std::size_t, 3> p{0, 1, 2};
    do {
        by_hand.push_back(total_variation(y, m.output(x, {w[p[0]], w[p[1]], w[p[2]]})));
    } while (std::next_permutation(p.begin(), p.end()));
    Generator gen(11);
    const auto result = permutation_test(m.explained(), inputs_of(x), {"", 0}, 600, gen);
    REQUIRE(result.size() == 1);
    std::set<std::size_t> seen;
    for (const double tvd : result[0].tvd) {
        const auto near =
            std::find_if(by_hand.begin(), by_hand.end(), [&](double v) { return std::abs(v - tvd) < 1e-12; });
        REQUIRE(near != by_hand.end());
        seen.insert(static_cast<std::size_t>(near - by_hand.begin()));
    }
    CHECK(seen.size() == 6);
    CHECK(result[0].median == quantile(result[0].tvd, 0.5));
    CHECK(result[0].iqr == quantile(result[0].tvd, 0.75) - quantile(result[0].tvd, 0.25));
    CHECK(result[0].max_weight == doctest::Approx(*std::max_element(w.begin(), w.end())).epsilon(1e-14));
}

TEST_CASE("adversarial attention reaches the epsilon-max JSD of an exhaustive grid on the 3-key simplex") {
    // keys 0 and 1 carry the same value: weight moves freely between them without changing the output
    Tiny m{.q = {1.0, 0.2}, .W = {2, 0, 0, 2}};
    const std::vector<std::array<double, 2>> x{{1.0, 0.0}, {1.0, 0.0}, {0.0, 1.0}};
    const Row w = m.weights(x), y = m.output(x, w);
    const double epsilon = 0.01;
    double grid_best = 0;
    const int n = 400;
    for (int i = 0; i <= n; ++i)
        for (int j = 0; i + j <= n; ++j) {
            const Row a{static_cast<double>(i) / n, static_cast<double>(j) / n,
                        static_cast<double>(n - i - j) / n};
            if (total_variation(y, m.output(x, a)) <= epsilon)
                grid_best = std::max(grid_best, jensen_shannon(a, w));
        }
    const auto result = adversarial_attention(m.explained(), inputs_of(x), {"", 0}, {.epsilon = epsilon});
    REQUIRE(result.size() == 1);
    const AdversarialResult& r = result[0];
    CHECK(r.tvd <= epsilon);
    CHECK(total_variation(y, m.output(x, r.weights)) == doctest::Approx(r.tvd).epsilon(1e-10));
    CHECK(r.jsd == doctest::Approx(jensen_shannon(r.weights, w)).epsilon(1e-10));
    CHECK(grid_best > 0.1);
    CHECK(r.jsd <= grid_best + 0.01);  // the grid's spacing bounds how far the true maximum lies above it
    CHECK(r.jsd >= grid_best - 0.02);
}

TEST_CASE("erasure: removing the dominant key flips the decision, a weak one does not") {
    // key 0 votes class 0 strongly and gets most weight; keys 1 and 2 vote class 1
    Tiny m{.q = {1.0, 0.0}, .W = {1, 0, 0, 1}};
    const std::vector<std::array<double, 2>> x{{3.0, 0.0}, {0.0, 1.0}, {0.0, 1.2}};
    const Row w = m.weights(x), y = m.output(x, w);
    REQUIRE(y[0] > y[1]);
    Generator gen(3);
    const auto result = erasure(m.explained(), inputs_of(x), {"", 0}, gen);
    REQUIRE(result.size() == 1);
    const ErasureResult& e = result[0];
    CHECK(e.flip_top);
    CHECK(e.jsd_top == doctest::Approx(jensen_shannon(y, m.output(x, without(w, 0)))).epsilon(1e-12));
    const std::set<double> random_jsd{jensen_shannon(y, m.output(x, without(w, 0))),
                                      jensen_shannon(y, m.output(x, without(w, 1))),
                                      jensen_shannon(y, m.output(x, without(w, 2)))};
    CHECK(std::any_of(random_jsd.begin(), random_jsd.end(),
                      [&](double v) { return std::abs(v - e.jsd_random) < 1e-12; }));
    CHECK(e.fraction_attention == doctest::Approx(1.0 / 3));
    CHECK(e.fraction_gradient == doctest::Approx(1.0 / 3));
    CHECK(e.fraction_product == doctest::Approx(1.0 / 3));
    REQUIRE(e.fraction_random.has_value());  // removing keys 1 and 2 leaves key 0: class 0; key 0 flips
    CHECK(e.flip_random == (*e.fraction_random == 1.0 / 3));
}

TEST_CASE("faithfulness measures refuse bad arguments and models without attention") {
    Tiny m{.q = {1.0, 0.0}, .W = {1, 0, 0, 1}};
    const Tensor x = inputs_of({{1, 0}, {0, 1}});
    Generator gen(1);
    CHECK_THROWS_WITH_AS(permutation_test(m.explained(), x, {"", 0}, 0, gen),
                         doctest::Contains("n (the number of permutations) must be >= 1, got 0"), ValueError);
    for (const double epsilon : {0.0, 1.0, -0.1})
        CHECK_THROWS_WITH_AS(adversarial_attention(m.explained(), x, {"", 0}, {.epsilon = epsilon}),
                             doctest::Contains("epsilon must be in (0, 1)"), ValueError);
    CHECK_THROWS_WITH_AS(permutation_test(m.explained(), x, {"", 3}, 5, gen),
                         doctest::Contains("permutation_test: layer '' has 1 head, no head 3"), IndexError);
    CHECK_THROWS_WITH_AS(observe_head(m.explained(), x, {"", 1}),
                         doctest::Contains("layer '' has 1 head, no head 1"), IndexError);
    CHECK_THROWS_WITH_AS(
        observe_head(m.explained(), x, {"decoder", 0}),
        doctest::Contains("'decoder' is not an attention layer of the model; its layers: '' (1 head)"),
        ValueError);
    ExplainedModel wrong_query = m.explained();
    wrong_query.query = 1;
    CHECK_THROWS_WITH_AS(observe_head(wrong_query, x, {"", 0}),
                         doctest::Contains("query 1 is outside layer '''s 1 queries"), ValueError);
    CHECK_THROWS_WITH_AS(observe_head(m.explained(), reshape(x, {2, 2}), {"", 0}),
                         doctest::Contains("inputs must be [B, T, E] with B >= 1, got [2, 2]"), ShapeError);
    const Linear linear_model({.in_features = 2, .out_features = 2, .dtype = f64});
    const ExplainedModel no_attention{
        .model = &linear_model, .probabilities = [&](const Tensor& in) { return softmax(sum(in, {1}), -1); }};
    CHECK_THROWS_WITH_AS(observe_head(no_attention, x, {"", 0}),
                         doctest::Contains("the model (Linear) has no attention layer"), ValueError);
}

TEST_CASE("the data-set table: per-head means of the measures, knockout accuracy by hand, CSV and text") {
    Tiny m{.q = {1.0, 0.0}, .W = {1, 0, 0, 1}};
    Generator gen(21);
    const Tensor inputs = randn({5, 3, 2}, gen, {.dtype = f64});
    const std::vector<std::int64_t> labels{0, 1, 1, 0, 1}, alignment{0, 1, 2, 0, 1};
    const FaithfulnessTable table =
        faithfulness_table(m.explained(), {.inputs = inputs, .labels = labels, .alignment = alignment},
                           {.permutations = 7, .adversarial_options = {.steps = 20}, .chunk = 2});
    REQUIRE(table.heads.size() == 1);
    const HeadFaithfulness& h = table.heads[0];
    const HeadObservation seen = observe_head(m.explained(), inputs, {"", 0});
    double right = 0, align = 0, entropy = 0;
    for (std::size_t b = 0; b < 5; ++b) {
        right += (seen.output[b][1] > seen.output[b][0]) == (labels[b] == 1);
        align += seen.weights[b][static_cast<std::size_t>(alignment[b])] / 5;
        for (const double w : seen.weights[b]) entropy -= w * std::log(w) / 5;
    }
    CHECK(*h.accuracy == doctest::Approx(right / 5));
    CHECK(*h.knockout_accuracy ==
          doctest::Approx(0.4));  // a silent head: p = (1/2, 1/2), argmax 0; 2 labels are 0
    CHECK(*h.alignment == doctest::Approx(align).epsilon(1e-12));
    CHECK(h.entropy == doctest::Approx(entropy).epsilon(1e-12));
    const auto loo = leave_one_out(m.explained(), inputs, {"", 0});
    double tau = 0;
    for (const auto& t : attention_agreement(seen, loo)) tau += *t / 5;
    CHECK(*h.tau_loo == doctest::Approx(tau).epsilon(1e-12));
    CHECK(h.verdict == faithfulness_verdict(h, 0.01));
    const std::string csv = to_csv(table);
    CHECK(csv.rfind("layer,head,align,entropy,", 0) == 0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 2);
    CHECK(to_text(table).find("(root) head 0: " + h.verdict) != std::string::npos);
    CHECK_THROWS_WITH_AS(faithfulness_table(m.explained(), {.inputs = inputs, .labels = {0, 1}}),
                         doctest::Contains("labels must be empty or one per example (5), got 2"), ValueError);
    CHECK_THROWS_WITH_AS(faithfulness_table(m.explained(), {.inputs = inputs}, {.permutations = 0}),
                         doctest::Contains("permutations must be >= 1, got 0"), ValueError);
}

TEST_CASE("the table's text names the head whose knockout costs most, whatever its verdict") {
    FaithfulnessTable table;
    for (const auto& [layer, head, knocked] :
         {std::tuple{"encoder", 0, 0.90}, {"decoder", 0, 0.50}, {"decoder", 1, 0.88}}) {
        HeadFaithfulness h;
        h.head = {layer, head};
        h.accuracy = 1.0;
        h.knockout_accuracy = knocked;
        h.verdict = "partial";
        table.heads.push_back(h);
    }
    CHECK(to_text(table).find("the output needs decoder head 0 most: knocking it out costs 50 points\n") !=
          std::string::npos);
    table.heads[1].knockout_accuracy = 1.0;  // now decoder head 1 (12 points, against encoder head 0's 10)
    CHECK(to_text(table).find("the output needs decoder head 1 most: knocking it out costs 12 points") !=
          std::string::npos);
    for (auto& h : table.heads) h.knockout_accuracy = 1.0;  // no head costs anything: nothing to name
    CHECK(to_text(table).find("the output needs") == std::string::npos);
    table.heads.resize(1);
    table.heads[0].knockout_accuracy = 0.2;  // one head: the table already says it
    CHECK(to_text(table).find("the output needs") == std::string::npos);
}

TEST_CASE("faithfulness verdicts follow their documented thresholds in order") {
    HeadFaithfulness h;
    h.permutation_median = 0.002;
    CHECK(faithfulness_verdict(h, 0.01) ==
          "not an explanation: permuted weights change the output by TVD 0.002");
    h.permutation_median = 0.2;
    h.adversarial_jsd = 0.45;
    CHECK(faithfulness_verdict(h, 0.01) ==
          "not an explanation: weights at JSD 0.45 from its own give the same output (TVD <= 0.01)");
    h.adversarial_jsd = 0.1;
    h.accuracy = 0.9;
    h.knockout_accuracy = 0.53;
    h.tau_loo = 0.82;
    CHECK(faithfulness_verdict(h, 0.01) ==
          "decisive: knocking it out costs 37 points and its weights agree with leave-one-out, tau 0.82");
    h.tau_loo = 0.3;
    CHECK(faithfulness_verdict(h, 0.01) ==
          "partial: knockout costs 37 points, tau with leave-one-out 0.30, permuted TVD 0.200");
}

TEST_CASE("a verdict's figures read as its rules decided: no rounding across a threshold") {
    HeadFaithfulness h;
    h.permutation_median = 0.0099;  // below 0.01: "0.010" would not be
    CHECK(faithfulness_verdict(h, 0.01) ==
          "not an explanation: permuted weights change the output by TVD 0.0099");
    h.permutation_median = 0.0099999999;
    CHECK(faithfulness_verdict(h, 0.01).ends_with("TVD 0.0099999999"));
    h.permutation_median = 0.2;
    h.adversarial_jsd = 0.1;
    h.accuracy = 0.9;
    h.knockout_accuracy = 0.8535;  // 4.65 points: partial, so not "5 points"
    h.tau_loo = 0.9;
    CHECK(faithfulness_verdict(h, 0.01) ==
          "partial: knockout costs 4.7 points, tau with leave-one-out 0.90, permuted TVD 0.200");
    h.knockout_accuracy = 0.85;  // 5 points in counts, 4.999999999999996 in doubles: decisive
    CHECK(faithfulness_verdict(h, 0.01).starts_with("decisive: knocking it out costs 5 points"));
    h.knockout_accuracy = 0.7;
    h.tau_loo = 0.4996;  // below 0.5: "0.50" would not be
    CHECK(faithfulness_verdict(h, 0.01) ==
          "partial: knockout costs 20 points, tau with leave-one-out 0.4996, permuted TVD 0.200");
    h.knockout_accuracy = 0.95;  // knocking it out helps
    CHECK(faithfulness_verdict(h, 0.01).starts_with("partial: knockout raises accuracy by 5 points,"));
    h.knockout_accuracy = 0.902;
    CHECK(faithfulness_verdict(h, 0.01).starts_with("partial: knockout raises accuracy by 0.2 points,"));
    h.knockout_accuracy = 0.9;
    CHECK(faithfulness_verdict(h, 0.01).starts_with("partial: knockout costs 0 points,"));
    h.adversarial_jsd = 0.30001;  // at or above 0.3 stays so
    CHECK(faithfulness_verdict(h, 0.01).starts_with("not an explanation: weights at JSD 0.30 "));
    CHECK(verdict_figure(0.29996, 2, {0.3}) == "0.29996");
    // not an explanation, yet decisive by knockout: the verdict says what the measures show
    h.adversarial_jsd = 0.1;
    h.permutation_median = 0.004;
    h.knockout_accuracy = 0.16;
    CHECK(faithfulness_verdict(h, 0.01) ==
          "not an explanation: permuted weights change the output by TVD 0.004; but knocking it out costs 74 "
          "points: the output needs the head, not the placement of its weights at the row measured");
    h.knockout_accuracy = 0.8535;  // below the knockout threshold: no such clause
    CHECK(faithfulness_verdict(h, 0.01) ==
          "not an explanation: permuted weights change the output by TVD 0.004");
    CHECK(verdict_figure(4.65, 0, {5, 0}) == "4.7");
    CHECK(verdict_figure(-0.2, 0, {5, 0}) == "-0.2");
    CHECK(verdict_figure(37.4, 0, {5, 0}) == "37");
}

TEST_CASE("the measures refuse a probabilities function that does not return distributions") {
    Tiny m{.q = {1.0, 0.0}, .W = {1, 0, 0, 1}};
    const Tensor x = inputs_of({{1, 0}, {0, 1}, {0.5, 0.5}});
    struct Bad {
        const char* what;
        std::function<Tensor(const Tensor&)> change;
        const char* message;
    };
    const Bad bad[] = {{"logits", [](const Tensor& p) { return log(p); }, "must be finite and >= 0"},
                       {"scaled", [](const Tensor& p) { return p * 2.0; },
                        "must sum to 1 per row (within 0.0001), row 0 sums to"},
                       {"NaN", [](const Tensor& p) { return p * std::nan(""); }, "must be finite and >= 0"},
                       {"negative", [](const Tensor& p) { return p - 0.6; }, "must be finite and >= 0"}};
    for (const auto& b : bad) {
        INFO(b.what);
        ExplainedModel wrong = m.explained();
        wrong.probabilities = [&m, &b](const Tensor& in) { return b.change(m.probabilities(in)); };
        Generator gen(1);
        const auto shape = doctest::Contains("probabilities [1, 2]");
        CHECK_THROWS_WITH_AS(observe_head(wrong, x, {"", 0}),
                             doctest::Contains("observe_head: probabilities"), ValueError);
        CHECK_THROWS_WITH_AS(observe_head(wrong, x, {"", 0}), shape, ValueError);
        CHECK_THROWS_WITH_AS(observe_head(wrong, x, {"", 0}), doctest::Contains(b.message), ValueError);
        CHECK_THROWS_WITH_AS(permutation_test(wrong, x, {"", 0}, 3, gen),
                             doctest::Contains("permutation_test: probabilities"), ValueError);
        CHECK_THROWS_WITH_AS(leave_one_out(wrong, x, {"", 0}),
                             doctest::Contains("leave_one_out: probabilities"), ValueError);
        CHECK_THROWS_WITH_AS(gradient_importance(wrong, x, {"", 0}),
                             doctest::Contains("gradient_importance: probabilities"), ValueError);
        CHECK_THROWS_WITH_AS(adversarial_attention(wrong, x, {"", 0}, {.steps = 2}),
                             doctest::Contains("adversarial_attention: probabilities"), ValueError);
        CHECK_THROWS_WITH_AS(erasure(wrong, x, {"", 0}, gen), doctest::Contains("erasure: probabilities"),
                             ValueError);
        CHECK_THROWS_WITH_AS(output_with_rows(wrong, x, {"", 0}, {{0.2, 0.3, 0.5}}),
                             doctest::Contains("output_with_rows: probabilities"), ValueError);
        CHECK_THROWS_WITH_AS(faithfulness_table(wrong, {.inputs = x, .labels = {0}}),
                             doctest::Contains("faithfulness_table: probabilities"), ValueError);
    }
    // a float32 softmax passes: within the tolerance
    CHECK_NOTHROW(check_probabilities(softmax(tensor({1, 2, 3, 4, 5, 6}, {2, 3}), -1), "test"));
}

TEST_CASE("options that are not finite are refused before anything is measured") {
    Tiny m{.q = {1.0, 0.0}, .W = {1, 0, 0, 1}};
    const Tensor x = inputs_of({{1, 0}, {0, 1}});
    const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    for (const double v : {inf, -inf, nan, 0.0}) {
        INFO(v);
        CHECK_THROWS_WITH_AS(adversarial_attention(m.explained(), x, {"", 0}, {.learning_rate = v}),
                             doctest::Contains("adversarial_attention: learning_rate must be finite and > 0"),
                             ValueError);
        CHECK_THROWS_WITH_AS(adversarial_attention(m.explained(), x, {"", 0}, {.penalty = v}),
                             doctest::Contains("adversarial_attention: penalty must be finite and > 0"),
                             ValueError);
        CHECK_THROWS_WITH_AS(adversarial_attention(m.explained(), x, {"", 0}, {.epsilon = v}),
                             doctest::Contains("adversarial_attention: epsilon must be in (0, 1)"),
                             ValueError);
        CHECK_THROWS_WITH_AS(
            faithfulness_table(m.explained(), {.inputs = x}, {.adversarial_options = {.penalty = v}}),
            doctest::Contains("faithfulness_table: penalty must be finite and > 0"), ValueError);
    }
    // without the adversarial search its options are not used, so not checked
    CHECK_NOTHROW(faithfulness_table(
        m.explained(), {.inputs = x},
        {.permutations = 2, .adversarial = false, .adversarial_options = {.penalty = inf}}));
}

TEST_CASE(
    "the measures run in float32 on a padded MultiHeadAttention: masked keys stay at 0, values finite") {
    Generator gen(31);
    MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2}, gen);
    const Tensor padding = bool_mask({3, 5}, [](std::int64_t b, std::int64_t k) { return k >= 5 - b; });
    const ExplainedModel m{.model = &mha,
                           .probabilities =
                               [&](const Tensor& x) {
                                   const Tensor mask = index_select(padding, 0, index_tensor({0, 1, 2}, {3}));
                                   const std::int64_t copies = x.size(0) / 3;
                                   std::vector<std::int64_t> rows;
                                   for (std::int64_t b = 0; b < 3; ++b)
                                       rows.insert(rows.end(), static_cast<std::size_t>(copies), b);
                                   const Tensor kpm = index_select(mask, 0, index_tensor(rows, {x.size(0)}));
                                   const Tensor h = mha.forward(x, {.key_padding_mask = kpm}).output;
                                   return softmax(select(h, 1, 0), -1);
                               },
                           .query = 0};
    const Tensor x = randn({3, 5, 4}, gen);
    const auto adversarial = adversarial_attention(m, x, {"", 1}, {.steps = 10});
    Generator g(1);
    const auto permuted = permutation_test(m, x, {"", 1}, 5, g);
    // the evidence lists the example's own keys only: example 2's last two are padding
    const ExplainedModel same_mask{
        .model = &mha,
        .probabilities =
            [&](const Tensor& in) {
                const Tensor kpm =
                    bool_mask({in.size(0), 5}, [](std::int64_t, std::int64_t k) { return k >= 3; });
                return softmax(select(mha.forward(in, {.key_padding_mask = kpm}).output, 1, 0), -1);
            },
        .query = 0};
    const FaithfulnessOptions few{.permutations = 2, .adversarial = false};
    const FaithfulnessEvidence e =
        faithfulness_evidence(same_mask, x, {"", 1}, 2, {"a", "b", "c", "_", "_"}, few);
    CHECK(e.keys == std::vector<std::string>{"a", "b", "c"});
    CHECK(e.attention.size() == 3);
    CHECK(e.gradient.size() == 3);
    CHECK(e.leave_one_out.size() == 3);
    CHECK(faithfulness_evidence(same_mask, x, {"", 1}, 2, {"a", "b", "c"}, few).keys == e.keys);
    CHECK_THROWS_WITH_AS(faithfulness_evidence(same_mask, x, {"", 1}, 2, {"a", "b", "c", "_"}, few),
                         doctest::Contains("4 keys given, layer '' head 1 attends over 5 (3 of them"),
                         ValueError);
    for (std::size_t b = 0; b < 3; ++b) {
        for (std::size_t k = 5 - b; k < 5; ++k) CHECK(adversarial[b].weights[k] == 0.0);
        CHECK(std::isfinite(adversarial[b].jsd));
        CHECK(adversarial[b].tvd <= 0.01);
        for (const double t : permuted[b].tvd) CHECK(std::isfinite(t));
    }
}

namespace {

// Every value of a row, for comparing two tables exactly (nullopt as NaN, which compares by bits).
std::vector<double> values_of(const HeadFaithfulness& h) {
    auto v = [](const std::optional<double>& x) { return x.value_or(std::nan("")); };
    return {v(h.alignment),
            h.entropy,
            h.max_weight,
            v(h.accuracy),
            v(h.knockout_accuracy),
            v(h.tau_gradient),
            v(h.tau_loo),
            h.permutation_median,
            h.permutation_iqr,
            v(h.adversarial_jsd),
            h.flip_top,
            h.flip_random,
            v(h.fraction_attention),
            v(h.fraction_gradient),
            v(h.fraction_product),
            v(h.fraction_random)};
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("the data-set table is the same, bit for bit, on 1 and 2 threads, and threads < 1 is refused") {
    Generator gen(41);
    MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = f64}, gen);
    mha.eval();
    const ExplainedModel m{.model = &mha, .probabilities = [&](const Tensor& x) {
                               return softmax(select(mha.forward(x).output, 1, 0), -1);
                           }};
    const Tensor inputs = randn({5, 4, 4}, gen, {.dtype = f64});
    const FaithfulnessData data{.inputs = inputs, .labels = {0, 1, 2, 3, 0}, .alignment = {0, 1, 2, 3, 0}};
    FaithfulnessOptions options{.permutations = 6, .adversarial_options = {.steps = 15}, .chunk = 2};
    const FaithfulnessTable one = faithfulness_table(m, data, options);
    options.threads = 2;
    const FaithfulnessTable two = faithfulness_table(m, data, options);
    REQUIRE(one.heads.size() == 2);
    REQUIRE(two.heads.size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
        CHECK(one.heads[k].head.head == static_cast<std::int64_t>(k));
        CHECK(two.heads[k].head.head == static_cast<std::int64_t>(k));
        const auto a = values_of(one.heads[k]), b = values_of(two.heads[k]);
        for (std::size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i], b[i]));
        CHECK(one.heads[k].verdict == two.heads[k].verdict);
    }
    // the heads differ, so equal rows are not equal by accident
    CHECK(one.heads[0].entropy != one.heads[1].entropy);
    options.threads = 0;
    CHECK_THROWS_WITH_AS(faithfulness_table(m, data, options),
                         doctest::Contains("faithfulness_table: threads must be >= 1, got 0"), ValueError);
    // an error met on a worker thread reaches the caller: an alignment outside the 4 keys
    options.threads = 2;
    const FaithfulnessData bad{.inputs = inputs, .labels = {}, .alignment = {0, 1, 9, 3, 0}};
    CHECK_THROWS_WITH_AS(faithfulness_table(m, bad, options),
                         doctest::Contains("alignment 9 of example 2 is outside the 4 keys"), ValueError);
}

TEST_CASE("gradient importance and adversarial search add nothing into the model's parameter gradients") {
    Generator gen(43);
    MultiHeadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = f64}, gen);
    const ExplainedModel m{.model = &mha, .probabilities = [&](const Tensor& x) {
                               return softmax(select(mha.forward(x).output, 1, 0), -1);
                           }};
    const Tensor x = randn({3, 4, 4}, gen, {.dtype = f64});
    const auto importance = gradient_importance(m, x, {"", 1});
    const auto adversarial = adversarial_attention(m, x, {"", 0}, {.steps = 5});
    REQUIRE(importance.size() == 3);
    REQUIRE(adversarial.size() == 3);
    for (const auto& [name, p] : mha.named_parameters()) {
        INFO(name);
        CHECK(p.requires_grad());         // still trainable afterwards
        CHECK_FALSE(p.grad().defined());  // no backward reached it
    }
    // the measures still differentiate: the importance is not all zero
    double total = 0;
    for (const auto& row : importance)
        for (const double g : row) total += g;
    CHECK(total > 0);
}

TEST_CASE("leave-one-out over more sequences than one pass holds matches each example run alone") {
    // 40 examples x 30 keys = 1200 sequences: the copies run in several passes, which must give
    // every example's copies back in place
    Tiny m{.q = {1.0, -0.5}, .W = {1.5, -0.5, 0.25, 1}};
    Generator gen(47);
    const Tensor inputs = randn({40, 30, 2}, gen, {.dtype = f64});
    const auto loo = leave_one_out(m.explained(), inputs, {"", 0});
    REQUIRE(loo.size() == 40);
    for (const std::int64_t b : {0, 17, 39}) {
        const Tensor one = narrow(inputs, 0, b, 1);
        const HeadObservation seen = observe_head(m.explained(), one, {"", 0});
        for (const std::size_t s : {std::size_t{0}, std::size_t{13}, std::size_t{29}}) {
            const Row w = without(seen.weights[0], s);
            const auto y = output_with_rows(m.explained(), one, {"", 0}, {w});
            CHECK(loo[static_cast<std::size_t>(b)][s] ==
                  doctest::Approx(total_variation(seen.output[0], y[0])).epsilon(1e-12));
        }
    }
}

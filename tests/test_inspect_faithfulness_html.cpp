// The report's faithfulness section: one head's evidence gathered from the measures, histogram and
// erasure curves by hand, and the section's HTML (what the page shows is tested in headless
// Chromium by test_inspect_html_browser).
#include "helpers.hpp"

#include "inspect/faithfulness_evidence.hpp"
#include "inspect/faithfulness_html.hpp"
#include "inspect/render_svg.hpp"

#include <cmath>

using namespace testing;
using namespace attograd::nn;
using namespace attograd::inspect;

namespace {

constexpr auto f64 = DType::Float64;

// probabilities = softmax(W c) of one fixed query's attention output c over inputs [B, T, 2].
struct Classifier {
    Attention attention{AttentionOptions{.query_dim = 2, .scoring = {.score = Score::Dot}, .dtype = f64}};
    Tensor probabilities(const Tensor& x) const {
        const std::int64_t b = x.size(0);
        const Tensor query = zeros({b, 1, 2}, {.dtype = f64}) + tensor({1.5, -0.5}, {2}, {.dtype = f64});
        const Tensor c = reshape(attention.forward(query, x).output, {b, 2});
        return softmax(linear(c, tensor({2, -1, -1, 2}, {2, 2}, {.dtype = f64})), -1);
    }
    ExplainedModel explained() const {
        return {.model = &attention, .probabilities = [this](const Tensor& x) { return probabilities(x); }};
    }
};

}  // namespace

TEST_CASE("histogram_chart counts each finite value in its bin, drawn as a stepped outline") {
    const Chart h = histogram_chart("t", "x", {0.05, 0.05, 0.15, 0.35, 0.4, std::nan("")}, 4);
    REQUIRE(h.series.size() == 1);
    const Series& s = h.series[0];
    // up each bin's left edge and along its top: counts 2, 1, 0, 2 over [0, 0.4] in bins of 0.1
    const std::vector<double> y{0, 2, 2, 1, 1, 0, 0, 2, 2, 0};
    CHECK(s.y == y);
    REQUIRE(s.x.size() == y.size());
    const std::vector<double> x{0, 0, 0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4};
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(s.x[i] == doctest::Approx(x[i]).epsilon(1e-15));
    CHECK(*h.y_min == 0.0);
    CHECK(*h.y_max == 2.0);
    const Chart zeros_only = histogram_chart("t", "x", {0, 0, 0});
    CHECK(zeros_only.series[0].y == std::vector<double>{0, 3, 3, 0});
    CHECK(zeros_only.series[0].x == std::vector<double>{0, 0, 1, 1});
    CHECK_THROWS_WITH_AS(histogram_chart("t", "x", {1}, 0),
                         doctest::Contains("histogram_chart: bins must be >= 1, got 0"), ValueError);
}

TEST_CASE("erasure_chart: the share of decisions flipped with at most x of the keys removed") {
    std::vector<ErasureResult> results(2);
    results[0].fraction_attention = 0.25;
    results[0].fraction_random = 1.0;
    results[1].fraction_gradient = 0.5;
    const Chart c = erasure_chart(results);
    REQUIRE(c.series.size() == 4);
    CHECK(c.series[0].name == "by attention");
    CHECK(c.series[3].name == "at random");
    const auto at = [&](std::size_t series, double x) {
        return c.series[series].y[static_cast<std::size_t>(std::lround(x * 20))];
    };
    CHECK(at(0, 0.2) == 0.0);
    CHECK(at(0, 0.25) == 0.5);
    CHECK(at(0, 1.0) == 0.5);
    CHECK(at(1, 0.45) == 0.0);
    CHECK(at(1, 0.5) == 0.5);
    CHECK(at(2, 1.0) == 0.0);  // no example flips when ranked by the product
    CHECK(at(3, 0.95) == 0.0);
    CHECK(at(3, 1.0) == 0.5);
}

TEST_CASE("faithfulness_html: a row and verdict per head, the rules, the evidence with '-' where undefined") {
    FaithfulnessSection section;
    HeadFaithfulness quiet{.head = {"", 0}, .permutation_median = 0.002};
    quiet.verdict = faithfulness_verdict(quiet, section.table.epsilon);
    section.table.heads = {quiet};
    const std::string table_only = faithfulness_html(section);
    CHECK(table_only.find("<tr class=\"not-explanation\"><td>(root)</td><td>0</td>") != std::string::npos);
    CHECK(table_only.find("<td class=\"verdict\">not an explanation: permuted weights change the output by "
                          "TVD 0.002</td>") != std::string::npos);
    for (const auto& rule : verdict_rules(section.table.epsilon))
        CHECK(table_only.find("<li>" + xml_escape(rule) + "</li>") != std::string::npos);
    CHECK(table_only.find("faith-importance") == std::string::npos);
    FaithfulnessEvidence evidence;
    evidence.keys = {"<b>", "c"};
    evidence.attention = {0.25, 0.75};
    evidence.leave_one_out = {std::nan(""), 0.5};  // no gradient: "-" in its column
    section.evidence = evidence;
    const std::string html = faithfulness_html(section);
    CHECK(html.find("<span class=\"tok\">&lt;b&gt;</span>") != std::string::npos);
    CHECK(html.find("style=\"width: 33.3px\"></span> <span class=\"value\">0.250</span>") !=
          std::string::npos);
    CHECK(html.find("<td class=\"measure\">-</td><td class=\"measure\">-</td>") != std::string::npos);
    CHECK(html.find("nan") == std::string::npos);
    CHECK(faithfulness_html(FaithfulnessSection{}).find("no head was tested") != std::string::npos);
}

TEST_CASE("faithfulness_evidence gathers the measures of one head, and refuses a bad example or keys") {
    const Classifier model;
    Generator gen(3);
    const Tensor inputs = randn({3, 4, 2}, gen, {.dtype = f64});
    const ExplainedModel m = model.explained();
    const FaithfulnessOptions options{.permutations = 5, .adversarial_options = {.steps = 20}, .seed = 7};
    const FaithfulnessEvidence e =
        faithfulness_evidence(m, inputs, {"", 0}, 1, {"a", "b", "c", "d"}, options);
    const Tensor one = narrow(inputs, 0, 1, 1);
    CHECK(e.attention == observe_head(m, one, {"", 0}).weights.front());
    CHECK(e.gradient == gradient_importance(m, one, {"", 0}).front());
    CHECK(e.leave_one_out == leave_one_out(m, one, {"", 0}).front());
    Generator same(7);
    std::vector<double> tvd;
    for (const auto& r : permutation_test(m, inputs, {"", 0}, 5, same))
        tvd.insert(tvd.end(), r.tvd.begin(), r.tvd.end());
    CHECK(e.permutation_tvd == tvd);
    std::vector<double> jsd;
    for (const auto& r : adversarial_attention(m, inputs, {"", 0}, options.adversarial_options))
        jsd.push_back(r.jsd);
    CHECK(e.adversarial_jsd == jsd);
    CHECK(e.erasure.size() == 3);
    CHECK_THROWS_WITH_AS(faithfulness_evidence(m, inputs, {"", 0}, 3, {"a", "b", "c", "d"}, options),
                         doctest::Contains("faithfulness_evidence: example 3 is outside the 3 inputs"),
                         IndexError);
    CHECK_THROWS_WITH_AS(
        faithfulness_evidence(m, inputs, {"", 0}, 0, {"a"}, options),
        doctest::Contains("faithfulness_evidence: 1 keys given, layer '' head 0 attends over 4"), ValueError);
}

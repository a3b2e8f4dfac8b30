// inspect's gradient x input saliency for any function of an embedding, and Spearman agreement.
#include "helpers.hpp"

#include "inspect/saliency.hpp"

using namespace testing;
using namespace attograd::inspect;

namespace {

TokenLabels labels(std::int64_t rows, std::int64_t cols) {
    TokenLabels l;
    for (std::int64_t i = 0; i < rows; ++i) l.queries.push_back(std::string("o").append(std::to_string(i)));
    for (std::int64_t i = 0; i < cols; ++i) l.keys.push_back(std::string("i").append(std::to_string(i)));
    return l;
}

}  // namespace

TEST_CASE("saliency of a linear function is |A[t] . x| per input position, rows normalised") {
    // f(x)_t = sum_{s, e} A[t, s, e] x[s, e]: the gradient of output t is A[t].
    const std::int64_t tout = 3, s = 4, e = 2;
    const Tensor a = rand64({tout, s * e}, 1).detach();
    const Tensor x = rand64({s, e}, 2).detach();
    const ScoreFunction f = [&](const Tensor& emb) {
        return reshape(matmul(a, reshape(emb, {s * e, 1})), {tout});
    };
    const AttentionMap map = saliency(f, x, labels(tout, s));
    CHECK(map.head == -1);
    CHECK(map.title() == "saliency (gradient x input)");
    const auto av = a.to_vector<double>(), xv = x.to_vector<double>();
    for (std::int64_t t = 0; t < tout; ++t) {
        std::vector<double> row;
        for (std::int64_t i = 0; i < s; ++i) {
            double dot = 0.0;
            for (std::int64_t j = 0; j < e; ++j)
                dot += av[static_cast<std::size_t>(t * s * e + i * e + j)] *
                       xv[static_cast<std::size_t>(i * e + j)];
            row.push_back(std::abs(dot));
        }
        double total = 0.0;
        for (const double v : row) total += v;
        for (std::int64_t i = 0; i < s; ++i)
            CHECK(map.at(t, i) == doctest::Approx(row[static_cast<std::size_t>(i)] / total).epsilon(1e-12));
    }
    // The caller's embedding is not touched and gets no gradient.
    CHECK_FALSE(x.grad().defined());
}

TEST_CASE("saliency of a nonlinear function equals one separate backward per output") {
    const std::int64_t s = 5, e = 3;
    Generator gen(9);
    nn::Linear layer({.in_features = e, .out_features = 4, .dtype = DType::Float64}, gen);
    const Tensor x = rand64({s, e}, 3).detach();
    // Output t: tanh of the sum over positions of the layer's t-th feature (outputs share the graph).
    const ScoreFunction f = [&](const Tensor& emb) { return sum(tanh(layer.forward(emb)), {0}); };
    const AttentionMap map = saliency(f, x, labels(4, s));
    for (std::int64_t t = 0; t < 4; ++t) {
        Tensor leaf = clone(x);
        leaf.requires_grad_(true);
        sum(narrow(f(leaf), 0, t, 1)).backward();
        const auto g = leaf.grad().to_vector<double>(), xv = x.to_vector<double>();
        std::vector<double> row;
        double total = 0.0;
        for (std::int64_t i = 0; i < s; ++i) {
            double dot = 0.0;
            for (std::int64_t j = 0; j < e; ++j)
                dot += g[static_cast<std::size_t>(i * e + j)] * xv[static_cast<std::size_t>(i * e + j)];
            row.push_back(std::abs(dot));
            total += std::abs(dot);
        }
        for (std::int64_t i = 0; i < s; ++i)
            CHECK(map.at(t, i) == doctest::Approx(row[static_cast<std::size_t>(i)] / total).epsilon(1e-12));
    }
}

TEST_CASE("saliency refuses bad embeddings, scores, labels and functions that ignore the input") {
    const Tensor x = rand64({3, 2}, 4).detach();
    const ScoreFunction f = [](const Tensor& emb) { return sum(emb, {1}); };  // [3]
    CHECK_THROWS_WITH_AS(saliency(f, reshape(x, {1, 3, 2}), labels(3, 3)),
                         doctest::Contains("must be [S, E], got [1, 3, 2]"), ShapeError);
    CHECK_THROWS_WITH_AS(saliency([](const Tensor& emb) { return emb; }, x, labels(3, 3)),
                         doctest::Contains("must return [Tout] (one score per output), got [3, 2]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        saliency(f, x, labels(2, 3)),
        doctest::Contains("scores [3] over embedding [3, 2] need 3 query and 3 key labels, got 2 and 3"),
        ShapeError);
    CHECK_THROWS_WITH_AS(saliency([](const Tensor&) { return zeros({2}); }, x, labels(2, 3)),
                         doctest::Contains("do not depend on the embedding"), ValueError);
    CHECK_THROWS_WITH_AS(saliency(f, index_tensor({1, 2}, {1, 2}), labels(1, 1)),
                         doctest::Contains("float32 or float64"), DTypeError);
}

TEST_CASE("Spearman: +1 for the same order, -1 for the reverse, average ranks for ties, none when constant") {
    CHECK(*spearman({1, 2, 3, 4}, {10, 20, 35, 100}) == doctest::Approx(1.0));
    CHECK(*spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1.0));
    // Ranks (1.5, 1.5, 3) against (1, 2, 3): r = 0.866...
    CHECK(*spearman({5, 5, 7}, {1, 2, 3}) == doctest::Approx(std::sqrt(3.0) / 2.0));
    CHECK_FALSE(spearman({1, 1, 1}, {1, 2, 3}).has_value());
    CHECK_FALSE(spearman({1}, {2}).has_value());
    CHECK_THROWS_WITH_AS(spearman({1, 2}, {1, 2, 3}), doctest::Contains("different lengths 2 and 3"),
                         ShapeError);
}

TEST_CASE("saliency_correlation: mean over rows, constant rows skipped, shapes must agree") {
    AttentionMap head;
    head.module = "dec.attn";
    head.queries = {"a", "b"};
    head.keys = {"x", "y", "z"};
    head.weights = {0.1, 0.2, 0.7, 0.5, 0.3, 0.2};
    AttentionMap sal = head;
    sal.module = "saliency";
    sal.head = -1;
    sal.weights = {0.0, 0.3, 0.7, 0.1, 0.2, 0.7};  // row 0 same order (+1), row 1 reversed (-1)
    CHECK(*saliency_correlation(head, sal) == doctest::Approx(0.0));
    sal.weights = {0.0, 0.3, 0.7, 0.3, 0.3, 0.3};  // row 1 constant: skipped
    CHECK(*saliency_correlation(head, sal) == doctest::Approx(1.0));
    sal.keys.pop_back();
    sal.weights = {0.1, 0.9, 0.5, 0.5};
    CHECK_THROWS_WITH_AS(saliency_correlation(head, sal),
                         doctest::Contains("'dec.attn head 0' is [2, 3] but 'saliency' is [2, 2]"),
                         ShapeError);
}

// nn/sampling: greedy limits, reproducibility, and the empirical distribution of many draws
// against softmax(logits / T) restricted to the kept tokens, by a chi-square statistic; the
// generate loop over a model whose next token is known.
#include "nn/sampling.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

using namespace attograd;
using namespace attograd::nn;

namespace {

constexpr std::int64_t draws = 20000;

// `row` repeated `count` times: [count, V].
Tensor repeat_row(const std::vector<double>& row, std::int64_t count) {
    std::vector<double> values;
    for (std::int64_t i = 0; i < count; ++i) values.insert(values.end(), row.begin(), row.end());
    return tensor(values, {count, static_cast<std::int64_t>(row.size())});
}

std::vector<std::int64_t> histogram(const Tensor& tokens, std::size_t vocab) {
    std::vector<std::int64_t> counts(vocab, 0);
    for (const std::int64_t t : tokens.to_vector<std::int64_t>()) ++counts.at(static_cast<std::size_t>(t));
    return counts;
}

// softmax(logits / T) over the tokens in `kept`, 0 elsewhere: the expected distribution,
// computed directly (the logits here are small).
std::vector<double> expected(const std::vector<double>& logits, double temperature,
                             const std::vector<bool>& kept) {
    std::vector<double> p(logits.size(), 0.0);
    double sum = 0.0;
    for (std::size_t i = 0; i < logits.size(); ++i)
        if (kept[i]) sum += p[i] = std::exp(logits[i] / temperature);
    for (double& x : p) x /= sum;
    return p;
}

// Pearson's chi-square statistic of `counts` against probabilities `p` over the tokens with
// p > 0, and its degrees of freedom (those tokens minus 1).
std::pair<double, int> chi_square(const std::vector<std::int64_t>& counts, const std::vector<double>& p) {
    double chi2 = 0.0;
    int cells = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (p[i] <= 0.0) continue;
        const double e = static_cast<double>(draws) * p[i];
        chi2 += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
        ++cells;
    }
    return {chi2, cells - 1};
}

// The chi-square quantile at 1 - 0.001 for `df` degrees of freedom by the Wilson-Hilferty
// approximation df (1 - 2/(9 df) + z sqrt(2/(9 df)))^3 with z = 3.090 (the normal's 0.999
// quantile): a correct sampler passes with probability 0.999 for a seed chosen at random, and the
// seed is fixed, so the test is deterministic.
double chi_square_bound(int df) {
    const double a = 2.0 / (9.0 * df);
    return df * std::pow(1.0 - a + 3.090 * std::sqrt(a), 3.0);
}

}  // namespace

TEST_CASE("sample_logits: top_k = 1 is the argmax, at any temperature") {
    Generator data(3);
    const Tensor logits = randn({200, 10}, data);
    const std::vector<double> values = logits.to_vector<double>();
    std::vector<std::int64_t> argmax;
    for (std::int64_t r = 0; r < 200; ++r) {
        const auto begin = values.begin() + r * 10;
        argmax.push_back(std::max_element(begin, begin + 10) - begin);
    }
    for (const double temperature : {0.5, 1.0, 3.0}) {
        Generator generator(1);
        CHECK(sample_logits(logits, {.temperature = temperature, .top_k = 1}, generator)
                  .to_vector<std::int64_t>() == argmax);
    }
    // top_p = 0 keeps only the most probable token as well.
    Generator generator(1);
    CHECK(sample_logits(logits, {.top_p = 0.0}, generator).to_vector<std::int64_t>() == argmax);
}

TEST_CASE("sample_logits: a temperature near 0 samples the argmax") {
    // Logits 0, 0.5, ..., 4.5 shuffled per row: the top two differ by 0.5, so at T = 0.01 the
    // runner-up has probability below exp(-50).
    Generator data(4);
    std::vector<double> values;
    std::vector<std::int64_t> argmax;
    for (int r = 0; r < 100; ++r) {
        std::vector<double> row;
        for (int i = 0; i < 10; ++i) row.push_back(0.5 * i);
        for (int i = 9; i > 0; --i)
            std::swap(row[static_cast<std::size_t>(i)],
                      row[static_cast<std::size_t>(data.randint(0, i + 1))]);
        argmax.push_back(std::max_element(row.begin(), row.end()) - row.begin());
        values.insert(values.end(), row.begin(), row.end());
    }
    Generator generator(2);
    CHECK(sample_logits(tensor(values, {100, 10}), {.temperature = 0.01}, generator)
              .to_vector<std::int64_t>() == argmax);
    // float32 logits, and a huge logit at a tiny temperature: no overflow.
    Generator again(2);
    const Tensor huge = tensor({1e30, -1e30, 0.0}, {1, 3}, {.dtype = DType::Float32});
    CHECK(sample_logits(huge, {.temperature = 1e-6}, again).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{0});
}

TEST_CASE("sample_logits: many draws follow softmax(logits / T) over the top k") {
    // Tokens 0, 1, 2 and 6 have the 4 largest logits; 3, 4, 5 are never drawn.
    const std::vector<double> logits{2.0, 1.5, 1.0, 0.5, 0.0, -1.0, 0.7};
    const std::vector<bool> top4{true, true, true, false, false, false, true};
    Generator generator(2024);
    const Tensor tokens =
        sample_logits(repeat_row(logits, draws), {.temperature = 0.7, .top_k = 4}, generator);
    const std::vector<std::int64_t> counts = histogram(tokens, logits.size());
    CHECK(counts[3] + counts[4] + counts[5] == 0);
    const auto chi2_result = chi_square(counts, expected(logits, 0.7, top4));
    const double chi2 = chi2_result.first;
    const int df = chi2_result.second;
    CAPTURE(chi2);
    CHECK(df == 3);
    CHECK(chi2 < chi_square_bound(df));
    // The test can tell: the same draws against the distribution at T = 1 fail the bound.
    CHECK(chi_square(counts, expected(logits, 1.0, top4)).first > chi_square_bound(df));
    // top_k larger than V keeps every token.
    Generator all_generator(7);
    const auto all_counts =
        histogram(sample_logits(repeat_row(logits, draws), {.temperature = 1.5, .top_k = 100}, all_generator),
                  logits.size());
    const auto chi2_all_result = chi_square(all_counts, expected(logits, 1.5, std::vector<bool>(7, true)));
    const double chi2_all = chi2_all_result.first;
    const int df_all = chi2_all_result.second;
    CHECK(df_all == 6);
    CHECK(chi2_all < chi_square_bound(df_all));
}

TEST_CASE("sample_logits: top_p keeps the smallest set of most probable tokens that reaches p") {
    // Probabilities 0.5, 0.25, 0.15, 0.1. top_p = 0.7: 0.5 (0 before), 0.25 (0.5 before < 0.7)
    // are kept, 0.15 has 0.75 before: dropped -> 2/3, 1/3. top_p = 0.8: 0.15 is kept too
    // (0.75 < 0.8), 0.1 (0.9 before) is not -> 0.5, 0.25, 0.15 over 0.9.
    const std::vector<double> logits{std::log(0.25), std::log(0.5), std::log(0.1), std::log(0.15)};
    const std::vector<std::pair<double, std::vector<bool>>> cases{{0.7, {true, true, false, false}},
                                                                  {0.8, {true, true, false, true}}};
    for (const auto& test_case : cases) {
        const double top_p = test_case.first;
        const std::vector<bool>& kept = test_case.second;
        CAPTURE(top_p);
        Generator generator(11);
        const auto counts =
            histogram(sample_logits(repeat_row(logits, draws), {.top_p = top_p}, generator), 4);
        const std::vector<double> p = expected(logits, 1.0, kept);
        for (std::size_t i = 0; i < 4; ++i)
            if (!kept[i]) CHECK(counts[i] == 0);
        const auto chi2_result = chi_square(counts, p);
        const double chi2 = chi2_result.first;
        const int df = chi2_result.second;
        CAPTURE(chi2);
        CHECK(chi2 < chi_square_bound(df));
    }
}

TEST_CASE("sample_logits: tokens tied with the k-th largest logit are kept, -inf tokens never drawn") {
    // Logits 1, 3, 3, -inf, 0 with top_k = 1: tokens 1 and 2 tie for the largest and are both
    // kept, each with probability 1/2.
    const double minus_inf = -std::numeric_limits<double>::infinity();
    Generator generator(5);
    const auto counts = histogram(
        sample_logits(repeat_row({1.0, 3.0, 3.0, minus_inf, 0.0}, draws), {.top_k = 1}, generator), 5);
    CHECK(counts[0] + counts[3] + counts[4] == 0);
    const auto chi2_result = chi_square(counts, {0.0, 0.5, 0.5, 0.0, 0.0});
    const double chi2 = chi2_result.first;
    const int df = chi2_result.second;
    CHECK(chi2 < chi_square_bound(df));
    // Without top_k, -inf is still never drawn.
    Generator other(6);
    CHECK(histogram(sample_logits(repeat_row({minus_inf, 0.0, minus_inf}, 1000), {}, other), 3)[1] == 1000);
}

TEST_CASE("sample_logits: the same seed gives the same tokens, another seed others") {
    const Tensor logits = repeat_row({0.0, 0.0, 0.0, 0.0}, 1000);
    Generator a(9), b(9), c(10);
    const auto first = sample_logits(logits, {}, a).to_vector<std::int64_t>();
    CHECK(sample_logits(logits, {}, b).to_vector<std::int64_t>() == first);
    CHECK(sample_logits(logits, {}, c).to_vector<std::int64_t>() != first);
    // One uniform draw per row: the generators are in step afterwards.
    CHECK(a.next() == b.next());
    CHECK(sample_logits(tensor({}, {0, 4}), {}, a).shape() == Shape{0});
}

TEST_CASE("sample_logits: bad options and logits are refused, naming the problem") {
    Generator g(0);
    const Tensor logits = tensor({0.0, 1.0}, {1, 2});
    CHECK_THROWS_WITH_AS(sample_logits(logits, {.temperature = 0.0}, g),
                         doctest::Contains("sample_logits: temperature must be a finite number > 0, got 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(sample_logits(logits, {.temperature = std::nan("")}, g),
                         doctest::Contains("temperature"), ValueError);
    CHECK_THROWS_WITH_AS(sample_logits(logits, {.top_k = 0}, g),
                         doctest::Contains("sample_logits: top_k must be >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(sample_logits(logits, {.top_p = 1.5}, g),
                         doctest::Contains("sample_logits: top_p must be in [0, 1], got 1.5"), ValueError);
    CHECK_THROWS_WITH_AS(sample_logits(tensor({0.0, 1.0}, {2}), {}, g),
                         doctest::Contains("logits have shape [2]; expected [N, V] with V >= 1"), ShapeError);
    CHECK_THROWS_WITH_AS(sample_logits(tensor({}, {1, 0}), {}, g),
                         doctest::Contains("expected [N, V] with V >= 1"), ShapeError);
    CHECK_THROWS_WITH_AS(sample_logits(index_tensor({0, 1}, {1, 2}), {}, g),
                         doctest::Contains("logits have dtype int64"), DTypeError);
    const double inf = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(sample_logits(tensor({0.0, 1.0, 0.0, std::nan("")}, {2, 2}), {}, g),
                         doctest::Contains("row 1 of logits [2, 2] holds NaN or +inf"), ValueError);
    CHECK_THROWS_WITH_AS(sample_logits(tensor({inf, 0.0}, {1, 2}), {}, g),
                         doctest::Contains("holds NaN or +inf"), ValueError);
    CHECK_THROWS_WITH_AS(sample_logits(tensor({-inf, -inf}, {1, 2}), {}, g),
                         doctest::Contains("row 0 of logits [1, 2] has no finite logit"), ValueError);
}

namespace {

// A language model over V = 5 tokens that predicts (last + 1) mod 5 with logit 4 (others 0), as
// [1, t, V] logits; `seen` records each context length it was called with.
NextTokenLogits counting_model(std::vector<std::int64_t>& seen) {
    return [&seen](const Tensor& ids) {
        const std::vector<std::int64_t> context = ids.to_vector<std::int64_t>();
        seen.push_back(static_cast<std::int64_t>(context.size()));
        std::vector<double> logits(context.size() * 5, 0.0);
        logits[(context.size() - 1) * 5 + static_cast<std::size_t>((context.back() + 1) % 5)] = 4.0;
        return tensor(logits, {1, static_cast<std::int64_t>(context.size()), 5});
    };
}

}  // namespace

TEST_CASE("generate: appends sampled tokens to the prompt, stops at eos, crops the context") {
    std::vector<std::int64_t> seen;
    Generator generator(0);
    const GenerateOptions greedy{.max_new_tokens = 6, .sampling = {.top_k = 1}};
    CHECK(generate(counting_model(seen), {1, 2}, greedy, generator) ==
          std::vector<std::int64_t>{1, 2, 3, 4, 0, 1, 2, 3});
    CHECK(seen == std::vector<std::int64_t>{2, 3, 4, 5, 6, 7});
    // eos is kept and ends the output.
    GenerateOptions with_eos = greedy;
    with_eos.eos_id = 0;
    CHECK(generate(counting_model(seen), {2}, with_eos, generator) == std::vector<std::int64_t>{2, 3, 4, 0});
    // The model sees at most the last 2 tokens.
    seen.clear();
    GenerateOptions cropped = greedy;
    cropped.max_context = 2;
    cropped.max_new_tokens = 4;
    CHECK(generate(counting_model(seen), {0, 1, 2}, cropped, generator) ==
          std::vector<std::int64_t>{0, 1, 2, 3, 4, 0, 1});
    CHECK(seen == std::vector<std::int64_t>{2, 2, 2, 2});
    CHECK(generate(counting_model(seen), {3}, {.max_new_tokens = 0}, generator) ==
          std::vector<std::int64_t>{3});
}

TEST_CASE("generate: sampled output is reproducible from the seed, and [1, V] logits are accepted") {
    const NextTokenLogits flat = [](const Tensor&) { return tensor({0.0, 0.0, 0.0, 0.0}, {1, 4}); };
    Generator a(21), b(21);
    const auto first = generate(flat, {0}, {.max_new_tokens = 50}, a);
    CHECK(first.size() == 51);
    CHECK(generate(flat, {0}, {.max_new_tokens = 50}, b) == first);
    CHECK(std::set<std::int64_t>(first.begin(), first.end()).size() == 4);  // 50 uniform draws over 4 tokens
}

TEST_CASE("generate: an empty prompt, bad options or logits of the wrong shape are refused") {
    std::vector<std::int64_t> seen;
    Generator g(0);
    CHECK_THROWS_WITH_AS(generate(counting_model(seen), {}, {}, g),
                         doctest::Contains("generate: the prompt is empty"), ValueError);
    CHECK_THROWS_WITH_AS(generate(counting_model(seen), {-1}, {}, g), doctest::Contains("negative id"),
                         ValueError);
    CHECK_THROWS_WITH_AS(generate(counting_model(seen), {1}, {.max_new_tokens = -1}, g),
                         doctest::Contains("max_new_tokens must be >= 0, got -1"), ValueError);
    CHECK_THROWS_WITH_AS(generate(counting_model(seen), {1}, {.max_context = 0}, g),
                         doctest::Contains("max_context must be >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(generate(counting_model(seen), {1}, {.sampling = {.temperature = -1.0}}, g),
                         doctest::Contains("temperature must be a finite number > 0"), ValueError);
    const NextTokenLogits wrong = [](const Tensor&) { return tensor({0.0, 0.0, 0.0, 0.0}, {2, 2}); };
    CHECK_THROWS_WITH_AS(
        generate(wrong, {1, 2, 3}, {}, g),
        doctest::Contains("generate: the model returned logits of shape [2, 2] for ids [1, 3]"), ShapeError);
    const NextTokenLogits undefined = [](const Tensor&) { return Tensor(); };
    CHECK_THROWS_WITH_AS(generate(undefined, {1}, {}, g), doctest::Contains("(undefined)"), ShapeError);
}

// Greedy and beam search decoding: against an exhaustive search over fixed logit tables, the
// length penalty, eos and max_length, batching, bad arguments, and the recorded attention of
// the decoded output of a real Transformer decoder.
#include "helpers.hpp"

#include <algorithm>
#include <cmath>
#include <map>

using namespace testing;
using attograd::nn::beam_search;
using attograd::nn::DecodeOptions;
using attograd::nn::DecodeStep;
using attograd::nn::greedy_decode;
using attograd::nn::Hypothesis;
using attograd::nn::LengthNormalization;
using Tokens = std::vector<std::int64_t>;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// Next-token probabilities of a toy model: source id (memory[n, 0, 0]), number of masked
/// source positions and the prefix without bos -> probabilities [V].
using ProbabilityTable =
    std::function<std::vector<double>(std::int64_t source, std::int64_t masked, const Tokens& prefix)>;

/// A step function over a fixed table: logits = log(probabilities) (-inf for probability 0).
/// Memory is [N, S, 1] with the source id in every entry. Counts calls and the widest prefix,
/// and checks that column 0 is bos.
struct TableModel {
    ProbabilityTable table;
    std::int64_t bos = 1;
    bool rank3 = false;  // return [N, t, V] (garbage before the last position)
    std::int64_t calls = 0, widest = 0;
    bool grad_was_on = false, bos_wrong = false;

    DecodeStep step() {
        return [this](const Tensor& prefixes, const Tensor& memory, const Tensor& mask) {
            ++calls;
            grad_was_on = grad_was_on || grad_enabled();
            const std::int64_t n = prefixes.size(0), t = prefixes.size(1);
            widest = std::max(widest, t);
            const auto ids = prefixes.to_vector<std::int64_t>();
            std::vector<double> values;
            std::int64_t v = 0;
            for (std::int64_t r = 0; r < n; ++r) {
                bos_wrong = bos_wrong || ids[static_cast<std::size_t>(r * t)] != bos;
                const Tokens prefix(ids.begin() + r * t + 1, ids.begin() + (r + 1) * t);
                std::int64_t masked = 0;
                if (mask.defined())
                    for (std::int64_t s = 0; s < mask.size(1); ++s) masked += mask.at({r, s}) != 0.0;
                const std::vector<double> p =
                    table(static_cast<std::int64_t>(memory.at({r, 0, 0})), masked, prefix);
                v = static_cast<std::int64_t>(p.size());
                if (rank3)
                    for (std::int64_t i = 0; i < (t - 1) * v; ++i)
                        values.push_back(-1e3 * static_cast<double>(i % 3));
                for (const double x : p) values.push_back(std::log(x));
            }
            return rank3 ? tensor(values, {n, t, v}, {.dtype = DType::Float64})
                         : tensor(values, {n, v}, {.dtype = DType::Float64});
        };
    }
};

/// Memory [B, S, 1] whose rows hold the source ids.
Tensor source_memory(const std::vector<std::int64_t>& ids, std::int64_t s = 3) {
    std::vector<double> values;
    for (const std::int64_t id : ids)
        for (std::int64_t i = 0; i < s; ++i) values.push_back(static_cast<double>(id));
    return tensor(values, {static_cast<std::int64_t>(ids.size()), s, 1});
}

/// A fixed pseudo-random table over `v` tokens: softmax of hash-derived logits in [-3, 3).
ProbabilityTable hashed_table(std::int64_t v) {
    return [v](std::int64_t source, std::int64_t masked, const Tokens& prefix) {
        std::vector<double> logits;
        for (std::int64_t token = 0; token < v; ++token) {
            std::uint64_t h = 1469598103934665603ull ^ static_cast<std::uint64_t>(source * 31 + masked);
            for (const std::int64_t x : prefix)
                h = (h ^ static_cast<std::uint64_t>(x + 1)) * 1099511628211ull;
            h = (h ^ static_cast<std::uint64_t>(token + 17)) * 1099511628211ull;
            h ^= h >> 29;
            h *= 0xbf58476d1ce4e5b9ull;
            h ^= h >> 32;
            logits.push_back(static_cast<double>(h % 10007) / 10007.0 * 6.0 - 3.0);
        }
        const double top = *std::max_element(logits.begin(), logits.end());
        double sum = 0.0;
        for (double& x : logits) sum += (x = std::exp(x - top));
        for (double& x : logits) x /= sum;
        return logits;
    };
}

/// Probabilities given per prefix; other prefixes are uniform.
ProbabilityTable fixed_table(std::int64_t v, std::map<Tokens, std::vector<double>> rows) {
    return [v, rows = std::move(rows)](std::int64_t, std::int64_t, const Tokens& prefix) {
        const auto it = rows.find(prefix);
        return it != rows.end() ? it->second
                                : std::vector<double>(static_cast<std::size_t>(v), 1.0 / double(v));
    };
}

/// Every output within max_length (eos-terminated or cut at max_length), scored as documented:
/// log P(y) / penalty(|y|), |y| counting eos. Best first.
std::vector<Hypothesis> exhaustive(const ProbabilityTable& table, std::int64_t source, std::int64_t masked,
                                   const DecodeOptions& options) {
    std::vector<Hypothesis> all;
    auto penalty = [&](std::int64_t len) {
        const double n = static_cast<double>(len);
        return options.normalization == LengthNormalization::GNMT
                   ? std::pow((5.0 + n) / 6.0, options.length_penalty)
                   : std::pow(n, options.length_penalty);
    };
    std::function<void(const Tokens&, double)> walk = [&](const Tokens& prefix, double log_prob) {
        const auto t = static_cast<std::int64_t>(prefix.size());
        if (t == options.max_length) {
            all.push_back({prefix, log_prob, log_prob / penalty(t), false});
            return;
        }
        const std::vector<double> p = table(source, masked, prefix);
        for (std::int64_t v = 0; v < static_cast<std::int64_t>(p.size()); ++v) {
            if (p[static_cast<std::size_t>(v)] == 0.0) continue;
            const double lp = log_prob + std::log(p[static_cast<std::size_t>(v)]);
            if (v == options.eos_id) {
                all.push_back({prefix, lp, lp / penalty(t + 1), true});
            } else {
                Tokens next = prefix;
                next.push_back(v);
                walk(next, lp);
            }
        }
    };
    walk({}, 0.0);
    std::stable_sort(all.begin(), all.end(),
                     [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    return all;
}

DecodeOptions options_for(std::int64_t beam, std::int64_t max_length, double alpha = 0.0) {
    return {.bos_id = 1, .eos_id = 0, .max_length = max_length, .beam_size = beam, .length_penalty = alpha};
}

}  // namespace

TEST_CASE("length_penalty follows the documented conventions") {
    CHECK(nn::length_penalty(4, 0.0) == 1.0);
    CHECK(nn::length_penalty(4, 1.0) == doctest::Approx(4.0));
    CHECK(nn::length_penalty(9, 0.5) == doctest::Approx(3.0));
    CHECK(nn::length_penalty(4, 1.0, LengthNormalization::GNMT) == doctest::Approx(1.5));  // (5 + 4) / 6
    CHECK(nn::length_penalty(1, 0.6, LengthNormalization::GNMT) == doctest::Approx(1.0));
    CHECK_THROWS_WITH_AS(nn::length_penalty(0, 1.0), doctest::Contains("length"), ValueError);
    CHECK_THROWS_WITH_AS(nn::length_penalty(2, inf), doctest::Contains("alpha"), ValueError);
}

TEST_CASE("beam search with beam >= V^L equals an exhaustive search") {
    const std::int64_t v = 3, max_length = 4;
    TableModel model{.table = hashed_table(v)};
    struct Case {
        double alpha;
        LengthNormalization normalization;
    };
    for (const Case c : {Case{0.0, LengthNormalization::Power}, Case{1.0, LengthNormalization::Power},
                         Case{0.6, LengthNormalization::GNMT}, Case{-0.5, LengthNormalization::Power}}) {
        for (const std::int64_t source : {0, 1, 2, 3, 4}) {
            DecodeOptions options = options_for(81, max_length, c.alpha);
            options.normalization = c.normalization;
            options.num_return_sequences = 5;
            const std::vector<Hypothesis> expected = exhaustive(model.table, source, 0, options);
            const auto got = beam_search(source_memory({source}), {}, model.step(), options);
            REQUIRE(got.size() == 1);
            REQUIRE(got[0].size() == 5);
            for (std::size_t i = 0; i < 5; ++i) {
                CAPTURE(c.alpha);
                CAPTURE(source);
                CAPTURE(i);
                CHECK(got[0][i].tokens == expected[i].tokens);
                CHECK(got[0][i].finished == expected[i].finished);
                CHECK(got[0][i].log_prob == doctest::Approx(expected[i].log_prob).epsilon(1e-12));
                CHECK(got[0][i].score == doctest::Approx(expected[i].score).epsilon(1e-12));
            }
        }
    }
    CHECK_FALSE(model.grad_was_on);
    CHECK_FALSE(model.bos_wrong);
}

TEST_CASE("the step may return [N, t, V] and the last position is used") {
    TableModel flat{.table = hashed_table(4)}, full_seq{.table = hashed_table(4), .rank3 = true};
    const DecodeOptions options = options_for(3, 5);
    const auto a = beam_search(source_memory({7, 8}), {}, flat.step(), options);
    const auto b = beam_search(source_memory({7, 8}), {}, full_seq.step(), options);
    for (std::size_t s = 0; s < 2; ++s) {
        CHECK(a[s][0].tokens == b[s][0].tokens);
        CHECK(a[s][0].log_prob == doctest::Approx(b[s][0].log_prob).epsilon(1e-12));
    }
}

TEST_CASE("greedy decoding equals beam search with beam size 1") {
    TableModel model{.table = hashed_table(5)};
    const Tensor memory = source_memory({0, 1, 2, 3, 4, 5, 6, 7});
    for (const bool early : {false, true}) {
        DecodeOptions options = options_for(1, 6, early ? 1.0 : 0.0);  // alpha > 0 only with early stopping
        options.early_stopping = early;
        const auto greedy = greedy_decode(memory, {}, model.step(), options);
        const auto beam = beam_search(memory, {}, model.step(), options);
        REQUIRE(greedy.size() == 8);
        for (std::size_t s = 0; s < 8; ++s) {
            CAPTURE(s);
            REQUIRE(beam[s].size() == 1);
            CHECK(greedy[s].tokens == beam[s][0].tokens);
            CHECK(greedy[s].finished == beam[s][0].finished);
            CHECK(greedy[s].log_prob == doctest::Approx(beam[s][0].log_prob).epsilon(1e-12));
            CHECK(greedy[s].score == doctest::Approx(beam[s][0].score).epsilon(1e-12));
        }
    }
    // Greedy picks the most probable token at each step: check the first source by hand.
    const auto out = greedy_decode(source_memory({3}), {}, model.step(), options_for(1, 6))[0];
    Tokens prefix;
    double log_prob = 0.0;
    for (std::int64_t t = 0; t < 6; ++t) {
        const std::vector<double> p = model.table(3, 0, prefix);
        const auto best = static_cast<std::int64_t>(std::max_element(p.begin(), p.end()) - p.begin());
        log_prob += std::log(p[static_cast<std::size_t>(best)]);
        if (best == 0) break;
        prefix.push_back(best);
    }
    CHECK(out.tokens == prefix);
    CHECK(out.log_prob == doctest::Approx(log_prob).epsilon(1e-12));
}

TEST_CASE("beam search finds a better output where greedy is myopic") {
    // eos = 0, a = 2, b = 3 (1 is bos). Greedy takes a (0.6) and then ends with 0.4: P = 0.24.
    // b (0.4) then eos (0.9) has P = 0.36.
    const ProbabilityTable table = fixed_table(
        4, {{{}, {0.0, 0.0, 0.6, 0.4}}, {{2}, {0.4, 0.0, 0.3, 0.3}}, {{3}, {0.9, 0.0, 0.05, 0.05}}});
    TableModel model{.table = table};
    const DecodeOptions options = options_for(2, 2);
    const Hypothesis greedy = greedy_decode(source_memory({0}), {}, model.step(), options)[0];
    const Hypothesis beam = beam_search(source_memory({0}), {}, model.step(), options)[0][0];
    CHECK(greedy.tokens == Tokens{2});
    CHECK(greedy.log_prob == doctest::Approx(std::log(0.6 * 0.4)));
    CHECK(beam.tokens == Tokens{3});
    CHECK(beam.log_prob == doctest::Approx(std::log(0.4 * 0.9)));
    CHECK(beam.score > greedy.score);
}

TEST_CASE("the length penalty changes the winner as documented") {
    // "" (eos at once): log 0.5, length 1. "a" then eos: log 0.45, length 2.
    const ProbabilityTable table = fixed_table(3, {{{}, {0.5, 0.0, 0.5}}, {{2}, {0.9, 0.0, 0.1}}});
    TableModel model{.table = table};
    DecodeOptions options = options_for(2, 3, 0.0);
    options.num_return_sequences = 2;
    const auto raw = beam_search(source_memory({0}), {}, model.step(), options)[0];
    CHECK(raw[0].tokens.empty());  // alpha 0: log 0.5 > log 0.45
    CHECK(raw[0].score == doctest::Approx(std::log(0.5)));
    CHECK(raw[1].tokens == Tokens{2});

    options.length_penalty = 1.0;  // log 0.45 / 2 > log 0.5 / 1
    const auto normalised = beam_search(source_memory({0}), {}, model.step(), options)[0];
    CHECK(normalised[0].tokens == Tokens{2});
    CHECK(normalised[0].score == doctest::Approx(std::log(0.45) / 2.0));
    CHECK(normalised[0].log_prob == doctest::Approx(std::log(0.45)));
    CHECK(normalised[1].tokens.empty());

    options.normalization = LengthNormalization::GNMT;  // log 0.45 / (7 / 6) > log 0.5 / 1
    const auto gnmt = beam_search(source_memory({0}), {}, model.step(), options)[0];
    CHECK(gnmt[0].tokens == Tokens{2});
    CHECK(gnmt[0].score == doctest::Approx(std::log(0.45) / (7.0 / 6.0)));
}

TEST_CASE("early stopping stops at beam_size finished hypotheses, the default keeps looking") {
    // Beam 1. Step 1: eos 0.5 (finished "", score log 0.5) or a 0.5. After a: eos 0.95, so "a"
    // scores log 0.475 / 2 with alpha 1 - better, but found only by continuing.
    const ProbabilityTable table = fixed_table(3, {{{}, {0.5, 0.0, 0.5}}, {{2}, {0.95, 0.0, 0.05}}});
    TableModel model{.table = table};
    DecodeOptions options = options_for(1, 4, 1.0);
    CHECK(beam_search(source_memory({0}), {}, model.step(), options)[0][0].tokens == Tokens{2});
    options.early_stopping = true;
    CHECK(beam_search(source_memory({0}), {}, model.step(), options)[0][0].tokens.empty());

    // The bound looks ahead to max_length: "a" (log 0.3 after step 1) would fall below "" (log
    // 0.6) if it ended at the next step (log 0.3 / 2), but ending at step 4 it scores log 0.3 / 4.
    TableModel slow{.table = fixed_table(4, {{{}, {0.6, 0.0, 0.3, 0.1}},
                                             {{2}, {0.0, 0.0, 1.0, 0.0}},
                                             {{2, 2}, {0.0, 0.0, 1.0, 0.0}},
                                             {{2, 2, 2}, {1.0, 0.0, 0.0, 0.0}}})};
    options.early_stopping = false;
    const Hypothesis best = beam_search(source_memory({0}), {}, slow.step(), options)[0][0];
    CHECK(best.tokens == Tokens{2, 2, 2});
    CHECK(best.score == doctest::Approx(std::log(0.3) / 4.0));
}

TEST_CASE("max_length bounds the steps and the output") {
    // eos has probability 0: every output runs to max_length and is unfinished.
    TableModel model{.table = [](std::int64_t, std::int64_t, const Tokens&) {
        return std::vector<double>{0.0, 0.0, 1.0};
    }};
    for (const std::int64_t max_length : {1, 2, 5}) {
        model.widest = 0;
        const DecodeOptions options = options_for(3, max_length);
        const Hypothesis greedy = greedy_decode(source_memory({0}), {}, model.step(), options)[0];
        CHECK(greedy.tokens == Tokens(static_cast<std::size_t>(max_length), 2));
        CHECK_FALSE(greedy.finished);
        CHECK(greedy.length() == max_length);
        const auto beam = beam_search(source_memory({0}), {}, model.step(), options)[0];
        REQUIRE(beam.size() == 1);  // the only output of non-zero probability
        CHECK(beam[0].tokens == Tokens(static_cast<std::size_t>(max_length), 2));
        CHECK_FALSE(beam[0].finished);
        CHECK(model.widest == max_length);  // bos + max_length - 1 tokens
    }
}

TEST_CASE("eos ends a hypothesis and is not part of its tokens") {
    // eos = 4, bos = 3: a, b, then eos with probability 1.
    const ProbabilityTable table = fixed_table(5, {{{}, {0.7, 0.1, 0.1, 0.0, 0.1}},
                                                   {{0}, {0.1, 0.8, 0.0, 0.0, 0.1}},
                                                   {{0, 1}, {0.0, 0.0, 0.0, 0.0, 1.0}}});
    TableModel model{.table = table, .bos = 3};
    const DecodeOptions options{.bos_id = 3, .eos_id = 4, .max_length = 10, .beam_size = 2};
    const Hypothesis greedy = greedy_decode(source_memory({0}), {}, model.step(), options)[0];
    CHECK(model.widest == 3);  // greedy decoded nothing after eos
    const Hypothesis beam = beam_search(source_memory({0}), {}, model.step(), options)[0][0];
    for (const Hypothesis& h : {greedy, beam}) {
        CHECK(h.tokens == Tokens{0, 1});
        CHECK(h.finished);
        CHECK(h.length() == 3);
        CHECK(h.log_prob == doctest::Approx(std::log(0.7 * 0.8)));
    }
    CHECK_FALSE(model.bos_wrong);
}

TEST_CASE("batched sources decode as they do one at a time") {
    TableModel model{.table = hashed_table(4)};
    const std::vector<std::int64_t> ids = {5, 9, 2, 11};
    // Source b has b padded positions of 4: the table depends on it, so the mask rows must follow.
    Tensor mask = zeros({4, 4}, {.dtype = DType::Bool});
    for (std::int64_t b = 0; b < 4; ++b)
        for (std::int64_t s = 4 - b; s < 4; ++s) mask.data<bool>()[b * 4 + s] = true;
    DecodeOptions options = options_for(3, 6, 0.7);
    options.num_return_sequences = 3;
    const auto batched = beam_search(source_memory(ids, 4), mask, model.step(), options);
    const auto greedy_batched = greedy_decode(source_memory(ids, 4), mask, model.step(), options);
    for (std::int64_t b = 0; b < 4; ++b) {
        CAPTURE(b);
        const Tensor row = index_tensor({b}, {1});
        const auto alone = beam_search(source_memory({ids[static_cast<std::size_t>(b)]}, 4),
                                       index_select(mask, 0, row), model.step(), options)[0];
        REQUIRE(batched[static_cast<std::size_t>(b)].size() == alone.size());
        for (std::size_t i = 0; i < alone.size(); ++i) {
            CHECK(batched[static_cast<std::size_t>(b)][i].tokens == alone[i].tokens);
            CHECK(batched[static_cast<std::size_t>(b)][i].score ==
                  doctest::Approx(alone[i].score).epsilon(1e-12));
        }
        const Hypothesis greedy_alone = greedy_decode(source_memory({ids[static_cast<std::size_t>(b)]}, 4),
                                                      index_select(mask, 0, row), model.step(), options)[0];
        CHECK(greedy_batched[static_cast<std::size_t>(b)].tokens == greedy_alone.tokens);
    }
    // The padding matters to this table: a different mask gives a different answer somewhere.
    const auto unmasked = beam_search(source_memory(ids, 4), {}, model.step(), options);
    bool differs = false;
    for (std::size_t b = 1; b < 4; ++b) differs = differs || unmasked[b][0].tokens != batched[b][0].tokens;
    CHECK(differs);
}

TEST_CASE("output_ids adds eos to a finished hypothesis, best_tokens takes each source's first") {
    const Hypothesis finished{.tokens = {5, 3}, .finished = true}, cut{.tokens = {4}, .finished = false};
    CHECK(finished.output_ids(2) == std::vector<std::int64_t>{5, 3, 2});
    CHECK(std::ssize(finished.output_ids(2)) == finished.length());
    CHECK(cut.output_ids(2) == std::vector<std::int64_t>{4});
    CHECK(Hypothesis{.finished = true}.output_ids(7) == std::vector<std::int64_t>{7});
    CHECK_THROWS_WITH_AS((void)finished.output_ids(-1),
                         doctest::Contains("Hypothesis::output_ids: eos_id must be >= 0, got -1"),
                         ValueError);

    CHECK(nn::best_tokens({{finished, cut}, {cut}}) == std::vector<std::vector<std::int64_t>>{{5, 3}, {4}});
    CHECK(nn::best_tokens({}).empty());
    CHECK_THROWS_WITH_AS((void)nn::best_tokens({{cut}, {}}),
                         doctest::Contains("best_tokens: source 1 has no hypothesis"), ValueError);
}

TEST_CASE("bad arguments throw naming the argument") {
    TableModel model{.table = hashed_table(3)};
    const Tensor memory = source_memory({0, 1});
    const DecodeStep step = model.step();
    auto beam = [&](DecodeOptions o) { return beam_search(memory, {}, step, o); };
    auto greedy = [&](DecodeOptions o) { return greedy_decode(memory, {}, step, o); };
    DecodeOptions o = options_for(2, 4);

    o.beam_size = 0;
    CHECK_THROWS_WITH_AS(beam(o), doctest::Contains("beam_search: beam_size"), ValueError);
    o = options_for(2, 4);
    o.num_return_sequences = 3;
    CHECK_THROWS_WITH_AS(beam(o), doctest::Contains("num_return_sequences"), ValueError);
    o = options_for(2, 0);
    CHECK_THROWS_WITH_AS(beam(o), doctest::Contains("max_length"), ValueError);
    CHECK_THROWS_WITH_AS(greedy(o), doctest::Contains("greedy_decode: max_length"), ValueError);
    o = options_for(2, 4);
    o.eos_id = 3;  // V = 3
    CHECK_THROWS_WITH_AS(beam(o), doctest::Contains("eos_id 3"), ValueError);
    CHECK_THROWS_WITH_AS(greedy(o), doctest::Contains("eos_id"), ValueError);
    o = options_for(2, 4);
    o.bos_id = -1;
    CHECK_THROWS_WITH_AS(beam(o), doctest::Contains("bos_id"), ValueError);
    o = options_for(2, 4);
    o.eos_id = -1;
    CHECK_THROWS_WITH_AS(greedy(o), doctest::Contains("eos_id"), ValueError);
    o = options_for(2, 4, std::nan(""));
    CHECK_THROWS_WITH_AS(beam(o), doctest::Contains("length_penalty"), ValueError);

    o = options_for(2, 4);
    CHECK_THROWS_WITH_AS(beam_search(zeros({2, 3}), {}, step, o),
                         doctest::Contains("memory must be [B, S, E]"), ShapeError);
    CHECK_THROWS_WITH_AS(greedy_decode(zeros({0, 3, 1}), {}, step, o), doctest::Contains("memory"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(beam_search(memory, zeros({2, 4}, {.dtype = DType::Bool}), step, o),
                         doctest::Contains("memory_key_padding_mask must be [B, S] = [2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(beam_search(memory, zeros({2, 3}, {.dtype = DType::Int64}), step, o),
                         doctest::Contains("memory_key_padding_mask"), DTypeError);
    CHECK_THROWS_WITH_AS(beam_search(memory, {}, DecodeStep{}, o), doctest::Contains("step"), ValueError);

    // Step outputs that do not fit.
    const DecodeStep wrong_rows = [](const Tensor& p, const Tensor&, const Tensor&) {
        return zeros({p.size(0) + 1, 3});
    };
    CHECK_THROWS_WITH_AS(beam_search(memory, {}, wrong_rows, o),
                         doctest::Contains("beam_search: step returned shape"), ShapeError);
    const DecodeStep wrong_time = [](const Tensor& p, const Tensor&, const Tensor&) {
        return zeros({p.size(0), p.size(1) + 1, 3});
    };
    CHECK_THROWS_WITH_AS(greedy_decode(memory, {}, wrong_time, o),
                         doctest::Contains("greedy_decode: step returned"), ShapeError);
    const DecodeStep growing = [](const Tensor& p, const Tensor&, const Tensor&) {
        return zeros({p.size(0), 3 + p.size(1)});
    };
    CHECK_THROWS_WITH_AS(beam_search(memory, {}, growing, o), doctest::Contains("V = 5"), ShapeError);
    const DecodeStep ints = [](const Tensor& p, const Tensor&, const Tensor&) {
        return zeros({p.size(0), 3}, {.dtype = DType::Int64});
    };
    CHECK_THROWS_WITH_AS(beam_search(memory, {}, ints, o), doctest::Contains("float logits"), DTypeError);
    const DecodeStep nan = [](const Tensor& p, const Tensor&, const Tensor&) {
        return full({p.size(0), 3}, std::nan(""));
    };
    CHECK_THROWS_WITH_AS(beam_search(memory, {}, nan, o),
                         doctest::Contains("beam_search: step returned logit nan"), ValueError);
    const DecodeStep plus_inf = [](const Tensor& p, const Tensor&, const Tensor&) {
        return full({p.size(0), 3}, inf);
    };
    CHECK_THROWS_WITH_AS(greedy_decode(memory, {}, plus_inf, o),
                         doctest::Contains("greedy_decode: step returned logit inf"), ValueError);
}

TEST_CASE("a row of logits that are all -inf throws in both decoders naming the row") {
    const Tensor memory = source_memory({0, 1});
    // Row 1 (source 1) has no token of non-zero probability at the first step.
    const DecodeStep dead_row = [](const Tensor& p, const Tensor& m, const Tensor&) {
        std::vector<double> values;
        for (std::int64_t r = 0; r < p.size(0); ++r)
            values.insert(values.end(), 3, m.at({r, 0, 0}) == 1.0 ? -inf : 0.0);
        return tensor(values, {p.size(0), 3});
    };
    const DecodeOptions o = options_for(2, 4);
    CHECK_THROWS_WITH_AS(beam_search(memory, {}, dead_row, o),
                         doctest::Contains("beam_search: no finite logit in row 1"), ValueError);
    CHECK_THROWS_WITH_AS(greedy_decode(memory, {}, dead_row, o),
                         doctest::Contains("greedy_decode: no finite logit in row 1"), ValueError);
}

TEST_CASE("bos_id is checked against the vocabulary of the first step") {
    const Tensor memory = source_memory({0});
    const DecodeStep step = [](const Tensor& p, const Tensor&, const Tensor&) {
        return zeros({p.size(0), 3});
    };
    DecodeOptions o = options_for(2, 4);
    o.bos_id = 3;  // V = 3
    CHECK_THROWS_WITH_AS(beam_search(memory, {}, step, o), doctest::Contains("beam_search: bos_id 3"),
                         ValueError);
    CHECK_THROWS_WITH_AS(greedy_decode(memory, {}, step, o), doctest::Contains("greedy_decode: bos_id 3"),
                         ValueError);
    o.bos_id = -2;
    CHECK_THROWS_WITH_AS(greedy_decode(memory, {}, step, o), doctest::Contains("greedy_decode: bos_id"),
                         ValueError);
}

namespace {

/// A small encoder-decoder-style decoder over a given memory: token embedding + sinusoidal
/// positions -> 2-layer TransformerDecoder (2 heads) -> linear head, float64, dropout 0.
struct TinyDecoder : nn::Module {
    static constexpr std::int64_t V = 6, E = 8;
    std::shared_ptr<nn::Embedding> embed;
    std::shared_ptr<nn::SinusoidalPositionalEncoding> positions;
    std::shared_ptr<nn::TransformerDecoder> decoder;
    std::shared_ptr<nn::Linear> head;

    explicit TinyDecoder(Generator& gen) {
        embed = register_module(
            "embed",
            std::make_shared<nn::Embedding>(
                nn::EmbeddingOptions{.num_embeddings = V, .embedding_dim = E, .dtype = DType::Float64}, gen));
        positions = register_module(
            "positions", std::make_shared<nn::SinusoidalPositionalEncoding>(nn::PositionalEncodingOptions{
                             .embedding_dim = E, .max_len = 64, .dtype = DType::Float64}));
        nn::TransformerLayerOptions layer{
            .d_model = E, .nhead = 2, .dim_feedforward = 16, .dropout = 0.0, .dtype = DType::Float64};
        decoder = register_module("decoder",
                                  std::make_shared<nn::TransformerDecoder>(
                                      nn::TransformerStackOptions{.layer = layer, .num_layers = 2}, gen));
        head = register_module(
            "head",
            std::make_shared<nn::Linear>(
                nn::LinearOptions{.in_features = E, .out_features = V, .dtype = DType::Float64}, gen));
    }
    std::string type_name() const override { return "TinyDecoder"; }

    /// prefixes [N, t], memory [N, S, E] -> logits [N, t, V].
    Tensor forward(const Tensor& prefixes, const Tensor& memory, const Tensor& mask) const {
        const Tensor x = positions->forward(embed->forward(prefixes));
        return head->forward(
            decoder->forward(x, memory, {.memory_key_padding_mask = mask, .tgt_is_causal = true}));
    }
};

}  // namespace

TEST_CASE("the recorder holds the attention of exactly the decoded output") {
    Generator gen(3);
    TinyDecoder model(gen);
    model.eval();
    const std::int64_t S = 5;
    const Tensor memory = randn({2, S, TinyDecoder::E}, gen, {.dtype = DType::Float64});
    Tensor mask = zeros({2, S}, {.dtype = DType::Bool});
    mask.data<bool>()[S + 3] = mask.data<bool>()[S + 4] = true;  // source 1 has 3 real positions
    const DecodeStep step = [&](const Tensor& p, const Tensor& m, const Tensor& k) {
        return model.forward(p, m, k);
    };
    const DecodeOptions options{
        .bos_id = 1, .eos_id = 2, .max_length = 7, .beam_size = 3, .length_penalty = 0.6};

    nn::AttentionRecorder recorder(model);
    const auto decoded = beam_search(memory, mask, step, options);
    REQUIRE(decoded.size() == 2);
    const std::vector<std::string> names = {"decoder.layers.0.self_attn", "decoder.layers.0.multihead_attn",
                                            "decoder.layers.1.self_attn", "decoder.layers.1.multihead_attn"};
    // One teacher-forced run per source, nothing from the search itself.
    REQUIRE(recorder.records().size() == 2 * names.size());
    for (std::size_t b = 0; b < 2; ++b) {
        CAPTURE(b);
        const Hypothesis& best = decoded[b][0];
        const std::int64_t len = best.length();
        Tokens prefix{options.bos_id};
        prefix.insert(prefix.end(), best.tokens.begin(), best.tokens.begin() + (len - 1));
        const Tensor row = index_tensor({static_cast<std::int64_t>(b)}, {1});
        // The same forward again, under a recorder of its own: the records must match exactly.
        nn::AttentionRecorder again(model);
        const Tensor logits = model.forward(index_tensor(prefix, {1, len}), index_select(memory, 0, row),
                                            index_select(mask, 0, row));
        REQUIRE(again.records().size() == names.size());
        for (std::size_t i = 0; i < names.size(); ++i) {
            const nn::RecordedAttention& r = recorder.records()[b * names.size() + i];
            CHECK(r.name == names[i]);
            const bool cross = i % 2 == 1;
            CHECK(r.weights.shape() == Shape{1, 2, len, cross ? S : len});
            CHECK(r.weights.to_vector<double>() == again.records()[i].weights.to_vector<double>());
        }
        // The search's log-probability is that of the output under the teacher-forced logits.
        const std::vector<double> lp = log_softmax(logits, 2).to_vector<double>();
        double sum = 0.0;
        for (std::int64_t t = 0; t < len; ++t) {
            const std::int64_t token = t < static_cast<std::int64_t>(best.tokens.size())
                                           ? best.tokens[static_cast<std::size_t>(t)]
                                           : options.eos_id;
            sum += lp[static_cast<std::size_t>(t * TinyDecoder::V + token)];
        }
        CHECK(best.log_prob == doctest::Approx(sum).epsilon(1e-9));
        // inspect gets one [len, S] map per head of the cross-attention; padded keys get 0.
        const auto maps =
            inspect::maps_from_weights(names[1], 0, recorder.records()[b * names.size() + 1].weights, 0,
                                       {std::vector<std::string>(static_cast<std::size_t>(len), "y"),
                                        std::vector<std::string>(static_cast<std::size_t>(S), "x")});
        REQUIRE(maps.size() == 2);
        CHECK(maps[0].rows() == len);
        CHECK(maps[0].cols() == S);
        if (b == 1)
            for (std::int64_t q = 0; q < len; ++q) CHECK(maps[1].at(q, 4) == 0.0);
    }

    // Greedy records alike; record_attention = false and no recorder record nothing.
    recorder.clear();
    const auto greedy = greedy_decode(memory, mask, step, options);
    CHECK(recorder.records().size() == 2 * names.size());
    CHECK(recorder.records()[1].weights.size(2) == greedy[0].length());
    recorder.clear();
    DecodeOptions quiet = options;
    quiet.record_attention = false;
    beam_search(memory, mask, step, quiet);
    CHECK(recorder.records().empty());
}

TEST_CASE("greedy equals beam size 1 on a Transformer decoder") {
    Generator gen(11);
    TinyDecoder model(gen);
    model.eval();
    const Tensor memory = randn({4, 6, TinyDecoder::E}, gen, {.dtype = DType::Float64});
    const DecodeStep step = [&](const Tensor& p, const Tensor& m, const Tensor& k) {
        return model.forward(p, m, k);
    };
    const DecodeOptions options{.bos_id = 1, .eos_id = 2, .max_length = 8, .beam_size = 1};
    const auto greedy = greedy_decode(memory, {}, step, options);
    const auto beam = beam_search(memory, {}, step, options);
    for (std::size_t b = 0; b < 4; ++b) {
        CHECK(greedy[b].tokens == beam[b][0].tokens);
        CHECK(greedy[b].log_prob == doctest::Approx(beam[b][0].log_prob).epsilon(1e-9));
    }
}

TEST_CASE("an extreme length_penalty is refused, naming it, instead of ranking by inf or NaN scores") {
    TableModel model{.table = hashed_table(3)};
    const Tensor memory = source_memory({0, 1});
    const DecodeStep step = model.step();
    for (const double alpha : {1e308, -1e308}) {
        CAPTURE(alpha);
        for (const LengthNormalization norm : {LengthNormalization::Power, LengthNormalization::GNMT}) {
            DecodeOptions o = options_for(2, 4, alpha);
            o.normalization = norm;
            CHECK_THROWS_WITH_AS(
                beam_search(memory, {}, step, o),
                doctest::Contains(doctest::String(
                    fmt::format("beam_search: length_penalty {} makes the penalty at max_length 4 equal",
                                alpha)
                        .c_str())),
                ValueError);
            CHECK_THROWS_WITH_AS(greedy_decode(memory, {}, step, o),
                                 doctest::Contains("greedy_decode: length_penalty"), ValueError);
        }
    }
    // A penalty that is finite at max_length yet so small that log P(y) / penalty overflows: tokens 1
    // and 2 at probability 1/2 each, eos never, so every output runs 8 steps with log P = 8 log(1/2)
    // and the penalty 8^alpha = 2^-1022.
    const DecodeStep halves = [](const Tensor& p, const Tensor&, const Tensor&) {
        const double ninf = -std::numeric_limits<double>::infinity();
        std::vector<double> logits;
        for (std::int64_t r = 0; r < p.size(0); ++r) logits.insert(logits.end(), {ninf, 0.0, 0.0});
        return tensor(logits, {p.size(0), 3}, {.dtype = DType::Float64});
    };
    const DecodeOptions tiny_penalty = options_for(2, 8, -1022.0 / 3.0);
    CHECK(std::isfinite(nn::length_penalty(8, tiny_penalty.length_penalty)));
    CHECK_THROWS_WITH_AS(
        beam_search(memory, {}, halves, tiny_penalty),
        doctest::Contains("beam_search: length_penalty -340.6666666666667 makes the score of a "
                          "hypothesis of length 8"),
        ValueError);
    CHECK_THROWS_WITH_AS(greedy_decode(memory, {}, halves, tiny_penalty),
                         doctest::Contains("greedy_decode: length_penalty"), ValueError);
    // a large but harmless alpha still decodes, every score finite
    for (const auto& hypotheses : beam_search(memory, {}, halves, options_for(2, 8, 300.0)))
        for (const Hypothesis& h : hypotheses) CHECK(std::isfinite(h.score));
}

TEST_CASE("a memory without source positions is refused up front") {
    TableModel model{.table = hashed_table(3)};
    CHECK_THROWS_WITH_AS(beam_search(zeros({2, 0, 1}), {}, model.step(), options_for(2, 4)),
                         doctest::Contains("beam_search: memory must hold at least one source position"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(greedy_decode(zeros({2, 0, 1}), {}, model.step(), options_for(2, 4)),
                         doctest::Contains("greedy_decode: memory must hold at least one source position"),
                         ShapeError);
}

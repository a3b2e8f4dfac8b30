// Hard attention: one key per query; sampling matches softmax; both estimators' gradients;
// fully masked rows; learning a toy alignment; eval uses exactly one key per query.
#include "attention_helpers.hpp"
#include "fixtures.hpp"

#include <cmath>
#include <limits>

using namespace testing;

namespace {

// Checks every row of weights [..., n] is one-hot (exactly one 1, the rest exactly 0) and
// returns the chosen key of each row.
std::vector<std::int64_t> one_hot_keys(const Tensor& weights) {
    const std::int64_t n = weights.shape().back();
    const auto w = weights.to_vector<double>();
    std::vector<std::int64_t> keys;
    for (std::size_t r = 0; r < w.size() / static_cast<std::size_t>(n); ++r) {
        int ones = 0;
        std::int64_t key = -1;
        for (std::int64_t i = 0; i < n; ++i) {
            const double x = w[r * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)];
            REQUIRE((x == 0.0 || x == 1.0));
            if (x == 1.0) {
                ++ones;
                key = i;
            }
        }
        REQUIRE(ones == 1);
        keys.push_back(key);
    }
    return keys;
}

// One-hot rows: eye(n)[index] for every index, as float32 [count, n].
Tensor one_hot(const std::vector<std::int64_t>& index, std::int64_t n, const Shape& shape) {
    Tensor out = zeros(shape);
    for (std::size_t i = 0; i < index.size(); ++i)
        out.data<float>()[static_cast<std::int64_t>(i) * n + index[i]] = 1.0f;
    return out;
}

// The reverse task with positional keys: query t must attend to source position T - 1 - t,
// whose value is that position's token. Trains with `estimator`, returns the layer in eval mode.
std::shared_ptr<Attention> train_reverse(HardEstimator estimator, Generator& gen, int steps) {
    const std::int64_t t = 6, vocab = 8, batch = 16;
    auto layer = std::make_shared<Attention>(AttentionOptions{.query_dim = t,
                                                              .key_dim = t,
                                                              .value_dim = vocab,
                                                              .scoring = {.score = Score::Bilinear},
                                                              .normalizer = Normalizer::Hard,
                                                              .estimator = estimator},
                                             gen);
    std::vector<std::int64_t> positions;
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t i = 0; i < t; ++i) positions.push_back(i);
    const Tensor pos = one_hot(positions, t, {batch, t, t});  // queries and keys
    optim::SGD sgd(layer->parameters(),
                   {.lr = estimator == HardEstimator::GumbelStraightThrough ? 20.0 : 0.5});
    for (int step = 0; step < steps; ++step) {
        std::vector<std::int64_t> tokens, reversed;
        for (std::int64_t b = 0; b < batch; ++b)
            for (std::int64_t i = 0; i < t; ++i) tokens.push_back(gen.randint(0, vocab));
        for (std::int64_t b = 0; b < batch; ++b)
            for (std::int64_t i = 0; i < t; ++i)
                reversed.push_back(tokens[static_cast<std::size_t>(b * t + t - 1 - i)]);
        const Tensor values = one_hot(tokens, vocab, {batch, t, vocab});
        const Tensor target = one_hot(reversed, vocab, {batch, t, vocab});
        sgd.zero_grad();
        const auto out = layer->forward(pos, pos, values);
        if (estimator == HardEstimator::GumbelStraightThrough) {
            const Tensor diff = out.output - target;
            mean(diff * diff).backward();
        } else {
            const Tensor reward = sum(out.output * target, {-1});  // 1 when the right token was picked
            layer->reinforce_loss(out.log_prob, reward).backward();
        }
        sgd.step();
    }
    layer->eval();
    return layer;
}

}  // namespace

TEST_CASE("in eval, hard attention picks the argmax key and outputs exactly its value") {
    auto layer = make_layer64({.query_dim = 4, .value_dim = 3, .normalizer = Normalizer::Hard});
    layer->eval();
    Tensor q = rand64({2, 5, 4}, 1), k = rand64({2, 7, 4}, 2), v = rand64({2, 7, 3}, 3);
    const auto out = layer->forward(q, k, v);
    const auto keys = one_hot_keys(out.weights);
    const auto expected = argmax(matmul(q, transpose(k, 1, 2)), -1).to_vector<std::int64_t>();
    CHECK(keys == expected);
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t t = 0; t < 5; ++t)
            for (std::int64_t e = 0; e < 3; ++e)
                CHECK(out.output.at({b, t, e}) == v.at({b, keys[static_cast<std::size_t>(b * 5 + t)], e}));
    CHECK_FALSE(out.log_prob.defined());
}

TEST_CASE("sampling while training follows softmax(scores) for both estimators") {
    const std::int64_t draws = 20000;
    const std::vector<double> logits{0.5, -1.0, 1.2, 0.0};
    std::vector<double> rows;
    for (std::int64_t i = 0; i < draws; ++i) rows.insert(rows.end(), logits.begin(), logits.end());
    const Tensor scores = tensor(rows, {draws, 4}, {.dtype = DType::Float64});
    const Tensor probs = softmax(tensor(logits, {4}, {.dtype = DType::Float64}), 0);
    for (HardEstimator estimator : {HardEstimator::GumbelStraightThrough, HardEstimator::Reinforce}) {
        INFO(to_string(estimator));
        Generator gen(17);
        const auto keys = one_hot_keys(hard_attention(scores, true, estimator, 1.0, gen).weights);
        for (std::int64_t i = 0; i < 4; ++i) {
            const double freq =
                static_cast<double>(std::count(keys.begin(), keys.end(), i)) / static_cast<double>(draws);
            CHECK(std::abs(freq - probs.at({i})) < 0.015);
        }
    }
}

TEST_CASE("straight-through Gumbel: the forward is one-hot, the backward is the Gumbel-softmax gradient") {
    Tensor scores = rand64({3, 5}, 4);
    Generator a(9), b(9);
    const auto hard = hard_attention(scores, true, HardEstimator::GumbelStraightThrough, 0.5, a);
    one_hot_keys(hard.weights);
    const Tensor r = rand64({3, 5}, 5).detach();
    sum(hard.weights * r).backward();
    const Tensor st_grad = scores.grad();
    scores.zero_grad();
    // The same noise (same seed): y = softmax((scores + g) / tau), g = -log(-log(u)).
    Tensor g = empty({3, 5}, {.dtype = DType::Float64});
    for (std::int64_t i = 0; i < 15; ++i) g.data<double>()[i] = -std::log(-std::log(b.uniform()));
    sum(softmax((scores + g) / 0.5, -1) * r).backward();
    CHECK(max_abs_diff(st_grad, scores.grad()) < 1e-14);
}

TEST_CASE(
    "REINFORCE: log_prob is log softmax at the sampled key, and the surrogate and baseline follow Williams") {
    Tensor scores = rand64({2, 3, 4}, 6);
    Generator gen(3);
    const auto hard = hard_attention(scores, true, HardEstimator::Reinforce, 1.0, gen);
    const auto keys = one_hot_keys(hard.weights);
    const Tensor log_p = log_softmax(scores, -1);
    for (std::int64_t r = 0; r < 6; ++r)
        CHECK(hard.log_prob.at({r / 3, r % 3}) ==
              doctest::Approx(log_p.at({r / 3, r % 3, keys[static_cast<std::size_t>(r)]})).epsilon(1e-14));
    CHECK_FALSE(hard.weights.requires_grad());  // the value path only; the scores learn via log_prob
    const Tensor reward = tensor({1.0, 3.0}, {2}, {.dtype = DType::Float64});
    const Tensor loss = reinforce_surrogate(hard.log_prob, reward, 1.5);
    // -sum_b sum_t (r_b - 1.5) log p_bt / B
    double expected = 0.0;
    for (std::int64_t r = 0; r < 6; ++r)
        expected -= (reward.at({r / 3}) - 1.5) * hard.log_prob.at({r / 3, r % 3});
    CHECK(loss.item() == doctest::Approx(expected / 2).epsilon(1e-14));
    RewardBaseline baseline(0.9);
    CHECK(baseline.baseline_for(reward) == 2.0);  // before the first update: the batch mean
    CHECK(baseline.update(reward) == 2.0);
    CHECK(baseline.update(tensor({4.0, 4.0}, {2})) == doctest::Approx(0.9 * 2.0 + 0.1 * 4.0));
    CHECK_THROWS_WITH_AS(
        reinforce_surrogate(hard.log_prob, tensor({1.0, 2.0, 3.0}, {3}, {.dtype = DType::Float64}), 0),
        doctest::Contains("reward must be [B] = [2] or [B, Tq] = [2, 3], got [3]"), ShapeError);
}

TEST_CASE("the REINFORCE baseline's update count saturates at the largest int64 instead of overflowing") {
    RewardBaseline baseline(0.9);
    baseline.update(tensor({2.0, 2.0}, {2}));
    Tensor updates = baseline.updates_buffer();  // the buffer itself, as a loaded checkpoint sets it
    updates.data<std::int64_t>()[0] = std::numeric_limits<std::int64_t>::max();
    CHECK(baseline.update(tensor({4.0, 4.0}, {2})) == doctest::Approx(0.9 * 2.0 + 0.1 * 4.0));
    CHECK(updates.data<std::int64_t>()[0] == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("hard attention with a fully masked row: zero weights and output, finite gradients") {
    for (HardEstimator estimator : {HardEstimator::GumbelStraightThrough, HardEstimator::Reinforce})
        for (bool training : {true, false}) {
            INFO(to_string(estimator) << " training " << training);
            auto layer = make_layer64({.query_dim = 3,
                                       .key_dim = 3,
                                       .value_dim = 2,
                                       .normalizer = Normalizer::Hard,
                                       .estimator = estimator});
            layer->train(training);
            Tensor q = rand64({2, 3, 3}, 1), k = rand64({2, 4, 3}, 2), v = rand64({2, 4, 2}, 3);
            const auto out = layer->forward(q, k, v, fully_masked_row());
            for (std::int64_t s = 0; s < 4; ++s) CHECK(out.weights.at({0, 1, s}) == 0.0);
            for (std::int64_t e = 0; e < 2; ++e) CHECK(out.output.at({0, 1, e}) == 0.0);
            Tensor loss = sum(out.output);
            if (out.log_prob.defined()) {
                CHECK(out.log_prob.at({0, 1}) == 0.0);
                loss = loss + layer->reinforce_loss(out.log_prob,
                                                    tensor({1.0, 2.0}, {2}, {.dtype = DType::Float64}));
            }
            loss.backward();
            for (const Tensor& t : {q, k, v})
                if (t.grad().defined())
                    for (double g : t.grad().to_vector<double>()) CHECK(std::isfinite(g));
        }
}

TEST_CASE(
    "hard attention learns the reverse alignment with either estimator, and eval uses one key per query") {
    for (HardEstimator estimator : {HardEstimator::GumbelStraightThrough, HardEstimator::Reinforce}) {
        INFO(to_string(estimator));
        Generator gen(2024);
        auto layer = train_reverse(estimator, gen, 300);
        const std::int64_t t = 6;
        std::vector<std::int64_t> positions, tokens;
        for (std::int64_t i = 0; i < t; ++i) positions.push_back(i);
        for (std::int64_t i = 0; i < t; ++i) tokens.push_back(gen.randint(0, 8));
        const Tensor pos = one_hot(positions, t, {1, t, t});
        const Tensor values = one_hot(tokens, 8, {1, t, 8});
        const auto out = layer->forward(pos, pos, values);
        const auto keys = one_hot_keys(out.weights);  // exactly one key per query
        for (std::int64_t i = 0; i < t; ++i) {
            CHECK(keys[static_cast<std::size_t>(i)] == t - 1 - i);
            for (std::int64_t e = 0; e < 8; ++e)
                CHECK(out.output.at({0, i, e}) == values.at({0, keys[static_cast<std::size_t>(i)], e}));
        }
    }
}

TEST_CASE("hard attention rejects bad input") {
    Generator gen(1);
    CHECK_THROWS_WITH_AS(hard_attention(zeros({2, 3}), true, HardEstimator::Reinforce, 0.0, gen),
                         doctest::Contains("temperature must be > 0"), ValueError);
    CHECK_THROWS_WITH_AS(
        hard_attention(tensor({1.0, NAN}, {1, 2}), false, HardEstimator::Reinforce, 1.0, gen),
        doctest::Contains("NaN"), ValueError);
    CHECK_THROWS_WITH_AS(parse_hard_estimator("st"), doctest::Contains("unknown estimator 'st'"), ValueError);
    CHECK(parse_hard_estimator(to_string(HardEstimator::Reinforce)) == HardEstimator::Reinforce);
    Attention soft({.query_dim = 2}, gen);
    CHECK_THROWS_WITH_AS(soft.reinforce_loss(zeros({1, 1}), zeros({1})),
                         doctest::Contains("reinforce_loss needs"), ValueError);
}

TEST_CASE("the REINFORCE baseline is a buffer: in the state_dict, and loading it continues the baseline") {
    Generator gen(11);
    const auto trained = train_reverse(HardEstimator::Reinforce, gen, 3);
    const auto state = trained->state_dict();
    REQUIRE(state.contains("reward_baseline"));
    CHECK(state.at("reward_baseline").item() == trained->reward_baseline());
    CHECK(state.at("reward_baseline_updates").item() == 3.0);  // one update per step
    // A fresh layer starts unset; loaded, it holds the trained one's baseline.
    Attention fresh(trained->options(), gen);
    CHECK(fresh.reward_baseline() == 0.0);
    fresh.load_state_dict(state);
    CHECK(fresh.reward_baseline() == trained->reward_baseline());
    // Gumbel straight-through has no baseline, and no such buffer.
    Attention gumbel({.query_dim = 2, .normalizer = Normalizer::Hard}, gen);
    CHECK_FALSE(gumbel.state_dict().contains("reward_baseline"));
}

TEST_CASE("load_state_dict refuses a negative REINFORCE update count, naming the key, and changes nothing") {
    Generator gen(12);
    const auto trained = train_reverse(HardEstimator::Reinforce, gen, 2);
    auto state = trained->state_dict();
    Attention fresh(trained->options(), gen);
    Tensor updates = clone(state.at("reward_baseline_updates"));
    updates.data<std::int64_t>()[0] = -3;
    state.insert_or_assign("reward_baseline_updates", updates);
    CHECK_THROWS_WITH_AS(fresh.load_state_dict(state),
                         doctest::Contains("load_state_dict: 'reward_baseline_updates' is -3"), ValueError);
    CHECK(fresh.reward_baseline() == 0.0);
    CHECK(fresh.state_dict().at("reward_baseline_updates").item() == 0.0);
}

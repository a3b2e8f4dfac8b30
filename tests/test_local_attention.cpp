// Local attention: the banded kernels against dense references, nn::Attention's local-m and local-p
// paths against masked global attention, gradients, fully masked rows and bad input.
#include "attention_helpers.hpp"
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>

using namespace testing;

namespace {

// Window starts for N = 2 sequences of Tq = 5 queries, including windows hanging off both ends
// and one entirely outside the keys.
Tensor starts() { return index_tensor({-2, 0, 1, 3, 5, -9, 4, 2, 6, -1}, {2, 5}); }

// Dense [N, Tq, Tk] scores gathered into the band [N, Tq, W] (0 out of range).
Tensor gather_band(const Tensor& dense, const Tensor& window_start, std::int64_t width) {
    const std::int64_t n = dense.size(0), tq = dense.size(1), tk = dense.size(2);
    std::vector<double> out;
    for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t t = 0; t < tq; ++t)
            for (std::int64_t j = 0; j < width; ++j) {
                const auto s = static_cast<std::int64_t>(window_start.at({b, t})) + j;
                out.push_back(s >= 0 && s < tk ? dense.at({b, t, s}) : 0.0);
            }
    return tensor(out, {n, tq, width}, {.dtype = DType::Float64});
}

}  // namespace

TEST_CASE("local_dot_score equals the dense scaled scores gathered into the band") {
    Tensor q = rand64({2, 5, 4}, 1), k = rand64({2, 6, 4}, 2);
    const double scale = 0.5;
    Tensor band = local_dot_score(q, k, starts(), 3, scale);
    CHECK(band.shape() == Shape{2, 5, 3});
    Tensor dense = matmul(q, transpose(k, 1, 2)) * scale;
    CHECK(max_abs_diff(band, gather_band(dense, starts(), 3)) < 1e-14);
}

TEST_CASE("local_band_to_dense scatters the band and leaves every other entry exactly 0") {
    Tensor band = rand64({2, 5, 3}, 3);
    Tensor dense = local_band_to_dense(band, starts(), 6);
    CHECK(dense.shape() == Shape{2, 5, 6});
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t t = 0; t < 5; ++t) {
            const auto first = static_cast<std::int64_t>(starts().at({b, t}));
            for (std::int64_t s = 0; s < 6; ++s) {
                const bool inside = s >= first && s < first + 3;
                CHECK(dense.at({b, t, s}) == (inside ? band.at({b, t, s - first}) : 0.0));
            }
        }
}

TEST_CASE("local_weighted_sum equals the dense weighted sum of the scattered band") {
    Tensor w = rand64({2, 5, 3}, 4), v = rand64({2, 6, 3}, 5);
    Tensor out = local_weighted_sum(w, v, starts());
    CHECK(out.shape() == Shape{2, 5, 3});
    CHECK(max_abs_diff(out, matmul(local_band_to_dense(w, starts(), 6), v)) < 1e-14);
    // Row (1, 0) has no key in its window: its output is exactly zero.
    for (std::int64_t e = 0; e < 3; ++e) CHECK(out.at({1, 0, e}) == 0.0);
}

TEST_CASE("additive_score equals v^T tanh(uq + wx) composed from elementwise ops") {
    Tensor uq = rand64({2, 5, 3}, 6), wx = rand64({2, 4, 3}, 7), v = rand64({3}, 8);
    Tensor fused = additive_score(uq, wx, v);
    Tensor pre = reshape(uq, {2, 5, 1, 3}) + reshape(wx, {2, 1, 4, 3});
    Tensor composed = reshape(matmul(tanh(pre), reshape(v, {3, 1})), {2, 5, 4});
    CHECK(max_abs_diff(fused, composed) < 1e-14);
    Tensor wx6 = rand64({2, 6, 3}, 9);
    Tensor band = local_additive_score(uq, wx6, v, starts(), 3);
    CHECK(max_abs_diff(band, gather_band(additive_score(uq, wx6, v), starts(), 3)) < 1e-14);
}

// A decoder's step scores one query; its bits must be those of the same query in the whole
// sequence's call. float32 (Eigen's packet and scalar tanh round differently), widths that leave
// a partial SIMD packet, and key counts that move the per-thread scratch buffer between calls.
TEST_CASE("additive_score gives a query alone the bits it gets among all queries") {
    for (const std::int64_t H : {5, 37, 64})
        for (const std::int64_t Tk : {3, 17, 40}) {
            INFO("H " << H << ", Tk " << Tk);
            const std::int64_t N = 2, Tq = 6;
            const Tensor uq = to_dtype(rand64({N, Tq, H}, 11), DType::Float32);
            const Tensor wx = to_dtype(rand64({N, Tk, H}, 12), DType::Float32);
            const Tensor v = to_dtype(rand64({H}, 13), DType::Float32);
            const Tensor all = additive_score(uq, wx, v);  // [N, Tq, Tk]
            for (std::int64_t t = 0; t < Tq; ++t) {
                const Tensor alone = additive_score(narrow(uq, 1, t, 1), wx, v);  // [N, 1, Tk]
                CHECK(alone.to_vector<float>() == narrow(all, 1, t, 1).to_vector<float>());
            }
        }
}

TEST_CASE("the banded kernels and the fused additive score pass float64 gradcheck") {
    Tensor q = rand64({2, 5, 4}, 10), k = rand64({2, 6, 4}, 11), v = rand64({2, 6, 2}, 12);
    Tensor w = rand64({2, 5, 3}, 13), h = rand64({4}, 14), wx = rand64({2, 6, 4}, 15);
    auto dot = [](const std::vector<Tensor>& in) { return local_dot_score(in[0], in[1], starts(), 3, 0.7); };
    auto wsum = [](const std::vector<Tensor>& in) { return local_weighted_sum(in[0], in[1], starts()); };
    auto dense = [](const std::vector<Tensor>& in) { return local_band_to_dense(in[0], starts(), 6); };
    auto add_local = [](const std::vector<Tensor>& in) {
        return local_additive_score(in[0], in[1], in[2], starts(), 3);
    };
    auto add_all = [](const std::vector<Tensor>& in) { return additive_score(in[0], in[1], in[2]); };
    CHECK_GRADCHECK(dot, (std::vector<Tensor>{q, k}));
    CHECK_GRADCHECK(wsum, (std::vector<Tensor>{w, v}));
    CHECK_GRADCHECK(dense, (std::vector<Tensor>{w}));
    CHECK_GRADCHECK(add_local, (std::vector<Tensor>{q, wx, h}));
    CHECK_GRADCHECK(add_all, (std::vector<Tensor>{q, wx, h}));
}

TEST_CASE("the banded kernels' parallel paths agree with the dense reference on long sequences") {
    Generator gen(4);
    const std::int64_t t = 300, d = 16, width = 17;
    Tensor q = randn({2, t, d}, gen, {.dtype = DType::Float64, .requires_grad = true});
    Tensor k = randn({2, t, d}, gen, {.dtype = DType::Float64, .requires_grad = true});
    std::vector<std::int64_t> first;
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t i = 0; i < t; ++i) first.push_back(i - 8);
    Tensor ws = index_tensor(first, {2, t});
    Tensor r = randn({2, t, width}, gen, {.dtype = DType::Float64});
    sum(local_dot_score(q, k, ws, width) * r).backward();
    Tensor dq = q.grad(), dk = k.grad();
    q.zero_grad();
    k.zero_grad();
    sum(matmul(q, transpose(k, 1, 2)) * local_band_to_dense(r, ws, t)).backward();
    CHECK(max_abs_diff(dq, q.grad()) < 1e-11);
    CHECK(max_abs_diff(dk, k.grad()) < 1e-11);
}

TEST_CASE("the banded kernels reject bad input with shapes in the message") {
    Tensor q = zeros({2, 5, 4}), k = zeros({2, 6, 4});
    CHECK_THROWS_WITH_AS(local_dot_score(q, zeros({2, 6, 3}), starts(), 3),
                         doctest::Contains("[2, 5, 4] and [2, 6, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(local_dot_score(q, k, index_tensor({0, 1}, {1, 2}), 3),
                         doctest::Contains("window_start must be [N, Tq] = [2, 5], got [1, 2]"), ShapeError);
    CHECK_THROWS_WITH_AS(local_dot_score(q, k, zeros({2, 5}), 3), doctest::Contains("int64"), DTypeError);
    CHECK_THROWS_WITH_AS(local_dot_score(q, k, starts(), 0), doctest::Contains("width must be >= 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(local_dot_score(zeros({5, 4}), k, starts(), 3), doctest::Contains("[5, 4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(local_weighted_sum(zeros({2, 5, 3}), zeros({3, 6, 2}), starts()),
                         doctest::Contains("batch sizes differ"), ShapeError);
    CHECK_THROWS_WITH_AS(additive_score(zeros({2, 5, 3}), zeros({2, 4, 3}), zeros({4})),
                         doctest::Contains("v [H]"), ShapeError);
    CHECK_THROWS_WITH_AS(
        additive_score(zeros({2, 5, 3}), zeros({2, 4, 3}, {.dtype = DType::Float64}), zeros({3})),
        doctest::Contains("dtypes differ"), DTypeError);
}

// --- the local paths of nn::Attention ------------------------------------------------------------

namespace {

// Bool attn_mask [Tq, Tk] that forbids every key outside |s - c_t| <= window.
Tensor band_as_mask(const Tensor& window_start, std::int64_t tk, std::int64_t width) {
    const std::int64_t tq = window_start.size(1);
    std::vector<int> outside;
    for (std::int64_t t = 0; t < tq; ++t)
        for (std::int64_t s = 0; s < tk; ++s) {
            const auto first = static_cast<std::int64_t>(window_start.at({0, t}));
            outside.push_back(s < first || s >= first + width);
        }
    return bool_tensor(outside, {tq, tk});
}

// The same layer as `local` without the window: same options and parameters (minus W_p, v_p).
Layer64 global_twin(const Layer64& local) {
    AttentionOptions o = local->options();
    o.scoring.local = LocalMode::None;
    o.scoring.window = 0;
    auto twin = make_layer64(o, 5);
    StateDict state;
    for (const auto& [name, t] : local->state_dict())
        if (name != "W_p" && name != "v_p") state[name] = t;
    twin->load_state_dict(state);
    return twin;
}

AttentionOptions local_options(Score score, Normalizer normalizer, LocalMode mode, std::int64_t window) {
    return {.query_dim = 3,
            .key_dim = 3,
            .value_dim = 2,
            .scoring = {.score = score, .local = mode, .window = window},
            .hidden = 4,
            .normalizer = normalizer};
}

}  // namespace

TEST_CASE(
    "local-m equals global attention with the band as an explicit mask (every score, soft and sparse)") {
    for (Score score : kAllScores)
        for (Normalizer normalizer : {Normalizer::Soft, Normalizer::Sparse})
            for (std::int64_t tq : {7, 4}) {
                INFO(to_string(score) << " " << to_string(normalizer) << " Tq " << tq);
                auto local = make_layer64(local_options(score, normalizer, LocalMode::Monotonic, 1));
                auto global = global_twin(local);
                Tensor q = rand64({1, tq, 3}, 1), k = rand64({1, 7, 3}, 2), v = rand64({1, 7, 2}, 3);
                const AttentionArgs pad{.key_padding_mask = bool_tensor({0, 0, 1, 0, 0, 0, 0}, {1, 7})};
                const auto lo = local->forward(q, k, v, pad);
                AttentionArgs band = pad;
                band.attn_mask = band_as_mask(lo.window_start, 7, 3);
                const auto gl = global->forward(q, k, v, band);
                CHECK(max_abs_diff(lo.weights, gl.weights) < 1e-14);
                CHECK(max_abs_diff(lo.output, gl.output) < 1e-14);
                // local-m centres: floor(t * Tk / Tq), windows start D before.
                for (std::int64_t t = 0; t < tq; ++t) CHECK(lo.window_start.at({0, t}) == t * 7 / tq - 1);
            }
}

TEST_CASE("local-p equals band-masked global attention times the Gaussian factor") {
    for (Score score : kAllScores)
        for (Normalizer normalizer : {Normalizer::Soft, Normalizer::Sparse}) {
            INFO(to_string(score) << " " << to_string(normalizer));
            auto local = make_layer64(local_options(score, normalizer, LocalMode::Predictive, 2));
            auto global = global_twin(local);
            Tensor q = rand64({1, 5, 3}, 4), k = rand64({1, 9, 3}, 5), v = rand64({1, 9, 2}, 6);
            const auto lo = local->forward(q, k, v);
            const auto gl = global->forward(q, k, v, {.attn_mask = band_as_mask(lo.window_start, 9, 5)});
            // g[t, s] = exp(-(s - p_t)^2 / (2 sigma^2)), sigma = D / 2 = 1
            std::vector<double> g;
            for (std::int64_t t = 0; t < 5; ++t) {
                const double p = lo.centre.at({0, t});
                CHECK(p > 0.0);
                CHECK(p < 9.0);
                const auto c = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(p + 0.5)), 8);
                CHECK(lo.window_start.at({0, t}) == c - 2);
                for (std::int64_t s = 0; s < 9; ++s) g.push_back(std::exp(-(s - p) * (s - p) / 2.0));
            }
            Tensor expected = gl.weights * tensor(g, {1, 5, 9}, {.dtype = DType::Float64});
            CHECK(max_abs_diff(lo.weights, expected) < 1e-14);
            CHECK(max_abs_diff(lo.output, matmul(expected, v)) < 1e-14);
        }
}

TEST_CASE(
    "local weights are exactly 0 outside each window, and without need_weights only the band is returned") {
    auto layer = make_layer64(local_options(Score::ScaledDot, Normalizer::Soft, LocalMode::Monotonic, 2));
    Tensor q = rand64({2, 12, 3}, 1), k = rand64({2, 12, 3}, 2), v = rand64({2, 12, 2}, 3);
    const auto out = layer->forward(q, k, v);
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t t = 0; t < 12; ++t)
            for (std::int64_t s = 0; s < 12; ++s) {
                if (std::abs(s - t) > 2) CHECK(out.weights.at({b, t, s}) == 0.0);
                if (std::abs(s - t) <= 2) CHECK(out.weights.at({b, t, s}) > 0.0);
            }
    CHECK(out.band_weights.shape() == Shape{2, 12, 5});
    const auto lean = layer->forward(q, k, v, {.need_weights = false});
    CHECK_FALSE(lean.weights.defined());
    CHECK(max_abs_diff(lean.output, out.output) == 0.0);
}

TEST_CASE("local-m and local-p pass gradcheck for every score, soft and sparse, every mask kind") {
    for (LocalMode mode : {LocalMode::Monotonic, LocalMode::Predictive})
        for (Score score : kAllScores)
            for (Normalizer normalizer : {Normalizer::Soft, Normalizer::Sparse})
                for (const auto& [name, masks] : mask_cases()) {
                    INFO(to_string(mode)
                         << " " << to_string(score) << " " << to_string(normalizer) << " " << name);
                    auto layer = make_layer64(local_options(score, normalizer, mode, 1));
                    Tensor q = rand64({2, 3, 3}, 7), k = rand64({2, 4, 3}, 8), v = rand64({2, 4, 2}, 9);
                    std::vector<Tensor> inputs{q, k, v};
                    for (const Tensor& p : layer->parameters()) inputs.push_back(p);
                    auto fn = [&layer, masks = masks](const std::vector<Tensor>& x) {
                        return layer->forward(x[0], x[1], x[2], masks).output;
                    };
                    CHECK_GRADCHECK(fn, inputs);
                }
}

TEST_CASE("local-p's W_p and v_p learn through the Gaussian factor") {
    auto layer = make_layer64(local_options(Score::Dot, Normalizer::Soft, LocalMode::Predictive, 2));
    Tensor q = rand64({2, 5, 3}, 1), k = rand64({2, 8, 3}, 2), v = rand64({2, 8, 2}, 3);
    sum(layer->forward(q, k, v).output * rand64({2, 5, 2}, 4).detach()).backward();
    for (const auto& [name, p] : layer->named_parameters()) {
        INFO(name);
        double norm = 0.0;
        for (double g : p.grad().to_vector<double>()) norm += g * g;
        CHECK(norm > 1e-12);
    }
}

TEST_CASE("a fully masked row gives zero weights and output with finite gradients on every local path") {
    for (LocalMode mode : {LocalMode::Monotonic, LocalMode::Predictive})
        for (Normalizer normalizer : {Normalizer::Soft, Normalizer::Sparse, Normalizer::Hard}) {
            INFO(to_string(mode) << " " << to_string(normalizer));
            auto layer = make_layer64(local_options(Score::Bilinear, normalizer, mode, 1));
            Tensor q = rand64({2, 3, 3}, 1), k = rand64({2, 4, 3}, 2), v = rand64({2, 4, 2}, 3);
            for (bool training : {true, false}) {
                layer->train(training);
                const auto out = layer->forward(q, k, v, fully_masked_row());
                for (std::int64_t s = 0; s < 4; ++s) CHECK(out.weights.at({0, 1, s}) == 0.0);
                for (std::int64_t e = 0; e < 2; ++e) CHECK(out.output.at({0, 1, e}) == 0.0);
                Tensor loss = sum(out.output * rand64({2, 3, 2}, 4).detach());
                if (out.log_prob.defined()) loss = loss + sum(out.log_prob);
                if (!loss.requires_grad()) continue;
                layer->zero_grad();
                q.zero_grad();
                k.zero_grad();
                v.zero_grad();
                loss.backward();
                for (const Tensor& t : {q, k, v})
                    if (t.grad().defined())
                        for (double g : t.grad().to_vector<double>()) CHECK(std::isfinite(g));
                for (const Tensor& p : layer->parameters())
                    if (p.grad().defined())
                        for (double g : p.grad().to_vector<double>()) CHECK(std::isfinite(g));
            }
            if (normalizer != Normalizer::Hard) {
                auto fn = [&layer](const std::vector<Tensor>& x) {
                    return layer->forward(x[0], x[1], x[2], fully_masked_row()).output;
                };
                std::vector<Tensor> inputs{q, k, v};
                for (const Tensor& p : layer->parameters()) inputs.push_back(p);
                CHECK_GRADCHECK(fn, inputs);
            }
        }
}

TEST_CASE("window placement: local-m for unequal lengths, local-p rounding and clipping") {
    const Tensor m = monotonic_window_start(1, 4, 10, 2);
    for (std::int64_t t = 0; t < 4; ++t) CHECK(m.at({0, t}) == t * 10 / 4 - 2);
    const Tensor p = tensor({0.2, 0.5, 2.49, 2.5, 9.7}, {1, 5}, {.dtype = DType::Float64});
    const Tensor starts = predictive_window_start(p, 10, 1);
    const std::vector<double> expected{-1, 0, 1, 2, 8};  // centres 0, 1, 2, 3, min(10, 9) = 9
    CHECK(starts.to_vector<double>() == expected);
    CHECK(parse_local_mode("p") == LocalMode::Predictive);
    CHECK(parse_local_mode(to_string(LocalMode::Monotonic)) == LocalMode::Monotonic);
}

TEST_CASE("local attention rejects bad windows and masks with the right error") {
    Generator gen(1);
    CHECK_THROWS_WITH_AS(
        Attention({.query_dim = 3, .scoring = {.local = LocalMode::Monotonic, .window = -1}}, gen),
        doctest::Contains("window D must be >= 0, got -1"), ValueError);
    CHECK_THROWS_WITH_AS(
        Attention({.query_dim = 3, .scoring = {.local = LocalMode::Predictive, .window = 0}}, gen),
        doctest::Contains("local-p needs window D >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(monotonic_window_start(1, 3, 3, -2), doctest::Contains("got -2"), ValueError);
    CHECK_THROWS_WITH_AS(parse_local_mode("x"), doctest::Contains("unknown mode 'x'"), ValueError);
    Attention layer({.query_dim = 3, .scoring = {.local = LocalMode::Monotonic, .window = 1}}, gen);
    Tensor x = zeros({2, 5, 3});
    CHECK_THROWS_WITH_AS(layer.forward(x, x, {.attn_mask = zeros({5, 4}, {.dtype = DType::Bool})}),
                         doctest::Contains("attn_mask must be [Tq, Tk] = [5, 5]"), ShapeError);
    CHECK_THROWS_WITH_AS(layer.forward(x, x, {.key_padding_mask = zeros({2, 5}, {.dtype = DType::Int64})}),
                         doctest::Contains("key_padding_mask must be bool"), DTypeError);
    CHECK_THROWS_WITH_AS(layer.forward(x, zeros({2, 5, 4})), doctest::Contains("[2, 5, 4]"), ShapeError);
}

TEST_CASE("a window wider than the keys computes a band of at most 2 Tk - 1 slots, with the same result") {
    // A huge D once overflowed 2D + 1 (crash) or asked for a huge band (bad_alloc).
    for (LocalMode mode : {LocalMode::Monotonic, LocalMode::Predictive}) {
        INFO(to_string(mode));
        auto wide = make_layer64(local_options(Score::ScaledDot, Normalizer::Soft, mode, 1'000'000'000'000));
        auto exact = make_layer64(local_options(Score::ScaledDot, Normalizer::Soft, mode, 6));
        exact->load_state_dict(wide->state_dict());
        Tensor q = rand64({2, 5, 3}, 7), k = rand64({2, 6, 3}, 8), v = rand64({2, 6, 2}, 9);
        const auto w = wide->forward(q, k, v);
        CHECK(w.band_weights.size(2) == 2 * 5 + 1);
        if (mode == LocalMode::Monotonic) {  // D >= Tk - 1 sees every key: global attention
            const auto e = exact->forward(q, k, v);
            CHECK(max_abs_diff(w.output, e.output) < 1e-14);
            CHECK(max_abs_diff(w.output, global_twin(wide)->forward(q, k, v).output) < 1e-14);
        } else {  // the Gaussian keeps sigma = D / 2: a factor of ~1 on every key
            CHECK(all_finite(w.output));
            CHECK(max_abs_diff(w.weights, global_twin(wide)->forward(q, k, v).weights) < 1e-12);
        }
    }
    nn::MultiHeadAttention mha(
        {.embed_dim = 8,
         .num_heads = 2,
         .scoring = {.local = LocalMode::Monotonic, .window = std::numeric_limits<std::int64_t>::max() / 2}});
    Generator generator(0);
    const auto out = mha.forward(randn({1, 3, 8}, generator));
    CHECK(out.output.shape() == Shape{1, 3, 8});
    CHECK(all_finite(out.output));
}

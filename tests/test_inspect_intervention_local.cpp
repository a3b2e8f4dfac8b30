// Attention intervention on local attention (local-m, local-p) and on the recurrent decoders:
// replacements restricted to each window's allowed keys, local-p's Gaussian kept, one replaced
// row per decoder step, gradients into the replacement, bad replacements refused.
#include "helpers.hpp"

#include "inspect/intervention.hpp"
#include "inspect/knockout.hpp"

#include <algorithm>
#include <cmath>

using namespace testing;
using namespace attograd::nn;
using namespace attograd::inspect;

namespace {

constexpr auto f64 = DType::Float64;
constexpr double kInf = std::numeric_limits<double>::infinity();

double max_abs(const Tensor& t) {
    double m = 0.0;
    for (const double v : to_dtype(t, f64).to_vector<double>()) m = std::max(m, std::abs(v));
    return m;
}

// Additive mask [Tq, Tk]: 0 on local-m's window [t - D, t + D] (Tq == Tk), -inf elsewhere.
Tensor window_mask(std::int64_t t, std::int64_t d) {
    std::vector<double> m(static_cast<std::size_t>(t * t), -kInf);
    for (std::int64_t q = 0; q < t; ++q)
        for (std::int64_t k = std::max<std::int64_t>(0, q - d); k <= std::min(t - 1, q + d); ++k)
            m[static_cast<std::size_t>(q * t + k)] = 0.0;
    return tensor(m, {t, t}, {.dtype = f64});
}

// A model holding a recurrent decoder under the name "decoder".
template <class Decoder, class Options>
struct WithDecoder : Module {
    std::shared_ptr<Decoder> decoder;
    WithDecoder(Options options, Generator& gen) {
        decoder = register_module("decoder", std::make_shared<Decoder>(options, gen));
    }
    std::string type_name() const override { return "WithDecoder"; }
};
using Bahdanau = WithDecoder<BahdanauDecoder, BahdanauDecoderOptions>;
using Luong = WithDecoder<LuongDecoder, LuongDecoderOptions>;

Bahdanau bahdanau(Generator& gen) {
    return Bahdanau({.vocab_size = 5, .embedding_dim = 3, .hidden_size = 4, .memory_dim = 3, .dtype = f64},
                    gen);
}
Luong luong(Generator& gen, LocalMode local, std::int64_t window = 1) {
    return Luong({.vocab_size = 5,
                  .embedding_dim = 3,
                  .hidden_size = 4,
                  .memory_dim = 3,
                  .scoring = {.score = Score::Bilinear, .local = local, .window = window},
                  .dtype = f64},
                 gen);
}

// The teacher-forced [B, T, S] weights a decoder attends with, as its recorder sees them.
template <class Model>
Tensor recorded(const Model& model, const Tensor& tgt, const Tensor& memory, const Tensor& padding = {}) {
    AttentionRecorder recorder(model);
    (void)model.decoder->forward(tgt, memory, padding);
    const auto w = recorder.weights("decoder.attention");
    REQUIRE(w.size() == 1);
    return w[0];
}

}  // namespace

TEST_CASE("local-m attention: uniform weights give the mean of each window's allowed values") {
    const Attention attention({.query_dim = 2,
                               .scoring = {.score = Score::Dot, .local = LocalMode::Monotonic, .window = 1},
                               .dtype = f64});
    Generator gen(1);
    const Tensor x = randn({2, 5, 2}, gen, {.dtype = f64});
    const Tensor padding = bool_mask({2, 5}, [](std::int64_t b, std::int64_t k) { return b == 1 && k == 3; });
    AttentionIntervention uniform(attention, {{"", {{0, Replacement::uniform()}}}});
    const AttentionOutput out = attention.forward(x, x, AttentionArgs{.key_padding_mask = padding});
    const auto xv = x.to_vector<double>(), got = out.output.to_vector<double>(),
               w = out.weights.to_vector<double>();
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t q = 0; q < 5; ++q) {
            std::vector<std::int64_t> keys;  // the window [q - 1, q + 1] inside the keys, not padded
            for (std::int64_t k = std::max<std::int64_t>(0, q - 1); k <= std::min<std::int64_t>(4, q + 1);
                 ++k)
                if (!(b == 1 && k == 3)) keys.push_back(k);
            const double n = static_cast<double>(keys.size());
            for (std::int64_t k = 0; k < 5; ++k) {
                const bool in = std::find(keys.begin(), keys.end(), k) != keys.end();
                CHECK(w[static_cast<std::size_t>((b * 5 + q) * 5 + k)] == doctest::Approx(in ? 1 / n : 0.0));
            }
            for (std::int64_t j = 0; j < 2; ++j) {
                double mean = 0.0;
                for (const std::int64_t k : keys)
                    mean += xv[static_cast<std::size_t>((b * 5 + k) * 2 + j)] / n;
                CHECK(got[static_cast<std::size_t>((b * 5 + q) * 2 + j)] ==
                      doctest::Approx(mean).epsilon(1e-14));
            }
        }
}

TEST_CASE("local-p attention: the Gaussian multiplies the replacement as it does the own weights") {
    const Attention attention({.query_dim = 2,
                               .scoring = {.score = Score::Dot, .local = LocalMode::Predictive, .window = 2},
                               .hidden = 3,
                               .dtype = f64});
    Generator gen(3);
    const Tensor query = randn({1, 3, 2}, gen, {.dtype = f64}), x = randn({1, 7, 2}, gen, {.dtype = f64});
    AttentionIntervention uniform(attention, {{"", {{0, Replacement::uniform()}}}});
    const AttentionOutput out = attention.forward(query, x);
    const auto p = out.centre.to_vector<double>(), w = out.weights.to_vector<double>(),
               got = out.output.to_vector<double>(), xv = x.to_vector<double>();
    for (std::int64_t q = 0; q < 3; ++q) {
        // the window of 2D + 1 keys around the key nearest p_t, inside [0, 7)
        const std::int64_t c = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(p[q] + 0.5)), 6);
        const std::int64_t lo = std::max<std::int64_t>(0, c - 2), hi = std::min<std::int64_t>(6, c + 2);
        const double n = static_cast<double>(hi - lo + 1);
        std::vector<double> expected(2, 0.0);
        for (std::int64_t k = 0; k < 7; ++k) {
            const double g = std::exp(-(k - p[q]) * (k - p[q]) / 2.0);  // sigma = D / 2 = 1
            const double used = k >= lo && k <= hi ? g / n : 0.0;
            CHECK(w[static_cast<std::size_t>(q * 7 + k)] == doctest::Approx(used).epsilon(1e-14));
            for (std::size_t j = 0; j < 2; ++j) expected[j] += used * xv[static_cast<std::size_t>(k) * 2 + j];
        }
        for (std::size_t j = 0; j < 2; ++j)
            CHECK(got[static_cast<std::size_t>(q) * 2 + j] == doctest::Approx(expected[j]).epsilon(1e-14));
    }
}

TEST_CASE("local MultiHeadAttention with replaced heads equals the global layer with the same weights") {
    Generator gen(4);
    const MultiHeadAttention local({.embed_dim = 4,
                                    .num_heads = 2,
                                    .scoring = {.local = LocalMode::Monotonic, .window = 1},
                                    .dtype = f64},
                                   gen);
    MultiHeadAttention global({.embed_dim = 4, .num_heads = 2, .dtype = f64}, gen);
    global.load_state_dict(local.state_dict());
    const Tensor x = randn({2, 5, 4}, gen, {.dtype = f64});
    const Tensor padding = bool_mask({2, 5}, [](std::int64_t b, std::int64_t k) { return b == 0 && k == 1; });
    // head 1: each window's allowed keys weighted 1, 2, 3, ... in key order, normalised
    std::vector<double> fixed(2 * 5 * 5, 0.0);
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t q = 0; q < 5; ++q) {
            double total = 0.0;
            for (std::int64_t k = std::max<std::int64_t>(0, q - 1); k <= std::min<std::int64_t>(4, q + 1);
                 ++k)
                if (!(b == 0 && k == 1))
                    total += fixed[static_cast<std::size_t>((b * 5 + q) * 5 + k)] = k + 1.0;
            for (std::int64_t k = 0; k < 5; ++k)
                fixed[static_cast<std::size_t>((b * 5 + q) * 5 + k)] /= total;
        }
    const std::map<std::int64_t, Replacement> heads{
        {0, Replacement::uniform()}, {1, Replacement::fixed(tensor(fixed, {2, 5, 5}, {.dtype = f64}))}};
    const AttentionArgs args{.key_padding_mask = padding, .average_attn_weights = false};
    MultiHeadAttentionOutput from_local, from_global;
    {
        AttentionIntervention in_local(local, {{"", heads}});
        from_local = local.forward(x, args);
    }
    {
        // the global layer's allowed keys are every unpadded key: uniform over the window by hand
        const Tensor uniform_window = softmax(
            reshape(window_mask(5, 1), {1, 5, 5}) + reshape(to_dtype(padding, f64) * -1e300, {2, 1, 5}), -1);
        AttentionIntervention in_global(global,
                                        {{"", {{0, Replacement::fixed(uniform_window)}, {1, heads.at(1)}}}});
        from_global = global.forward(x, args);
    }
    CHECK(max_abs(from_local.weights - from_global.weights) < 1e-15);
    CHECK(max_abs(select(select(from_local.weights, 1, 1), 0, 0) -
                  select(tensor(fixed, {2, 5, 5}, {.dtype = f64}), 0, 0)) == 0.0);
    CHECK(max_abs(from_local.output - from_global.output) < 1e-13);
}

TEST_CASE("local attention: gradients reach a replacement that requires grad (finite differences)") {
    Generator gen(5);
    const Attention attention({.query_dim = 2,
                               .scoring = {.score = Score::Dot, .local = LocalMode::Monotonic, .window = 1},
                               .dtype = f64});
    const MultiHeadAttention mha({.embed_dim = 4,
                                  .num_heads = 2,
                                  .scoring = {.local = LocalMode::Monotonic, .window = 1},
                                  .dtype = f64},
                                 gen);
    const Tensor x2 = randn({2, 4, 2}, gen, {.dtype = f64}), x4 = randn({2, 4, 4}, gen, {.dtype = f64});
    Tensor logits = randn({4, 4}, gen, {.dtype = f64});
    logits.requires_grad_();
    const Tensor window = window_mask(4, 1);
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
            AttentionIntervention fixed(attention,
                                        {{"", {{0, Replacement::fixed(softmax(in[0] + window, -1))}}}});
            return attention.forward(x2, x2).output;
        },
        {logits});
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
            AttentionIntervention fixed(mha, {{"", {{1, Replacement::fixed(softmax(in[0] + window, -1))}}}});
            return mha.forward(x4).output;
        },
        {logits});
}

TEST_CASE("local-p attention: gradients flow through a function of the own weights and the Gaussian") {
    Generator gen(6);
    const MultiHeadAttention mha({.embed_dim = 4,
                                  .num_heads = 2,
                                  .scoring = {.local = LocalMode::Predictive, .window = 2},
                                  .dtype = f64},
                                 gen);
    Tensor x = randn({1, 5, 4}, gen, {.dtype = f64});
    x.requires_grad_();
    // sharpened own weights w^2 / sum(w^2): 0 wherever the own weights are
    const auto sharpen = Replacement::function([](const Tensor& w, const Tensor&) {
        const Tensor total = sum(w * w, {-1}, true);
        return w * w / where(gt(total, 0.0), total, 1.0);
    });
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
            AttentionIntervention sharpened(mha, {{"", {{0, sharpen}}}});
            return mha.forward(in[0]).output;
        },
        {x});
}

TEST_CASE("local attention refuses weights outside the window and on masked keys") {
    const Attention attention({.query_dim = 2,
                               .scoring = {.score = Score::Dot, .local = LocalMode::Monotonic, .window = 1},
                               .dtype = f64});
    Generator gen(7);
    const Tensor x = randn({1, 4, 2}, gen, {.dtype = f64});
    {
        AttentionIntervention wide(attention, {{"", {{0, Replacement::uniform()}}}});
        CHECK_NOTHROW((void)attention.forward(x, x));
    }
    {
        // uniform over all 4 keys puts weight on key 2 for query 0, outside its window [0, 1]
        AttentionIntervention wide(attention,
                                   {{"", {{0, Replacement::fixed(full({4, 4}, 0.25, {.dtype = f64}))}}}});
        CHECK_THROWS_WITH_AS((void)attention.forward(x, x),
                             doctest::Contains("AttentionIntervention: layer '' head 0: replacement weight "
                                               "[0, 0, 2] is 0.25 on a masked key; masked keys must get 0"),
                             ValueError);
    }
    {
        AttentionIntervention masked(attention, {{"", {{0, Replacement::uniform()}}}});
        const Tensor padding = bool_mask({1, 4}, [](std::int64_t, std::int64_t k) { return k == 0; });
        const Tensor w = attention.forward(x, x, AttentionArgs{.key_padding_mask = padding}).weights;
        // query 0's window [0, 1] without the padded key 0: key 1 only
        const auto row0 = select(select(w, 0, 0), 0, 0).to_vector<double>();
        CHECK(row0 == std::vector<double>{0, 1, 0, 0});
    }
    {
        AttentionIntervention wrong(attention,
                                    {{"", {{0, Replacement::fixed(softmax(window_mask(3, 1), -1))}}}});
        CHECK_THROWS_WITH_AS(
            (void)attention.forward(x, x),
            doctest::Contains(
                "fixed weights must be [Tq, Tk] = [4, 4] or [B, Tq, Tk] = [1, 4, 4], got [3, 3]"),
            ShapeError);
    }
}

TEST_CASE(
    "recurrent decoders: a fixed matrix gives row t to step t, and the output no longer depends on "
    "the score") {
    Generator gen(8);
    Bahdanau model = bahdanau(gen);
    const Tensor tgt = tensor({1, 2, 3, 4, 0, 1}, {2, 3}, {.dtype = DType::Int64});
    const Tensor memory = randn({2, 4, 3}, gen, {.dtype = f64});
    const Tensor fixed =
        tensor({0.1, 0.2, 0.3, 0.4, 1, 0, 0, 0, 0.25, 0.25, 0.25, 0.25}, {3, 4}, {.dtype = f64});
    CHECK_THROWS_WITH_AS(
        AttentionIntervention(model, {{"missing", {{0, Replacement::uniform()}}}}),
        doctest::Contains("'missing' is not an attention layer of the model; its layers: 'decoder.attention' "
                          "(1 head)"),
        ValueError);
    CHECK_THROWS_WITH_AS(AttentionIntervention(model, {{"decoder.attention", {{1, Replacement::uniform()}}}}),
                         doctest::Contains("layer 'decoder.attention' has 1 head, no head 1"), IndexError);
    AttentionIntervention intervention(model, {{"decoder.attention", {{0, Replacement::fixed(fixed)}}}});
    CHECK(max_abs(recorded(model, tgt, memory) - reshape(fixed, {1, 3, 4})) == 0.0);
    const Tensor before = model.decoder->forward(tgt, memory);
    for (const auto& [name, child] : model.decoder->named_children())
        if (name == "attention") randomize_parameters(*child, 9);  // the score
    CHECK(max_abs(model.decoder->forward(tgt, memory) - before) == 0.0);
    // step by step, the incremental decode takes the same rows
    auto state = model.decoder->incremental_start()(memory, Tensor());
    for (std::int64_t t = 0; t < 3; ++t)
        CHECK(max_abs(state->step(select(tgt, 1, t)) - select(before, 1, t)) < 1e-13);
    CHECK_THROWS_WITH_AS(
        (void)state->step(select(tgt, 1, 0)),
        doctest::Contains("layer 'decoder.attention' head 0: Replacement::fixed: fixed weights "
                          "must be [Tq, Tk] or [B, Tq, Tk] with B = 2, Tk = 4 and a row for "
                          "query 3, got [3, 4]"),
        ShapeError);
}

TEST_CASE("recurrent decoders: a row function learns each step's row and replaces only the one it names") {
    Generator gen(11);
    Bahdanau model = bahdanau(gen);
    const Tensor tgt = tensor({1, 2, 3, 4, 0, 1}, {2, 3}, {.dtype = DType::Int64});
    const Tensor memory = randn({2, 4, 3}, gen, {.dtype = f64});
    const Tensor before = model.decoder->forward(tgt, memory);
    std::vector<std::int64_t> firsts;
    const Tensor one_hot = tensor({0, 0, 0, 1, 0, 0, 0, 1}, {2, 1, 4}, {.dtype = f64});
    {  // step 1 attends to key 3 alone; the other steps keep their own weights
        AttentionIntervention step_one(
            model,
            {{"decoder.attention",
              {{0, Replacement::row_function([&](const Tensor& own, const Tensor&, std::int64_t first) {
                    firsts.push_back(first);
                    CHECK(own.size(1) == 1);  // one step at a time
                    return first == 1 ? one_hot : own;
                })}}}});
        const Tensor w = recorded(model, tgt, memory);
        CHECK(firsts == std::vector<std::int64_t>{0, 1, 2});
        CHECK(max_abs(select(w, 1, 1) - reshape(one_hot, {2, 4})) == 0.0);
        const Tensor after = model.decoder->forward(tgt, memory);
        CHECK(max_abs(select(after, 1, 0) - select(before, 1, 0)) == 0.0);  // step 0 comes before
        CHECK(max_abs(select(after, 1, 1) - select(before, 1, 1)) > 1e-6);
    }
    CHECK_THROWS_WITH_AS(Replacement::row_function({}),
                         doctest::Contains("Replacement::row_function: the function is empty"), ValueError);
}

TEST_CASE("recurrent decoders: masks are respected, knockout silences, bad rows are refused") {
    Generator gen(10);
    const Luong model = luong(gen, LocalMode::None);
    const Tensor tgt = tensor({1, 2, 3, 4}, {2, 2}, {.dtype = DType::Int64});
    const Tensor memory = randn({2, 3, 3}, gen, {.dtype = f64});
    const Tensor padding = bool_mask({2, 3}, [](std::int64_t b, std::int64_t s) { return b == 1 && s == 2; });
    {
        AttentionIntervention uniform(model, {{"decoder.attention", {{0, Replacement::uniform()}}}});
        const auto w = recorded(model, tgt, memory, padding).to_vector<double>();
        for (std::size_t i = 0; i < 6; ++i) CHECK(w[i] == doctest::Approx(1.0 / 3));
        for (std::size_t i = 6; i < 12; ++i) CHECK(w[i] == doctest::Approx(i % 3 == 2 ? 0.0 : 0.5));
    }
    {
        HeadKnockout knockout(model, {{"decoder.attention", {0}}});
        CHECK(max_abs(recorded(model, tgt, memory)) == 0.0);
    }
    {
        AttentionIntervention spread(
            model, {{"decoder.attention", {{0, Replacement::fixed(full({2, 3}, 1.0 / 3, {.dtype = f64}))}}}});
        CHECK_THROWS_WITH_AS((void)model.decoder->forward(tgt, memory, padding),
                             doctest::Contains("replacement weight [1, 0, 2] is 0.333333333333"), ValueError);
    }
    {
        AttentionIntervention wrong(
            model, {{"decoder.attention", {{0, Replacement::fixed(full({3, 3}, 1.0 / 3, {.dtype = f64}))}}}});
        CHECK_THROWS_WITH_AS(
            (void)model.decoder->forward(tgt, memory),
            doctest::Contains(
                "fixed weights must be [Tq, Tk] = [2, 3] or [B, Tq, Tk] = [2, 2, 3], got [3, 3]"),
            ShapeError);
    }
}

TEST_CASE("local-m Luong decoder: uniform weights over each step's window, and none outside it") {
    Generator gen(11);
    const Luong model = luong(gen, LocalMode::Monotonic);
    const Tensor tgt = tensor({1, 2, 3, 4, 0, 1}, {1, 6}, {.dtype = DType::Int64});
    const Tensor memory = randn({1, 4, 3}, gen, {.dtype = f64});
    {
        AttentionIntervention uniform(model, {{"decoder.attention", {{0, Replacement::uniform()}}}});
        const auto w = recorded(model, tgt, memory).to_vector<double>();
        for (std::int64_t t = 0; t < 6; ++t) {
            const std::int64_t c = std::min<std::int64_t>(t, 3);  // p_t = t, clipped to the source
            const std::int64_t lo = std::max<std::int64_t>(0, c - 1), hi = std::min<std::int64_t>(3, c + 1);
            for (std::int64_t s = 0; s < 4; ++s)
                CHECK(w[static_cast<std::size_t>(t * 4 + s)] ==
                      doctest::Approx(s >= lo && s <= hi ? 1.0 / static_cast<double>(hi - lo + 1) : 0.0));
        }
    }
    AttentionIntervention wide(
        model, {{"decoder.attention", {{0, Replacement::fixed(full({6, 4}, 0.25, {.dtype = f64}))}}}});
    CHECK_THROWS_WITH_AS((void)model.decoder->forward(tgt, memory),
                         doctest::Contains("replacement weight [0, 0, 2] is 0.25 on a masked key"),
                         ValueError);
}

TEST_CASE("recurrent decoders: gradients reach a replacement that requires grad (finite differences)") {
    Generator gen(12);
    const Bahdanau global = bahdanau(gen);
    const Luong local_p = luong(gen, LocalMode::Predictive, 2);
    const Tensor tgt = tensor({1, 2, 3, 4}, {2, 2}, {.dtype = DType::Int64});
    const Tensor memory = randn({2, 3, 3}, gen, {.dtype = f64});
    Tensor logits = randn({2, 3}, gen, {.dtype = f64});
    logits.requires_grad_();
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
            AttentionIntervention fixed(
                global, {{"decoder.attention", {{0, Replacement::fixed(softmax(in[0], -1))}}}});
            return global.decoder->forward(tgt, memory);
        },
        {logits});
    // local-p with window 2 over 3 source positions sees every position: any distribution is allowed
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
            AttentionIntervention fixed(
                local_p, {{"decoder.attention", {{0, Replacement::fixed(softmax(in[0], -1))}}}});
            return local_p.decoder->forward(tgt, memory);
        },
        {logits});
}

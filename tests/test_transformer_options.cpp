// The Transformer layers' options beyond PyTorch: single-head nn::Attention blocks (soft, sparse,
// hard with REINFORCE's trace), layers without a feed-forward block, decoder layers without
// self-attention, stacks of zero layers; gradcheck in float64, references from the layers' own
// submodules, bad options.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <algorithm>

using namespace attograd;
using testing::bool_mask;
using testing::max_abs_diff;
using testing::rand64;
using testing::randomize_parameters;
using testing::with_parameters;
using Inputs = std::vector<Tensor>;
using O = nn::TransformerLayerOptions;

namespace {

std::vector<std::string> keys(const nn::Module& m) {
    std::vector<std::string> out;
    for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
    return out;
}

bool has_key(const nn::Module& m, const std::string& key) {
    const auto k = keys(m);
    return std::find(k.begin(), k.end(), key) != k.end();
}

bool has_key_prefix(const nn::Module& m, const std::string& prefix) {
    const auto k = keys(m);
    return std::any_of(k.begin(), k.end(), [&](const std::string& s) { return s.starts_with(prefix); });
}

// The direct submodule `name` of `m`, as a T.
template <class T>
const T& child(const nn::Module& m, const std::string& name) {
    for (const auto& [n, c] : m.named_children()) {
        if (n == name) {
            const auto* typed = dynamic_cast<const T*>(c.get());
            REQUIRE_MESSAGE(typed != nullptr, name);
            return *typed;
        }
    }
    FAIL("no child " << name);
    throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("LayerAttention::Single puts an nn::Attention in each block: its keys, its forward, gradcheck") {
    Generator gen(1);
    const std::int64_t B = 2, T = 5, Tm = 4, E = 4;
    const O single{.d_model = E,
                   .nhead = 1,
                   .dim_feedforward = 6,
                   .dropout = 0.0,
                   .norm_first = true,
                   .dtype = DType::Float64,
                   .attention = nn::LayerAttention::Single};
    nn::TransformerEncoderLayer enc(single, gen);
    CHECK(has_key(enc, "self_attn.q_proj.weight"));
    CHECK(has_key(enc, "self_attn.v_proj.bias"));
    CHECK_FALSE(has_key_prefix(enc, "self_attn.in_proj"));
    CHECK_FALSE(has_key_prefix(enc, "self_attn.out_proj"));  // nn::Attention has no output projection
    randomize_parameters(enc, 2);
    // pre-norm: x + attn(norm1(x)), then + linear2(relu(linear1(norm2(x)))), from the layer's own modules
    const Tensor x = rand64({B, T, E}, 3).detach();
    const Tensor padding = bool_mask({B, T}, [](auto b, auto s) { return s >= T - 1 - b; });
    const auto& attn = child<nn::Attention>(enc, "self_attn");
    const Tensor h = x + attn.forward(child<nn::LayerNorm>(enc, "norm1").forward(x),
                                      child<nn::LayerNorm>(enc, "norm1").forward(x),
                                      nn::AttentionArgs{.key_padding_mask = padding})
                             .output;
    const Tensor expected =
        h +
        child<nn::Linear>(enc, "linear2")
            .forward(relu(
                child<nn::Linear>(enc, "linear1").forward(child<nn::LayerNorm>(enc, "norm2").forward(h))));
    CHECK(max_abs_diff(enc.forward(x, {.src_key_padding_mask = padding}), expected) < 1e-12);
    CHECK_THROWS_WITH_AS(enc.self_attn(), doctest::Contains("has no MultiHeadAttention 'self_attn'"),
                         ValueError);

    // gradcheck of every parameter and input: soft with every score, sparse, local-p with the additive score
    struct Case {
        nn::Score score;
        nn::Normalizer normalizer;
        nn::LocalMode local;
    };
    for (const Case c : {Case{nn::Score::ScaledDot, nn::Normalizer::Soft, nn::LocalMode::None},
                         Case{nn::Score::Bilinear, nn::Normalizer::Soft, nn::LocalMode::Monotonic},
                         Case{nn::Score::Dot, nn::Normalizer::Sparse, nn::LocalMode::None},
                         Case{nn::Score::Additive, nn::Normalizer::Soft, nn::LocalMode::Predictive}}) {
        INFO(nn::to_string(c.score) << " " << nn::to_string(c.normalizer) << " " << nn::to_string(c.local));
        O o = single;
        o.scoring.score = c.score;
        o.normalizer = c.normalizer;
        o.scoring.local = c.local;
        o.scoring.window = c.local == nn::LocalMode::None ? 0 : 2;
        nn::TransformerDecoderLayer dec(o, gen);
        randomize_parameters(dec, 4);
        const Tensor r = rand64({B, T, E}, 5).detach();
        const Tensor memory_padding = bool_mask({B, Tm}, [](auto b, auto s) { return s >= Tm - b; });
        auto fn = [&](const Inputs& in) {
            return sum(dec.forward(in[0], in[1],
                                   {.memory_key_padding_mask = memory_padding, .tgt_is_causal = true}) *
                       r);
        };
        CHECK_GRADCHECK(fn, with_parameters(dec, {rand64({B, T, E}, 6), rand64({B, Tm, E}, 7)}));
    }
}

TEST_CASE("dim_feedforward 0 drops the feed-forward block: keys, x + self_attn(norm1(x)), gradcheck") {
    Generator gen(2);
    const std::int64_t B = 2, T = 4, E = 4;
    for (const bool norm_first : {true, false}) {
        INFO("norm_first " << norm_first);
        nn::TransformerEncoderLayer enc({.d_model = E,
                                         .nhead = 2,
                                         .dim_feedforward = 0,
                                         .dropout = 0.0,
                                         .norm_first = norm_first,
                                         .dtype = DType::Float64},
                                        gen);
        for (const char* absent : {"linear1.", "linear2.", "norm2."})
            CHECK_FALSE(has_key_prefix(enc, absent));
        CHECK(has_key(enc, "norm1.weight"));
        randomize_parameters(enc, 3);
        const Tensor x = rand64({B, T, E}, 4).detach();
        const auto& norm1 = child<nn::LayerNorm>(enc, "norm1");
        const Tensor expected = norm_first ? x + enc.self_attn().forward(norm1.forward(x)).output
                                           : norm1.forward(x + enc.self_attn().forward(x).output);
        CHECK(max_abs_diff(enc.forward(x), expected) < 1e-12);
        const Tensor r = rand64({B, T, E}, 5).detach();
        auto fn = [&](const Inputs& in) { return sum(enc.forward(in[0], {.is_causal = true}) * r); };
        CHECK_GRADCHECK(fn, with_parameters(enc, {rand64({B, T, E}, 6)}));
    }
    nn::TransformerDecoderLayer dec({.d_model = E, .nhead = 2, .dim_feedforward = 0}, gen);
    for (const char* absent : {"linear1.", "linear2.", "norm3."}) CHECK_FALSE(has_key_prefix(dec, absent));
    CHECK(dec.forward(randn({B, T, E}, gen), randn({B, 3, E}, gen)).shape() == Shape{B, T, E});
}

TEST_CASE(
    "a decoder layer without self-attention: no self_attn keys, each target sees only itself and the "
    "memory") {
    Generator gen(3);
    const std::int64_t B = 2, T = 5, Tm = 4, E = 4;
    nn::TransformerDecoder dec({.layer = {.d_model = E,
                                          .nhead = 2,
                                          .dim_feedforward = 6,
                                          .dropout = 0.0,
                                          .norm_first = true,
                                          .dtype = DType::Float64,
                                          .self_attention = false},
                                .num_layers = 2,
                                .norm = true},
                               gen);
    CHECK_FALSE(has_key_prefix(dec, "layers.0.self_attn"));
    CHECK_FALSE(has_key_prefix(dec, "layers.1.norm1"));
    CHECK(has_key(dec, "layers.1.multihead_attn.in_proj_weight"));
    CHECK(has_key(dec, "layers.0.norm2.weight"));
    CHECK(has_key(dec, "layers.0.norm3.weight"));
    CHECK_THROWS_WITH_AS(dec.layer(0).self_attn(), doctest::Contains("has no MultiHeadAttention"),
                         ValueError);
    randomize_parameters(dec, 4);
    const Tensor tgt = rand64({B, T, E}, 5).detach(), memory = rand64({B, Tm, E}, 6).detach();
    const Tensor before = dec.forward(tgt, memory);
    // change target 2 of every sequence: only output row 2 moves
    Tensor changed = tgt * 1.0;  // a copy
    for (std::int64_t b = 0; b < B; ++b) changed.data<double>()[(b * T + 2) * E] += 1.0;
    const Tensor after = dec.forward(changed, memory);
    for (std::int64_t t = 0; t < T; ++t) {
        INFO("target " << t);
        const double moved = max_abs_diff(narrow(before, 1, t, 1), narrow(after, 1, t, 1));
        if (t == 2)
            CHECK(moved > 1e-3);
        else
            CHECK(moved == 0.0);
    }
    const Tensor r = rand64({B, T, E}, 7).detach();
    auto fn = [&](const Inputs& in) { return sum(dec.forward(in[0], in[1]) * r); };
    CHECK_GRADCHECK(fn, with_parameters(dec, {rand64({B, T, E}, 8), rand64({B, Tm, E}, 9)}));
    // an encoder layer needs its self-attention
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(O{.d_model = E, .self_attention = false}),
                         doctest::Contains("TransformerEncoderLayer: self_attention = false leaves"),
                         ValueError);
}

TEST_CASE(
    "hard attention with REINFORCE in a stack: the trace holds each layer's log-probabilities while "
    "training") {
    Generator gen(4);
    const std::int64_t B = 3, T = 4, Tm = 5, E = 8;
    nn::TransformerDecoder dec({.layer = {.d_model = E,
                                          .nhead = 1,
                                          .dim_feedforward = 8,
                                          .dropout = 0.0,
                                          .norm_first = true,
                                          .attention = nn::LayerAttention::Single,
                                          .normalizer = nn::Normalizer::Hard,
                                          .estimator = nn::HardEstimator::Reinforce,
                                          .self_attention = false},
                                .num_layers = 2},
                               gen);
    const Tensor tgt = randn({B, T, E}, gen), memory = randn({B, Tm, E}, gen);
    const Tensor padding = bool_mask({B, Tm}, [](auto b, auto s) { return s >= Tm - b; });
    nn::ReinforceTrace trace;
    {
        nn::AttentionRecorder recorder(dec);
        dec.forward(tgt, memory, {.memory_key_padding_mask = padding, .reinforce = &trace});
        // one key per query, never a padded one
        const Tensor w = recorder.weights("layers.1.multihead_attn").at(0);
        REQUIRE(w.shape() == Shape{B, T, Tm});
        const auto v = w.to_vector<float>();
        for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t t = 0; t < T; ++t) {
                float row = 0.0f;
                for (std::int64_t s = 0; s < Tm; ++s) {
                    const float x = v[static_cast<std::size_t>((b * T + t) * Tm + s)];
                    CHECK((x == 0.0f || x == 1.0f));
                    if (s >= Tm - b) CHECK(x == 0.0f);
                    row += x;
                }
                CHECK(row == 1.0f);
            }
    }
    REQUIRE(trace.entries.size() == 2);
    CHECK(trace.entries[0].attention != trace.entries[1].attention);
    for (const auto& e : trace.entries) CHECK(e.log_prob.shape() == Shape{B, T});
    // the surrogate loss reaches the keys' projection of both layers (the scores learn from it)
    // rewards of mean 0: the first call's baseline (the batch mean) leaves a non-zero advantage
    const Tensor reward = to_dtype(index_tensor({1, 0, -1}, {B}), DType::Float32);
    dec.zero_grad();
    trace.loss(reward).backward();
    for (const auto& [name, p] : dec.named_parameters()) {
        if (!name.ends_with("multihead_attn.k_proj.weight")) continue;
        INFO(name);
        REQUIRE(p.grad().defined());
        CHECK(max_abs_diff(p.grad(), zeros_like(p.grad())) > 0.0);
    }
    // eval takes the argmax: nothing to trace; Gumbel straight-through never traces
    dec.eval();
    nn::ReinforceTrace none;
    dec.forward(tgt, memory, {.reinforce = &none});
    CHECK(none.empty());
    CHECK_FALSE(none.loss(reward).defined());
    dec.train();
    nn::TransformerDecoderLayer gumbel({.d_model = E,
                                        .nhead = 1,
                                        .attention = nn::LayerAttention::Single,
                                        .normalizer = nn::Normalizer::Hard},
                                       gen);
    gumbel.forward(tgt, memory, {.reinforce = &none});
    CHECK(none.empty());
    // without a trace the forward runs alike
    CHECK(dec.forward(tgt, memory).shape() == Shape{B, T, E});
}

TEST_CASE("a stack of zero layers is its final norm, or the identity, as in PyTorch") {
    Generator gen(5);
    const Tensor x = randn({2, 3, 4}, gen);
    nn::TransformerEncoder normed({.layer = {.d_model = 4}, .num_layers = 0, .norm = true}, gen);
    CHECK(keys(normed) == std::vector<std::string>{"norm.weight", "norm.bias"});
    CHECK(max_abs_diff(normed.forward(x), child<nn::LayerNorm>(normed, "norm").forward(x)) == 0.0);
    nn::TransformerDecoder identity({.layer = {.d_model = 4}, .num_layers = 0}, gen);
    CHECK(keys(identity).empty());
    CHECK(max_abs_diff(identity.forward(x, randn({2, 5, 4}, gen)), x) == 0.0);
    CHECK_THROWS_WITH_AS(identity.layer(0), doctest::Contains("index 0 out of range for 0 layers"),
                         IndexError);
}

TEST_CASE("options beyond PyTorch that do not combine are refused, naming the layer") {
    CHECK_THROWS_WITH_AS(
        nn::TransformerEncoderLayer(O{.d_model = 4, .nhead = 2, .attention = nn::LayerAttention::Single}),
        doctest::Contains("TransformerEncoderLayer: attention Single is one head, but nhead is 2"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        nn::TransformerDecoderLayer(O{.d_model = 4,
                                      .scoring = {.positional = nn::Positional::ALiBi},
                                      .attention = nn::LayerAttention::Single}),
        doctest::Contains("TransformerDecoderLayer: positional alibi needs attention MultiHead"), ValueError);
    CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer(O{.d_model = 4, .normalizer = nn::Normalizer::Hard}),
                         doctest::Contains("normalizer hard needs attention Single"), ValueError);
    CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(O{.d_model = 4, .dim_feedforward = -1}),
                         doctest::Contains("dim_feedforward must be >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::TransformerEncoder({.layer = {.d_model = 4}, .num_layers = -1}),
                         doctest::Contains("TransformerEncoder: num_layers must be >= 0, got -1"),
                         ValueError);
    // nn::Attention's own checks surface through the layer
    CHECK_THROWS_WITH_AS(
        nn::TransformerEncoderLayer(O{.d_model = 4,
                                      .scoring = {.local = nn::LocalMode::Predictive, .window = 0},
                                      .attention = nn::LayerAttention::Single}),
        doctest::Contains("local-p"), ValueError);
}

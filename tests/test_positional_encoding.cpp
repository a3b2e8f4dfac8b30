// Positions: the rotary_embedding op, RoPE and ALiBi inside MultiHeadAttention (global, local,
// fused and unfused paths) against references written with public ops, float64 gradcheck, the
// sinusoidal and learned absolute encodings, and bad input.
#include "helpers.hpp"

#include "fixtures.hpp"

#include <cmath>

using namespace attograd;
using testing::bool_mask;
using testing::max_abs_diff;
using testing::rand64;
using testing::randomize_parameters;
using testing::with_parameters;
using Inputs = std::vector<Tensor>;

namespace {

// RoPE written out with public ops (Su et al. 2021, eq. 34): adjacent columns (2j, 2j + 1) of each
// head of width d rotated by t * base^(-2j / d). x [B, T, W] with W a multiple of d.
Tensor reference_rope(const Tensor& x, std::int64_t d, double base = 10000.0) {
    const std::int64_t b = x.size(0), t_len = x.size(1), w = x.size(2), pairs = w / 2;
    std::vector<double> c(static_cast<std::size_t>(t_len * pairs)), s(c.size());
    for (std::int64_t t = 0; t < t_len; ++t)
        for (std::int64_t p = 0; p < pairs; ++p) {
            const double theta =
                std::pow(base, -2.0 * static_cast<double>(p % (d / 2)) / static_cast<double>(d));
            c[static_cast<std::size_t>(t * pairs + p)] = std::cos(static_cast<double>(t) * theta);
            s[static_cast<std::size_t>(t * pairs + p)] = std::sin(static_cast<double>(t) * theta);
        }
    const Tensor cos_t = tensor(c, {t_len, pairs, 1}, {.dtype = x.dtype()});
    const Tensor sin_t = tensor(s, {t_len, pairs, 1}, {.dtype = x.dtype()});
    const Tensor pairs_x = reshape(x, {b, t_len, pairs, 2});
    const Tensor even = narrow(pairs_x, 3, 0, 1), odd = narrow(pairs_x, 3, 1, 1);
    return reshape(concat({even * cos_t - odd * sin_t, even * sin_t + odd * cos_t}, 3), {b, t_len, w});
}

// ALiBi's bias written out: [B * h, Tq, Tk], entry -2^(-8 (i + 1) / h) |t - s| for head i (h a
// power of 2, the paper's slopes), for MultiHeadAttention's 3-D attn_mask.
Tensor reference_alibi(std::int64_t batch, std::int64_t h, std::int64_t tq, std::int64_t tk) {
    std::vector<double> v;
    for (std::int64_t n = 0; n < batch * h; ++n)
        for (std::int64_t t = 0; t < tq; ++t)
            for (std::int64_t s = 0; s < tk; ++s)
                v.push_back(-std::exp2(-8.0 * static_cast<double>(n % h + 1) / static_cast<double>(h)) *
                            static_cast<double>(std::abs(t - s)));
    return tensor(v, {batch * h, tq, tk}, {.dtype = DType::Float64});
}

// MultiHeadAttention's maths with RoPE, written with public ops: projections, reference_rope on q
// and k, the fused kernels (global, or local-m over `window`), the output projection.
Tensor reference_rope_attention(const nn::MultiHeadAttention& mha, const Tensor& query, const Tensor& key,
                                std::int64_t window = -1) {
    const std::int64_t e = mha.options().embed_dim, h = mha.options().num_heads, d = mha.head_dim();
    const Tensor w = mha.in_proj_weight(), bias = mha.in_proj_bias();
    const Tensor q = reference_rope(linear(query, narrow(w, 0, 0, e), narrow(bias, 0, 0, e)), d);
    const Tensor k = reference_rope(linear(key, narrow(w, 0, e, e), narrow(bias, 0, e, e)), d);
    const Tensor v = linear(key, narrow(w, 0, 2 * e, e), narrow(bias, 0, 2 * e, e));
    Tensor heads;
    if (window < 0) {
        heads = scaled_dot_product_attention_heads(q, k, v, h).output;
    } else {
        const std::int64_t tk = key.size(1), dd = nn::band_half_width(window, tk);
        const Tensor start = nn::monotonic_window_start(query.size(0) * h, query.size(1), tk, dd);
        heads = local_scaled_dot_product_attention_heads(q, k, v, h, start, 2 * dd + 1).output;
    }
    return linear(heads, mha.out_proj().weight(), mha.out_proj().bias());
}

std::shared_ptr<nn::MultiHeadAttention> random_mha(nn::MultiHeadAttentionOptions options,
                                                   std::uint64_t seed) {
    options.dtype = DType::Float64;
    Generator gen(seed);
    auto mha = std::make_shared<nn::MultiHeadAttention>(options, gen);
    randomize_parameters(*mha, seed * 100);
    mha->eval();
    return mha;
}

}  // namespace

TEST_CASE("rotary_embedding equals the rotation written with public ops, values and gradients") {
    for (const std::int64_t d : {2, 4, 8}) {
        INFO("head_dim " << d);
        Tensor x = rand64({2, 7, 16}, 1), x_ref = x.detach().requires_grad_();
        const Tensor y = rotary_embedding(x, d), y_ref = reference_rope(x_ref, d);
        CHECK(max_abs_diff(y, y_ref) < 1e-14);
        const Tensor r = rand64({2, 7, 16}, 2).detach();
        sum(y * r).backward();
        sum(y_ref * r).backward();
        CHECK(max_abs_diff(x.grad(), x_ref.grad()) < 1e-14);
    }
    // position 0 is not rotated; each pair keeps its length
    const Tensor x = rand64({1, 3, 4}, 3).detach(), y = rotary_embedding(x, 4);
    CHECK(max_abs_diff(narrow(y, 1, 0, 1), narrow(x, 1, 0, 1)) == 0.0);
    const auto pair_norms = [](const Tensor& t) { return sum(reshape(t * t, {1, 3, 2, 2}), {3}); };
    CHECK(max_abs_diff(pair_norms(y), pair_norms(x)) < 1e-14);
    // only the first rotated_width columns turn: q and k of a packed [.., 3E] projection
    const Tensor qkv = rand64({2, 5, 12}, 4).detach(), packed = rotary_embedding(qkv, 2, 100.0, 8);
    CHECK(max_abs_diff(narrow(packed, 2, 0, 8), reference_rope(narrow(qkv, 2, 0, 8), 2, 100.0)) < 1e-14);
    CHECK(max_abs_diff(narrow(packed, 2, 8, 4), narrow(qkv, 2, 8, 4)) == 0.0);
}

TEST_CASE("rotary_embedding: scores depend only on the distance t - s, and gradcheck") {
    // every position holds the same q0 and k0: after RoPE, score[t][s] = f(t - s)
    const Tensor q0 = rand64({1, 1, 8}, 5).detach(), k0 = rand64({1, 1, 8}, 6).detach();
    const Tensor ones = full({1, 6, 1}, 1.0, {.dtype = DType::Float64});
    const Tensor q = rotary_embedding(ones * q0, 8), k = rotary_embedding(ones * k0, 8);
    const auto s = matmul(q, transpose(k, 1, 2)).to_vector<double>();  // [1, 6, 6]
    for (int t = 0; t + 1 < 6; ++t)
        for (int u = 0; u + 1 < 6; ++u) CHECK(std::abs(s[t * 6 + u] - s[(t + 1) * 6 + u + 1]) < 1e-12);
    auto fn = [](const Inputs& in) {
        const Tensor y = rotary_embedding(in[0], 4, 50.0, 8);
        return sum(y * y * in[1]);
    };
    CHECK_GRADCHECK(fn, (Inputs{rand64({2, 3, 5, 12}, 7), rand64({2, 3, 5, 12}, 8)}));
}

TEST_CASE("RoPE in MultiHeadAttention equals the reference on every path") {
    const std::int64_t B = 2, T = 6, Tk = 5, E = 8, h = 2;
    const Tensor x = rand64({B, T, E}, 1).detach(), memory = rand64({B, Tk, E}, 2).detach();
    {  // global: packed self-attention and the general (cross) path
        const auto mha = random_mha(
            {.embed_dim = E, .num_heads = h, .scoring = {.positional = nn::Positional::Rotary}}, 1);
        CHECK(max_abs_diff(mha->forward(x, {.need_weights = false}).output,
                           reference_rope_attention(*mha, x, x)) < 1e-12);
        CHECK(max_abs_diff(mha->forward(x, memory, memory).output,
                           reference_rope_attention(*mha, x, memory)) < 1e-12);
        // with positions the output is not the plain attention's
        const auto plain = random_mha({.embed_dim = E, .num_heads = h}, 1);
        CHECK(max_abs_diff(mha->forward(x).output, plain->forward(x).output) > 1e-3);
    }
    for (const std::int64_t window : {1, 2}) {  // local-m: the fused packed and the fused general paths
        INFO("window " << window);
        const auto mha = random_mha({.embed_dim = E,
                                     .num_heads = h,
                                     .scoring = {.local = nn::LocalMode::Monotonic,
                                                 .window = window,
                                                 .positional = nn::Positional::Rotary}},
                                    2);
        CHECK(max_abs_diff(mha->forward(x).output, reference_rope_attention(*mha, x, x, window)) < 1e-12);
        CHECK(max_abs_diff(mha->forward(x, memory, memory).output,
                           reference_rope_attention(*mha, x, memory, window)) < 1e-12);
    }
    // the unfused band (a score module): a window over every key equals global attention
    const auto global =
        random_mha({.embed_dim = E,
                    .num_heads = h,
                    .scoring = {.score = nn::Score::Additive, .positional = nn::Positional::Rotary}},
                   3);
    const auto local = random_mha({.embed_dim = E,
                                   .num_heads = h,
                                   .scoring = {.score = nn::Score::Additive,
                                               .local = nn::LocalMode::Monotonic,
                                               .window = T,
                                               .positional = nn::Positional::Rotary}},
                                  3);
    CHECK(max_abs_diff(global->forward(x, {.is_causal = true}).output,
                       local->forward(x, {.is_causal = true}).output) < 1e-12);
}

TEST_CASE("alibi_slopes are the paper's, alibi_bias and alibi_band agree") {
    const auto near = [](const std::vector<double>& a, const std::vector<double>& b) {
        REQUIRE(a.size() == b.size());
        for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-15));
    };
    near(nn::alibi_slopes(8),
         {1.0 / 2, 1.0 / 4, 1.0 / 8, 1.0 / 16, 1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256});
    near(nn::alibi_slopes(1), {1.0 / 256});
    near(nn::alibi_slopes(4), {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256});
    // 6 heads: the 4 slopes of 4 heads, then the 1st and 3rd of 8 heads' (Press et al.'s code)
    near(nn::alibi_slopes(6), {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256, 1.0 / 2, 1.0 / 8});
    CHECK(max_abs_diff(reshape(nn::alibi_bias(4, 3, 5, DType::Float64), {4, 3, 5}),
                       reference_alibi(1, 4, 3, 5)) < 1e-15);
    // the band [B h, Tq, W] holds the entries of the dense bias at keys start + j
    const std::int64_t B = 2, h = 2, tq = 6, tk = 6, width = 3;
    const Tensor start = nn::monotonic_window_start(B * h, tq, tk, 1);
    const auto band = nn::alibi_band(start, width, h, DType::Float64).to_vector<double>();
    const auto dense = reference_alibi(B, h, tq, tk).to_vector<double>();
    const auto s0 = start.to_vector<std::int64_t>();
    for (std::int64_t n = 0; n < B * h; ++n)
        for (std::int64_t t = 0; t < tq; ++t)
            for (std::int64_t j = 0; j < width; ++j) {
                const std::int64_t s = s0[n * tq + t] + j;
                if (s >= 0 && s < tk) CHECK(band[(n * tq + t) * width + j] == dense[(n * tq + t) * tk + s]);
            }
}

TEST_CASE("ALiBi in MultiHeadAttention equals a float attn_mask of its biases on every path") {
    const std::int64_t B = 2, T = 6, Tk = 5, E = 8, h = 4;
    const Tensor x = rand64({B, T, E}, 1).detach(), memory = rand64({B, Tk, E}, 2).detach();
    const Tensor padding = bool_mask({B, T}, [](auto b, auto s) { return s >= T - 1 - b; });
    struct Path {
        const char* name;
        nn::Score score;
        nn::LocalMode local;
        std::int64_t window;
    };
    for (const Path& p : {Path{"global", nn::Score::ScaledDot, nn::LocalMode::None, 0},
                          Path{"global additive", nn::Score::Additive, nn::LocalMode::None, 0},
                          Path{"local-m fused", nn::Score::ScaledDot, nn::LocalMode::Monotonic, 2},
                          Path{"local-m unfused", nn::Score::Bilinear, nn::LocalMode::Monotonic, 1},
                          Path{"local-p fused", nn::Score::Dot, nn::LocalMode::Predictive, 2}}) {
        INFO(p.name);
        const nn::MultiHeadAttentionOptions o{
            .embed_dim = E,
            .num_heads = h,
            .scoring = {.score = p.score, .local = p.local, .window = p.window}};
        auto with = o;
        with.scoring.positional = nn::Positional::ALiBi;
        const auto alibi = random_mha(with, 4), plain = random_mha(o, 4);
        // self-attention (the packed path) with padding and causal masks
        const auto a = alibi->forward(x, {.key_padding_mask = padding, .is_causal = true});
        const auto r = plain->forward(
            x, {.key_padding_mask = padding, .attn_mask = reference_alibi(B, h, T, T), .is_causal = true});
        CHECK(max_abs_diff(a.output, r.output) < 1e-12);
        CHECK(max_abs_diff(a.weights, r.weights) < 1e-12);
        // cross-attention (the general path): |t - s| over query and memory positions
        CHECK(max_abs_diff(
                  alibi->forward(x, memory, memory).output,
                  plain->forward(x, memory, memory, {.attn_mask = reference_alibi(B, h, T, Tk)}).output) <
              1e-12);
    }
}

TEST_CASE("RoPE and ALiBi pass float64 gradcheck in MultiHeadAttention, global and local") {
    const std::int64_t B = 2, T = 5, E = 4, h = 2;
    const Tensor padding = bool_mask({B, T}, [](auto b, auto s) { return s >= T - 1 - b; });
    for (const auto positional : {nn::Positional::Rotary, nn::Positional::ALiBi}) {
        for (const auto score : {nn::Score::ScaledDot, nn::Score::Additive}) {
            for (const auto local :
                 {nn::LocalMode::None, nn::LocalMode::Monotonic, nn::LocalMode::Predictive}) {
                INFO(nn::to_string(positional) << " " << nn::to_string(score) << " " << nn::to_string(local));
                const auto mha = random_mha({.embed_dim = E,
                                             .num_heads = h,
                                             .scoring = {.score = score,
                                                         .local = local,
                                                         .window = local == nn::LocalMode::None ? 0 : 1,
                                                         .positional = positional,
                                                         .rope_base = 100.0}},
                                            5);
                const Tensor r = rand64({B, T, E}, 6).detach();
                auto self = [&](const Inputs& in) {
                    return sum(mha->forward(in[0], {.key_padding_mask = padding, .is_causal = true}).output *
                               r);
                };
                CHECK_GRADCHECK(self, with_parameters(*mha, {rand64({B, T, E}, 7)}));
                auto cross = [&](const Inputs& in) {
                    return sum(mha->forward(in[0], in[1], in[1]).output * r);
                };
                CHECK_GRADCHECK(cross,
                                with_parameters(*mha, {rand64({B, T, E}, 8), rand64({B, T + 1, E}, 9)}));
            }
        }
    }
}

TEST_CASE("RoPE with bias_kv and zero_attn: the appended keys get no position") {
    const auto mha = random_mha({.embed_dim = 4,
                                 .num_heads = 2,
                                 .add_bias_kv = true,
                                 .add_zero_attn = true,
                                 .scoring = {.positional = nn::Positional::Rotary}},
                                6);
    const Tensor x = rand64({2, 3, 4}, 1), k = rand64({2, 4, 4}, 2);
    auto fn = [&](const Inputs& in) { return sum(mha->forward(in[0], in[1], in[1]).output); };
    CHECK_GRADCHECK(fn, with_parameters(*mha, {x, k}));
    CHECK(mha->forward(x, k, k).weights.shape() == Shape{2, 3, 6});
}

TEST_CASE("SinusoidalPositionalEncoding is Vaswani et al.'s table, a buffer added to the input") {
    for (const std::int64_t e : {6, 7}) {
        INFO("E = " << e);
        nn::SinusoidalPositionalEncoding pe({.embedding_dim = e, .max_len = 20, .dtype = DType::Float64});
        CHECK(pe.named_parameters().empty());
        REQUIRE(pe.named_buffers().size() == 1);
        CHECK(pe.named_buffers()[0].first == "pe");
        CHECK(pe.pe().shape() == Shape{20, e});
        const auto table = pe.pe().to_vector<double>();
        for (std::int64_t pos : {0, 1, 5, 19})
            for (std::int64_t i = 0; 2 * i < e; ++i) {
                const double angle =
                    static_cast<double>(pos) / std::pow(10000.0, 2.0 * static_cast<double>(i) / e);
                CHECK(table[pos * e + 2 * i] == doctest::Approx(std::sin(angle)).epsilon(1e-14));
                if (2 * i + 1 < e)
                    CHECK(table[pos * e + 2 * i + 1] == doctest::Approx(std::cos(angle)).epsilon(1e-14));
            }
        Tensor x = rand64({3, 4, e}, 1);
        const Tensor y = pe.forward(x, 2);
        CHECK(max_abs_diff(y, x.detach() + narrow(pe.pe(), 0, 2, 4)) == 0.0);
        sum(y * 3.0).backward();
        CHECK(max_abs_diff(x.grad(), full({3, 4, e}, 3.0, {.dtype = DType::Float64})) == 0.0);
        CHECK_FALSE(pe.pe().requires_grad());
        // unbatched [T, E] works too
        CHECK(pe.forward(rand64({20, e}, 2).detach()).shape() == Shape{20, e});
    }
    nn::SinusoidalPositionalEncoding pe({.embedding_dim = 4});
    CHECK(pe.options().max_len == 5000);
    pe.to(DType::Float64);
    CHECK(pe.forward(rand64({1, 3, 4}, 3).detach()).dtype() == DType::Float64);
    CHECK(nn::to_string(pe) == "SinusoidalPositionalEncoding(embedding_dim=4, max_len=5000)");
}

TEST_CASE("LearnedPositionalEmbedding: a table of positions trained through the rows it used") {
    Generator gen(3);
    nn::LearnedPositionalEmbedding pos({.embedding_dim = 4, .max_len = 6, .dtype = DType::Float64}, gen);
    REQUIRE(pos.named_parameters().size() == 1);
    CHECK(pos.named_parameters()[0].first == "weight");
    CHECK(pos.weight().shape() == Shape{6, 4});
    Tensor x = rand64({2, 3, 4}, 1);
    const Tensor y = pos.forward(x, 1);
    CHECK(max_abs_diff(y, x.detach() + narrow(pos.weight().detach(), 0, 1, 3)) == 0.0);
    sum(y).backward();
    const auto g = pos.weight().grad().to_vector<double>();
    for (std::int64_t row = 0; row < 6; ++row)
        for (std::int64_t c = 0; c < 4; ++c) CHECK(g[row * 4 + c] == (row >= 1 && row <= 3 ? 2.0 : 0.0));
    auto fn = [&](const Inputs& in) { return sum(pos.forward(in[0]) * pos.forward(in[0])); };
    CHECK_GRADCHECK(fn, with_parameters(pos, {rand64({2, 5, 4}, 2)}));
    CHECK(nn::to_string(pos) == "LearnedPositionalEmbedding(embedding_dim=4, max_len=6)");
}

TEST_CASE("positions reject bad options and inputs, naming the op and the shapes") {
    CHECK_THROWS_WITH_AS(rotary_embedding(rand64({2, 3, 6}, 1), 3),
                         doctest::Contains("rotary_embedding: head_dim must be even and >= 2, got 3"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        rotary_embedding(rand64({2, 3, 6}, 1), 4),
        doctest::Contains("rotated_width 6 must be a multiple of head_dim 4 within the width of x [2, 3, 6]"),
        ValueError);
    CHECK_THROWS_WITH_AS(rotary_embedding(rand64({2, 3, 6}, 1), 2, 1.0, 8),
                         doctest::Contains("rotated_width 8"), ValueError);
    CHECK_THROWS_WITH_AS(rotary_embedding(rand64({6}, 1), 2),
                         doctest::Contains("x must be [..., T, W], got [6]"), ShapeError);
    CHECK_THROWS_WITH_AS(rotary_embedding(rand64({2, 6}, 1), 2, 0.0),
                         doctest::Contains("base must be finite and > 0"), ValueError);
    CHECK_THROWS_WITH_AS(rotary_embedding(index_tensor({1, 2}, {1, 2}), 2),
                         doctest::Contains("must be float32 or float64"), DTypeError);
    CHECK_THROWS_WITH_AS(
        nn::MultiHeadAttention(
            {.embed_dim = 6, .num_heads = 2, .scoring = {.positional = nn::Positional::Rotary}}),
        doctest::Contains("rotary positions need an even head width, got embed_dim 6 / num_heads 2 = 3"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        nn::MultiHeadAttention(
            {.embed_dim = 4, .scoring = {.positional = nn::Positional::Rotary, .rope_base = -1}}),
        doctest::Contains("rope_base must be finite and > 0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::alibi_slopes(0), doctest::Contains("alibi_slopes: heads must be >= 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        nn::alibi_band(index_tensor({0, 0, 0}, {3, 1}), 3, 2, DType::Float64),
        doctest::Contains("window_start must be [B * h, Tq] with h = 2 dividing its rows, got [3, 1]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(nn::parse_positional("relative"), doctest::Contains("choose none, rotary or alibi"),
                         ValueError);
    CHECK(nn::parse_positional("rope") == nn::Positional::Rotary);

    CHECK_THROWS_WITH_AS(nn::SinusoidalPositionalEncoding({.embedding_dim = 0}),
                         doctest::Contains("embedding_dim and max_len must be >= 1, got 0 and 5000"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        nn::LearnedPositionalEmbedding({.embedding_dim = 4, .max_len = 0}),
        doctest::Contains("LearnedPositionalEmbedding: embedding_dim and max_len must be >= 1"), ValueError);
    nn::SinusoidalPositionalEncoding pe({.embedding_dim = 4, .max_len = 8});
    Generator gen(4);
    const Tensor x = randn({2, 5, 4}, gen);
    CHECK_THROWS_WITH_AS(pe.forward(x, 4),
                         doctest::Contains("positions 4..8 of x [2, 5, 4] exceed max_len 8"), ShapeError);
    CHECK_THROWS_WITH_AS(pe.forward(x, -1), doctest::Contains("offset must be >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(
        pe.forward(randn({2, 5, 3}, gen)),
        doctest::Contains("SinusoidalPositionalEncoding: x must be [..., T, E] with E = 4, got [2, 5, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(pe.forward(to_dtype(x, DType::Float64)),
                         doctest::Contains("x must have the table's dtype float32, got float64"), DTypeError);
}

TEST_CASE("positions_from_end counts the real positions after each one, 0 at padding") {
    const Tensor mask = bool_mask({3, 4}, [](auto b, auto s) { return s >= 4 - b; });  // lengths 4, 3, 2
    CHECK(nn::positions_from_end(mask).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{3, 2, 1, 0, 2, 1, 0, 0, 1, 0, 0, 0});
    // padding anywhere: only the real positions are counted
    const Tensor holes = bool_mask({1, 4}, [](auto, auto s) { return s == 1; });
    CHECK(nn::positions_from_end(holes).to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 0, 1, 0});
    CHECK_THROWS_WITH_AS(nn::positions_from_end(zeros({2, 3})),
                         doctest::Contains("positions_from_end: key_padding_mask must be bool, got float32"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(nn::positions_from_end(zeros({3}, {.dtype = DType::Bool})),
                         doctest::Contains("must be [B, T], got [3]"), ShapeError);
}

TEST_CASE("forward_at adds each sequence's own positions: forward's rows, gradcheck, bad positions") {
    Generator gen(6);
    const std::int64_t B = 2, T = 3, E = 4;
    nn::LearnedPositionalEmbedding learned({.embedding_dim = E, .max_len = 5, .dtype = DType::Float64}, gen);
    nn::SinusoidalPositionalEncoding sinusoidal({.embedding_dim = E, .max_len = 5, .dtype = DType::Float64});
    const Tensor x = rand64({B, T, E}, 1).detach();
    // [T] positions 1, 2, 3 are forward's offset 1; per-sequence positions pick each row's rows
    CHECK(max_abs_diff(learned.forward_at(x, index_tensor({1, 2, 3}, {T})), learned.forward(x, 1)) == 0.0);
    CHECK(max_abs_diff(sinusoidal.forward_at(x, index_tensor({1, 2, 3}, {T})), sinusoidal.forward(x, 1)) ==
          0.0);
    const Tensor positions = index_tensor({2, 1, 0, 4, 4, 0}, {B, T});
    const Tensor out = learned.forward_at(x, positions);
    const Tensor w = learned.weight();
    // sequence 1, position 0 got row 4
    CHECK(max_abs_diff(narrow(narrow(out, 0, 1, 1), 1, 0, 1),
                       narrow(narrow(x, 0, 1, 1), 1, 0, 1) + narrow(w, 0, 4, 1)) == 0.0);
    const Tensor r = rand64({B, T, E}, 2).detach();
    auto fn = [&](const Inputs& in) { return sum(learned.forward_at(in[0], positions) * r); };
    CHECK_GRADCHECK(fn, with_parameters(learned, {rand64({B, T, E}, 3)}));
    CHECK_THROWS_WITH_AS(learned.forward_at(x, index_tensor({0, 5, 1}, {T})),
                         doctest::Contains("LearnedPositionalEmbedding: position 5 outside [0, max_len = 5)"),
                         IndexError);
    CHECK_THROWS_WITH_AS(learned.forward_at(x, index_tensor({0, 1}, {2})),
                         doctest::Contains("positions must be [B, T] or [T] for x [2, 3, 4], got [2]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(learned.forward_at(x, zeros({T})), doctest::Contains("positions must be int64"),
                         DTypeError);
}

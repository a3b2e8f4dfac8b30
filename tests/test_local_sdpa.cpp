// The fused local attention ops against the composition of the banded kernels (scores, masked
// softmax, factor, weighted sum per head), gradcheck in float64, and bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace testing;

namespace {

constexpr std::int64_t kB = 2, kH = 2, kTq = 5, kTk = 6, kD = 3, kDv = 2, kW = 3;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Window starts of the B * h = 4 head sequences: windows hanging off both ends, one entirely
// outside the keys.
Tensor starts() {
    return index_tensor({-2, 0, 1, 3, 5, -9, 4, 2, 6, -1, 0, 1, 2, 3, 4, 3, 3, 3, -1, 4}, {kB * kH, kTq});
}

// An additive band mask [B h, Tq, W]: some slots -inf, some finite, query 2 of sequence 1 fully masked.
Tensor band_mask() {
    std::vector<double> values(static_cast<std::size_t>(kB * kH * kTq * kW), 0.0);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = i % 5 == 1 ? -kInf : (i % 7 == 3 ? 0.5 : 0.0);
    for (std::int64_t j = 0; j < kW; ++j) values[static_cast<std::size_t>((1 * kTq + 2) * kW + j)] = -kInf;
    return tensor(values, {kB * kH, kTq, kW}, {.dtype = DType::Float64});
}

// [B, T, h * d] -> [B * h, T, d] and back.
Tensor split(const Tensor& x, std::int64_t d) {
    const std::int64_t b = x.size(0), t = x.size(1);
    return reshape(permute(reshape(x, {b, t, kH, d}), {0, 2, 1, 3}), {b * kH, t, d});
}
Tensor merge(const Tensor& x) {
    const std::int64_t t = x.size(1), d = x.size(2);
    return reshape(permute(reshape(x, {kB, kH, t, d}), {0, 2, 1, 3}), {kB, t, kH * d});
}

// The same attention from the unfused banded kernels: -inf in slots outside the keys, the mask
// added, softmax, times the factor, weighted sum.
SdpaResult reference(const Tensor& q, const Tensor& k, const Tensor& v, const LocalSdpaOptions& o) {
    std::vector<double> outside;
    const Tensor s = starts();
    for (std::int64_t n = 0; n < kB * kH; ++n)
        for (std::int64_t t = 0; t < kTq; ++t)
            for (std::int64_t j = 0; j < kW; ++j) {
                const auto key = static_cast<std::int64_t>(s.at({n, t})) + j;
                outside.push_back(key < 0 || key >= k.size(1) ? -kInf : 0.0);
            }
    Tensor scores =
        local_dot_score(split(q, kD), split(k, kD), s, kW, o.scale.value_or(1.0 / std::sqrt(kD))) +
        tensor(outside, {kB * kH, kTq, kW}, {.dtype = DType::Float64});
    if (o.band_mask.defined()) scores = scores + o.band_mask;
    Tensor weights = softmax(scores, -1);
    if (o.factor.defined()) weights = weights * o.factor;
    return {merge(local_weighted_sum(weights, split(v, kDv), s)), weights};
}

// A loss reading both results, so that both tape entries run.
Tensor loss(const SdpaResult& r) {
    return sum(r.output * rand64(r.output.shape(), 40).detach()) +
           sum(r.weights * rand64(r.weights.shape(), 41).detach());
}

}  // namespace

TEST_CASE("fused local attention equals the banded kernels composed per head: values and gradients") {
    for (const bool masked : {false, true})
        for (const bool with_factor : {false, true})
            for (const std::optional<double> scale : {std::optional<double>(), std::optional<double>(1.0)}) {
                INFO("mask " << masked << ", factor " << with_factor << ", scale " << scale.value_or(-1));
                Tensor q = rand64({kB, kTq, kH * kD}, 1), k = rand64({kB, kTk, kH * kD}, 2);
                Tensor v = rand64({kB, kTk, kH * kDv}, 3), f = rand64({kB * kH, kTq, kW}, 4);
                const LocalSdpaOptions o{.band_mask = masked ? band_mask() : Tensor(),
                                         .factor = with_factor ? f : Tensor(),
                                         .scale = scale};
                const SdpaResult fused =
                    local_scaled_dot_product_attention_heads(q, k, v, kH, starts(), kW, o);
                loss(fused).backward();
                const std::vector<Tensor> grads = {q.grad(), k.grad(), v.grad(), f.grad()};
                for (Tensor* t : {&q, &k, &v, &f}) t->zero_grad();
                const SdpaResult ref = reference(q, k, v, o);
                loss(ref).backward();
                CHECK(max_abs_diff(fused.output, ref.output) < 1e-13);
                CHECK(max_abs_diff(fused.weights, ref.weights) < 1e-13);
                CHECK(max_abs_diff(grads[0], q.grad()) < 1e-12);
                CHECK(max_abs_diff(grads[1], k.grad()) < 1e-12);
                CHECK(max_abs_diff(grads[2], v.grad()) < 1e-12);
                if (with_factor) CHECK(max_abs_diff(grads[3], f.grad()) < 1e-12);
                if (masked) {  // the fully masked row: zero weights, zero output, finite gradients
                    for (std::int64_t j = 0; j < kW; ++j) CHECK(fused.weights.at({1, 2, j}) == 0.0);
                    for (std::int64_t c = kDv; c < 2 * kDv; ++c) CHECK(fused.output.at({0, 2, c}) == 0.0);
                    for (const Tensor& g : grads)
                        if (g.defined()) CHECK(all_finite(g));
                }
            }
}

TEST_CASE("fused local attention passes float64 gradcheck: heads and packed layouts, mask and factor") {
    Tensor q = rand64({kB, kTq, kH * kD}, 5), k = rand64({kB, kTk, kH * kD}, 6),
           v = rand64({kB, kTk, kH * kDv}, 7);
    Tensor f = rand64({kB * kH, kTq, kW}, 8);
    auto heads = [](const std::vector<Tensor>& in) {
        return loss(local_scaled_dot_product_attention_heads(in[0], in[1], in[2], kH, starts(), kW,
                                                             {.band_mask = band_mask(), .factor = in[3]}));
    };
    CHECK_GRADCHECK(heads, (std::vector<Tensor>{q, k, v, f}));
    // packed self-attention: Tq = Tk, q, k and v in one [B, T, 3 E] tensor
    Tensor qkv = rand64({kB, kTq, 3 * kH * kD}, 9);
    auto packed = [](const std::vector<Tensor>& in) {
        return loss(local_scaled_dot_product_attention_packed(in[0], kH, starts(), kW,
                                                              {.band_mask = band_mask(), .factor = in[1]}));
    };
    CHECK_GRADCHECK(packed, (std::vector<Tensor>{qkv, f}));
    auto weights_only = [](const std::vector<Tensor>& in) {
        const auto r = local_scaled_dot_product_attention_packed(in[0], kH, starts(), kW, {.scale = 0.3});
        return sum(r.weights * r.weights);
    };
    CHECK_GRADCHECK(weights_only, (std::vector<Tensor>{qkv}));
}

TEST_CASE("the fused local kernels write every element of their outputs and gradients") {
    // Outputs and gradients are allocated uninitialised and each (batch, head) block zeroes its
    // own part: NaN left in the buffers they are given must not show through.
    Tensor qkv = rand64({kB, kTq, 3 * kH * kD}, 11);
    leave_nan_blocks({kB, kTq, kH * kD});  // the output [B, T, E]
    const auto r = local_scaled_dot_product_attention_packed(qkv, kH, starts(), kW);
    CHECK(all_finite(r.output));
    const Tensor loss = sum(r.weights * r.weights);  // through the weights alone: v gets exactly 0
    leave_nan_blocks(qkv.shape());
    loss.backward();
    const auto g = qkv.grad().to_vector<double>();
    for (std::size_t i = 0; i < g.size(); ++i) {
        CHECK(std::isfinite(g[i]));
        if (i % static_cast<std::size_t>(3 * kH * kD) >= static_cast<std::size_t>(2 * kH * kD))
            CHECK(g[i] == 0.0);
    }
}

TEST_CASE("the packed layout equals the heads layout on the same q, k and v") {
    const Tensor qkv = rand64({kB, kTq, 3 * kH * kD}, 10).detach();
    const std::int64_t e = kH * kD;
    const auto packed = local_scaled_dot_product_attention_packed(qkv, kH, starts(), kW);
    const auto heads = local_scaled_dot_product_attention_heads(narrow(qkv, 2, 0, e), narrow(qkv, 2, e, e),
                                                                narrow(qkv, 2, 2 * e, e), kH, starts(), kW);
    CHECK(max_abs_diff(packed.output, heads.output) == 0.0);
    CHECK(max_abs_diff(packed.weights, heads.weights) == 0.0);
}

TEST_CASE("fused local attention rejects bad input with the shapes in the message") {
    const Tensor q = rand64({kB, kTq, kH * kD}, 11).detach(), k = rand64({kB, kTk, kH * kD}, 12).detach();
    const Tensor v = rand64({kB, kTk, kH * kDv}, 13).detach();
    auto heads = [&](const Tensor& qq, const Tensor& kk, const Tensor& vv, std::int64_t h, const Tensor& s,
                     std::int64_t w, const LocalSdpaOptions& o = {}) {
        return local_scaled_dot_product_attention_heads(qq, kk, vv, h, s, w, o);
    };
    CHECK_THROWS_WITH_AS(heads(reshape(q, {kB * kTq, kH * kD}), k, v, kH, starts(), kW),
                         doctest::Contains("expected rank-3 inputs, got [10, 6]"), ShapeError);
    CHECK_THROWS_WITH_AS(heads(q, rand64({kB, kTk, 4}, 1).detach(), v, kH, starts(), kW),
                         doctest::Contains("q and k widths differ: q [2, 5, 6], k [2, 6, 4]"), ShapeError);
    CHECK_THROWS_WITH_AS(heads(q, k, v, 4, starts(), kW), doctest::Contains("num_heads 4 must divide"),
                         ValueError);
    CHECK_THROWS_WITH_AS(heads(q, k, v, kH, index_tensor({0, 1}, {1, 2}), kW),
                         doctest::Contains("window_start must be [N, Tq] = [4, 5], got [1, 2]"), ShapeError);
    CHECK_THROWS_WITH_AS(heads(q, k, v, kH, starts(), 0), doctest::Contains("width must be >= 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(heads(q, k, v, kH, starts(), kW, {.band_mask = rand64({kB, kTq, kW}, 2).detach()}),
                         doctest::Contains("band_mask must be [B * h, Tq, W] = [4, 5, 3], got [2, 5, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(heads(q, k, v, kH, starts(), kW, {.factor = zeros({kB * kH, kTq, kW})}),
                         doctest::Contains("factor must have the inputs' dtype float64, got float32"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(heads(q, k, v, kH, starts(), kW, {.band_mask = rand64({kB * kH, kTq, kW}, 3)}),
                         doctest::Contains("band_mask receives no gradient"), ValueError);
    CHECK_THROWS_WITH_AS(heads(q, k, v, kH, starts(), kW, {.scale = kInf}),
                         doctest::Contains("scale must be finite"), ValueError);
    CHECK_THROWS_WITH_AS(local_scaled_dot_product_attention_packed(rand64({kB, kTq, 4}, 4), kH, starts(), kW),
                         doctest::Contains("qkv [B, T, 3 * E] needs a width divisible by 3, got [2, 5, 4]"),
                         ShapeError);
}

TEST_CASE("a NaN in a query makes its row NaN on the fused paths, as a softmax does (never a silent 0)") {
    std::vector<double> values(static_cast<std::size_t>(kB * kTq * kH * kD), 0.25);
    values[static_cast<std::size_t>((0 * kTq + 3) * kH * kD + 1)] = std::nan("");  // b 0, t 3, head 0
    const Tensor q = tensor(values, {kB, kTq, kH * kD}, {.dtype = DType::Float64});
    const Tensor k = rand64({kB, kTk, kH * kD}, 20).detach(), v = rand64({kB, kTk, kH * kDv}, 21).detach();
    // every slot but one of that row masked: the max over the scores alone would skip the NaN
    std::vector<double> mask(static_cast<std::size_t>(kB * kH * kTq * kW), 0.0);
    for (std::int64_t j = 1; j < kW; ++j) mask[static_cast<std::size_t>((0 * kTq + 3) * kW + j)] = -kInf;
    const Tensor band = tensor(mask, {kB * kH, kTq, kW}, {.dtype = DType::Float64});
    const auto local =
        local_scaled_dot_product_attention_heads(q, k, v, kH, starts(), kW, {.band_mask = band});
    CHECK(std::isnan(local.output.at({0, 3, 0})));
    CHECK(std::isnan(local.weights.at({0, 3, 0})));
    CHECK(std::isfinite(local.output.at({0, 2, 0})));    // other rows unaffected
    CHECK(std::isfinite(local.output.at({0, 3, kDv})));  // and the other head of the same query
    // the global fused op: keys 1.. of that query masked
    std::vector<double> dense(static_cast<std::size_t>(kTq * kTk), 0.0);
    for (std::int64_t s = 1; s < kTk; ++s) dense[static_cast<std::size_t>(3 * kTk + s)] = -kInf;
    const auto global = scaled_dot_product_attention_heads(
        q, k, v, kH, {.attn_mask = tensor(dense, {kTq, kTk}, {.dtype = DType::Float64})});
    CHECK(std::isnan(global.output.at({0, 3, 0})));
    CHECK(std::isfinite(global.output.at({0, 2, 0})));
}

TEST_CASE(
    "the attention ops refuse a scale that is not finite in their dtype and bands wider than 2 Tk - 1") {
    Generator gen(22);
    const Tensor q = randn({kB, kTq, kH * kD}, gen), k = randn({kB, kTk, kH * kD}, gen);
    const Tensor v = randn({kB, kTk, kH * kDv}, gen);
    const char* huge = "scale must be finite in float32, got 1e+300";
    CHECK_THROWS_WITH_AS(
        local_scaled_dot_product_attention_heads(q, k, v, kH, starts(), kW, {.scale = 1e300}),
        doctest::Contains(huge), ValueError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_heads(q, k, v, kH, {.scale = 1e300}),
                         doctest::Contains(huge), ValueError);
    const Tensor q1 = randn({kB * kH, kTq, kD}, gen),
                 k1 = randn({kB * kH, kTk, kD}, gen);  // one head per sequence
    CHECK_THROWS_WITH_AS(local_dot_score(q1, k1, starts(), kW, 1e300), doctest::Contains(huge), ValueError);
    CHECK_NOTHROW(
        local_dot_score(to_dtype(q1, DType::Float64), to_dtype(k1, DType::Float64), starts(), kW, 1e300));
    const char* wide = "window width 12 exceeds 2 Tk - 1 = 11";
    CHECK_THROWS_WITH_AS(local_scaled_dot_product_attention_heads(q, k, v, kH, starts(), 12),
                         doctest::Contains(wide), ValueError);
    CHECK_THROWS_WITH_AS(local_dot_score(q1, k1, starts(), 12), doctest::Contains(wide), ValueError);
    CHECK_THROWS_WITH_AS(local_additive_score(q1, k1, randn({kD}, gen), starts(), 12),
                         doctest::Contains(wide), ValueError);
    CHECK_THROWS_WITH_AS(local_dot_score(q1, k1, starts(), std::int64_t{1} << 62),
                         doctest::Contains("local_dot_score: window width"), ValueError);
    CHECK_NOTHROW(local_dot_score(q1, k1, starts(), 11));
}

TEST_CASE("a NaN key the mask hides still makes its rows NaN, as the composed and global paths do") {
    // one head, d = 1: q = [1], k = [1, NaN, 3], key 1 masked
    const Tensor q = tensor({1.0}, {1, 1, 1}, {.dtype = DType::Float64});
    const Tensor k = tensor({1.0, std::nan(""), 3.0}, {1, 3, 1}, {.dtype = DType::Float64});
    const Tensor v = tensor({10.0, 20.0, 30.0}, {1, 3, 1}, {.dtype = DType::Float64});
    const Tensor start = index_tensor({0}, {1, 1});
    const Tensor mask = tensor({0.0, -kInf, 0.0}, {1, 1, 3}, {.dtype = DType::Float64});
    const auto fused =
        local_scaled_dot_product_attention_heads(q, k, v, 1, start, 3, {.band_mask = mask, .scale = 1.0});
    const Tensor composed = softmax(local_dot_score(q, k, start, 3) + mask, -1);
    CHECK(std::isnan(composed.at({0, 0, 0})));
    CHECK(std::isnan(fused.weights.at({0, 0, 0})));
    CHECK(std::isnan(fused.output.at({0, 0, 0})));
    // A NaN or +inf in the mask itself is refused (it would poison the row silently).
    for (const double bad : {std::nan(""), kInf}) {
        const Tensor bad_mask = tensor({0.0, bad, 0.0}, {1, 1, 3}, {.dtype = DType::Float64});
        CHECK_THROWS_WITH_AS(
            local_scaled_dot_product_attention_heads(q, v, v, 1, start, 3, {.band_mask = bad_mask}),
            doctest::Contains("band_mask holds"), ValueError);
    }
}

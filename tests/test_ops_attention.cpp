// The fused attention op: values against a naive reference, the three layouts against each
// other, float64 gradcheck (output and weights, masks, dropout), fully masked rows, errors.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace attograd;
using testing::leave_nan_blocks;
using testing::max_abs_diff;
using testing::rand64;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Naive attention with loops: q [B, h, Tq, d], k [B, h, Tk, d], v [B, h, Tk, dv], mask
// broadcast from [B or 1, h or 1, Tq, Tk] (may be undefined) -> {output, weights}.
std::pair<std::vector<double>, std::vector<double>> reference(const Tensor& q, const Tensor& k,
                                                              const Tensor& v, const Tensor& mask,
                                                              double scale) {
    const auto B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3), Tk = k.size(2), Dv = v.size(3);
    std::vector<double> out(static_cast<std::size_t>(B * H * Tq * Dv), 0.0);
    std::vector<double> weights(static_cast<std::size_t>(B * H * Tq * Tk), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 0; t < Tq; ++t) {
                std::vector<double> s(static_cast<std::size_t>(Tk));
                double top = -kInf;
                for (std::int64_t j = 0; j < Tk; ++j) {
                    double dot = 0.0;
                    for (std::int64_t c = 0; c < D; ++c) dot += q.at({b, h, t, c}) * k.at({b, h, j, c});
                    double m = 0.0;
                    if (mask.defined())
                        m = mask.at({mask.size(0) == 1 ? 0 : b, mask.size(1) == 1 ? 0 : h, t, j});
                    s[static_cast<std::size_t>(j)] = scale * dot + m;
                    top = std::max(top, s[static_cast<std::size_t>(j)]);
                }
                if (top == -kInf) continue;  // fully masked: zero weights and output
                double total = 0.0;
                for (auto& x : s) total += (x = std::exp(x - top));
                for (std::int64_t j = 0; j < Tk; ++j) {
                    const double w = s[static_cast<std::size_t>(j)] / total;
                    weights[static_cast<std::size_t>(((b * H + h) * Tq + t) * Tk + j)] = w;
                    for (std::int64_t c = 0; c < Dv; ++c)
                        out[static_cast<std::size_t>(((b * H + h) * Tq + t) * Dv + c)] +=
                            w * v.at({b, h, j, c});
                }
            }
    return {out, weights};
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

// A float64 mask of `shape` with -inf where `masked(b, h, t, s)` and small values elsewhere.
template <class Fn>
Tensor make_mask(const Shape& shape, Fn masked) {
    std::vector<double> values;
    for (std::int64_t b = 0; b < shape[0]; ++b)
        for (std::int64_t h = 0; h < shape[1]; ++h)
            for (std::int64_t t = 0; t < shape[2]; ++t)
                for (std::int64_t s = 0; s < shape[3]; ++s)
                    values.push_back(masked(b, h, t, s) ? -kInf : 0.1 * static_cast<double>((t + 2 * s) % 3));
    return tensor(values, shape, {.dtype = DType::Float64});
}

// [B, h, T, d] -> [B, T, h * d] (heads side by side) without the tape.
Tensor heads_last(const Tensor& x) {
    NoGradGuard no_grad;
    return reshape(permute(x, {0, 2, 1, 3}), {x.size(0), x.size(2), x.size(1) * x.size(3)});
}

}  // namespace

TEST_CASE("scaled_dot_product_attention matches a naive reference with and without masks") {
    Tensor q = rand64({2, 3, 4, 5}, 1), k = rand64({2, 3, 6, 5}, 2), v = rand64({2, 3, 6, 7}, 3);
    const std::vector<Tensor> masks = {
        Tensor(), make_mask({1, 1, 4, 6}, [](auto, auto, auto t, auto s) { return s > t + 2; }),
        make_mask({2, 1, 4, 6}, [](auto b, auto, auto, auto s) { return s >= 6 - b * 2; }),
        make_mask({2, 3, 4, 6}, [](auto b, auto h, auto t, auto s) { return (b + h + t + s) % 4 == 0; })};
    for (const Tensor& mask : masks) {
        for (const double scale : {1.0 / std::sqrt(5.0), 1.0}) {
            const auto r = scaled_dot_product_attention(q, k, v, {.attn_mask = mask, .scale = scale});
            const auto [out, weights] = reference(q, k, v, mask, scale);
            CHECK(r.output.shape() == Shape{2, 3, 4, 7});
            CHECK(r.weights.shape() == Shape{2, 3, 4, 6});
            CHECK(max_diff(r.output.to_vector<double>(), out) < 1e-13);
            CHECK(max_diff(r.weights.to_vector<double>(), weights) < 1e-13);
        }
    }
}

TEST_CASE("one key and several heads: output and gradients match the reference, stale memory or not") {
    // With Tk = 1 a [B, h, 1, d] operand looks like heads side by side ([B, 1, h d]); K^T and
    // V^T were once taken with its row stride d below its h d columns, which LIBXSMM's
    // transpose refuses without writing, so a stale buffer showed through as NaN.
    for (const std::int64_t tq : {1, 3})
        for (const std::int64_t d : {8, 16}) {
            Tensor q = rand64({2, 2, tq, d}, 30), k = rand64({2, 2, 1, d}, 31), v = rand64({2, 2, 1, d}, 32);
            for (const std::int64_t n : {2 * 2 * d, 2 * 2 * tq, 2 * 2 * tq * d}) leave_nan_blocks({n});
            const auto r = scaled_dot_product_attention(q, k, v);
            const auto [out, weights] = reference(q, k, v, Tensor(), 1.0 / std::sqrt(static_cast<double>(d)));
            CHECK(max_diff(r.output.to_vector<double>(), out) < 1e-13);
            CHECK(max_diff(r.weights.to_vector<double>(), weights) < 1e-13);
            leave_nan_blocks({2 * 2 * d});  // V^T in backward
            sum(r.output * r.output).backward();
            for (const Tensor* x : {&q, &k, &v}) CHECK(all_finite(x->grad()));
            auto attend = [](const std::vector<Tensor>& in) {
                return sum(scaled_dot_product_attention(in[0], in[1], in[2]).output);
            };
            const std::vector<Tensor> inputs{q, k, v};
            CHECK_GRADCHECK(attend, inputs);
        }
}

TEST_CASE("the default scale is 1 / sqrt(d)") {
    Tensor q = rand64({1, 2, 3, 4}, 4), k = rand64({1, 2, 5, 4}, 5), v = rand64({1, 2, 5, 2}, 6);
    const auto r = scaled_dot_product_attention(q, k, v);
    CHECK(max_diff(r.output.to_vector<double>(), reference(q, k, v, Tensor(), 0.5).first) < 1e-13);
}

TEST_CASE("the heads-last and packed layouts give the same results as heads-major") {
    Tensor q = rand64({2, 4, 5, 3}, 7), k = rand64({2, 4, 5, 3}, 8), v = rand64({2, 4, 5, 3}, 9);
    const Tensor mask =
        make_mask({2, 1, 5, 5}, [](auto b, auto, auto t, auto s) { return s > t || s == 4 - b; });
    const auto major = scaled_dot_product_attention(q, k, v, {.attn_mask = mask});
    const auto last = scaled_dot_product_attention_heads(heads_last(q), heads_last(k), heads_last(v), 4,
                                                         {.attn_mask = mask});
    CHECK(last.output.shape() == Shape{2, 5, 12});
    CHECK(max_abs_diff(last.output, heads_last(major.output)) < 1e-14);
    CHECK(max_abs_diff(last.weights, major.weights) < 1e-14);

    Tensor qkv = zeros({2, 5, 36}, {.dtype = DType::Float64});
    const auto lq = heads_last(q).to_vector<double>(), lk = heads_last(k).to_vector<double>(),
               lv = heads_last(v).to_vector<double>();
    double* p = qkv.data<double>();
    for (std::size_t row = 0; row < 10; ++row)
        for (std::size_t c = 0; c < 12; ++c) {
            p[row * 36 + c] = lq[row * 12 + c];
            p[row * 36 + 12 + c] = lk[row * 12 + c];
            p[row * 36 + 24 + c] = lv[row * 12 + c];
        }
    const auto packed = scaled_dot_product_attention_packed(qkv, 4, {.attn_mask = mask});
    CHECK(max_abs_diff(packed.output, last.output) < 1e-14);
    CHECK(max_abs_diff(packed.weights, last.weights) < 1e-14);
}

TEST_CASE(
    "heads side by side with 64 or more rows (copied dense per head) match heads-major, gradients too") {
    // heads-major blocks are read in place; heads-last ones of >= 64 rows are first copied dense
    for (const std::int64_t t : {64, 70}) {
        CAPTURE(t);
        Tensor q = rand64({2, 3, t, 4}, 11), k = rand64({2, 3, t, 4}, 12), v = rand64({2, 3, t, 5}, 13);
        const Tensor r = rand64({2, 3, t, 5}, 14);
        const Tensor mask = make_mask({1, 1, t, t}, [](auto, auto, auto i, auto j) { return j > i; });
        const Tensor ql = heads_last(q).requires_grad_(true), kl = heads_last(k).requires_grad_(true),
                     vl = heads_last(v).requires_grad_(true);
        q.requires_grad_(true);
        k.requires_grad_(true);
        v.requires_grad_(true);
        const auto major = scaled_dot_product_attention(q, k, v, {.attn_mask = mask, .need_weights = false});
        const auto last =
            scaled_dot_product_attention_heads(ql, kl, vl, 3, {.attn_mask = mask, .need_weights = false});
        CHECK(max_abs_diff(last.output, heads_last(major.output)) < 1e-13);
        sum(major.output * r).backward();
        sum(last.output * heads_last(r)).backward();
        CHECK(max_abs_diff(ql.grad(), heads_last(q.grad())) < 1e-13);
        CHECK(max_abs_diff(kl.grad(), heads_last(k.grad())) < 1e-13);
        CHECK(max_abs_diff(vl.grad(), heads_last(v.grad())) < 1e-13);
        CHECK(max_abs_diff(q.grad(), zeros_like(q.grad())) > 1e-3);  // the gradients are not trivially zero
    }
}

TEST_CASE("scaled_dot_product_attention passes gradcheck for q, k, v through output and weights") {
    Tensor q = rand64({2, 2, 3, 4}, 10), k = rand64({2, 2, 5, 4}, 11), v = rand64({2, 2, 5, 3}, 12);
    const std::vector<Tensor> masks = {
        Tensor(), make_mask({1, 1, 3, 5}, [](auto, auto, auto t, auto s) { return s > t + 1; }),
        make_mask({2, 2, 3, 5},
                  [](auto b, auto h, auto t, auto s) { return (b * 7 + h * 3 + t + s) % 3 == 0; })};
    const Tensor r = rand64({2, 2, 3, 5}, 13).detach();
    for (const Tensor& mask : masks) {
        auto output = [&](const std::vector<Tensor>& in) {
            return scaled_dot_product_attention(in[0], in[1], in[2], {.attn_mask = mask}).output;
        };
        CHECK_GRADCHECK(output, (std::vector<Tensor>{q, k, v}));
        auto weights = [&](const std::vector<Tensor>& in) {
            return scaled_dot_product_attention(in[0], in[1], in[2], {.attn_mask = mask}).weights;
        };
        CHECK_GRADCHECK(weights, (std::vector<Tensor>{q, k, v}));
        auto both = [&](const std::vector<Tensor>& in) {
            const auto res =
                scaled_dot_product_attention(in[0], in[1], in[2], {.attn_mask = mask, .scale = 0.7});
            return sum(res.output) + sum(res.weights * r);
        };
        CHECK_GRADCHECK(both, (std::vector<Tensor>{q, k, v}));
    }
}

TEST_CASE("heads-last and packed attention pass gradcheck") {
    Tensor q = rand64({2, 3, 6}, 14), k = rand64({2, 4, 6}, 15), v = rand64({2, 4, 4}, 16);
    const Tensor mask = make_mask({2, 1, 1, 4}, [](auto b, auto, auto, auto s) { return s == 3 - b; });
    auto heads = [&](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention_heads(in[0], in[1], in[2], 2, {.attn_mask = mask}).output;
    };
    CHECK_GRADCHECK(heads, (std::vector<Tensor>{q, k, v}));
    Tensor qkv = rand64({2, 4, 12}, 17);
    const Tensor causal = make_mask({1, 1, 4, 4}, [](auto, auto, auto t, auto s) { return s > t; });
    const Tensor r = rand64({2, 2, 4, 4}, 18).detach();
    auto packed = [&](const std::vector<Tensor>& in) {
        const auto res = scaled_dot_product_attention_packed(in[0], 2, {.attn_mask = causal});
        return sum(res.output * res.output) + sum(res.weights * r);
    };
    CHECK_GRADCHECK(packed, std::vector<Tensor>{qkv});
}

TEST_CASE("the kernels write every element of their outputs and gradients, stale memory or not") {
    // Outputs and gradients are allocated uninitialised and each (batch, head) block zeroes its
    // own part: NaN left in the buffers they are given must not show through.
    Tensor qkv = rand64({2, 4, 12}, 19);
    const Tensor r = rand64({2, 2, 4, 4}, 20).detach();
    leave_nan_blocks({2, 4, 4});  // the output [B, T, E] (qkv is [B, T, 3 E])
    const auto res = scaled_dot_product_attention_packed(qkv, 2, {});
    for (const double o : res.output.to_vector<double>()) CHECK(std::isfinite(o));
    // Through the weights alone, v (the last third of each row) gets exactly zero.
    const Tensor loss = sum(res.weights * r);
    leave_nan_blocks(qkv.shape());  // the gradient's size
    loss.backward();
    const auto g = qkv.grad().to_vector<double>();
    for (std::size_t i = 0; i < g.size(); ++i) {
        CHECK(std::isfinite(g[i]));
        if (i % 12 >= 8) CHECK(g[i] == 0.0);
    }
    auto weights_only = [&](const std::vector<Tensor>& in) {
        return sum(scaled_dot_product_attention_packed(in[0], 2, {}).weights * r);
    };
    CHECK_GRADCHECK(weights_only, std::vector<Tensor>{qkv});
}

TEST_CASE("a fully masked row gives zero weights, zero output and finite gradients") {
    Tensor q = rand64({1, 2, 3, 4}, 19), k = rand64({1, 2, 5, 4}, 20), v = rand64({1, 2, 5, 4}, 21);
    // Row 1 of head 0 masks every key.
    const Tensor mask =
        make_mask({1, 2, 3, 5}, [](auto, auto h, auto t, auto s) { return h == 0 && (t == 1 || s == 0); });
    const auto res = scaled_dot_product_attention(q, k, v, {.attn_mask = mask});
    for (std::int64_t s = 0; s < 5; ++s) CHECK(res.weights.at({0, 0, 1, s}) == 0.0);
    for (std::int64_t c = 0; c < 4; ++c) CHECK(res.output.at({0, 0, 1, c}) == 0.0);
    CHECK(res.weights.at({0, 0, 0, 0}) == 0.0);
    sum(res.output).backward();
    for (const Tensor& x : {q, k, v})
        for (const double g : x.grad().to_vector<double>()) CHECK(std::isfinite(g));
    auto fn = [&](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention(in[0], in[1], in[2], {.attn_mask = mask}).output;
    };
    CHECK_GRADCHECK(fn, (std::vector<Tensor>{q, k, v}));
}

TEST_CASE("dropout drops weights with probability p, is seeded, and is off in eval") {
    // One key: the weight is 1, so each output row is 0 or v / (1 - p).
    Tensor q = rand64({4, 2, 500, 3}, 22).detach(), k = rand64({4, 2, 1, 3}, 23).detach();
    Tensor v = ones({4, 2, 1, 1}, {.dtype = DType::Float64});
    Generator gen(5);
    const auto res =
        scaled_dot_product_attention(q, k, v, {.dropout_p = 0.25, .training = true, .generator = &gen});
    std::int64_t zeros_seen = 0;
    for (const double o : res.output.to_vector<double>()) {
        CHECK((o == 0.0 || std::abs(o - 1.0 / 0.75) < 1e-15));
        zeros_seen += o == 0.0;
    }
    CHECK(std::abs(static_cast<double>(zeros_seen) / 4000.0 - 0.25) < 0.03);  // 4000 draws: sd 0.007
    for (const double w : res.weights.to_vector<double>()) CHECK(w == 1.0);   // before dropout
    Generator same(5);
    const auto again =
        scaled_dot_product_attention(q, k, v, {.dropout_p = 0.25, .training = true, .generator = &same});
    CHECK(max_abs_diff(res.output, again.output) == 0.0);
    const auto eval =
        scaled_dot_product_attention(q, k, v, {.dropout_p = 0.25, .training = false, .generator = &gen});
    for (const double o : eval.output.to_vector<double>()) CHECK(o == 1.0);
    const auto all =
        scaled_dot_product_attention(q, k, v, {.dropout_p = 1.0, .training = true, .generator = &gen});
    for (const double o : all.output.to_vector<double>()) CHECK(o == 0.0);
}

TEST_CASE("attention with dropout passes gradcheck (the same seed on every call)") {
    Tensor q = rand64({2, 2, 4, 3}, 24), k = rand64({2, 2, 6, 3}, 25), v = rand64({2, 2, 6, 2}, 26);
    auto fn = [&](const std::vector<Tensor>& in) {
        Generator gen(42);
        return scaled_dot_product_attention(in[0], in[1], in[2],
                                            {.dropout_p = 0.4, .training = true, .generator = &gen})
            .output;
    };
    CHECK_GRADCHECK(fn, (std::vector<Tensor>{q, k, v}));
}

TEST_CASE("attention records tape entries that backward releases") {
    Tensor qkv = rand64({2, 3, 6}, 27);
    Tensor out = scaled_dot_product_attention_packed(qkv, 1).output;  // weights dropped at once
    sum(out).backward();
    CHECK(autograd::tape_size() == 0);
    CHECK(qkv.grad().shape() == Shape{2, 3, 6});
    // Weights kept through backward keep their (unused) entry until they die and the next
    // backward sweeps it.
    Tensor x = rand64({1, 2, 6}, 28);
    {
        const auto res = scaled_dot_product_attention_packed(x, 1);
        sum(res.output).backward();
        CHECK(autograd::tape_size() == 1);
    }
    Tensor y = scaled_dot_product_attention_packed(x, 1).output;
    sum(y).backward();
    CHECK(autograd::tape_size() == 0);
    NoGradGuard no_grad;
    const auto res = scaled_dot_product_attention_packed(qkv, 1);
    CHECK_FALSE(res.output.requires_grad());
    CHECK(autograd::tape_size() == 0);
}

TEST_CASE("attention rejects bad shapes, dtypes and options with clear messages") {
    Tensor q = rand64({2, 2, 3, 4}, 1), k = rand64({2, 2, 5, 4}, 2), v = rand64({2, 2, 5, 3}, 3);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(reshape(q, {4, 3, 4}), k, v),
                         doctest::Contains("expected rank-4 inputs, got [4, 3, 4]"), ShapeError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, rand64({2, 2, 5, 3}, 4), v),
                         doctest::Contains("q and k widths differ: q [2, 2, 3, 4], k [2, 2, 5, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, rand64({2, 2, 6, 3}, 5)),
                         doctest::Contains("k and v lengths differ"), ShapeError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, rand64({2, 3, 5, 4}, 6), v),
                         doctest::Contains("batch and head sizes differ"), ShapeError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(to_dtype(q, DType::Float32), k, v),
                         doctest::Contains("dtypes differ"), DTypeError);
    CHECK_THROWS_WITH_AS(
        scaled_dot_product_attention(q, k, v, {.attn_mask = zeros({3, 4}, {.dtype = DType::Float64})}),
        doctest::Contains("attn_mask [3, 4] does not broadcast to the scores [B, h, Tq, Tk] = [2, 2, 3, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.attn_mask = zeros({3, 5})}),
                         doctest::Contains("attn_mask must be an additive float mask"), DTypeError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.attn_mask = rand64({3, 5}, 7)}),
                         doctest::Contains("attn_mask receives no gradient"), ValueError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(
                             q, k, v, {.attn_mask = full({3, 5}, std::nan(""), {.dtype = DType::Float64})}),
                         doctest::Contains("attn_mask holds nan at index 0"), ValueError);
    CHECK_THROWS_WITH_AS(
        scaled_dot_product_attention(
            q, k, v,
            {.attn_mask = full({3, 5}, std::numeric_limits<double>::infinity(), {.dtype = DType::Float64})}),
        doctest::Contains("attn_mask holds inf"), ValueError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.dropout_p = 1.5}),
                         doctest::Contains("dropout_p must be in [0, 1], got 1.5"), ValueError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.scale = kInf}),
                         doctest::Contains("scale must be finite"), ValueError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, Tensor()), doctest::Contains("undefined tensor"),
                         ValueError);
    Tensor x = rand64({2, 3, 6}, 8);
    CHECK_THROWS_WITH_AS(
        scaled_dot_product_attention_heads(x, x, x, 4),
        doctest::Contains("num_heads 4 must divide the widths of q [2, 3, 6] and v [2, 3, 6]"), ValueError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_heads(x, rand64({2, 3, 4}, 9), x, 2),
                         doctest::Contains("q and k widths differ"), ShapeError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_packed(rand64({2, 3, 7}, 10), 1),
                         doctest::Contains("width divisible by 3, got [2, 3, 7]"), ShapeError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_packed(x, 4),
                         doctest::Contains("num_heads 4 must divide E = 2"), ValueError);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_packed(index_tensor({1, 2, 3}, {1, 1, 3}), 1),
                         doctest::Contains("expected float32 or float64 inputs, got int64"), DTypeError);
}

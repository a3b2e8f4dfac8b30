// The flash path of the fused attention op (SdpaOptions::need_weights = false): equal to the
// kernel that keeps the [Tq, Tk] weights over several query and key tiles, for every layout,
// mask, scale and dropout; float64 gradcheck; fully masked rows; multi-head attention's masks.
#include "attention_helpers.hpp"
#include "fixtures.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <omp.h>

using namespace attograd;
using testing::max_abs_diff;
using testing::rand64;

namespace {

// Keys from which calls without need_weights take the flash path (kFlashMinKeys in
// core/ops_attention.cpp is 2048), plus a partial key tile.
constexpr std::int64_t kLong = 2100;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A float64 additive mask of `shape` ([B or 1, h or 1, Tq, Tk]): -inf where `masked`, small
// finite values elsewhere.
Tensor additive_mask(
    const Shape& shape,
    const std::function<bool(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>& masked) {
    Tensor m = empty(shape, {.dtype = DType::Float64});
    double* p = m.data<double>();
    for (std::int64_t b = 0; b < shape[0]; ++b)
        for (std::int64_t h = 0; h < shape[1]; ++h)
            for (std::int64_t t = 0; t < shape[2]; ++t)
                for (std::int64_t s = 0; s < shape[3]; ++s)
                    *p++ = masked(b, h, t, s) ? -kInf : 0.05 * static_cast<double>((3 * t + s) % 5);
    return m;
}

// Output and input gradients of `attend` at need_weights false and true, on a fixed random
// output weighting; returns the largest difference between the two.
double flash_vs_kept(const std::function<Tensor(const std::vector<Tensor>&, bool)>& attend,
                     const std::vector<Tensor>& inputs) {
    double worst = 0.0;
    std::vector<std::vector<Tensor>> grads(2);
    std::vector<Tensor> outputs(2);
    for (int kept = 0; kept < 2; ++kept) {
        std::vector<Tensor> in;
        for (const Tensor& x : inputs) in.push_back(x.detach().requires_grad_(true));
        outputs[kept] = attend(in, kept == 1);
        const Tensor r = rand64(outputs[kept].shape(), 77).detach();
        sum(outputs[kept] * r).backward();
        for (const Tensor& x : in) grads[kept].push_back(x.grad());
    }
    worst = max_abs_diff(outputs[0], outputs[1]);
    for (std::size_t i = 0; i < inputs.size(); ++i)
        worst = std::max(worst, max_abs_diff(grads[0][i], grads[1][i]));
    return worst;
}

}  // namespace

TEST_CASE(
    "flash attention equals the kernel that keeps the weights over several tiles, to 1e-12") {  // Tq 70 and
                                                                                                // Tk 2100:
                                                                                                // two query
                                                                                                // tiles and
                                                                                                // 17 key
                                                                                                // tiles, the
                                                                                                // last ones
                                                                                                // partial.
    const std::int64_t B = 2, H = 2, Tq = 70, Tk = kLong, D = 8;
    const Tensor q = rand64({B, H, Tq, D}, 1), k = rand64({B, H, Tk, D}, 2), v = rand64({B, H, Tk, 5}, 3);
    const std::vector<std::pair<const char*, Tensor>> masks = {
        {"none", Tensor()},
        {"causal [Tq, Tk]",
         additive_mask({1, 1, Tq, Tk}, [](auto, auto, auto t, auto s) { return s > t + 200; })},
        {"[B, h, Tq, Tk] with fully masked rows", additive_mask({B, H, Tq, Tk},
                                                                [](auto b, auto h, auto t, auto s) {
                                                                    return t % 17 == 3 ||
                                                                           (b * 5 + h * 3 + t + s) % 4 == 0;
                                                                })},
        {"key padding [B, 1, 1, Tk]",
         additive_mask({B, 1, 1, Tk}, [](auto b, auto, auto, auto s) { return s >= 2050 - 1000 * b; })},
    };
    for (const auto& [name, mask] : masks)
        for (const std::optional<double> scale : {std::optional<double>(), std::optional<double>(1.0)})
            for (const bool dropout : {false, true}) {
                INFO(name, " scale ", scale.value_or(-1.0), " dropout ", dropout);
                auto attend = [&, mask = mask](const std::vector<Tensor>& in, bool kept) {
                    Generator gen(9);
                    return scaled_dot_product_attention(in[0], in[1], in[2],
                                                        {.attn_mask = mask,
                                                         .scale = scale,
                                                         .dropout_p = dropout ? 0.3 : 0.0,
                                                         .training = dropout,
                                                         .generator = &gen,
                                                         .need_weights = kept})
                        .output;
                };
                CHECK(flash_vs_kept(attend, {q, k, v}) < 1e-12);
            }
}

TEST_CASE("flash attention equals the kept-weights kernel in the heads-last and packed layouts") {
    const Tensor q = rand64({2, 130, 12}, 4), k = rand64({2, kLong, 12}, 5), v = rand64({2, kLong, 6}, 6);
    auto heads = [](const std::vector<Tensor>& in, bool kept) {
        return scaled_dot_product_attention_heads(in[0], in[1], in[2], 3, {.need_weights = kept}).output;
    };
    CHECK(flash_vs_kept(heads, {q, k, v}) < 1e-12);
    const Tensor qkv = rand64({1, kLong, 6}, 7);
    const Tensor causal =
        additive_mask({1, 1, kLong, kLong}, [](auto, auto, auto t, auto s) { return s > t; });
    auto packed = [&](const std::vector<Tensor>& in, bool kept) {
        return scaled_dot_product_attention_packed(in[0], 1, {.attn_mask = causal, .need_weights = kept})
            .output;
    };
    CHECK(flash_vs_kept(packed, {qkv}) < 1e-12);
}

TEST_CASE("flash attention passes gradcheck across key tiles, with a mask and with dropout") {
    // Few inputs but every key tile: q [1, 1, 2, 2], k [1, 1, Tk, 2], v [1, 1, Tk, 1].
    const Tensor q = rand64({1, 1, 2, 2}, 8), k = rand64({1, 1, kLong, 2}, 9),
                 v = rand64({1, 1, kLong, 1}, 10);
    const Tensor mask = additive_mask(
        {1, 1, 2, kLong}, [](auto, auto, auto t, auto s) { return (t + s) % 5 == 0 || s > 2000 + t; });
    auto masked = [&](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention(in[0], in[1], in[2],
                                            {.attn_mask = mask, .scale = 0.8, .need_weights = false})
            .output;
    };
    CHECK_GRADCHECK(masked, (std::vector<Tensor>{q, k, v}));
    auto dropped = [&](const std::vector<Tensor>& in) {
        Generator gen(3);
        return scaled_dot_product_attention(
                   in[0], in[1], in[2],
                   {.dropout_p = 0.25, .training = true, .generator = &gen, .need_weights = false})
            .output;
    };
    CHECK_GRADCHECK(dropped, (std::vector<Tensor>{q, k, v}));
}

TEST_CASE(
    "flash attention returns no weights and gives a fully masked row zero output and finite gradients") {
    Tensor q = rand64({1, 1, 3, 4}, 11), k = rand64({1, 1, kLong, 4}, 12), v = rand64({1, 1, kLong, 3}, 13);
    const Tensor mask =
        additive_mask({1, 1, 3, kLong}, [](auto, auto, auto t, auto s) { return t == 1 || s < 1500; });
    const auto res = scaled_dot_product_attention(q, k, v, {.attn_mask = mask, .need_weights = false});
    CHECK_FALSE(res.weights.defined());
    for (std::int64_t c = 0; c < 3; ++c) CHECK(res.output.at({0, 0, 1, c}) == 0.0);
    sum(res.output).backward();
    for (const Tensor& x : {q, k, v}) CHECK(all_finite(x.grad()));
}

TEST_CASE("a NaN in a query or a key shows in the flash output exactly where the kept kernel's does") {
    for (const bool in_key : {false, true}) {
        Tensor q = rand64({1, 2, 3, 4}, 14), k = rand64({1, 2, kLong, 4}, 15),
               v = rand64({1, 2, kLong, 3}, 16);
        (in_key ? k : q).data<double>()[in_key ? 1900 * 4 + 2 : 4 + 1] = std::nan("");  // head 0
        const auto flash = scaled_dot_product_attention(q, k, v, {.need_weights = false});
        const auto kept = scaled_dot_product_attention(q, k, v, {.need_weights = true});
        const auto f = flash.output.to_vector<double>(), w = kept.output.to_vector<double>();
        REQUIRE(f.size() == w.size());
        std::size_t nan_count = 0;
        for (std::size_t i = 0; i < f.size(); ++i) {
            CHECK(std::isnan(f[i]) == std::isnan(w[i]));
            if (std::isnan(f[i]))
                ++nan_count;
            else
                CHECK(std::abs(f[i] - w[i]) < 1e-12);
        }
        // a NaN query: its row of head 0; a NaN key: every row of head 0 (head 1 stays finite)
        CHECK(nan_count == (in_key ? 3u * 3u : 3u));
        sum(flash.output).backward();
        CHECK_FALSE(all_finite(in_key ? k.grad() : q.grad()));
    }
}

TEST_CASE("non-finite inputs give the same non-finite outputs and gradients on both paths") {
    // A +inf query makes a row's scores +inf, -inf and NaN at once; the row is NaN, and so is
    // dV = P^T dO everywhere (backward once rebuilt P from a NaN log-sum-exp as finite values).
    const auto nonfinite = [](const Tensor& t) {
        std::vector<bool> out;
        for (const double x : t.to_vector<double>()) out.push_back(!std::isfinite(x));
        return out;
    };
    for (const int where : {0, 1, 2}) {  // +inf in a query, NaN in a query, +inf in a key
        std::vector<std::vector<bool>> masks[2];
        for (const bool kept : {false, true}) {
            Tensor q = rand64({1, 2, 3, 4}, 17), k = rand64({1, 2, kLong, 4}, 18),
                   v = rand64({1, 2, kLong, 3}, 19);
            if (where == 0) q.data<double>()[4 + 2] = kInf;
            if (where == 1) q.data<double>()[12 + 4 + 1] = std::nan("");  // head 1
            if (where == 2) k.data<double>()[700 * 4 + 3] = kInf;
            const auto r = scaled_dot_product_attention(q, k, v, {.need_weights = kept});
            sum(r.output).backward();
            for (const Tensor& t : {r.output, q.grad(), k.grad(), v.grad()})
                masks[kept].push_back(nonfinite(t));
        }
        INFO("case ", where);
        for (std::size_t i = 0; i < 4; ++i) CHECK(masks[0][i] == masks[1][i]);
        CHECK(std::count(masks[0][0].begin(), masks[0][0].end(), true) > 0);
    }
}

TEST_CASE("multi-head attention without weights equals it with weights for every mask kind") {
    // Tq 3, Tk kLong, h 2: bool and float attn_mask [Tq, Tk] and [B * h, Tq, Tk], bool and float
    // key_padding_mask [B, Tk], is_causal; none masks a whole row.
    const std::int64_t B = 2, H = 2, Tq = 3, Tk = kLong;
    auto bools = [](const Shape& shape, auto masked) {
        Tensor t = empty(shape, {.dtype = DType::Bool});
        for (std::int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = masked(i);
        return t;
    };
    const std::vector<std::pair<const char*, nn::AttentionArgs>> cases = {
        {"bool attn_mask [Tq, Tk]", {.attn_mask = bools({Tq, Tk}, [](auto i) { return i % 3 == 1; })}},
        {"float attn_mask [B * h, Tq, Tk]", {.attn_mask = rand64({B * H, Tq, Tk}, 31).detach()}},
        {"bool key_padding_mask", {.key_padding_mask = bools({B, Tk}, [](auto i) { return i % Tk > 1000; })}},
        {"float key_padding_mask", {.key_padding_mask = rand64({B, Tk}, 32).detach()}},
        {"is_causal", {.is_causal = true}},
    };
    const Tensor query = rand64({B, Tq, 4}, 33), memory = rand64({B, Tk, 4}, 34);
    for (const auto& [name, args] : cases) {
        INFO(name);
        Generator gen(21);
        nn::MultiHeadAttention mha({.embed_dim = 4, .num_heads = H, .dtype = DType::Float64}, gen);
        auto attend = [&, args = args](const std::vector<Tensor>& in, bool kept) {
            nn::AttentionArgs a = args;
            a.need_weights = kept;
            return mha.forward(in[0], in[1], in[1], a).output;
        };
        CHECK(flash_vs_kept(attend, {query, memory}) < 1e-12);
    }
}

TEST_CASE("flash attention gives the same bits on one thread as on two") {
    // One (batch, head) block: two threads split its backward by key tiles and query tiles.
    std::vector<std::vector<float>> results;
    for (const int threads : {1, 2}) {
        omp_set_num_threads(threads);
        Generator gen(30);
        Tensor q = randn({1, 1, 300, 16}, gen, {.requires_grad = true});
        Tensor k = randn({1, 1, kLong, 16}, gen, {.requires_grad = true});
        Tensor v = randn({1, 1, kLong, 16}, gen, {.requires_grad = true});
        const Tensor out = scaled_dot_product_attention(q, k, v, {.need_weights = false}).output;
        sum(out * out).backward();
        std::vector<float> all = out.to_vector<float>();
        for (const Tensor& x : {q, k, v})
            for (const float g : x.grad().to_vector<float>()) all.push_back(g);
        results.push_back(all);
    }
    omp_set_num_threads(omp_get_num_procs());
    REQUIRE(results[0].size() == results[1].size());
    std::size_t first_diff = results[0].size();
    for (std::size_t i = 0; i < results[0].size() && first_diff == results[0].size(); ++i)
        if (results[0][i] != results[1][i]) first_diff = i;
    INFO("first difference at ", first_diff, " of ", results[0].size());
    CHECK(first_diff == results[0].size());
}

// The fused local attention's query blocks (GEMMs over each block's keys) against the
// banded kernels composed per head: lengths that are not a multiple of the block, D = 0, D >= T,
// padding, Tq != Tk, scattered windows, and the same bits on 1 and 2 threads.
#include "core/ops_local_sdpa.hpp"
#include "fixtures.hpp"
#include "helpers.hpp"

#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
    std::int64_t b = 2, h = 2, tq = 45, tk = 45, d = 4, window = 3;
    bool padded = false, scattered = false, with_factor = false;
    std::int64_t band_half() const { return std::min(window, tk - 1); }
    std::int64_t width() const { return 2 * band_half() + 1; }
};

// [B, T, h * d] -> [B * h, T, d] and back.
Tensor split(const Tensor& x, std::int64_t h) {
    const std::int64_t b = x.size(0), t = x.size(1), d = x.size(2) / h;
    return reshape(permute(reshape(x, {b, t, h, d}), {0, 2, 1, 3}), {b * h, t, d});
}
Tensor merge(const Tensor& x, std::int64_t h) {
    const std::int64_t b = x.size(0) / h, t = x.size(1), d = x.size(2);
    return reshape(permute(reshape(x, {b, h, t, d}), {0, 2, 1, 3}), {b, t, h * d});
}

// local-m's sliding windows (start floor(t Tk / Tq) - D), or windows placed anywhere in the keys
// (as local-p's predicted centres may be).
Tensor starts(const Case& c) {
    std::vector<std::int64_t> s;
    for (std::int64_t n = 0; n < c.b * c.h; ++n)
        for (std::int64_t t = 0; t < c.tq; ++t)
            s.push_back(c.scattered ? (t * 37 + n * 11) % (c.tk + 2) - c.band_half() - 1
                                    : t * c.tk / c.tq - c.band_half());
    return index_tensor(s, {c.b * c.h, c.tq});
}

// -inf in slots whose key lies outside [0, Tk) (the composed path needs them), and with padding
// on the keys of sequence b from Tk - 7 b - 5 on (sequence 1 pads most; some of its queries see
// only padded keys).
Tensor outside_mask(const Case& c, const Tensor& start, bool padding_only) {
    std::vector<double> m;
    for (std::int64_t n = 0; n < c.b * c.h; ++n)
        for (std::int64_t t = 0; t < c.tq; ++t)
            for (std::int64_t j = 0; j < c.width(); ++j) {
                const auto key = static_cast<std::int64_t>(start.at({n, t})) + j;
                const bool outside = key < 0 || key >= c.tk;
                const bool padded = c.padded && key >= c.tk - 7 * (n / c.h) - 5;
                m.push_back(padded || (!padding_only && outside) ? -kInf : 0.0);
            }
    return tensor(m, {c.b * c.h, c.tq, c.width()}, {.dtype = DType::Float64});
}

struct Run {
    SdpaResult r;
    std::vector<Tensor> grads;  // q, k, v (and the factor)
};

// A loss reading the output and the weights, then its gradients.
Run run(const Case& c, bool fused) {
    Tensor q = rand64({c.b, c.tq, c.h * c.d}, 1), k = rand64({c.b, c.tk, c.h * c.d}, 2);
    Tensor v = rand64({c.b, c.tk, c.h * c.d}, 3), f = rand64({c.b * c.h, c.tq, c.width()}, 4);
    const Tensor s = starts(c);
    const Tensor padding = c.padded ? outside_mask(c, s, true) : Tensor();
    const Tensor factor = c.with_factor ? f : Tensor();
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
    Run out;
    if (fused) {
        out.r = local_scaled_dot_product_attention_heads(q, k, v, c.h, s, c.width(),
                                                         {.band_mask = padding, .factor = factor});
    } else {
        const Tensor scores =
            local_dot_score(split(q, c.h), split(k, c.h), s, c.width(), scale) + outside_mask(c, s, false);
        Tensor weights = softmax(scores, -1);  // a row of -inf only: all 0, as the fused op
        if (factor.defined()) weights = weights * factor;
        out.r = {merge(local_weighted_sum(weights, split(v, c.h), s), c.h), weights};
    }
    const Tensor loss = sum(out.r.output * rand64(out.r.output.shape(), 5).detach()) +
                        sum(out.r.weights * rand64(out.r.weights.shape(), 6).detach());
    loss.backward();
    out.grads = {q.grad(), k.grad(), v.grad()};
    if (c.with_factor) out.grads.push_back(f.grad());
    return out;
}

void check_equal(const Case& c) {
    INFO("Tq " << c.tq << " Tk " << c.tk << " D " << c.window << " padded " << c.padded << " scattered "
               << c.scattered << " factor " << c.with_factor);
    const Run fused = run(c, true), ref = run(c, false);
    CHECK(max_abs_diff(fused.r.output, ref.r.output) < 1e-12);
    CHECK(max_abs_diff(fused.r.weights, ref.r.weights) < 1e-12);
    for (std::size_t i = 0; i < ref.grads.size(); ++i) {
        INFO("gradient " << i);
        REQUIRE(all_finite(fused.grads[i]));
        CHECK(max_abs_diff(fused.grads[i], ref.grads[i]) < 1e-12);
    }
}

}  // namespace

TEST_CASE("blocked local attention equals the composed banded kernels: lengths, D = 0, D >= T, padding") {
    for (const std::int64_t t : {1, 31, 45, 77})
        for (const std::int64_t window : {0, 3, 8, 100})
            for (const bool padded : {false, true})
                check_equal({.tq = t, .tk = t, .window = window, .padded = padded});
}

TEST_CASE("blocked local attention equals the composed kernels: Tq != Tk, scattered windows, a factor") {
    check_equal({.tq = 45, .tk = 90, .window = 4, .padded = true});
    check_equal({.tq = 70, .tk = 33, .window = 2, .with_factor = true});
    check_equal({.tq = 77, .tk = 77, .window = 3, .scattered = true, .with_factor = true});
    check_equal({.tq = 64, .tk = 64, .window = 8, .padded = true, .with_factor = true});
}

TEST_CASE("a padded sequence's fully masked queries get zero weights and zero output on the blocks") {
    // sequence 1 pads keys 33..44: with D = 3, queries 36..44 (heads 2 and 3) see only padded keys
    const Case c{.tq = 45, .tk = 45, .window = 3, .padded = true};
    const Run fused = run(c, true);
    for (std::int64_t t = 36; t < 45; ++t) {
        for (std::int64_t j = 0; j < c.width(); ++j) {
            CHECK(fused.r.weights.at({2, t, j}) == 0.0);
            CHECK(fused.r.weights.at({3, t, j}) == 0.0);
        }
        for (std::int64_t col = 0; col < c.h * c.d; ++col) CHECK(fused.r.output.at({1, t, col}) == 0.0);
    }
    CHECK(fused.r.weights.at({2, 35, 0}) > 0.0);  // query 35 still sees key 32
}

TEST_CASE("blocked local attention gives the same bits on 1 and 2 threads, forward and backward") {
    auto compute = [] {
        Generator gen(7);
        Tensor qkv = randn({2, 300, 3 * 64}, gen, {.requires_grad = true});
        std::vector<std::int64_t> s;
        for (std::int64_t n = 0; n < 8; ++n)
            for (std::int64_t t = 0; t < 300; ++t) s.push_back(t - 8);
        const SdpaResult r = local_scaled_dot_product_attention_packed(qkv, 4, index_tensor(s, {8, 300}), 17);
        sum(r.output * randn(r.output.shape(), gen)).backward();
        std::vector<float> bits = r.output.to_vector<float>();
        const std::vector<float> grad = qkv.grad().to_vector<float>();
        bits.insert(bits.end(), grad.begin(), grad.end());
        return bits;
    };
    omp_set_num_threads(1);
    const std::vector<float> one = compute();
    omp_set_num_threads(2);
    const std::vector<float> two = compute();
    omp_set_num_threads(omp_get_num_procs());
    REQUIRE(one.size() == two.size());
    CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
}

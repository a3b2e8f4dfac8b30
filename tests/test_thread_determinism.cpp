// The same seed gives the same bits on 1, 2 and 4 threads: the ops whose
// reductions are split over threads, and small models trained with the library.
#include "attograd.hpp"
#include "core/detail/parallel.hpp"
#include "optim/optim.hpp"

#include <doctest/doctest.h>

#include <omp.h>

#include <functional>
#include <string>
#include <vector>

using namespace attograd;

namespace {

constexpr int kThreadCounts[] = {1, 2, 4};

/// The bytes of every tensor in `tensors`, in order.
std::vector<unsigned char> bytes_of(const std::vector<Tensor>& tensors) {
    std::vector<unsigned char> all;
    for (const Tensor& t : tensors) {
        const auto* p = static_cast<const unsigned char*>(t.raw_data());
        all.insert(all.end(), p, p + static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
    }
    return all;
}

/// Index of the first differing byte, or the size when `a` and `b` are equal.
std::size_t first_difference(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
    if (a.size() != b.size()) return 0;
    std::size_t i = 0;
    while (i < a.size() && a[i] == b[i]) ++i;
    return i;
}

/// Runs `compute` on each thread count and checks that 2 and 4 threads give 1 thread's bytes.
void check_same_on_every_thread_count(const std::function<std::vector<unsigned char>()>& compute) {
    std::vector<std::vector<unsigned char>> results;
    for (const int threads : kThreadCounts) {
        omp_set_num_threads(threads);
        REQUIRE(omp_get_max_threads() == threads);
        results.push_back(compute());
    }
    omp_set_num_threads(omp_get_num_procs());
    REQUIRE(!results[0].empty());
    for (std::size_t i = 1; i < results.size(); ++i) {
        INFO(kThreadCounts[i], " threads: first differing byte ", first_difference(results[0], results[i]),
             " of ", results[0].size());
        CHECK(first_difference(results[0], results[i]) == results[0].size());
    }
}

}  // namespace

TEST_CASE("matmul: a product split into row blocks gives the same bits on any thread count") {
    // [300, 256] x [256, 200]: above the GEMM threshold, so it is cut into row blocks; backward
    // adds the weight-shaped product dW = A^T dY over 300 rows.
    CHECK(300 * 200 * 256 >= 2 * detail::kMinParallelGemmWork);
    for (const DType dtype : {DType::Float32, DType::Float64}) {
        check_same_on_every_thread_count([dtype] {
            Generator gen(5);
            Tensor a = randn({300, 256}, gen, {.dtype = dtype, .requires_grad = true});
            Tensor b = randn({256, 200}, gen, {.dtype = dtype, .requires_grad = true});
            const Tensor y = matmul(a, b);
            sum(y * y).backward();
            return bytes_of({y, a.grad(), b.grad()});
        });
    }
}

TEST_CASE(
    "local_dot_score and local_weighted_sum: backward's scattered sums are the same on any thread count") {
    // [N 8, T 256, D 32], band of 9: the backward scatters into dk / dv in blocks
    const std::int64_t n = 8, t = 256, d = 32, width = 9;
    CHECK(detail::blocks_for(n * t * width * d, detail::kMinParallelWork) > 1);
    check_same_on_every_thread_count([&] {
        Generator gen(6);
        Tensor q = randn({n, t, d}, gen, {.requires_grad = true});
        Tensor k = randn({n, t, d}, gen, {.requires_grad = true});
        Tensor v = randn({n, t, d}, gen, {.requires_grad = true});
        std::vector<std::int64_t> first;  // centred windows, cut at both ends
        for (std::int64_t b = 0; b < n; ++b)
            for (std::int64_t i = 0; i < t; ++i) first.push_back(i - width / 2);
        const Tensor start = index_tensor(first, {n, t});
        const Tensor scores = local_dot_score(q, k, start, width, 0.25);
        const Tensor out = local_weighted_sum(softmax(scores, -1), v, start);
        sum(out * out).backward();
        return bytes_of({out, q.grad(), k.grad(), v.grad()});
    });
}

TEST_CASE("additive_score: backward's scattered sums are the same on any thread count") {
    // uq [N 4, Tq 64, H 32], wx [N 4, Tk 64, H 32]: all pairs, scattered into dwx and dv
    const std::int64_t n = 4, t = 64, h = 32;
    CHECK(detail::blocks_for(n * t * t * h, detail::kMinParallelTranscendentalWork) > 1);
    check_same_on_every_thread_count([&] {
        Generator gen(7);
        Tensor uq = randn({n, t, h}, gen, {.requires_grad = true});
        Tensor wx = randn({n, t, h}, gen, {.requires_grad = true});
        Tensor v = randn({h}, gen, {.requires_grad = true});
        const Tensor scores = additive_score(uq, wx, v);
        sum(scores * scores).backward();
        return bytes_of({scores, uq.grad(), wx.grad(), v.grad()});
    });
}

TEST_CASE(
    "embedding: rows copied and gradients scattered over threads give the same bits on any thread count") {
    // 4000 lookups of 300 columns from 7 rows: each row repeats ~570 times, so backward's adds
    // into one weight row come from many lookups; it splits the columns over threads.
    const std::int64_t rows = 7, columns = 300, lookups = 4000;
    CHECK(lookups * columns >= 2 * detail::kMinParallelWork);
    std::vector<std::int64_t> ids;
    for (std::int64_t i = 0; i < lookups; ++i) ids.push_back((i * 5 + i / 3) % rows);
    const Tensor index = index_tensor(ids, {lookups});
    check_same_on_every_thread_count([&] {
        Generator gen(8);
        Tensor weight = randn({rows, columns}, gen, {.dtype = DType::Float64, .requires_grad = true});
        const Tensor up = randn({lookups, columns}, gen, {.dtype = DType::Float64});
        const Tensor out = embedding(weight, index);
        sum(out * up).backward();
        // and the values: row i of out is weight[ids[i]]; the gradient of row r sums up's rows
        // that looked it up, in lookup order
        const auto w = weight.to_vector<double>(), o = out.to_vector<double>(),
                   g = weight.grad().to_vector<double>();
        const auto u = up.to_vector<double>();
        std::vector<double> expected(static_cast<std::size_t>(rows * columns), 0.0);
        bool copies = true;
        for (std::int64_t i = 0; i < lookups; ++i)
            for (std::int64_t c = 0; c < columns; ++c) {
                const auto at = static_cast<std::size_t>(ids[static_cast<std::size_t>(i)] * columns + c);
                copies = copies && o[static_cast<std::size_t>(i * columns + c)] == w[at];
                expected[at] += u[static_cast<std::size_t>(i * columns + c)];
            }
        CHECK(copies);
        CHECK(g == expected);
        return bytes_of({out, weight.grad()});
    });
}

namespace {

/// embedding -> MultiHeadAttention -> LayerNorm -> Linear, cross-entropy, clipped Adam: the
/// parameters and Adam's state after a few steps, as bytes.
std::vector<unsigned char> train_small_model(const nn::MultiHeadAttentionOptions& attention) {
    const std::int64_t batch = 16, time = 64, embed = attention.embed_dim, vocab = 16;
    Generator gen(11);
    nn::Embedding embedding({.num_embeddings = vocab, .embedding_dim = embed}, gen);
    nn::MultiHeadAttention mha(attention, gen);
    nn::LayerNorm norm({.normalized_shape = {embed}});
    nn::Linear head({.in_features = embed, .out_features = vocab}, gen);
    std::vector<Tensor> params;
    for (const nn::Module* m : std::vector<const nn::Module*>{&embedding, &mha, &norm, &head})
        for (const Tensor& p : m->parameters()) params.push_back(p);
    optim::Adam adam(params, {.lr = 1e-2});
    for (int step = 0; step < 4; ++step) {
        const Tensor tokens = randint(0, vocab, {batch, time}, gen);
        adam.zero_grad();
        const Tensor x = embedding.forward(tokens);                                         // [B, T, E]
        const Tensor y = norm.forward(x + mha.forward(x, {.need_weights = false}).output);  // [B, T, E]
        const Tensor logits = reshape(head.forward(y), {batch * time, vocab});              // [B T, V]
        cross_entropy(logits, reshape(tokens, {batch * time})).backward();
        optim::clip_grad_norm(params, 0.5);
        adam.step();
    }
    std::vector<Tensor> state = params;
    for (const Tensor& p : params) state.push_back(p.grad());
    return bytes_of(state);
}

}  // namespace

TEST_CASE("training with the library gives the same parameters on any thread count") {
    using nn::LocalMode;
    using nn::Score;
    SUBCASE("global scaled-dot, 4 heads") {
        check_same_on_every_thread_count(
            [] { return train_small_model({.embed_dim = 128, .num_heads = 4}); });
    }
    SUBCASE("global additive, 2 heads") {
        check_same_on_every_thread_count([] {
            return train_small_model(
                {.embed_dim = 64, .num_heads = 2, .scoring = {.score = Score::Additive}});
        });
    }
    SUBCASE("local-m additive, window 4") {
        check_same_on_every_thread_count([] {
            return train_small_model(
                {.embed_dim = 64,
                 .num_heads = 2,
                 .scoring = {.score = Score::Additive, .local = LocalMode::Monotonic, .window = 4}});
        });
    }
    SUBCASE("local-p bilinear, window 4") {
        check_same_on_every_thread_count([] {
            return train_small_model(
                {.embed_dim = 64,
                 .num_heads = 2,
                 .scoring = {.score = Score::Bilinear, .local = LocalMode::Predictive, .window = 4}});
        });
    }
}

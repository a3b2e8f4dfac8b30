// rnn_layer (the fused recurrent op): gradcheck of every mode and input, its results' shapes and
// padding, the tape, and bad arguments.
#include "fixtures.hpp"
#include "helpers.hpp"

#include <omp.h>

using namespace attograd;
using testing::rand64;
using Inputs = std::vector<Tensor>;

namespace {

constexpr std::int64_t B = 3, T = 4, I = 2, H = 3;

// Weights of `directions` directions as float64 leaves; P = proj when > 0, else H.
std::vector<RnnDirectionWeights> weights(RnnMode mode, std::int64_t directions, bool bias, std::int64_t proj,
                                         std::uint64_t seed) {
    const std::int64_t gh = rnn_gate_count(mode) * H, p = proj > 0 ? proj : H;
    std::vector<RnnDirectionWeights> out;
    for (std::int64_t k = 0; k < directions; ++k) {
        RnnDirectionWeights w;
        w.w_ih = rand64({gh, I}, seed++);
        w.w_hh = rand64({gh, p}, seed++);
        if (bias) {
            w.b_ih = rand64({gh}, seed++);
            w.b_hh = rand64({gh}, seed++);
        }
        if (proj > 0) w.w_hr = rand64({p, H}, seed++);
        out.push_back(w);
    }
    return out;
}

Tensor flat(const RnnLayerResult& r) {
    Inputs parts{reshape(r.output, {-1}), reshape(r.h_n, {-1})};
    if (r.c_n.defined()) parts.push_back(reshape(r.c_n, {-1}));
    return concat(parts, 0);
}

std::string mode_name(RnnMode mode) {
    switch (mode) {
        case RnnMode::RnnTanh:
            return "rnn_tanh";
        case RnnMode::RnnRelu:
            return "rnn_relu";
        case RnnMode::Gru:
            return "gru";
        case RnnMode::Lstm:
            return "lstm";
    }
    return "?";
}

}  // namespace

TEST_CASE("rnn_layer passes gradcheck for input, h0, c0 and every weight, in every mode and direction") {
    const Tensor lengths = index_tensor({4, 1, 3}, {B});
    std::uint64_t seed = 100;
    for (RnnMode mode : {RnnMode::RnnTanh, RnnMode::RnnRelu, RnnMode::Gru, RnnMode::Lstm})
        for (std::int64_t directions : {1, 2})
            for (bool bias : {true, false})
                for (std::int64_t proj : {0, 2}) {
                    if (proj > 0 && mode != RnnMode::Lstm) continue;
                    for (bool with_lengths : {false, true}) {
                        INFO(mode_name(mode) << " directions " << directions << " bias " << bias << " proj "
                                             << proj << " lengths " << with_lengths);
                        const auto w = weights(mode, directions, bias, proj, seed);
                        seed += 10;
                        const std::int64_t p = proj > 0 ? proj : H;
                        Inputs inputs{rand64({B, T, I}, seed++), rand64({directions, B, p}, seed++)};
                        if (mode == RnnMode::Lstm) inputs.push_back(rand64({directions, B, H}, seed++));
                        for (const RnnDirectionWeights& d : w)
                            for (const Tensor& t : {d.w_ih, d.w_hh, d.b_ih, d.b_hh, d.w_hr})
                                if (t.defined()) inputs.push_back(t);
                        const Tensor len = with_lengths ? lengths : Tensor();
                        auto fn = [&](const Inputs& in) {
                            const Tensor c0 = mode == RnnMode::Lstm ? in[2] : Tensor();
                            return flat(rnn_layer(mode, in[0], w, in[1], c0, len));
                        };
                        CHECK_GRADCHECK(fn, inputs);
                    }
                }
}

TEST_CASE(
    "rnn_layer: zeros past each length, h_n from each sequence's last step, nothing recorded without grad") {
    for (RnnMode mode : {RnnMode::RnnTanh, RnnMode::Gru, RnnMode::Lstm}) {
        INFO(mode_name(mode));
        const auto w = weights(mode, 2, true, 0, 7);
        const Tensor x = rand64({B, T, I}, 8);
        const auto r = rnn_layer(mode, x, w, Tensor(), Tensor(), index_tensor({4, 1, 3}, {B}));
        CHECK(r.output.shape() == Shape{B, T, 2 * H});
        CHECK(r.h_n.shape() == Shape{2, B, H});
        CHECK(r.c_n.defined() == (mode == RnnMode::Lstm));
        // sequence 1 runs one step: forward h_n is its output at step 0, and so is the reverse one
        const auto out = r.output.to_vector<double>();
        for (std::int64_t t = 1; t < T; ++t)
            for (std::int64_t j = 0; j < 2 * H; ++j)
                CHECK(out[static_cast<std::size_t>((1 * T + t) * 2 * H + j)] == 0.0);
        for (std::int64_t j = 0; j < H; ++j) {
            CHECK(r.h_n.at({0, 1, j}) == r.output.at({1, 0, j}));
            CHECK(r.h_n.at({1, 1, j}) == r.output.at({1, 0, H + j}));
            CHECK(r.h_n.at({0, 0, j}) == r.output.at({0, 3, j}));      // full length: the last step
            CHECK(r.h_n.at({1, 2, j}) == r.output.at({2, 0, H + j}));  // reverse ends at step 0
            CHECK(r.h_n.at({0, 2, j}) == r.output.at({2, 2, j}));      // length 3 ends at step 2
        }
        autograd::clear_tape();
        {
            NoGradGuard no_grad;
            const auto plain = rnn_layer(mode, x, w);
            CHECK_FALSE(plain.output.requires_grad());
            CHECK(autograd::tape_size() == 0);
        }
    }
}

TEST_CASE("rnn_layer refuses bad arguments with the op's name and the shapes") {
    const auto w = weights(RnnMode::Gru, 1, true, 0, 30);
    const Tensor x = rand64({B, T, I}, 31);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, rand64({B, T}, 1), w),
                         doctest::Contains("rnn_layer: input must be [B, T, I], got [3, 4]"), ShapeError);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, rand64({B, T, 5}, 1), w),
                         doctest::Contains("rnn_layer: w_ih of direction 0 must be [9, 5], got [9, 2]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Lstm, x, w),
                         doctest::Contains("rnn_layer: w_hh must be [G*H, P] with G = 4, got [9, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        rnn_layer(RnnMode::Gru, to_dtype(x, DType::Float32), w),
        doctest::Contains("rnn_layer: w_ih of direction 0 is float64 but the input is float32"), DTypeError);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, x, {}),
                         doctest::Contains("rnn_layer: expected 1 or 2 directions, got 0"), ShapeError);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, x, {w[0], w[0], w[0]}),
                         doctest::Contains("rnn_layer: expected 1 or 2 directions, got 3"), ShapeError);
    CHECK_THROWS_WITH_AS(
        rnn_layer(RnnMode::Gru, x, w, rand64({2, B, H}, 2)),
        doctest::Contains("rnn_layer: h0 must be [1, 3, 3] ([directions, batch, width]), got [2, 3, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, x, w, Tensor(), rand64({1, B, H}, 2)),
                         doctest::Contains("rnn_layer: c0 is for LSTM layers only"), ValueError);
    auto projected = w;
    projected[0].w_hr = rand64({2, H}, 3);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, x, projected),
                         doctest::Contains("rnn_layer: w_hr (a projection) is for LSTM layers only"),
                         ValueError);
    auto half_bias = w;
    half_bias[0].b_hh = Tensor();
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, x, half_bias),
                         doctest::Contains("rnn_layer: b_ih and b_hh must both be given"), ValueError);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, x, w, Tensor(), Tensor(), index_tensor({4, 0, 2}, {B})),
                         doctest::Contains("rnn_layer: lengths[1] = 0 is outside [1, 4]"), ValueError);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, x, w, Tensor(), Tensor(), index_tensor({4, 4}, {2})),
                         doctest::Contains("rnn_layer: lengths must be [3] (one per sequence), got [2]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(rnn_layer(RnnMode::Gru, rand64({0, T, I}, 4), w),
                         doctest::Contains("rnn_layer: input [0, 4, 2] has no sequences or no steps"),
                         ShapeError);
}

TEST_CASE(
    "rnn_layer over several blocks of sequences: as each sequence alone, the same bits on 1 and 2 threads") {
    // 37 sequences: blocks of 16, 16 and 5, enough work for two threads
    const std::int64_t batch = 37, steps = 8, in = 8, hidden = 32;
    for (RnnMode mode : {RnnMode::Gru, RnnMode::Lstm}) {
        INFO(mode_name(mode));
        const std::int64_t gh = rnn_gate_count(mode) * hidden;
        std::vector<RnnDirectionWeights> w(1);
        w[0].w_ih = rand64({gh, in}, 40);
        w[0].w_hh = (rand64({gh, hidden}, 41) * 0.2).detach().requires_grad_();
        w[0].b_ih = rand64({gh}, 42);
        w[0].b_hh = rand64({gh}, 43);
        std::vector<std::int64_t> lens;
        for (std::int64_t b = 0; b < batch; ++b) lens.push_back(1 + (b * 5) % steps);
        const Tensor lengths = index_tensor(lens, {batch});
        Tensor x = rand64({batch, steps, in}, 44);
        const Tensor r = rand64({batch, steps, hidden}, 45).detach();
        std::vector<std::vector<double>> runs;
        for (int threads : {1, 2}) {
            omp_set_num_threads(threads);
            for (Tensor t : {x, w[0].w_ih, w[0].w_hh}) t.zero_grad();
            const auto out = rnn_layer(mode, x, w, Tensor(), Tensor(), lengths);
            sum(out.output * r).backward();
            std::vector<double> all = out.output.to_vector<double>();
            for (const Tensor& g : {x.grad(), w[0].w_ih.grad(), w[0].w_hh.grad()}) {
                const auto v = g.to_vector<double>();
                all.insert(all.end(), v.begin(), v.end());
            }
            runs.push_back(all);
        }
        omp_set_num_threads(omp_get_num_procs());
        CHECK(runs[0] == runs[1]);
        NoGradGuard no_grad;
        const auto whole = rnn_layer(mode, x, w, Tensor(), Tensor(), lengths);
        for (std::int64_t b : {0, 17, 36}) {
            const std::int64_t len = lens[static_cast<std::size_t>(b)];
            const auto alone = rnn_layer(mode, narrow(narrow(x, 0, b, 1), 1, 0, len), w);
            CHECK(testing::max_abs_diff(narrow(narrow(whole.output, 0, b, 1), 1, 0, len), alone.output) <
                  1e-13);
            CHECK(testing::max_abs_diff(narrow(whole.h_n, 1, b, 1), alone.h_n) < 1e-13);
        }
    }
}

TEST_CASE("rnn_layer passes gradcheck over a batch of two row blocks (16 and 2 sequences)") {
    const auto w = weights(RnnMode::Lstm, 2, true, 2, 50);
    const Tensor lengths = index_tensor({4, 1, 3, 2, 4, 4, 1, 2, 3, 4, 4, 3, 2, 1, 1, 2, 3, 4}, {18});
    Inputs inputs{rand64({18, T, I}, 51), rand64({2, 18, 2}, 52), rand64({2, 18, H}, 53)};
    for (const RnnDirectionWeights& d : w)
        for (const Tensor& t : {d.w_ih, d.w_hh, d.b_ih, d.b_hh, d.w_hr}) inputs.push_back(t);
    auto fn = [&](const Inputs& in) {
        return flat(rnn_layer(RnnMode::Lstm, in[0], w, in[1], in[2], lengths));
    };
    CHECK_GRADCHECK(fn, inputs);
}

TEST_CASE("rnn_layer writes every element of its results and gradients (recycled blocks full of NaN)") {
    for (RnnMode mode : {RnnMode::RnnTanh, RnnMode::Gru, RnnMode::Lstm}) {
        INFO(mode_name(mode));
        const auto w = weights(mode, 2, true, 0, 60);
        const Tensor x = rand64({B, T, I}, 61);
        const std::int64_t gh = rnn_gate_count(mode) * H;
        const std::int64_t packed = B * T * 2 * H + 2 * B * H + (mode == RnnMode::Lstm ? 2 * B * H : 0);
        testing::leave_nan_blocks({packed});
        testing::leave_nan_blocks({B * T, gh});
        const auto r = rnn_layer(mode, x, w);
        Tensor loss = sum(r.output) + sum(r.h_n);
        if (r.c_n.defined()) loss = loss + sum(r.c_n);
        CHECK(std::isfinite(loss.item()));
        loss.backward();
        CHECK(std::isfinite(sum(x.grad()).item()));
        for (const RnnDirectionWeights& d : w)
            for (const Tensor& t : {d.w_ih, d.w_hh, d.b_ih, d.b_hh})
                CHECK(std::isfinite(sum(t.grad()).item()));
    }
}

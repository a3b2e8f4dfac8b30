// Training steps (forward and backward of sum(output)) of one GRU and one LSTM layer in attograd,
// and of a Bahdanau encoder-decoder (forward, cross-entropy and backward), next to the same step
// in LibTorch (libtorch_rnn, run from this program's directory when it was built) with the
// ratio, and the FLOP floor.
//
//   bench_rnn [--threads N] [--rounds R] [gru_small|lstm_small|gru_large|lstm_large|bahdanau]
//
// Configurations: small B 32, T 32, I 64, H 128; large B 8, T 256, I 256, H 256; float32,
// batch first, zero initial state. bahdanau: B 32, S = T = 32, vocabulary 1000, embeddings 64,
// a bidirectional GRU encoder of H 128 and nn::BahdanauDecoder (hidden 128, deep output, s_0 =
// tanh(W_s h<-_1)) over its [B, S, 256] annotations. --threads N sets the OpenMP threads of both programs
// (default: every core). Each measurement is the median ms/step over 7 runs of about 0.2 s after warm-up; a
// configuration takes R rounds (default 3), each timing attograd and then LibTorch, so that a slow
// spell of the machine lands on both alike; the table shows each framework's median over the
// rounds. The floor is the step's GEMM FLOPs at the threads' multiply-add peak
// (bench::fma_gflops, best of several samples).
#include "attograd.hpp"
#include "side_by_side.hpp"
#include "timing.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

using namespace attograd;

namespace {

struct Config {
    std::string name;
    bool lstm;
    std::int64_t batch, time, input, hidden;
};

double median_ms(const std::function<void()>& step) {
    const int iters = bench::calibrate(step, 0.2, bench::Clock::Wall);
    return 1e3 * bench::median_seconds(step, iters, 7, 3, bench::Clock::Wall);
}

template <class Layer>
double time_layer(Layer& layer, const Config& c, Generator& gen) {
    const Tensor x = randn({c.batch, c.time, c.input}, gen);
    return median_ms([&] {
        layer.zero_grad();
        sum(layer.forward(x).output).backward();
    });
}

double time_config(const Config& c) {
    Generator gen(0);
    if (c.lstm) {
        nn::LSTM lstm({.input_size = c.input, .hidden_size = c.hidden}, gen);
        return time_layer(lstm, c, gen);
    }
    nn::GRU gru({.input_size = c.input, .hidden_size = c.hidden}, gen);
    return time_layer(gru, c, gen);
}

// FLOPs of the step's products (2 per multiply-add) with G gates: forward x W_ih^T over all
// steps (B T I G H) and h W_hh^T per step (B T H G H); backward twice that (dX and dW_ih, dh and
// dW_hh): 6 B T G H (I + H). The gates' elementwise work is left out.
double step_flops(const Config& c) {
    const double g = c.lstm ? 4.0 : 3.0;
    return 6.0 * static_cast<double>(c.batch * c.time) * g * static_cast<double>(c.hidden) *
           static_cast<double>(c.input + c.hidden);
}

// The Bahdanau encoder-decoder's parts (as libtorch_rnn builds them).
struct Bahdanau : nn::Module {
    static constexpr std::int64_t B = 32, S = 32, T = 32, V = 1000, E = 64, H = 128;
    explicit Bahdanau(Generator& gen) {
        embedding = register_module("embedding",
                                    std::make_shared<nn::Embedding>(
                                        nn::EmbeddingOptions{.num_embeddings = V, .embedding_dim = E}, gen));
        encoder = register_module(
            "encoder", std::make_shared<nn::GRU>(
                           nn::GRUOptions{.input_size = E, .hidden_size = H, .bidirectional = true}, gen));
        bridge = register_module("bridge", std::make_shared<nn::Linear>(
                                               nn::LinearOptions{.in_features = H, .out_features = H}, gen));
        decoder = register_module(
            "decoder", std::make_shared<nn::BahdanauDecoder>(
                           nn::BahdanauDecoderOptions{
                               .vocab_size = V, .embedding_dim = E, .hidden_size = H, .memory_dim = 2 * H},
                           gen));
    }
    std::string type_name() const override { return "Bahdanau"; }
    Tensor loss(const Tensor& src, const Tensor& tgt_in, const Tensor& labels) const {
        const Tensor memory = encoder->forward(embedding->forward(src)).output;  // [B, S, 2H]
        const Tensor s0 = tanh(bridge->forward(narrow(select(memory, 1, 0), 1, H, H)));
        const Tensor logits = decoder->forward(tgt_in, memory, {}, s0);
        return cross_entropy(reshape(logits, {-1, V}), reshape(labels, {-1}));
    }
    std::shared_ptr<nn::Embedding> embedding;
    std::shared_ptr<nn::GRU> encoder;
    std::shared_ptr<nn::Linear> bridge;
    std::shared_ptr<nn::BahdanauDecoder> decoder;
};

double time_bahdanau() {
    using M = Bahdanau;
    Generator gen(0);
    M model(gen);
    const Tensor src = randint(0, M::V, {M::B, M::S}, gen), tgt_in = randint(0, M::V, {M::B, M::T}, gen),
                 labels = randint(0, M::V, {M::B, M::T}, gen);
    return median_ms([&] {
        model.zero_grad();
        model.loss(src, tgt_in, labels).backward();
    });
}

// The Bahdanau step's product FLOPs (2 per multiply-add), forward and twice that backward: the
// encoder GRU's two directions (as step_flops), the keys W h_j [B S, 2H] x [2H, H], per step the
// query U s [B, H] x [H, H], the scores v . tanh(.) over [B, T, S, H] and the contexts [B, T, S]
// x [S, 2H], the decoder cell 3H x (E + 2H + H), the deep output V x (H + 2H + E). Embeddings,
// softmax, the loss and the gates' elementwise work are left out.
double bahdanau_flops() {
    using M = Bahdanau;
    const double bt = static_cast<double>(M::B * M::T), h = M::H, a = 2.0 * M::H, e = M::E, s = M::S;
    const double encoder = 2.0 * 2.0 * bt * 3.0 * h * (e + h);
    const double forward = encoder + 2.0 * bt * a * h + 2.0 * bt * h * h + 2.0 * bt * s * h +
                           2.0 * bt * s * a + 2.0 * bt * 3.0 * h * (e + a + h) +
                           2.0 * bt * static_cast<double>(M::V) * (h + a + e);
    return 3.0 * forward;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<Config> configs = {{"gru_small", false, 32, 32, 64, 128},
                                         {"lstm_small", true, 32, 32, 64, 128},
                                         {"gru_large", false, 8, 256, 256, 256},
                                         {"lstm_large", true, 8, 256, 256, 256}};
    const int threads = bench::int_flag(argc, argv, "--threads", 0);
    if (threads > 0) omp_set_num_threads(threads);
    const std::string only =
        bench::chosen_config(argc, argv, {"gru_small", "lstm_small", "gru_large", "lstm_large", "bahdanau"});
    bench::SideBySide table(argv[0], "libtorch_rnn", threads, bench::int_flag(argc, argv, "--rounds", 3), 11,
                            24);
    for (const auto& c : configs) {
        if (!only.empty() && only != c.name) continue;
        table.row(c.name, fmt::format("B={} T={} I={} H={}", c.batch, c.time, c.input, c.hidden),
                  step_flops(c), [&] { return time_config(c); });
    }
    if (only.empty() || only == "bahdanau")
        table.row("bahdanau", "B=32 S=T=32 V=1000 H=128", bahdanau_flops(), [] { return time_bahdanau(); });
    table.finish();
    return 0;
}

// The recurrent training steps of bench_rnn in LibTorch (torch::nn::GRU / torch::nn::LSTM, batch
// first, forward and backward of sum(output); the Bahdanau encoder-decoder from torch::nn::GRU,
// GRUCell and Linear), for the side-by-side figures. Prints the BLAS it
// loaded (`blas <path>`), then one line per configuration: `<name> <ms per step>`; bench_rnn runs
// this program and prints the ratio. Arguments: [--threads N]
// [gru_small|lstm_small|gru_large|lstm_large|bahdanau].
#include "openblas_core.hpp"
#include "peer.hpp"
#include "timing.hpp"

#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Config {
    std::string name;
    bool lstm;
    std::int64_t batch, time, input, hidden;
};

// Milliseconds per step, measured as bench_rnn measures its own (bench/timing.hpp).
template <class Layer>
double time_layer(Layer& layer, const Config& c) {
    const auto x = torch::randn({c.batch, c.time, c.input});
    auto step = [&] {
        layer->zero_grad();
        const auto out = std::get<0>(layer->forward(x));
        out.sum().backward();
    };
    const int iters = bench::calibrate(step, 0.2, bench::Clock::Wall);
    return 1e3 * bench::median_seconds(step, iters, 7, 3, bench::Clock::Wall);
}

double time_config(const Config& c) {
    torch::manual_seed(0);
    if (c.lstm) {
        torch::nn::LSTM lstm(torch::nn::LSTMOptions(c.input, c.hidden).batch_first(true));
        return time_layer(lstm, c);
    }
    torch::nn::GRU gru(torch::nn::GRUOptions(c.input, c.hidden).batch_first(true));
    return time_layer(gru, c);
}

// bench_rnn's Bahdanau encoder-decoder: a bidirectional GRU encoder, s_0 = tanh(W_s h<-_1), and
// per target step the additive score v^T tanh(W h_j + U s_{i-1}), the context, a GRUCell on
// [E y_{i-1}; c_i] and the deep output from [s_i; c_i; E y_{i-1}].
struct BahdanauImpl : torch::nn::Module {
    static constexpr std::int64_t B = 32, S = 32, T = 32, V = 1000, E = 64, H = 128;
    BahdanauImpl()
        : src_embedding(register_module("src_embedding", torch::nn::Embedding(V, E))),
          tgt_embedding(register_module("tgt_embedding", torch::nn::Embedding(V, E))),
          encoder(register_module(
              "encoder", torch::nn::GRU(torch::nn::GRUOptions(E, H).batch_first(true).bidirectional(true)))),
          bridge(register_module("bridge", torch::nn::Linear(H, H))),
          W(register_module("W", torch::nn::Linear(torch::nn::LinearOptions(2 * H, H).bias(false)))),
          U(register_module("U", torch::nn::Linear(torch::nn::LinearOptions(H, H).bias(false)))),
          v(register_module("v", torch::nn::Linear(torch::nn::LinearOptions(H, 1).bias(false)))),
          cell(register_module("cell", torch::nn::GRUCell(E + 2 * H, H))),
          out(register_module("out", torch::nn::Linear(H + 2 * H + E, V))) {}

    torch::Tensor loss(const torch::Tensor& src, const torch::Tensor& tgt_in, const torch::Tensor& labels) {
        const auto memory = std::get<0>(encoder->forward(src_embedding->forward(src)));  // [B, S, 2H]
        auto s = torch::tanh(bridge->forward(memory.select(1, 0).narrow(1, H, H)));
        const auto keys = W->forward(memory);  // [B, S, H]
        const auto embedded = tgt_embedding->forward(tgt_in);
        std::vector<torch::Tensor> features;
        for (std::int64_t t = 0; t < T; ++t) {
            const auto scores = v->forward(torch::tanh(keys + U->forward(s).unsqueeze(1))).squeeze(-1);
            const auto context = torch::bmm(torch::softmax(scores, 1).unsqueeze(1), memory).squeeze(1);
            const auto y = embedded.select(1, t);
            s = cell->forward(torch::cat({y, context}, 1), s);
            features.push_back(torch::cat({s, context, y}, 1));
        }
        const auto logits = out->forward(torch::stack(features, 1));
        return torch::nn::functional::cross_entropy(logits.reshape({-1, V}), labels.reshape({-1}));
    }

    torch::nn::Embedding src_embedding, tgt_embedding;
    torch::nn::GRU encoder;
    torch::nn::Linear bridge, W, U, v;
    torch::nn::GRUCell cell;
    torch::nn::Linear out;
};

double time_bahdanau() {
    using M = BahdanauImpl;
    torch::manual_seed(0);
    M model;
    const auto src = torch::randint(M::V, {M::B, M::S}, torch::kLong);
    const auto tgt_in = torch::randint(M::V, {M::B, M::T}, torch::kLong);
    const auto labels = torch::randint(M::V, {M::B, M::T}, torch::kLong);
    auto step = [&] {
        model.zero_grad();
        model.loss(src, tgt_in, labels).backward();
    };
    const int iters = bench::calibrate(step, 0.2, bench::Clock::Wall);
    return 1e3 * bench::median_seconds(step, iters, 7, 3, bench::Clock::Wall);
}

}  // namespace

int main(int argc, char** argv) {
    bench::use_fast_openblas_kernels(argv);
    const std::vector<Config> configs = {{"gru_small", false, 32, 32, 64, 128},
                                         {"lstm_small", true, 32, 32, 64, 128},
                                         {"gru_large", false, 8, 256, 256, 256},
                                         {"lstm_large", true, 8, 256, 256, 256}};
    const int threads = bench::int_flag(argc, argv, "--threads", 0);
    if (threads > 0) {
        torch::set_num_threads(threads);
        bench::set_openblas_threads(threads);
    }
    const std::string only =
        bench::chosen_config(argc, argv, {"gru_small", "lstm_small", "gru_large", "lstm_large", "bahdanau"});
    std::printf("blas %s[%s]\n", bench::loaded_blas().c_str(), bench::openblas_core().c_str());
    for (const auto& c : configs) {
        if (!only.empty() && only != c.name) continue;
        std::printf("%s %.4f\n", c.name.c_str(), time_config(c));
        std::fflush(stdout);
    }
    if (only.empty() || only == "bahdanau") std::printf("bahdanau %.4f\n", time_bahdanau());
    return 0;
}

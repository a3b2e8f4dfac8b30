// Training steps (forward and backward of sum(output)) of one GRU and one LSTM layer in attograd,
// next to the same step in LibTorch (libtorch_rnn, run from this program's directory when it was
// built) with the ratio, and the FLOP floor.
//
//   bench_rnn [--threads N] [--rounds R] [gru_small|lstm_small|gru_large|lstm_large]
//
// Configurations: small B 32, T 32, I 64, H 128; large B 8, T 256, I 256, H 256; float32,
// batch first, zero initial state. --threads N sets the OpenMP threads of both programs (default:
// every core). Each measurement is the median ms/step over 7 runs of about 0.2 s after warm-up; a
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

}  // namespace

int main(int argc, char** argv) {
    const std::vector<Config> configs = {{"gru_small", false, 32, 32, 64, 128},
                                         {"lstm_small", true, 32, 32, 64, 128},
                                         {"gru_large", false, 8, 256, 256, 256},
                                         {"lstm_large", true, 8, 256, 256, 256}};
    const int threads = bench::int_flag(argc, argv, "--threads", 0);
    if (threads > 0) omp_set_num_threads(threads);
    const std::string only =
        bench::chosen_config(argc, argv, {"gru_small", "lstm_small", "gru_large", "lstm_large"});
    bench::SideBySide table(argv[0], "libtorch_rnn", threads, bench::int_flag(argc, argv, "--rounds", 3), 11,
                            24);
    for (const auto& c : configs) {
        if (!only.empty() && only != c.name) continue;
        table.row(c.name, fmt::format("B={} T={} I={} H={}", c.batch, c.time, c.input, c.hidden),
                  step_flops(c), [&] { return time_config(c); });
    }
    table.finish();
    return 0;
}

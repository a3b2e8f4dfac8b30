// The recurrent training steps of bench_rnn in LibTorch (torch::nn::GRU / torch::nn::LSTM, batch
// first, forward and backward of sum(output)), for the side-by-side figures. Prints the BLAS it
// loaded (`blas <path>`), then one line per configuration: `<name> <ms per step>`; bench_rnn runs
// this program and prints the ratio. Arguments: [--threads N] [gru_small|lstm_small|gru_large|lstm_large].
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
        bench::chosen_config(argc, argv, {"gru_small", "lstm_small", "gru_large", "lstm_large"});
    std::printf("blas %s[%s]\n", bench::loaded_blas().c_str(), bench::openblas_core().c_str());
    for (const auto& c : configs) {
        if (!only.empty() && only != c.name) continue;
        std::printf("%s %.4f\n", c.name.c_str(), time_config(c));
        std::fflush(stdout);
    }
    return 0;
}

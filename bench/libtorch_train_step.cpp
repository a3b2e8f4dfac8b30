// The training step of bench_train_step in LibTorch (embedding 16 -> E, self-attention
// MultiheadAttention, Linear E -> 16, cross-entropy, Adam), for the side-by-side figures.
// Prints the BLAS it loaded (`blas <path>`), then one line per configuration: `<name> <ms per step>`;
// bench_train_step runs this program and prints the ratio. Arguments: [--threads N] [small|large|local].
// LibTorch's MultiheadAttention is sequence-first ([T, B, E]), so the tokens are laid out [T, B] and no
// transposes are needed. Local attention can only be a band mask over the full T x T scores here.
#include "peer.hpp"
#include "timing.hpp"

#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace {

struct Config {
    std::string name;
    std::int64_t batch, time, embed, heads, window;  // window < 0: global attention
};

struct Model : torch::nn::Module {
    torch::nn::Embedding embedding{nullptr};
    torch::nn::MultiheadAttention attention{nullptr};
    torch::nn::Linear head{nullptr};
    explicit Model(std::int64_t e, std::int64_t h)
        : embedding(register_module("embedding", torch::nn::Embedding(16, e))),
          attention(register_module("attention", torch::nn::MultiheadAttention(e, h))),
          head(register_module("head", torch::nn::Linear(e, 16))) {}
};

// Milliseconds per step, measured as bench_train_step measures its own (bench/timing.hpp).
double time_config(const Config& c) {
    torch::manual_seed(0);
    Model model(c.embed, c.heads);
    torch::optim::Adam adam(model.parameters(), torch::optim::AdamOptions(1e-3));
    const auto tokens = torch::randint(0, 16, {c.time, c.batch}, torch::kLong);
    const auto targets = torch::randint(0, 16, {c.time * c.batch}, torch::kLong);
    torch::Tensor mask;  // band |t - s| <= window as an additive mask
    if (c.window >= 0) {
        const auto pos = torch::arange(c.time);
        const auto far = (pos.unsqueeze(1) - pos.unsqueeze(0)).abs() > c.window;
        mask = torch::zeros({c.time, c.time}).masked_fill(far, -std::numeric_limits<float>::infinity());
    }
    auto step = [&] {
        adam.zero_grad();
        const auto x = model.embedding(tokens);  // [T, B, E]
        const auto y =
            std::get<0>(model.attention->forward(x, x, x, torch::Tensor(), /*need_weights=*/false, mask));
        const auto logits = model.head(y).reshape({-1, 16});
        torch::nn::functional::cross_entropy(logits, targets).backward();
        adam.step();
    };
    const int iters = bench::calibrate(step, 0.2, bench::Clock::Wall);
    return 1e3 * bench::median_seconds(step, iters, 7, 3, bench::Clock::Wall);
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<Config> configs = {
        {"small", 32, 32, 64, 4, -1}, {"large", 8, 256, 256, 8, -1}, {"local", 4, 512, 64, 4, 8}};
    const int threads = bench::int_flag(argc, argv, "--threads", 0);
    if (threads > 0) torch::set_num_threads(threads);
    const std::string only = bench::chosen_config(argc, argv, {"small", "large", "local"});
    std::printf("blas %s\n", bench::loaded_blas().c_str());
    for (const auto& c : configs) {
        if (!only.empty() && only != c.name) continue;
        std::printf("%s %.4f\n", c.name.c_str(), time_config(c));
        std::fflush(stdout);
    }
    return 0;
}

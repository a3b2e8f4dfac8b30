// The training step of bench_train_step in LibTorch (embedding 16 -> E, self-attention
// MultiheadAttention, Linear E -> 16, cross-entropy, Adam), for the side-by-side figures.
// Prints one line per configuration: `<name> <ms per step>`; bench_train_step runs this program
// and prints the ratio. LibTorch's MultiheadAttention is sequence-first ([T, B, E]), so the
// tokens are laid out [T, B] and no transposes are needed. Local attention can only be a band
// mask over the full T x T scores here.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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

// Milliseconds per step: the median over repeats of `steps` steps, after a warm-up.
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
    for (int i = 0; i < 3; ++i) step();
    const auto once = std::chrono::steady_clock::now();
    step();
    const double first_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - once).count();
    const int steps = std::max(1, static_cast<int>(200.0 / std::max(first_ms, 0.01)));
    std::vector<double> times;
    for (int r = 0; r < 7; ++r) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < steps; ++i) step();
        times.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
            steps);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<Config> configs = {
        {"small", 32, 32, 64, 4, -1}, {"large", 8, 256, 256, 8, -1}, {"local", 4, 512, 64, 4, 8}};
    const std::string only = argc > 1 ? argv[1] : "";
    for (const auto& c : configs) {
        if (!only.empty() && only != c.name) continue;
        std::printf("%s %.4f\n", c.name.c_str(), time_config(c));
        std::fflush(stdout);
    }
    return 0;
}

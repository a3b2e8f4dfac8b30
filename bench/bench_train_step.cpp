// Full training steps of a one-layer self-attention model (embedding 16 -> E, MultiHeadAttention,
// Linear E -> 16, cross-entropy, Adam) in attograd, next to the same step in LibTorch
// (libtorch_train_step, run from this program's directory when it was built) with the ratio.
//
//   bench_train_step [small|large|local]
//
// Configurations (issue 3 point 10): small B 32, T 32, E 64, h 4; large B 8, T 256, E 256, h 8;
// local B 4, T 512, E 64, h 4 with local-m attention of window D = 8 (LibTorch: a band mask
// over the full T x T scores). Each figure is the median ms/step over 7 repeats after warm-up.
#include "attograd.hpp"
#include "optim/optim.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace attograd;

namespace {

struct Config {
    std::string name;
    std::int64_t batch, time, embed, heads, window;  // window < 0: global attention
};

struct Model : nn::Module {
    std::shared_ptr<nn::Embedding> embedding;
    std::shared_ptr<nn::MultiHeadAttention> attention;
    std::shared_ptr<nn::Linear> head;
    Model(const Config& c, Generator& gen) {
        embedding = register_module(
            "embedding", std::make_shared<nn::Embedding>(
                             nn::EmbeddingOptions{.num_embeddings = 16, .embedding_dim = c.embed}, gen));
        nn::MultiHeadAttentionOptions options{.embed_dim = c.embed, .num_heads = c.heads};
        if (c.window >= 0) {
            options.local = nn::LocalMode::Monotonic;
            options.window = c.window;
        }
        attention = register_module("attention", std::make_shared<nn::MultiHeadAttention>(options, gen));
        head = register_module(
            "head",
            std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = c.embed, .out_features = 16}, gen));
    }
    std::string type_name() const override { return "Model"; }
};

double median_ms(const std::function<void()>& step) {
    for (int i = 0; i < 3; ++i) step();
    const auto once = std::chrono::steady_clock::now();
    step();
    const double first =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - once).count();
    const int steps = std::max(1, static_cast<int>(200.0 / std::max(first, 0.01)));
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

double time_config(const Config& c) {
    Generator gen(0);
    Model model(c, gen);
    optim::Adam adam(model.parameters(), {.lr = 1e-3});
    const Tensor tokens = randint(0, 16, {c.batch, c.time}, gen);
    const Tensor targets = randint(0, 16, {c.batch * c.time}, gen);
    return median_ms([&] {
        adam.zero_grad();
        const Tensor x = model.embedding->forward(tokens);                              // [B, T, E]
        const Tensor y = model.attention->forward(x, {.need_weights = false}).output;   // [B, T, E]
        const Tensor logits = reshape(model.head->forward(y), {c.batch * c.time, 16});  // [B T, 16]
        cross_entropy(logits, targets).backward();
        adam.step();
    });
}

// The LibTorch figures, by configuration name, from libtorch_train_step beside this program.
std::map<std::string, double> libtorch_figures(const std::filesystem::path& self, const std::string& only) {
    std::map<std::string, double> out;
    const auto peer = self.parent_path() / "libtorch_train_step";
    if (!std::filesystem::exists(peer)) return out;
    const std::string command = peer.string() + (only.empty() ? "" : " " + only);
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return out;
    char name[64];
    double ms = 0.0;
    while (std::fscanf(pipe, "%63s %lf", name, &ms) == 2) out[name] = ms;
    pclose(pipe);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<Config> configs = {
        {"small", 32, 32, 64, 4, -1}, {"large", 8, 256, 256, 8, -1}, {"local", 4, 512, 64, 4, 8}};
    const std::string only = argc > 1 ? argv[1] : "";
    std::map<std::string, double> ours;
    for (const auto& c : configs)
        if (only.empty() || only == c.name) ours[c.name] = time_config(c);
    const auto torch = libtorch_figures(std::filesystem::absolute(argv[0]), only);
    std::printf("%-7s %-28s %12s %12s %9s\n", "config", "shape", "attograd ms", "libtorch ms", "speed-up");
    for (const auto& c : configs) {
        if (!ours.contains(c.name)) continue;
        const std::string shape = fmt::format("B={} T={} E={} h={}{}", c.batch, c.time, c.embed, c.heads,
                                              c.window >= 0 ? fmt::format(" D={}", c.window) : "");
        if (torch.contains(c.name))
            std::printf("%-7s %-28s %12.3f %12.3f %8.2fx\n", c.name.c_str(), shape.c_str(), ours[c.name],
                        torch.at(c.name), torch.at(c.name) / ours[c.name]);
        else
            std::printf("%-7s %-28s %12.3f %12s %9s\n", c.name.c_str(), shape.c_str(), ours[c.name], "-",
                        "-");
    }
    return 0;
}

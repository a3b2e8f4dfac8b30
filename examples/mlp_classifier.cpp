// A first training program: a small MLP learns to tell three interleaved 2-D spirals apart.
// It uses only the public API: tensors, nn::Linear inside a Module, cross_entropy, Adam.
//   ./build/examples/mlp_classifier [--steps N] [--seed S]
#include "attograd.hpp"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string_view>

using namespace attograd;

namespace {

constexpr std::int64_t kClasses = 3;
constexpr std::int64_t kPerClass = 200;

/// Points of `kClasses` spiral arms (the classic CS231n toy set): arm k at radius r in [0, 1]
/// sweeps the angle 4k .. 4(k+1) radians, plus Gaussian angle noise. x [N, 2], targets [N].
struct Dataset {
    Tensor x;
    Tensor targets;
};

Dataset spirals(Generator& gen) {
    std::vector<double> points;
    std::vector<std::int64_t> labels;
    for (std::int64_t k = 0; k < kClasses; ++k) {
        for (std::int64_t i = 0; i < kPerClass; ++i) {
            const double r = static_cast<double>(i) / static_cast<double>(kPerClass - 1);
            const double t = 4.0 * (static_cast<double>(k) + r) + 0.2 * gen.normal();
            points.push_back(r * std::sin(t));
            points.push_back(r * std::cos(t));
            labels.push_back(k);
        }
    }
    const auto n = static_cast<std::int64_t>(labels.size());
    return {tensor(points, {n, 2}), index_tensor(labels, {n})};
}

/// Two hidden layers with tanh: [N, 2] -> [N, hidden] -> [N, hidden] -> logits [N, classes].
class Mlp : public nn::Module {
public:
    Mlp(std::int64_t hidden, Generator& gen)
        : fc1_(register_module("fc1", std::make_shared<nn::Linear>(
                                          nn::LinearOptions{.in_features = 2, .out_features = hidden}, gen))),
          fc2_(register_module("fc2",
                               std::make_shared<nn::Linear>(
                                   nn::LinearOptions{.in_features = hidden, .out_features = hidden}, gen))),
          fc3_(register_module(
              "fc3", std::make_shared<nn::Linear>(
                         nn::LinearOptions{.in_features = hidden, .out_features = kClasses}, gen))) {}

    Tensor forward(const Tensor& x) const {
        return fc3_->forward(tanh(fc2_->forward(tanh(fc1_->forward(x)))));
    }
    std::string type_name() const override { return "Mlp"; }

private:
    std::shared_ptr<nn::Linear> fc1_, fc2_, fc3_;
};

double accuracy(const Mlp& model, const Dataset& data) {
    NoGradGuard no_grad;
    const Tensor predicted = argmax(model.forward(data.x), 1);
    return mean(to_dtype(eq(predicted, data.targets), DType::Float32)).item();
}

int flag(int argc, char** argv, std::string_view name, int fallback) {
    for (int i = 1; i + 1 < argc; ++i)
        if (argv[i] == name) return std::atoi(argv[i + 1]);
    return fallback;
}

}  // namespace

int main(int argc, char** argv) {
    const int steps = flag(argc, argv, "--steps", 600);
    const auto seed = static_cast<std::uint64_t>(flag(argc, argv, "--seed", 0));
    Generator gen(seed);
    const Dataset train = spirals(gen);
    const Dataset test = spirals(gen);  // same arms, fresh noise: held out
    Mlp model(64, gen);
    optim::Adam optimizer(model.parameters(), {.lr = 0.01});

    std::int64_t weights = 0;
    for (const Tensor& p : model.parameters()) weights += p.numel();
    fmt::print("MLP classifier on {} spirals: {} training and {} held-out points, {} weights\n", kClasses,
               train.targets.numel(), test.targets.numel(), weights);
    fmt::print("{}\n", model);
    const auto start = std::chrono::steady_clock::now();
    for (int step = 1; step <= steps; ++step) {
        optimizer.zero_grad();
        const Tensor loss = cross_entropy(model.forward(train.x), train.targets);
        loss.backward();
        optimizer.step();
        if (step == 1 || step % 50 == 0) fmt::print("step {:4d}  loss {:.4f}\n", step, loss.item());
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    fmt::print("trained {} full-batch steps in {:.2f} s ({:.2f} ms a step)\n", steps, elapsed.count(),
               1e3 * elapsed.count() / steps);
    fmt::print("accuracy: train {:.1f}%, held-out {:.1f}%\n", 100 * accuracy(model, train),
               100 * accuracy(model, test));
}

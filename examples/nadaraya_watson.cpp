// Attention pooling as Nadaraya-Watson kernel regression (d2l.ai, "Attention Pooling by
// Similarity" / "Nadaraya-Watson Kernel Regression"): first the non-parametric Gaussian kernel,
// then the parametric one with a kernel width w learned by SGD; the test inputs' attention over
// the training inputs is drawn as a heatmap.
//
//   f(x) = 2 sin(x) + x^0.8, training y_i = f(x_i) + N(0, 0.5^2), 50 sorted x_i in [0, 5)
//   f^(x) = sum_i softmax_i(-((x - x_i) w)^2 / 2) y_i   (w = 1: the non-parametric estimator)
//
// Usage: nadaraya_watson [FILE.svg]   (FILE.svg gets the parametric heatmap as SVG)
#include "attograd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace attograd;

namespace {

constexpr std::int64_t kTrain = 50, kTest = 50;
constexpr DType F64 = DType::Float64;

double f(double x) { return 2.0 * std::sin(x) + std::pow(x, 0.8); }

// Attention pooling: queries [Q], keys and values [Q, K], kernel width w [1] -> predictions [Q]
// and the weights [Q, K] = softmax over k of -((q - k) w)^2 / 2.
std::pair<Tensor, Tensor> pool(const Tensor& queries, const Tensor& keys, const Tensor& values,
                               const Tensor& w) {
    const Tensor diff = (reshape(queries, {-1, 1}) - keys) * w;
    const Tensor weights = softmax(-0.5 * diff * diff, 1);
    return {sum(weights * values, {1}), weights};
}

// Each training point's keys and values are the OTHER training points (leave-one-out), [n, n - 1],
// as d2l trains it: with itself among the keys, w would grow until each point copies its own y.
Tensor others(const std::vector<double>& v) {
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); ++i)
        for (std::size_t j = 0; j < v.size(); ++j)
            if (i != j) out.push_back(v[j]);
    const auto n = static_cast<std::int64_t>(v.size());
    return tensor(out, {n, n - 1}, {.dtype = F64});
}

Tensor repeat_rows(const std::vector<double>& v, std::int64_t rows) {
    std::vector<double> out;
    for (std::int64_t r = 0; r < rows; ++r) out.insert(out.end(), v.begin(), v.end());
    return tensor(out, {rows, static_cast<std::int64_t>(v.size())}, {.dtype = F64});
}

double mse(const Tensor& predicted, const Tensor& target) {
    return mean((predicted - target) * (predicted - target)).item();
}

inspect::AttentionMap heatmap(const std::string& title, const Tensor& weights,
                              const std::vector<double>& x_test, const std::vector<double>& x_train) {
    inspect::AttentionMap map{.module = title, .head = -1};
    for (const double x : x_test) map.queries.push_back(fmt::format("{:.1f}", x));
    for (const double x : x_train) map.keys.push_back(fmt::format("{:.2f}", x));
    map.weights = weights.to_vector<double>();
    return map;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 2) {
        std::fprintf(stderr, "usage: %s [FILE.svg]\n", argv[0]);
        return 2;
    }
    Generator gen(0);
    std::vector<double> x_train = uniform({kTrain}, 0.0, 5.0, gen, {.dtype = F64}).to_vector<double>();
    std::sort(x_train.begin(), x_train.end());
    const std::vector<double> noise = (0.5 * randn({kTrain}, gen, {.dtype = F64})).to_vector<double>();
    std::vector<double> y_train, x_test, y_truth;
    for (std::int64_t i = 0; i < kTrain; ++i) y_train.push_back(f(x_train[i]) + noise[i]);
    for (std::int64_t i = 0; i < kTest; ++i) {
        x_test.push_back(0.1 * static_cast<double>(i));
        y_truth.push_back(f(x_test.back()));
    }
    const Tensor queries = tensor(x_test, {kTest}, {.dtype = F64}),
                 truth = tensor(y_truth, {kTest}, {.dtype = F64});
    const Tensor keys = repeat_rows(x_train, kTest), values = repeat_rows(y_train, kTest);

    // Non-parametric: the Gaussian kernel K(u) = exp(-u^2 / 2), w = 1.
    const Tensor one = ones({1}, {.dtype = F64});
    const auto [fixed, fixed_weights] = pool(queries, keys, values, one);
    fmt::print("non-parametric (Gaussian kernel, w = 1): test MSE against f {:.4f}\n", mse(fixed, truth));

    // Parametric: learn w by SGD on the leave-one-out training loss sum_i (f^(x_i) - y_i)^2 / 2.
    Tensor w = uniform({1}, 0.0, 1.0, gen, {.dtype = F64, .requires_grad = true});
    optim::SGD sgd({w}, {.lr = 0.5});
    const Tensor train_x = tensor(x_train, {kTrain}, {.dtype = F64}),
                 train_y = tensor(y_train, {kTrain}, {.dtype = F64});
    const Tensor train_keys = others(x_train), train_values = others(y_train);
    double first = 0.0, last = 0.0;
    for (int epoch = 1; epoch <= 5; ++epoch) {
        const Tensor predicted = pool(train_x, train_keys, train_values, w).first;
        const Tensor loss = 0.5 * sum((predicted - train_y) * (predicted - train_y));
        sgd.zero_grad();
        loss.backward();
        sgd.step();
        (epoch == 1 ? first : last) = loss.item();
        fmt::print("epoch {}, loss {:.6f}, w {:.4f}\n", epoch, loss.item(), w.item());
    }
    fmt::print("parametric: training loss went {} from {:.6f} to {:.6f}\n", last < first ? "down" : "up",
               first, last);
    const NoGradGuard no_grad;
    const auto [learned, learned_weights] = pool(queries, keys, values, w);
    fmt::print("parametric (learned w = {:.4f}): test MSE against f {:.4f}\n\n", w.item(),
               mse(learned, truth));

    const inspect::TermOptions term{.colour = inspect::detect_term_colour(stdout),
                                    .width = inspect::terminal_width(stdout),
                                    .max_rows = 25};
    fmt::print("{}\n",
               inspect::render_heatmap(heatmap("non-parametric attention: test x (rows) over training x",
                                               fixed_weights, x_test, x_train),
                                       term));
    const inspect::AttentionMap map =
        heatmap("parametric attention: test x (rows) over training x", learned_weights, x_test, x_train);
    fmt::print("{}", inspect::render_heatmap(map, term));
    if (argc == 2) {
        std::ofstream out(argv[1], std::ios::binary);
        out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" << inspect::render_svg(map, {.cell_size = 8});
        if (!out.flush()) {
            std::fprintf(stderr, "nadaraya_watson: cannot write %s\n", argv[1]);
            return 2;
        }
        fmt::print("wrote {}\n", argv[1]);
    }
}

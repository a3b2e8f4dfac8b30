// LibTorch peer of bench_op_overhead.cpp: the same chains of 10 ops on the same tiny tensors,
// timed the same way (thread CPU time, median of repeats), microseconds per op.
#include "openblas_core.hpp"
#include "timing.hpp"

#include <torch/torch.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr int kChain = 10;

struct Case {
    std::string name;
    std::string shape;
    torch::Tensor x, w;
    std::function<torch::Tensor(const torch::Tensor& y, const torch::Tensor& w)> op;
};

torch::Tensor run_chain(const Case& c, const torch::Tensor& x) {
    torch::Tensor y = x;
    for (int i = 0; i < kChain; ++i) y = c.op(y, c.w);
    return y;
}

}  // namespace

int main(int argc, char** argv) {
    bench::use_fast_openblas_kernels(argv);
    const int repeats = bench::int_flag(argc, argv, "--repeats", 15);
    torch::manual_seed(0);
    torch::set_num_threads(1);
    bench::set_openblas_threads(1);
    const auto small = [](std::vector<int64_t> s) { return torch::rand(s) * 0.5 + 0.5; };
    using T = torch::Tensor;
    std::vector<Case> cases;
    cases.push_back(
        {"add", "[4]", small({4}), small({4}), [](const T& y, const T& w) { return torch::add(y, w); }});
    cases.push_back(
        {"mul", "[4]", small({4}), small({4}), [](const T& y, const T& w) { return torch::mul(y, w); }});
    cases.push_back({"mul scalar", "[4]", small({4}), T(), [](const T& y, const T&) { return y * 1.01; }});
    cases.push_back({"tanh", "[4]", small({4}), T(), [](const T& y, const T&) { return torch::tanh(y); }});
    cases.push_back({"matmul", "[2, 2]", small({2, 2}), small({2, 2}),
                     [](const T& y, const T& w) { return torch::matmul(y, w); }});
    cases.push_back({"sum", "[4]", small({4}), T(), [](const T& y, const T&) { return y.sum({-1}, true); }});

    std::printf(
        "LibTorch %s: per-op overhead in microseconds (float32, chains of %d ops, thread CPU time, "
        "median of %d runs)\n",
        TORCH_VERSION, kChain, repeats);
    std::printf("%-11s %-7s %9s %10s %14s %9s\n", "op", "shape", "no grad", "recording", "fwd+backward",
                "backward");
    for (Case& c : cases) {
        const T plain = c.x;
        const T leaf = c.x.detach().clone().requires_grad_(true);
        const T seed = torch::ones_like(run_chain(c, plain));
        const auto no_grad = [&] { run_chain(c, plain); };
        const auto record = [&] { run_chain(c, leaf); };
        const auto both = [&] {
            run_chain(c, leaf).backward(seed);
            leaf.mutable_grad().reset();
        };
        const auto time = [&](auto&& fn) {
            const int iters = bench::calibrate(fn, 0.01, bench::Clock::ThreadCpu);
            return bench::median_seconds(fn, iters, repeats, iters, bench::Clock::ThreadCpu) * 1e6 / kChain;
        };
        const double t_none = time(no_grad);
        const double t_record = time(record);
        const double t_both = time(both);
        std::printf("%-11s %-7s %9.3f %10.3f %14.3f %9.3f\n", c.name.c_str(), c.shape.c_str(), t_none,
                    t_record, t_both, t_both - t_record);
    }
    std::printf("(recording: the chain is built then dropped; backward = fwd+backward - recording)\n");
}

// Per-op overhead of the tape on tiny tensors: a chain of 10 ops run without recording, with
// recording, and with recording plus backward; microseconds per op (median of repeats).
// Peers: libtorch_op_overhead.cpp and pytorch_op_overhead.py measure the same chains.
#include "attograd.hpp"
#include "timing.hpp"

#include <fmt/core.h>

#include <functional>
#include <string>

using namespace attograd;

namespace {

constexpr int kChain = 10;  // ops per chain

struct Case {
    std::string name;
    std::string shape;
    Tensor x, w;
    std::function<Tensor(const Tensor& y, const Tensor& w)> op;
};

Tensor run_chain(const Case& c, const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < kChain; ++i) y = c.op(y, c.w);
    return y;
}

}  // namespace

int main(int argc, char** argv) {
    const int repeats = bench::int_flag(argc, argv, "--repeats", 15);
    Generator gen(0);
    const auto small = [&](Shape s) { return uniform(s, 0.5, 1.0, gen); };
    std::vector<Case> cases;
    cases.push_back(
        {"add", "[4]", small({4}), small({4}), [](const Tensor& y, const Tensor& w) { return add(y, w); }});
    cases.push_back(
        {"mul", "[4]", small({4}), small({4}), [](const Tensor& y, const Tensor& w) { return mul(y, w); }});
    cases.push_back(
        {"mul scalar", "[4]", small({4}), Tensor(), [](const Tensor& y, const Tensor&) { return y * 1.01; }});
    cases.push_back(
        {"tanh", "[4]", small({4}), Tensor(), [](const Tensor& y, const Tensor&) { return tanh(y); }});
    cases.push_back({"matmul", "[2, 2]", small({2, 2}), small({2, 2}),
                     [](const Tensor& y, const Tensor& w) { return matmul(y, w); }});
    cases.push_back({"sum", "[4]", small({4}), Tensor(),
                     [](const Tensor& y, const Tensor&) { return sum(y, {-1}, true); }});

    fmt::print(
        "attograd: per-op overhead in microseconds (float32, chains of {} ops, thread CPU time, median of {} "
        "runs)\n",
        kChain, repeats);
    fmt::print("{:<11} {:<7} {:>9} {:>10} {:>14} {:>9}\n", "op", "shape", "no grad", "recording",
               "fwd+backward", "backward");
    for (Case& c : cases) {
        const Tensor plain = c.x;
        Tensor leaf = c.x.detach();
        leaf.requires_grad_();
        const Tensor seed = ones(run_chain(c, plain).shape());

        const auto no_grad = [&] { run_chain(c, plain); };
        const auto record = [&] { run_chain(c, leaf); };
        const auto both = [&] {
            run_chain(c, leaf).backward(seed);
            leaf.zero_grad();
        };
        const auto time = [&](auto&& fn) {
            const int iters = bench::calibrate(fn, 0.01, bench::Clock::ThreadCpu);
            return bench::median_seconds(fn, iters, repeats, iters, bench::Clock::ThreadCpu) * 1e6 / kChain;
        };
        const double t_none = time(no_grad);
        const double t_record = time(record);
        const double t_both = time(both);
        fmt::print("{:<11} {:<7} {:>9.3f} {:>10.3f} {:>14.3f} {:>9.3f}\n", c.name, c.shape, t_none, t_record,
                   t_both, t_both - t_record);
    }
    fmt::print("tape entries left after the last backward: {}\n", autograd::tape_size());
    fmt::print("(recording: the chain is built then dropped; backward = fwd+backward - recording)\n");
}

// LibTorch peer of bench_matmul.cpp: torch::mm throughput in GFLOP/s at the same sizes, forward
// and forward+backward, timed the same way.
//   libtorch_matmul [--threads N] [--repeats R]   (default: every core; --threads 1 for one core)
#include "openblas_core.hpp"
#include "timing.hpp"

#include <torch/torch.h>

#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

namespace {

struct Row {
    double fwd, both;
};

Row measure(std::int64_t n, torch::ScalarType dtype, int repeats, bench::Clock clock) {
    torch::manual_seed(n);
    const auto opts = torch::TensorOptions().dtype(dtype);
    const torch::Tensor a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts),
                        dy = torch::randn({n, n}, opts);
    const torch::Tensor ga = a.clone().requires_grad_(true), gb = b.clone().requires_grad_(true);
    std::vector<std::function<void()>> fns = {
        [&] { torch::mm(a, b); },
        [&] {
            torch::mm(ga, gb).backward(dy);
            ga.mutable_grad().reset();
            gb.mutable_grad().reset();
        },
    };
    std::vector<int> iters;
    for (auto& fn : fns) iters.push_back(bench::calibrate(fn, 0.01, clock));
    const std::vector<double> s = bench::interleaved_median_seconds(fns, iters, repeats, clock);
    const double flop = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    return {flop / s[0] * 1e-9, 3 * flop / s[1] * 1e-9};
}

}  // namespace

int main(int argc, char** argv) {
    bench::use_fast_openblas_kernels(argv);
    const int threads =
        bench::int_flag(argc, argv, "--threads", static_cast<int>(std::thread::hardware_concurrency()));
    const int repeats = bench::int_flag(argc, argv, "--repeats", 11);
    torch::set_num_threads(threads);
    bench::set_openblas_threads(threads);  // LibTorch's products run in OpenBLAS's own pool
    const bench::Clock clock = threads == 1 ? bench::Clock::ThreadCpu : bench::Clock::Wall;
    std::printf(
        "LibTorch %s torch::mm [n, n] x [n, n]: GFLOP/s, %d thread(s), %s time, median of %d runs; "
        "OpenBLAS kernels: %s\n",
        TORCH_VERSION, threads, threads == 1 ? "thread CPU" : "wall", repeats,
        bench::openblas_core().c_str());
    std::printf("%-8s %5s | %9s %9s\n", "dtype", "n", "forward", "fwd+bwd");
    for (auto [name, dtype] :
         {std::pair{"float32", torch::kFloat32}, std::pair{"float64", torch::kFloat64}}) {
        for (std::int64_t n : {64, 256, 512, 1024}) {
            const Row r = measure(n, dtype, repeats, clock);
            std::printf("%-8s %5ld | %9.1f %9.1f\n", name, static_cast<long>(n), r.fwd, r.both);
        }
    }
}

// Global attention's time and peak memory as the sequence grows (T = 512 ... 8192, one head,
// E = 64, forward + backward): the unfused nn::Attention, the fused kernel that keeps the
// [T, T] weights (need_weights), and the flash kernel that does not. Each (T, kernel) runs in
// a child process, so that its peak resident memory (getrusage's ru_maxrss) is its own.
//
//   bench_global_attention [--max-t T] [--threads N]
#include "attograd.hpp"
#include "timing.hpp"

#include <fmt/core.h>
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace attograd;

namespace {

enum class Kernel { Unfused, Kept, Flash };

// Runs one step after a warm-up and returns its median wall time in ms over `reps` steps.
double time_steps(Kernel kernel, std::int64_t t, int reps) {
    Generator gen(0);
    const std::int64_t e = 64;
    Tensor x = randn({1, t, e}, gen, {.requires_grad = true});
    nn::Attention layer({.query_dim = e}, gen);
    auto step = [&] {
        Tensor out =
            kernel == Kernel::Unfused
                ? layer.forward(x, x, nn::AttentionArgs{.need_weights = false}).output
                : scaled_dot_product_attention_heads(x, x, x, 1, {.need_weights = kernel == Kernel::Kept})
                      .output;
        sum(out).backward();
        x.zero_grad();
    };
    step();
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
        const double start = bench::now(bench::Clock::Wall);
        step();
        ms.push_back(1e3 * (bench::now(bench::Clock::Wall) - start));
    }
    return bench::median(ms);
}

// Runs this program again as `--child kernel t reps` (a fresh process: forking one whose
// OpenMP pool has started may hang the child) and reads back {ms, peak MB}.
std::pair<double, double> in_child(Kernel kernel, std::int64_t t, int reps, int threads) {
    const std::string command =
        fmt::format("/proc/{}/exe --child {} {} {} {}", getpid(), static_cast<int>(kernel), t, reps, threads);
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return {-1, -1};
    double ms = -1, mb = -1;
    if (std::fscanf(pipe, "%lf %lf", &ms, &mb) != 2) ms = mb = -1;
    pclose(pipe);
    return {ms, mb};
}

int child(char** argv) {
    omp_set_num_threads(std::atoi(argv[5]));
    const double ms =
        time_steps(static_cast<Kernel>(std::atoi(argv[2])), std::atoll(argv[3]), std::atoi(argv[4]));
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("%f %f\n", ms, static_cast<double>(usage.ru_maxrss) / 1024.0);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 6 && std::string(argv[1]) == "--child") return child(argv);
    const std::int64_t max_t = bench::int_flag(argc, argv, "--max-t", 8192);
    const int threads = bench::int_flag(argc, argv, "--threads", omp_get_max_threads());
    omp_set_num_threads(threads);
    fmt::print("global self-attention, one head, B = 1, E = 64, forward + backward, {} thread(s)\n", threads);
    fmt::print("peak = the child process's maximum resident set (ru_maxrss), whole process\n");
    fmt::print("fma peak {:.0f} GFLOP/s before\n\n", bench::fma_gflops(threads));
    fmt::print("{:>6} | {:>11} {:>9} | {:>11} {:>9} | {:>11} {:>9} | {:>7}\n", "T", "unfused ms", "peak MB",
               "kept ms", "peak MB", "flash ms", "peak MB", "kept/flash");
    for (std::int64_t t = 512; t <= max_t; t *= 2) {
        const int reps = t <= 1024 ? 15 : t <= 4096 ? 5 : 3;
        const auto [ums, umb] = in_child(Kernel::Unfused, t, reps, threads);
        const auto [kms, kmb] = in_child(Kernel::Kept, t, reps, threads);
        const auto [fms, fmb] = in_child(Kernel::Flash, t, reps, threads);
        fmt::print("{:>6} | {:>11.2f} {:>9.1f} | {:>11.2f} {:>9.1f} | {:>11.2f} {:>9.1f} | {:>9.2f}x\n", t,
                   ums, umb, kms, kmb, fms, fmb, kms / fms);
        std::fflush(stdout);
    }
    fmt::print("\nfma peak {:.0f} GFLOP/s after\n", bench::fma_gflops(threads));
    return 0;
}

// Attention rollout and attention flow (inspect/rollout.hpp) for T = 32, 64 and L = 2, 3, 4 layers:
// time per call on one and two threads. Flow is a closed form for L = 2 and T^2 Dinic max-flows
// for L >= 3, so it should grow by orders of magnitude from L = 2 to 3, and steeply with T.
//
//   bench_rollout [--heads H]   (B = 1, h = 4 by default)
#include "attograd.hpp"
#include "timing.hpp"

#include <fmt/core.h>
#include <omp.h>

#include <cstdio>
#include <string>

using namespace attograd;

int main(int argc, char** argv) {
    const std::int64_t heads = bench::int_flag(argc, argv, "--heads", 4);
    const int max_threads = omp_get_max_threads();
    fmt::print("attention rollout and flow, B = 1, h = {}, softmax weights of N(0, 2^2) scores\n", heads);
    fmt::print("cores' multiply-add speed before: {:.0f} GFLOP/s (1 thread), {:.0f} (2 threads)\n",
               bench::fma_gflops(1), bench::fma_gflops(2));
    const bench::CpuTicks ticks = bench::cpu_ticks();
    fmt::print(
        "| T | L | rollout ms, 1 thread | max-flow nodes / edges | flow ms, 1 thread | flow ms, {} threads | "
        "flow µs per pair, 1 thread |\n",
        max_threads);
    fmt::print("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (const std::int64_t t : {32, 64}) {
        for (const std::int64_t l : {2, 3, 4}) {
            Generator gen(static_cast<std::uint64_t>(10 * t + l));
            std::vector<Tensor> layers;
            for (std::int64_t i = 0; i < l; ++i)
                layers.push_back(softmax(randn({1, heads, t, t}, gen) * 2.0f, -1));
            volatile double sink = 0.0;
            const auto rollout = [&] { sink = sink + inspect::attention_rollout(layers).at({0, 0, 0}); };
            const auto flow_on = [&](int threads) {
                return [&, threads] {
                    omp_set_num_threads(threads);
                    sink = sink + inspect::attention_flow(layers).at({0, 0, 0});
                };
            };
            // One thread: its own CPU time (robust on a shared machine); all threads: wall time.
            omp_set_num_threads(1);
            const double rollout_s =
                bench::median_seconds(rollout, bench::calibrate(rollout, 0.05, bench::Clock::ThreadCpu), 5, 1,
                                      bench::Clock::ThreadCpu);
            const auto one = flow_on(1), all = flow_on(max_threads);
            const int iters = bench::calibrate(one, 0.2, bench::Clock::ThreadCpu);
            const double flow_one_s = bench::median_seconds(one, iters, 3, 0, bench::Clock::ThreadCpu);
            const double flow_all_s = bench::median_seconds(all, iters, 3, 1, bench::Clock::Wall);
            // The max-flow network of each (j, i) pair (no weight is 0 here, so no edge is left out).
            const std::string network =
                l < 3 ? "closed form" : fmt::format("{} / {}", (l - 1) * t + 2, (l - 2) * t * t + 2 * t);
            fmt::print("| {} | {} | {:.3f} | {} | {:.2f} | {:.2f} | {:.2f} |\n", t, l, rollout_s * 1e3,
                       network, flow_one_s * 1e3, flow_all_s * 1e3,
                       flow_one_s * 1e6 / static_cast<double>(t * t));
            std::fflush(stdout);
        }
    }
    omp_set_num_threads(max_threads);
    fmt::print(
        "host stole {:.1f} % of the CPU time; cores' speed after: {:.0f} GFLOP/s (1 thread), {:.0f} (2)\n",
        bench::steal_percent_since(ticks), bench::fma_gflops(1), bench::fma_gflops(2));
}

// Full training steps of a one-layer self-attention model (embedding 16 -> E, MultiHeadAttention,
// Linear E -> 16, cross-entropy, Adam) in attograd, next to the same step in LibTorch
// (libtorch_train_step, run from this program's directory when it was built) with the ratio.
//
//   bench_train_step [--threads N] [--rounds R] [small|large|local]
//   bench_train_step --compare-threads 1 [--busy 1] [--rounds R] [small|large|local]
//
// --threads N sets the OpenMP threads of both programs (default: every core). On a machine that
// other processes load, each parallel region waits for a descheduled worker; --threads 1
// compares the frameworks' own work. The load average is printed first for that reason.
//
// Configurations: small B 32, T 32, E 64, h 4; large B 8, T 256, E 256, h 8;
// local B 4, T 512, E 64, h 4 with local-m attention of window D = 8 (LibTorch: a band mask
// over the full T x T scores). Each measurement is the median ms/step over 7 runs after warm-up.
// A configuration takes R rounds (default 3), each timing attograd and then LibTorch, so that a slow
// spell of the machine (this VM's host takes its CPUs away at times) lands on both alike; the
// table shows each framework's median over the rounds and the ratio of the two medians.
// Printed last: the share of CPU time the host took during the run, and a check of the cores'
// own speed before and after it (bench::fma_gflops): on this VM another guest sometimes slows
// one core by up to 40 % without any steal showing, and then every multi-threaded figure moves.
//
// --compare-threads 1 times attograd alone on one thread and on the default thread count in
// alternating rounds within this process (omp_set_num_threads), and prints both medians, their
// ratio and each against its floor, after the costs the threading policy measured at start-up
// (core/detail/parallel.hpp: the fork/join round trip and the size from which a split pays).
// --busy 1 keeps one more process spinning on a core meanwhile (bench::BusyProcess).
#include "attograd.hpp"
#include "core/detail/gemm.hpp"
#include "core/detail/parallel.hpp"
#include "core_latency.hpp"
#include "optim/optim.hpp"
#include "side_by_side.hpp"
#include "timing.hpp"
#include "train_step_model.hpp"

#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace attograd;

namespace {

using bench::Config;
using bench::Model;

// Milliseconds per step: the median of 7 timed runs of about 0.2 s each, after 3 warm-up steps.
// Wall time: the step runs on every core.
double median_ms(const std::function<void()>& step) {
    const int iters = bench::calibrate(step, 0.2, bench::Clock::Wall);
    return 1e3 * bench::median_seconds(step, iters, 7, 3, bench::Clock::Wall);
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

// Floating-point operations of one step's products (2 per multiply-add), forward + backward
// (backward: two products per forward product, dX and dW or dQ and dK ...):
//   projections: in_proj [BT, E] x [E, 3E], out_proj [BT, E] x [E, E], head [BT, E] x [E, 16]:
//     3 x 2 BT (4 E^2 + 16 E)
//   attention: scores and weighted sum, 2 x 2 B T K E forward (K = T keys, or 2D + 1 for the band),
//     four products in backward: 12 B T K E.
// Softmax, cross-entropy, Adam and the embedding are left out: the floor is the products alone.
double step_flops(const Config& c) {
    const double bt = static_cast<double>(c.batch * c.time), e = static_cast<double>(c.embed);
    const double keys = c.window >= 0 ? static_cast<double>(2 * c.window + 1) : static_cast<double>(c.time);
    return 6.0 * bt * (4.0 * e * e + 16.0 * e) + 12.0 * bt * keys * e;
}

// One thread against the default thread count, in alternating rounds (--compare-threads).
void compare_threads(const std::vector<Config>& configs, const std::string& only, int rounds, bool busy) {
    const int all = omp_get_max_threads();
    const auto& cost = detail::split_cost();  // measured now, on the default thread count, before any load
    std::optional<bench::BusyProcess> spinner;
    if (busy) spinner.emplace();
    if (FILE* load = std::fopen("/proc/loadavg", "r")) {
        double one_minute = 0.0;
        if (std::fscanf(load, "%lf", &one_minute) == 1)
            std::printf("load average %.2f on %d cores%s\n", one_minute, omp_get_num_procs(),
                        busy ? ", one busy process beside" : "");
        std::fclose(load);
    }
    const std::string verdict =
        cost.cut_short ? "measuring cut short at its time limit (sizes not reached count as not paying)"
        : cost.break_even > 0 ? fmt::format("a split pays from {} element visits", cost.break_even)
                              : "no measured size paid";
    std::printf(
        "split costs measured at start-up on %d threads: round trip %.0f ns, one element visit %.3f ns, %s "
        "(scale %.3f of the nominal thresholds)\n",
        cost.threads, cost.fork_join_ns, cost.visit_ns, verdict.c_str(), cost.scale);
    std::printf("a cache line's round trip between the two first threads' cores: %.0f ns\n",
                bench::core_round_trip_ns());
    const double peak_one = bench::fma_gflops(1), peak_all = bench::fma_gflops(all);
    std::printf("multiply-add peak: %.0f GFLOP/s on 1 thread, %.0f on %d\n", peak_one, peak_all, all);
    std::printf("%-7s %12s %12s %10s %12s %12s\n", "config", "1 thread ms", "default ms", "default/1",
                "1 / floor", "default/floor");
    for (const auto& c : configs) {
        if (!only.empty() && only != c.name) continue;
        std::vector<double> one, dflt;
        for (int round = 0; round < rounds; ++round) {
            omp_set_num_threads(1);
            one.push_back(time_config(c));
            omp_set_num_threads(all);
            dflt.push_back(time_config(c));
        }
        const double m1 = bench::median(one), md = bench::median(dflt);
        const double floor1 = step_flops(c) / (peak_one * 1e9) * 1e3,
                     floor_all = step_flops(c) / (peak_all * 1e9) * 1e3;
        std::printf("%-7s %12.3f %12.3f %9.2fx %11.2fx %12.2fx\n", c.name.c_str(), m1, md, md / m1,
                    m1 / floor1, md / floor_all);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<Config> configs = {
        {"small", 32, 32, 64, 4, -1}, {"large", 8, 256, 256, 8, -1}, {"local", 4, 512, 64, 4, 8}};
    const int threads = bench::int_flag(argc, argv, "--threads", 0);
    if (threads > 0) omp_set_num_threads(threads);
    const std::string only = bench::chosen_config(argc, argv, {"small", "large", "local"});
    if (bench::int_flag(argc, argv, "--compare-threads", 0) != 0) {
        compare_threads(configs, only, bench::int_flag(argc, argv, "--rounds", 5),
                        bench::int_flag(argc, argv, "--busy", 0) != 0);
        return 0;
    }
    const auto core_check = [] {
        const double one = bench::fma_gflops(1), all = bench::fma_gflops(omp_get_max_threads());
        return 100.0 * all / (one * omp_get_max_threads());
    };
    const double cores_before = core_check();
    const bench::CpuTicks start = bench::cpu_ticks();
    bench::SideBySide table(argv[0], "libtorch_train_step", threads,
                            bench::int_flag(argc, argv, "--rounds", 3), 7, 28);
    for (const auto& c : configs) {
        if (!only.empty() && only != c.name) continue;
        const std::string shape = fmt::format("B={} T={} E={} h={}{}", c.batch, c.time, c.embed, c.heads,
                                              c.window >= 0 ? fmt::format(" D={}", c.window) : "");
        table.row(c.name, shape, step_flops(c), [&] { return time_config(c); });
    }
    table.finish();
    const double steal = bench::steal_percent_since(start);
    std::printf(
        "CPU time stolen by the host during the run: %.1f %%; %d threads ran at %.0f %% (before) and "
        "%.0f %% (after) of %d x one thread's multiply-add speed\n",
        steal, omp_get_max_threads(), cores_before, core_check(), omp_get_max_threads());
    return 0;
}

// Local vs global attention as the sequence grows (512 -> 8192, window D = 8): forward + backward
// time and peak memory. Local attention computes only the band of 2D + 1 keys per query, so both
// should grow linearly in T; global attention's [T, T] scores grow quadratically. A second table
// times the fused banded op alone (local_scaled_dot_product_attention_packed, the kernel of
// MultiHeadAttention's local path) at the local training step's heads: B 4, h 4, d 16.
//
//   bench_local_attention [--max-global T]   (global runs up to T = 8192 by default, ~1.5 GB)
#include "attograd.hpp"
#include "core/detail/gemm.hpp"

#include <fmt/core.h>

#include <malloc.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>

using namespace attograd;

namespace {

// A field of /proc/self/status in kB (VmHWM = peak resident set, VmRSS = current).
long status_kb(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field) + 1);
    return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0: writing 5 to clear_refs).
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Returns freed memory to the system, so the next step's peak shows in VmHWM.
void release_memory() {
    empty_cache();
    malloc_trim(0);
}

struct Figures {
    double ms = 0;       // forward + backward wall time, mean over the timed steps
    double cpu_ms = 0;   // process CPU time (all threads) per step: robust on a loaded machine
    double peak_mb = 0;  // peak resident memory above the starting point during one step
};

Figures measure(const nn::Attention& layer, std::int64_t t, std::int64_t e, Generator& gen) {
    Tensor x = randn({1, t, e}, gen, {.requires_grad = true});
    auto step = [&] {
        sum(layer.forward(x, x, nn::AttentionArgs{.need_weights = false}).output).backward();
        x.zero_grad();
    };
    release_memory();
    const long before = status_kb("VmRSS:");
    reset_peak();
    step();  // the first step also warms the buffer cache
    Figures f;
    f.peak_mb = static_cast<double>(status_kb("VmHWM:") - before) / 1024.0;
    const int reps = static_cast<int>(std::max<std::int64_t>(2, 16384 / t));
    const std::clock_t cpu_start = std::clock();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) step();
    f.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
    f.cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC / reps;
    release_memory();
    return f;
}

// Forward + backward of the fused banded op alone on packed qkv [4, T, 3 * 64], 4 heads of 16,
// local-m windows of 2D + 1 keys: the best of 5 rounds (wall and CPU ms per step).
Figures measure_fused_op(std::int64_t t, std::int64_t d, Generator& gen) {
    const std::int64_t b = 4, h = 4, e = 64;
    Tensor qkv = randn({b, t, 3 * e}, gen, {.requires_grad = true});
    const Tensor start = nn::monotonic_window_start(b * h, t, t, d);
    const Tensor weight = randn({b, t, e}, gen);  // a loss reading every output element
    auto step = [&] {
        const SdpaResult r = local_scaled_dot_product_attention_packed(qkv, h, start, 2 * d + 1);
        sum(r.output * weight).backward();
        qkv.zero_grad();
    };
    step();
    const int reps = static_cast<int>(std::max<std::int64_t>(4, 32768 / t));
    Figures best{.ms = 1e30, .cpu_ms = 1e30};
    for (int round = 0; round < 5; ++round) {
        const std::clock_t cpu_start = std::clock();
        const auto start_time = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) step();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_time).count() /
            reps;
        best.ms = std::min(best.ms, ms);
        best.cpu_ms = std::min(
            best.cpu_ms, 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC / reps);
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    std::int64_t max_global = 8192;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--max-global") max_global = std::atoll(argv[i + 1]);
    const std::int64_t e = 64, d = 8;
    Generator gen(0);
    nn::Attention local({.query_dim = e, .scoring = {.local = nn::LocalMode::Monotonic, .window = d}}, gen);
    nn::Attention global({.query_dim = e}, gen);
    fmt::print(
        "single-head scaled-dot self-attention, B = 1, E = {}, window D = {} (2D + 1 = {} keys per query)\n",
        e, d, 2 * d + 1);
    fmt::print(
        "forward + backward per step (wall and process CPU time); peak = resident memory growth during\n"
        "one step (VmHWM); speedup = global CPU time / local CPU time\n\n");
    fmt::print("{:>6} | {:>9} {:>9} {:>9} {:>11} | {:>9} {:>9} {:>9} | {:>8}\n", "T", "local ms", "cpu ms",
               "peak MB", "cpu us / T", "global ms", "cpu ms", "peak MB", "speedup");
    for (std::int64_t t = 512; t <= 8192; t *= 2) {
        const Figures lf = measure(local, t, e, gen);
        std::string gms = "-", gcpu = "-", gmb = "-", ratio = "-";
        if (t <= max_global) {
            const Figures gf = measure(global, t, e, gen);
            gms = fmt::format("{:.2f}", gf.ms);
            gcpu = fmt::format("{:.2f}", gf.cpu_ms);
            gmb = fmt::format("{:.1f}", gf.peak_mb);
            ratio = fmt::format("{:.1f}x", gf.cpu_ms / lf.cpu_ms);
        }
        fmt::print("{:>6} | {:>9.2f} {:>9.2f} {:>9.1f} {:>11.3f} | {:>9} {:>9} {:>9} | {:>8}\n", t, lf.ms,
                   lf.cpu_ms, lf.peak_mb, 1000.0 * lf.cpu_ms / static_cast<double>(t), gms, gcpu, gmb, ratio);
    }
    fmt::print(
        "\nthe fused banded op alone (forward + backward, packed qkv, B = 4, h = 4, d = 16, D = {}, "
        "gemm backend {}),\nbest of 5 rounds\n\n",
        d, detail::gemm_backend());
    fmt::print("{:>6} | {:>9} {:>9} {:>11}\n", "T", "op ms", "cpu ms", "cpu us / T");
    for (std::int64_t t = 512; t <= 8192; t *= 2) {
        const Figures f = measure_fused_op(t, d, gen);
        fmt::print("{:>6} | {:>9.3f} {:>9.3f} {:>11.3f}\n", t, f.ms, f.cpu_ms,
                   1000.0 * f.cpu_ms / static_cast<double>(t));
    }
    return 0;
}

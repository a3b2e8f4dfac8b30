// The side-by-side table of an attograd benchmark and its LibTorch peer program: the load, the
// multiply-add peak, one row per configuration (both frameworks' medians over alternating rounds,
// the FLOP floor and the ratios), then the BLAS the peer loaded and the peak samples.
#pragma once

#include "core/detail/gemm.hpp"
#include "peer.hpp"
#include "timing.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace bench {

class SideBySide {
public:
    /// Prints the load average, the peak of the OpenMP threads and the table's header. `peer` is
    /// the LibTorch program beside `argv0`, run with `--threads threads` when threads > 0; each
    /// row takes `rounds` rounds; the name and shape columns are `name_width` and `shape_width` wide.
    SideBySide(const char* argv0, std::string peer, int threads, int rounds, int name_width, int shape_width)
        : self_(std::filesystem::absolute(argv0)),
          peer_(std::move(peer)),
          threads_(threads),
          rounds_(std::max(1, rounds)),
          name_width_(name_width),
          shape_width_(shape_width) {
        if (FILE* load = std::fopen("/proc/loadavg", "r")) {
            double one_minute = 0.0;
            if (std::fscanf(load, "%lf", &one_minute) == 1)
                std::printf("load average %.2f on %d cores, %d OpenMP threads\n", one_minute,
                            omp_get_num_procs(), omp_get_max_threads());
            std::fclose(load);
        }
        for (int i = 0; i < 2; ++i) sample_peak();
        std::printf("multiply-add peak of %d threads: %.0f GFLOP/s, best of 3 samples (gemm backend: %s)\n",
                    omp_get_max_threads(), sample_peak(), attograd::detail::gemm_backend());
        std::printf("%-*s %-*s %8s %9s %12s %12s %9s %10s %11s\n", name_width_, "config", shape_width_,
                    "shape", "MFLOP", "floor ms", "attograd ms", "libtorch ms", "speed-up", "ours/floor",
                    "torch/floor");
    }

    /// Times `ours` (ms per step) and the peer's configuration `name` in alternating rounds and
    /// prints the row: each one's median over the rounds, and the floor, `flops` at the threads'
    /// multiply-add peak (the best of several samples: a single one taken while the host slowed a
    /// core once put the floor at half the machine's speed).
    void row(const std::string& name, const std::string& shape, double flops,
             const std::function<double()>& ours) {
        const double peak = sample_peak();
        std::vector<double> mine, torch;
        for (int round = 0; round < rounds_; ++round) {
            mine.push_back(ours());
            torch.push_back(peer_ms(self_, peer_, name, threads_, blas_));
        }
        const double floor_ms = flops / (peak * 1e9) * 1e3;
        const double our_ms = median(mine), torch_ms = median(torch);
        if (torch.back() > 0)
            std::printf("%-*s %-*s %8.1f %9.3f %12.3f %12.3f %8.2fx %9.2fx %10.2fx\n", name_width_,
                        name.c_str(), shape_width_, shape.c_str(), flops * 1e-6, floor_ms, our_ms, torch_ms,
                        torch_ms / our_ms, our_ms / floor_ms, torch_ms / floor_ms);
        else
            std::printf("%-*s %-*s %8.1f %9.3f %12.3f %12s %9s %9.2fx %11s\n", name_width_, name.c_str(),
                        shape_width_, shape.c_str(), flops * 1e-6, floor_ms, our_ms, "-", "-",
                        our_ms / floor_ms, "-");
        std::fflush(stdout);
    }

    /// Prints the BLAS the peer loaded and the peak after the run with the range of the samples.
    void finish() const {
        std::printf("LibTorch's BLAS: %s\n", blas_.c_str());
        const double after = fma_gflops(omp_get_max_threads());
        std::printf("multiply-add peak of %d threads after the run: %.0f GFLOP/s; samples %.0f-%.0f\n",
                    omp_get_max_threads(), after, *std::min_element(peaks_.begin(), peaks_.end()),
                    *std::max_element(peaks_.begin(), peaks_.end()));
    }

private:
    double sample_peak() {
        peaks_.push_back(fma_gflops(omp_get_max_threads()));
        return *std::max_element(peaks_.begin(), peaks_.end());
    }

    std::filesystem::path self_;
    std::string peer_, blas_ = "not run";
    int threads_, rounds_, name_width_, shape_width_;
    std::vector<double> peaks_;
};

}  // namespace bench

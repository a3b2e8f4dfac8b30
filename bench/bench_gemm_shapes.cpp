// GEMM efficiency by shape on one thread: attograd's GEMM layer (core/detail/gemm.hpp: LIBXSMM, or
// Eigen when built with -DATTOGRAD_USE_LIBXSMM=OFF), raw Eigen GEMM and, when the build found
// it, OpenBLAS, on the shapes the training steps and the flash kernel run, as a share of the
// core's measured multiply-add peak (bench::fma_gflops(1)). Thread CPU time, best of the
// interleaved medians: immune to other processes on this shared machine. The last column is
// the whole matmul op on single products (detail::matmul_kernel: row blocks, and on LIBXSMM
// op(B) packed into panels once, core/detail/gemm.hpp), the path linear and matmul take.
//
//   bench_gemm_shapes [--repeats R]
#include "core/detail/gemm.hpp"
#include "core/detail/matmul_blocks.hpp"
#include "core/ops_matmul.hpp"
#include "core/tensor.hpp"
#include "timing.hpp"

#include <fmt/core.h>
#include <omp.h>
#include <Eigen/Core>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#ifdef ATTOGRAD_BENCH_OPENBLAS
#include "openblas_core.hpp"

#include <cblas.h>
#endif

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Shape {
    const char* use;
    int m, n, k;
    bool trans_b;
    int batch;  // independent products of this shape per call (per-head blocks)
};

}  // namespace

int main(int argc, char** argv) {
#ifdef ATTOGRAD_BENCH_OPENBLAS
    bench::use_fast_openblas_kernels(argv);
    bench::set_openblas_threads(1);
    fmt::print("OpenBLAS kernels: {}\n", bench::openblas_core());
#endif
    omp_set_num_threads(1);
    const int repeats = bench::int_flag(argc, argv, "--repeats", 7);
    const std::vector<Shape> shapes = {
        {"small: per-head scores Q K^T", 32, 32, 16, true, 256},
        {"small: per-head P V", 32, 16, 32, false, 256},
        {"small: in_proj x W^T", 1024, 192, 64, true, 1},
        {"small: out_proj dW = dY^T X", 64, 64, 1024, false, 1},
        {"large: per-head scores", 256, 256, 32, true, 16},
        {"large: per-head P V", 256, 32, 256, false, 16},
        {"large: in_proj x W^T", 2048, 768, 256, true, 1},
        {"large: in_proj dX = dY W", 2048, 256, 768, false, 1},
        {"flash: score tile", 64, 128, 64, true, 64},
        {"flash: P V tile", 64, 64, 128, false, 64},
        {"square 1024", 1024, 1024, 1024, false, 1},
    };
    const double peak = bench::fma_gflops(1, 0.3, bench::Clock::ThreadCpu);
    fmt::print("float32, one thread; core's multiply-add peak {:.0f} GFLOP/s; gemm layer: {}\n", peak,
               attograd::detail::gemm_backend());
    fmt::print("{:<32} {:>16} | {:>13} {:>13} {:>13} {:>13}\n", "shape", "m x n x k (x batch)", "gemm layer",
               "Eigen", "OpenBLAS", "matmul op");
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> u(-1, 1);
    for (const Shape& s : shapes) {
        const std::size_t a_size = static_cast<std::size_t>(s.m) * s.k,
                          b_size = static_cast<std::size_t>(s.k) * s.n,
                          c_size = static_cast<std::size_t>(s.m) * s.n;
        std::vector<float> a(a_size * s.batch), b(b_size * s.batch), c(c_size * s.batch);
        for (auto& x : a) x = u(rng);
        for (auto& x : b) x = u(rng);
        const int ldb = s.trans_b ? s.k : s.n;
        std::vector<std::function<void()>> fns = {
            [&] {
                for (int i = 0; i < s.batch; ++i)
                    attograd::detail::gemm<float>(s.m, s.n, s.k, a.data() + i * a_size, s.k, false,
                                                  b.data() + i * b_size, ldb, s.trans_b,
                                                  c.data() + i * c_size, s.n, false);
            },
            [&] {
                for (int i = 0; i < s.batch; ++i) {
                    const Eigen::Map<const RowMatrix> A(a.data() + i * a_size, s.m, s.k);
                    Eigen::Map<RowMatrix> C(c.data() + i * c_size, s.m, s.n);
                    if (s.trans_b)
                        C.noalias() =
                            A * Eigen::Map<const RowMatrix>(b.data() + i * b_size, s.n, s.k).transpose();
                    else
                        C.noalias() = A * Eigen::Map<const RowMatrix>(b.data() + i * b_size, s.k, s.n);
                }
            },
        };
#ifdef ATTOGRAD_BENCH_OPENBLAS
        fns.push_back([&] {
            for (int i = 0; i < s.batch; ++i)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, s.trans_b ? CblasTrans : CblasNoTrans, s.m, s.n, s.k,
                            1.0f, a.data() + i * a_size, s.k, b.data() + i * b_size, ldb, 0.0f,
                            c.data() + i * c_size, s.n);
        });
#endif
#ifndef ATTOGRAD_BENCH_OPENBLAS
        fns.emplace_back();  // keeps the matmul op's column the fourth
#endif
        attograd::Tensor ta, tb;
        if (s.batch == 1) {
            ta = attograd::empty({s.m, s.k});
            tb = s.trans_b ? attograd::empty({s.n, s.k}) : attograd::empty({s.k, s.n});
            std::copy(a.begin(), a.end(), ta.data<float>());
            std::copy(b.begin(), b.end(), tb.data<float>());
            fns.push_back([&] { attograd::detail::matmul_kernel(ta, tb, false, s.trans_b); });
        }
        std::vector<std::size_t> ran;  // the columns that have a function
        std::vector<std::function<void()>> present;
        for (std::size_t i = 0; i < fns.size(); ++i)
            if (fns[i]) {
                ran.push_back(i);
                present.push_back(fns[i]);
            }
        std::vector<int> iters;
        for (auto& fn : present) iters.push_back(bench::calibrate(fn, 0.02, bench::Clock::ThreadCpu));
        const auto secs = bench::interleaved_median_seconds(present, iters, repeats, bench::Clock::ThreadCpu);
        const double flop = 2.0 * s.m * s.n * s.k * s.batch;
        const auto cell = [&](std::size_t column) {
            const auto at = std::find(ran.begin(), ran.end(), column);
            if (at == ran.end()) return fmt::format("{:>13}", "-");
            const double gf = flop / secs[static_cast<std::size_t>(at - ran.begin())] * 1e-9;
            return fmt::format("{:>6.0f} ({:>3.0f}%)", gf, 100 * gf / peak);
        };
        const std::string dims = fmt::format("{}x{}x{}{}{}", s.m, s.n, s.k, s.trans_b ? "T" : "",
                                             s.batch > 1 ? fmt::format(" x{}", s.batch) : "");
        fmt::print("{:<32} {:>16} | {} {} {} {}\n", s.use, dims, cell(0), cell(1), cell(2), cell(3));
    }
    fmt::print("GFLOP/s (share of the peak); T = B transposed (row-major); peak after: {:.0f} GFLOP/s\n",
               bench::fma_gflops(1, 0.3, bench::Clock::ThreadCpu));
}

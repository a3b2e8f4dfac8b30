// Matmul throughput in GFLOP/s at n = 64, 256, 512, 1024 (float32 and float64): attograd's
// matmul (forward, and forward+backward) next to raw Eigen GEMM on the same matrices and, when
// the build found OpenBLAS, cblas_?gemm. Efficiency = attograd / Eigen.
//   bench_matmul [--threads N] [--repeats R]   (default: every core; --threads 1 for one core)
#include "attograd.hpp"
#include "timing.hpp"

#include <fmt/core.h>
#include <omp.h>
#include <Eigen/Core>

#include <functional>
#include <vector>

#ifdef ATTOGRAD_BENCH_OPENBLAS
#include "openblas_core.hpp"

#include <cblas.h>
#endif

using namespace attograd;

namespace {

template <class T>
using Matrix = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

struct Row {
    double ag_fwd, eigen_fwd, blas_fwd, ag_both, eigen_both, blas_both;
};

#ifdef ATTOGRAD_BENCH_OPENBLAS
void gemm(bool ta, bool tb, int n, const float* a, const float* b, float* c) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, n, n, n, 1.0f,
                a, n, b, n, 0.0f, c, n);
}
void gemm(bool ta, bool tb, int n, const double* a, const double* b, double* c) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, n, n, n, 1.0,
                a, n, b, n, 0.0, c, n);
}
#endif

template <class T>
Row measure(std::int64_t n, int repeats, bench::Clock clock) {
    Generator gen(static_cast<std::uint64_t>(n));
    const TensorOptions opts{.dtype = dtype_of<T>()};
    const Tensor a = randn({n, n}, gen, opts), b = randn({n, n}, gen, opts), dy = randn({n, n}, gen, opts);
    Tensor ga = a.detach(), gb = b.detach();
    ga.requires_grad_();
    gb.requires_grad_();
    const auto ni = static_cast<Eigen::Index>(n);
    Tensor c = empty({n, n}, opts), da = empty({n, n}, opts), db = empty({n, n}, opts);
    const Matrix<T> A(const_cast<T*>(a.data<T>()), ni, ni), B(const_cast<T*>(b.data<T>()), ni, ni),
        DY(const_cast<T*>(dy.data<T>()), ni, ni);
    Matrix<T> C(c.data<T>(), ni, ni), DA(da.data<T>(), ni, ni), DB(db.data<T>(), ni, ni);

    const double flop = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    // Contenders in table order; products per call: 1 forward, 3 forward+backward.
    std::vector<std::function<void()>> fns = {
        [&] { matmul(a, b); },
        [&] { C.noalias() = A * B; },
        [&] {
            matmul(ga, gb).backward(dy);
            ga.zero_grad();
            gb.zero_grad();
        },
        [&] {
            // C = A B, dA = dY B^T, dB = A^T dY
            C.noalias() = A * B;
            DA.noalias() = DY * B.transpose();
            DB.noalias() = A.transpose() * DY;
        },
    };
#ifdef ATTOGRAD_BENCH_OPENBLAS
    const int nn = static_cast<int>(n);
    fns.push_back([&] { gemm(false, false, nn, a.data<T>(), b.data<T>(), c.data<T>()); });
    fns.push_back([&] {
        gemm(false, false, nn, a.data<T>(), b.data<T>(), c.data<T>());
        gemm(false, true, nn, dy.data<T>(), b.data<T>(), da.data<T>());
        gemm(true, false, nn, a.data<T>(), dy.data<T>(), db.data<T>());
    });
#endif
    std::vector<int> iters;
    for (auto& fn : fns) iters.push_back(bench::calibrate(fn, 0.01, clock));
    const std::vector<double> s = bench::interleaved_median_seconds(fns, iters, repeats, clock);
    const auto gflops = [&](std::size_t k, int products) { return products * flop / s[k] * 1e-9; };
    Row row{};
    row.ag_fwd = gflops(0, 1);
    row.eigen_fwd = gflops(1, 1);
    row.ag_both = gflops(2, 3);
    row.eigen_both = gflops(3, 3);
#ifdef ATTOGRAD_BENCH_OPENBLAS
    row.blas_fwd = gflops(4, 1);
    row.blas_both = gflops(5, 3);
#endif
    return row;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef ATTOGRAD_BENCH_OPENBLAS
    bench::use_fast_openblas_kernels(argv);
#endif
    const int threads = bench::int_flag(argc, argv, "--threads", omp_get_max_threads());
    const int repeats = bench::int_flag(argc, argv, "--repeats", 11);
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
#ifdef ATTOGRAD_BENCH_OPENBLAS
    bench::set_openblas_threads(threads);
    const bool have_blas = true;
    fmt::print("OpenBLAS kernels: {}\n", bench::openblas_core());
#else
    const bool have_blas = false;
#endif
    // One thread: the thread's CPU time is immune to other processes on this shared machine.
    const bench::Clock clock = threads == 1 ? bench::Clock::ThreadCpu : bench::Clock::Wall;
    fmt::print(
        "matmul [n, n] x [n, n]: GFLOP/s, {} thread(s), {} time, median of {} runs; fwd+bwd counts "
        "3 products (C = AB, dA = dC B^T, dB = A^T dC)\n",
        threads, threads == 1 ? "thread CPU" : "wall", repeats);
    fmt::print("{:<8} {:>5} | {:>9} {:>7} {:>9} {:>5} | {:>9} {:>7} {:>9} {:>5}\n", "dtype", "n", "attograd",
               "Eigen", "OpenBLAS", "eff", "ag f+b", "Eigen", "OpenBLAS", "eff");
    const auto cell = [&](double v) {
        return have_blas ? fmt::format("{:>9.1f}", v) : fmt::format("{:>9}", "-");
    };
    const auto print = [&](const char* dtype, std::int64_t n, const Row& r) {
        fmt::print("{:<8} {:>5} | {:>9.1f} {:>7.1f} {} {:>4.0f}% | {:>9.1f} {:>7.1f} {} {:>4.0f}%\n", dtype,
                   n, r.ag_fwd, r.eigen_fwd, cell(r.blas_fwd), 100 * r.ag_fwd / r.eigen_fwd, r.ag_both,
                   r.eigen_both, cell(r.blas_both), 100 * r.ag_both / r.eigen_both);
    };
    for (std::int64_t n : {64, 256, 512, 1024}) print("float32", n, measure<float>(n, repeats, clock));
    for (std::int64_t n : {64, 256, 512, 1024}) print("float64", n, measure<double>(n, repeats, clock));
#ifdef ATTOGRAD_BENCH_LIB_USES_BLAS
    fmt::print(
        "this attograd was built with ATTOGRAD_USE_BLAS: its products run in OpenBLAS, so compare "
        "its columns with OpenBLAS's (eff still divides by the Eigen column)\n");
#else
    fmt::print("eff = attograd / Eigen on the same matrices (attograd's products run in Eigen)\n");
#endif
}

// The GEMM layer: LIBXSMM's JIT kernels in cache-sized blocks, Eigen's GEMM as the fallback.
#include "core/gemm.hpp"

#include "core/error.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <vector>

#ifdef ATTOGRAD_LIBXSMM
#include <libxsmm.h>
#endif

namespace attograd::detail {
namespace {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using StridedMap = Eigen::Map<RowMatrix<T>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstStridedMap = Eigen::Map<const RowMatrix<T>, 0, Eigen::OuterStride<>>;

template <class T>
void eigen_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, bool trans_a,
                const T* b, std::int64_t ldb, bool trans_b, T* c, std::int64_t ldc, bool accumulate) {
    StridedMap<T> C(c, m, n, Eigen::OuterStride<>(ldc));
    const ConstStridedMap<T> A(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
    const ConstStridedMap<T> B(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
    if (!accumulate) C.setZero();
    if (!trans_a && !trans_b)
        C.noalias() += A * B;
    else if (trans_a && !trans_b)
        C.noalias() += A.transpose() * B;
    else if (!trans_a)
        C.noalias() += A * B.transpose();
    else
        C.noalias() += A.transpose() * B.transpose();
}

#ifdef ATTOGRAD_LIBXSMM

// Blocks of C per kernel call: 256 x 256 keeps a block's panels of A and B in L2 for k up to
// ~512 (fp32). Not tuned: unblocked, LIBXSMM fell from ~280 GFLOP/s (k <= 256) to ~244 at
// 1024^3; blocked, bench_gemm_shapes measured 168 at 1024^3 on a loaded machine.
constexpr std::int64_t kXsmmBlockRows = 256;
constexpr std::int64_t kXsmmBlockCols = 256;

// Kernel for a column-major product C' [mc, nc] = A' [mc, k] B' [k, nc] (B' transposed when
// trans), or null when LIBXSMM has none. LIBXSMM caches kernels by descriptor.
template <class T>
auto xsmm_kernel(std::int64_t mc, std::int64_t nc, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                 std::int64_t ldc, bool trans_b, bool accumulate) {
    const libxsmm_blasint la = lda, lb = ldb, lc = ldc;
    const T alpha = 1, beta = accumulate ? 1 : 0;
    const int flags = trans_b ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
    if constexpr (std::is_same_v<T, float>)
        return libxsmm_smmdispatch(mc, nc, k, &la, &lb, &lc, &alpha, &beta, &flags, nullptr);
    else
        return libxsmm_dmmdispatch(mc, nc, k, &la, &lb, &lc, &alpha, &beta, &flags, nullptr);
}

// Per-thread buffer for a transposed B, kept across calls.
template <class T>
T* transpose_buffer(std::size_t n) {
    thread_local std::vector<T> buffer;
    if (buffer.size() < n) buffer.resize(n);
    return buffer.data();
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: LIBXSMM's "A" is our B
// (read as [n, k] column-major with its rows ldb apart) and its "B" is our A, transposed by a
// flag when trans_a. Returns false when LIBXSMM has no kernel for a block (nothing written).
template <class T>
bool xsmm_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, bool trans_a,
               const T* b, std::int64_t ldb, bool trans_b, T* c, std::int64_t ldc, bool accumulate) {
    static const bool initialised = [] {
        libxsmm_init();
        return true;
    }();
    (void)initialised;
    if (trans_b) {
        // op(B) = B^T [k, n] into a contiguous buffer: LIBXSMM 1.17 has no such kernel.
        // (LIBXSMM's JIT transpose: column-major [k, n] with ld ldb in, [n, k] with ld n out.)
        T* bt = transpose_buffer<T>(static_cast<std::size_t>(k * n));
        libxsmm_otrans(bt, b, sizeof(T), k, n, ldb, n);
        b = bt;
        ldb = n;
    }
    const std::int64_t mb = std::min(m, kXsmmBlockRows), nb = std::min(n, kXsmmBlockCols);
    // Full blocks share one kernel; the last row and column blocks may need their own.
    for (std::int64_t i = 0; i < m; i += mb) {
        const std::int64_t rows = std::min(mb, m - i);
        for (std::int64_t j = 0; j < n; j += nb) {
            const std::int64_t cols = std::min(nb, n - j);
            const auto kernel = xsmm_kernel<T>(cols, rows, k, ldb, lda, ldc, trans_a, accumulate);
            if (kernel == nullptr) {
                if (i == 0 && j == 0) return false;
                // a later edge block only: Eigen for it (its sums add in the same k order)
                eigen_gemm(rows, cols, k, trans_a ? a + i : a + i * lda, lda, trans_a, b + j, ldb, false,
                           c + i * ldc + j, ldc, accumulate);
                continue;
            }
            kernel(b + j, trans_a ? a + i : a + i * lda, c + i * ldc + j);
        }
    }
    return true;
}

#endif

}  // namespace

template <class T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, bool trans_a,
          const T* b, std::int64_t ldb, bool trans_b, T* c, std::int64_t ldc, bool accumulate) {
    AG_ASSERT(m >= 0 && n >= 0 && k >= 0, "gemm: negative size");
    if (m == 0 || n == 0) return;
    if (k == 0) {
        if (!accumulate)
            for (std::int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, T(0));
        return;
    }
#ifdef ATTOGRAD_LIBXSMM
    if (xsmm_gemm(m, n, k, a, lda, trans_a, b, ldb, trans_b, c, ldc, accumulate)) return;
#endif
    eigen_gemm(m, n, k, a, lda, trans_a, b, ldb, trans_b, c, ldc, accumulate);
}

const char* gemm_backend() {
#ifdef ATTOGRAD_LIBXSMM
    return "libxsmm";
#else
    return "eigen";
#endif
}

template void gemm<float>(std::int64_t, std::int64_t, std::int64_t, const float*, std::int64_t, bool,
                          const float*, std::int64_t, bool, float*, std::int64_t, bool);
template void gemm<double>(std::int64_t, std::int64_t, std::int64_t, const double*, std::int64_t, bool,
                           const double*, std::int64_t, bool, double*, std::int64_t, bool);

}  // namespace attograd::detail

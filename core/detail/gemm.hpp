// Internal: the one GEMM entry point of the framework, on raw row-major pointers; it picks
// LIBXSMM's JIT kernels or Eigen's GEMM by shape.
#pragma once

#include <cstdint>

namespace attograd::detail {

/// C [m, n] = op(A) [m, k] op(B) [k, n], or C += op(A) op(B) when `accumulate`. Every operand is
/// row-major with its rows `ld*` elements apart; op(X) = X^T when `trans_*` (A is then stored
/// [k, m], B [n, k]). Serial: callers split their work over threads themselves
/// (core/detail/parallel.hpp). A row block may differ from the whole product in the last bits (Eigen's
/// GEMM sizes its cache blocks from m, n and k; a [300, 256] x [256, 200] product split in two
/// differed on LIBXSMM too), so callers cut rows into blocks fixed by the shape, never by the
/// thread count.
///
/// Kernel choice (measured on a 2-core AMD EPYC with AVX-512, fp32, one thread; figures in
/// bench/README.md): LIBXSMM's kernels, JIT-compiled for the running CPU (AVX2 or AVX-512) and
/// cached per shape, beat Eigen's GEMM on every shape measured, from 32 x 32 x 16 (~2.2x) to
/// 1024 x 1024 x 1024 (~1.2x): they skip Eigen's packing, which dominates small products. So
/// with ATTOGRAD_USE_LIBXSMM every product goes to LIBXSMM, with C cut into blocks of at most
/// kXsmmBlockRows x kXsmmBlockCols and k into depth blocks of kXsmmBlockDepth added in order
/// (beta = 1 after the first), so that the order of each dot product depends on k alone and a
/// block's panels of A and B stay in L2. LIBXSMM 1.17 has no kernel for a transposed B
/// (row-major), so op(B) is first copied into a per-thread [k, n] buffer (k * n moves against
/// m * n * k multiply-adds). Without LIBXSMM, or when it returns no kernel, Eigen's GEMM runs;
/// so does every product of a process where LIBXSMM's singleton file in /tmp could not be made
/// our own (a planted link there: core/detail/libxsmm_singleton.hpp), LIBXSMM then never called.
/// On an AMD EPYC Zen 3 (AVX2, 512 KB L2) the large products read in place ran at only 41-63 %
/// of the peak, so products cut into row blocks (matmul, linear) pack op(B) once into panels and
/// run gemm_b_panels() instead (98-100 % on the large projections).
template <class T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, bool trans_a,
          const T* b, std::int64_t ldb, bool trans_b, T* c, std::int64_t ldc, bool accumulate);

/// One product shape that a loop runs many times (the fused attention's per-head products),
/// resolved once: when gemm() would make a single LIBXSMM call for it (no transposed B, and m,
/// n, k within one block), the kernel is looked up here and each call goes straight to it; else
/// each call is gemm() itself. Either way the same kernel runs on the same operands, so the bits
/// equal gemm()'s. gemm()'s per-call lookup took ~17 of a 32 x 32 x 16 product's ~190 ns.
/// Immutable once built: threads may share one.
template <class T>
class GemmKernel {
public:
    GemmKernel(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, bool trans_a,
               std::int64_t ldb, bool trans_b, std::int64_t ldc, bool accumulate);
    /// C = op(A) op(B) (or += when accumulating), as gemm() with the shape given at construction.
    void operator()(const T* a, const T* b, T* c) const {
        if (direct_ != nullptr)
            direct_(b, a, c);  // column-major C^T = op(B)^T op(A)^T, as in gemm()
        else
            gemm(m_, n_, k_, a, lda_, trans_a_, b, ldb_, trans_b_, c, ldc_, accumulate_);
    }

private:
    std::int64_t m_, n_, k_, lda_, ldb_, ldc_;
    bool trans_a_, trans_b_, accumulate_;
    void (*direct_)(const T*, const T*, T*, ...) = nullptr;  // LIBXSMM's kernel, or null
};

/// True when gemm() with `trans_b` first copies op(B) into a buffer (LIBXSMM 1.17 has no kernel
/// for a transposed row-major B): a caller that runs one product as several row blocks then
/// transposes B once itself (transpose()) and passes it plain, for the same bits.
bool gemm_copies_transposed_b();

/// True when gemm() copies its operands into packed panels on every call (Eigen's GEMM), so
/// that a product cut into more row blocks packs op(B) more often; LIBXSMM's kernels read the
/// operands in place.
bool gemm_packs_operands();

/// Panels of op(B) [k, n] for gemm_b_panels(): for each block of 128 columns, its depth blocks
/// of 64 rows in order, each a dense [depth, cols] array, k * n elements in all (a panel stays in
/// L1 while the kernel reads it for every few rows of C). A product cut
/// into row blocks packs op(B) once (the panels are independent: pack them on any threads) and
/// every block then reads it contiguously: LIBXSMM's kernels reading a large B in place, its
/// rows n apart, reached 41-63 % of the peak on Zen 3, 98-100 % from the panels (gemm.cpp).
std::int64_t b_panel_count(std::int64_t k, std::int64_t n);

/// Packs panel `index` (< b_panel_count) of op(B) into `panels` (k * n elements); B is [k, n]
/// with rows ldb apart, or [n, k] when trans_b.
template <class T>
void pack_b_panel(std::int64_t k, std::int64_t n, const T* b, std::int64_t ldb, bool trans_b, T* panels,
                  std::int64_t index);

/// gemm() with op(B) read from its panels (pack_b_panel); n and k > 0: LIBXSMM's kernels (Eigen
/// without it) on [rows, 128] blocks of C, depth blocks of 64 added in order; a transposed A is copied plain
/// one [rows, depth] strip at a time into a per-thread buffer, just before the kernels read it.
template <class T>
void gemm_b_panels(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, bool trans_a,
                   const T* panels, T* c, std::int64_t ldc, bool accumulate);

/// True when gemm_b_panels() is the faster way to run a product in row blocks (LIBXSMM); Eigen's
/// GEMM packs its own panels.
bool gemm_reads_b_panels();

/// dst [cols, rows] = src^T, for a row-major src [rows, cols] with its rows `ld_src` elements
/// apart; dst's rows are `ld_dst` (>= rows) elements apart, so that row bands of src can be
/// transposed side by side into one dst. LIBXSMM's transpose when present and usable, else Eigen's.
template <class T>
void transpose(std::int64_t rows, std::int64_t cols, const T* src, std::int64_t ld_src, T* dst,
               std::int64_t ld_dst);

/// transpose() into a dense dst (ld_dst = rows).
template <class T>
void transpose(std::int64_t rows, std::int64_t cols, const T* src, std::int64_t ld_src, T* dst) {
    transpose(rows, cols, src, ld_src, dst, rows);
}

/// The kernel library gemm() runs on: "libxsmm" or "eigen" (for benchmarks' headers); "eigen"
/// also in a LIBXSMM build where this process found LIBXSMM unsafe to run (see gemm()).
const char* gemm_backend();

/// Tests only: with `on`, every later product and transpose runs as where LIBXSMM is unusable
/// (Eigen, on the data layouts the gemm_*() queries above chose), so that both paths can be
/// compared in one process; GemmKernels built before keep their kernel. Not thread-safe
/// against products running meanwhile.
void force_eigen_gemm(bool on);

extern template void gemm<float>(std::int64_t, std::int64_t, std::int64_t, const float*, std::int64_t, bool,
                                 const float*, std::int64_t, bool, float*, std::int64_t, bool);
extern template void transpose<float>(std::int64_t, std::int64_t, const float*, std::int64_t, float*,
                                      std::int64_t);
extern template void transpose<double>(std::int64_t, std::int64_t, const double*, std::int64_t, double*,
                                       std::int64_t);
extern template void pack_b_panel<float>(std::int64_t, std::int64_t, const float*, std::int64_t, bool, float*,
                                         std::int64_t);
extern template void pack_b_panel<double>(std::int64_t, std::int64_t, const double*, std::int64_t, bool,
                                          double*, std::int64_t);
extern template void gemm_b_panels<float>(std::int64_t, std::int64_t, std::int64_t, const float*,
                                          std::int64_t, bool, const float*, float*, std::int64_t, bool);
extern template void gemm_b_panels<double>(std::int64_t, std::int64_t, std::int64_t, const double*,
                                           std::int64_t, bool, const double*, double*, std::int64_t, bool);
extern template class GemmKernel<float>;
extern template class GemmKernel<double>;
extern template void gemm<double>(std::int64_t, std::int64_t, std::int64_t, const double*, std::int64_t, bool,
                                  const double*, std::int64_t, bool, double*, std::int64_t, bool);

}  // namespace attograd::detail

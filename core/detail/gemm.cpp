// The GEMM layer: LIBXSMM's JIT kernels in cache-sized blocks, Eigen's GEMM as the fallback.
#include "core/detail/gemm.hpp"
#include "core/gemm_backend.hpp"

#include "core/detail/libxsmm_singleton.hpp"
#include "core/detail/scratch.hpp"
#include "core/error.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <string_view>
#include <type_traits>
#include <vector>

#ifdef ATTOGRAD_LIBXSMM
#include <libxsmm.h>
#include <libxsmm_generator.h>
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

// Per-thread buffer for a transposed operand copied plain (op(B) in gemm(), a strip of op(A)
// in gemm_b_panels()), kept across calls.
template <class T>
T* transpose_buffer(std::size_t n) {
    thread_local Scratch<T> buffer;
    return buffer.at_least(n);
}

// Set by force_eigen_gemm() (tests only).
std::atomic<bool> eigen_forced{false};

#ifdef ATTOGRAD_LIBXSMM

// Blocks of C per kernel call, 256 x 256, and of k, 256: a block's panels of A and B (256 KB
// each in fp32) stay in L2. With k whole, the weight gradients' products (k = B T = 2048 rows in
// the large training step: 768 x 256 x 2048 with A transposed) ran at ~140-155 GFLOP/s, 61-67 %
// of the core's multiply-add peak; in depth blocks of 256 at ~220 (97 %); of 512, ~209; of 128,
// ~214 (one thread, thread CPU time, AMD EPYC with AVX-512). Products with k <= 256 are unchanged.
constexpr std::int64_t kXsmmBlockRows = 256;
constexpr std::int64_t kXsmmBlockCols = 256;
constexpr std::int64_t kXsmmBlockDepth = 256;

// Kernel for a column-major product C' [mc, nc] = A' [mc, k] B' [k, nc] (B' transposed when
// trans), or null when LIBXSMM has none. LIBXSMM caches kernels by descriptor, but building the
// descriptor and hashing it cost ~100 ns a call, as much as a 32 x 16 x 32 product's own work
// in the per-head loops, so each thread keeps the kernels it used in a small table of its own
// (no lock), 4-way set-associative: with one slot per hash, two shapes of the small training
// step that met in one slot evicted each other ~150 times a step (5 % of its time).
template <class T>
auto xsmm_kernel(std::int64_t mc, std::int64_t nc, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                 std::int64_t ldc, bool trans_b, bool accumulate) {
    using Kernel = std::conditional_t<std::is_same_v<T, float>, libxsmm_smmfunction, libxsmm_dmmfunction>;
    struct Entry {
        std::int64_t key[6] = {-1, -1, -1, -1, -1, -1};
        Kernel kernel = nullptr;
    };
    constexpr std::size_t kSets = 64, kWays = 4;
    thread_local Entry table[kSets][kWays];
    thread_local std::size_t next_victim[kSets] = {};
    const std::int64_t key[6] = {mc, nc, k, lda, ldb, ldc * 4 + (trans_b ? 2 : 0) + (accumulate ? 1 : 0)};
    std::uint64_t hash = 0;
    for (const std::int64_t part : key) hash = (hash ^ static_cast<std::uint64_t>(part)) * 0x100000001b3ULL;
    hash ^= hash >> 29;  // fold the high bits, which the multiplications mixed best, into the set
    const std::size_t set = (hash ^ (hash >> 32)) % kSets;
    for (Entry& e : table[set])
        if (e.kernel != nullptr && std::equal(key, key + 6, e.key)) return e.kernel;
    const libxsmm_blasint la = lda, lb = ldb, lc = ldc;
    const T alpha = 1, beta = accumulate ? 1 : 0;
    const int flags = trans_b ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
    Kernel kernel;
    if constexpr (std::is_same_v<T, float>)
        kernel = libxsmm_smmdispatch(mc, nc, k, &la, &lb, &lc, &alpha, &beta, &flags, nullptr);
    else
        kernel = libxsmm_dmmdispatch(mc, nc, k, &la, &lb, &lc, &alpha, &beta, &flags, nullptr);
    if (kernel != nullptr) {
        Entry& e = table[set][next_victim[set]];
        next_victim[set] = (next_victim[set] + 1) % kWays;
        std::copy(key, key + 6, e.key);
        e.kernel = kernel;
    }
    return kernel;
}

// Whether this process may run LIBXSMM, decided once, before any libxsmm_* call: every one of
// them may initialise LIBXSMM, whose libxsmm_init() opens /tmp/.libxsmm.<uid> following a link
// another user may have planted there (core/detail/libxsmm_singleton.hpp). The file is made our
// own first; when that fails (a link, another user's file, a directory), LIBXSMM is never
// touched and every product runs on Eigen: the same results up to rounding, only slower.
bool libxsmm_usable() {
    static const bool usable = [] {
        if (!singleton_file_is_safe(libxsmm_singleton_path())) return false;
        libxsmm_init();
        return true;
    }();
    return !eigen_forced.load(std::memory_order_relaxed) && usable;
}

// Row-independent products. LIBXSMM 1.17's kernels (as measured with its AVX-512 code, vectors of
// 64 bytes, over k = 3 .. 300 and row counts to 300) compute each element of C as one chain of
// fused multiply-adds in k order, except in two cases where a kernel splits the dot products over
// several accumulators added at the end, so that a row's bits depend on how many rows share the
// call:
//  - a block of at most one vector of columns with 2 to 11 rows;
//  - more than four vectors of columns (the kernel's own column blocking) whose last column block
//    holds at most one vector, at some row counts from 6 up.
// xsmm_block therefore cuts C into column chunks of four vectors, and runs a chunk of at most one
// vector with 2 to 11 rows one row per call; every row of C then has the bits of the same row
// computed alone (incremental decoding's one-row steps equal the whole-prefix products).
std::int64_t vector_bytes() {
    static const std::int64_t bytes = libxsmm_get_target_archid() >= LIBXSMM_X86_AVX512 ? 64 : 32;
    return bytes;
}

// Columns of T in one chunk of xsmm_block: four vectors.
template <class T>
std::int64_t chunk_cols() {
    return 4 * vector_bytes() / static_cast<std::int64_t>(sizeof(T));
}

template <class T>
bool splits_dot_products(std::int64_t rows, std::int64_t cols) {
    return rows >= 2 && rows <= 11 && cols * static_cast<std::int64_t>(sizeof(T)) <= vector_bytes();
}

// C block [rows, cols] (+)= op(A) B on LIBXSMM, B [depth, cols] plain with rows ldb apart, op(A)
// [rows, depth] (A transposed when trans_a), in column chunks of chunk_cols(), one row per call
// where the kernel would split its sums (see above). A chunk LIBXSMM has no kernel for runs on
// Eigen one row at a time (its GEMM's sums depend on the rows as well). Returns true.
template <class T>
bool xsmm_block(std::int64_t rows, std::int64_t cols, std::int64_t depth, const T* a, std::int64_t lda,
                bool trans_a, const T* b, std::int64_t ldb, T* c, std::int64_t ldc, bool add) {
    for (std::int64_t j = 0; j < cols; j += chunk_cols<T>()) {
        const std::int64_t width = std::min(chunk_cols<T>(), cols - j);
        bool by_row = splits_dot_products<T>(rows, width);
        auto kernel = xsmm_kernel<T>(width, by_row ? 1 : rows, depth, ldb, lda, ldc, trans_a, add);
        if (kernel == nullptr && !by_row) {  // the one-row kernel, as a row computed alone gets
            by_row = true;
            kernel = xsmm_kernel<T>(width, 1, depth, ldb, lda, ldc, trans_a, add);
        }
        if (kernel == nullptr) {  // Eigen, one row at a time: its GEMM's sums depend on the rows too
            for (std::int64_t r = 0; r < rows; ++r)
                eigen_gemm(1, width, depth, trans_a ? a + r : a + r * lda, lda, trans_a, b + j, ldb, false,
                           c + r * ldc + j, ldc, add);
            continue;
        }
        if (!by_row) {
            kernel(b + j, a, c + j);
            continue;
        }
        for (std::int64_t r = 0; r < rows; ++r) kernel(b + j, trans_a ? a + r : a + r * lda, c + r * ldc + j);
    }
    return true;
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: LIBXSMM's "A" is our B
// (read as [n, k] column-major with its rows ldb apart) and its "B" is our A, transposed by a
// flag when trans_a. Returns false when LIBXSMM has no kernel for a block (nothing written).
template <class T>
bool xsmm_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, bool trans_a,
               const T* b, std::int64_t ldb, bool trans_b, T* c, std::int64_t ldc, bool accumulate) {
    if (!libxsmm_usable()) return false;
    if (trans_b) {
        // op(B) = B^T [k, n] into a contiguous buffer: LIBXSMM 1.17 has no such kernel.
        T* bt = transpose_buffer<T>(static_cast<std::size_t>(k * n));
        transpose(n, k, b, ldb, bt);
        b = bt;
        ldb = n;
    }
    const std::int64_t mb = std::min(m, kXsmmBlockRows), nb = std::min(n, kXsmmBlockCols);
    const std::int64_t kb = std::min(k, kXsmmBlockDepth);
    // Full blocks share one kernel; the last row, column and depth blocks may need their own.
    // Depth blocks add onto C in order (beta = 1 after the first), so each sum's order depends
    // on k alone.
    for (std::int64_t i = 0; i < m; i += mb) {
        const std::int64_t rows = std::min(mb, m - i);
        for (std::int64_t j = 0; j < n; j += nb) {
            const std::int64_t cols = std::min(nb, n - j);
            for (std::int64_t l = 0; l < k; l += kb) {
                const std::int64_t depth = std::min(kb, k - l);
                const bool add = accumulate || l > 0;
                const T* ab = trans_a ? a + l * lda + i : a + i * lda + l;
                const T* bb = b + l * ldb + j;
                T* cb = c + i * ldc + j;
                if (!xsmm_block(rows, cols, depth, ab, lda, trans_a, bb, ldb, cb, ldc, add)) {
                    if (i == 0 && j == 0 && l == 0) return false;
                    // a later edge block only: Eigen for it (its sums add in the same k order)
                    eigen_gemm(rows, cols, depth, ab, lda, trans_a, bb, ldb, false, cb, ldc, add);
                }
            }
        }
    }
    return true;
}

#endif

// Columns of a B panel (pack_b_panel). Large products read in place ran at 41-63 GFLOP/s on
// an AMD EPYC Zen 3 (AVX2, 512 KB L2, one thread, peak ~88): the kernel re-reads B's block for
// every few rows of C, and B's rows n floats apart (3 KB for a [256, 768] B) spread it over few
// L1 sets and many pages. Packed into contiguous [depth, 128] panels once per product: 68-88
// (2048 x 768 x 256: 57 -> 87 hot; panels of 64 and 256 columns were 2-10 % slower).
constexpr std::int64_t kPanelCols = 128;
// Depth of a panel: 64 rows, so that a [64, 128] panel (32 KB in float32) stays in L1 while
// the kernel walks the rows of C. LIBXSMM's kernel re-reads its panel of B for every few rows of
// C; a [256, 128] panel (128 KB) came from L2 every time, at ~16 bytes a cycle. Zen 3, one
// thread (`bench_gemm_shapes`, the matmul op): depth 256 -> 64, in_proj 2048 x 768 x 256 90 ->
// 100 % of the peak, its dX 89 -> 98 %, square 1024 88 -> 99 %, out_proj dW 64 x 64 x 1024 86 ->
// 98 %; the large training step 34.8-35.7 -> 32.5-33.2 ms on two threads (panels of 64 columns:
// the same within 3 %). gemm() keeps its own depth blocks (kXsmmBlockDepth): a product takes
// one path or the other by its shape alone, so the bits still depend on the shape only.
constexpr std::int64_t kPanelDepth = 64;
// Rows of C per kernel call, as gemm()'s blocks. A transposed A is copied plain one [rows,
// depth] strip at a time, just before its kernels read it from L2: a transposed A read in place
// (the weight gradients dY^T X) ran at ~60 GFLOP/s on Zen 3, plain at ~80; and copying the
// whole A^T first, a [2048, 768] dY out of memory into a fresh 6 MB, took 1.6 ms on one thread
// (7 GB/s), the products then reading it back from memory.
constexpr std::int64_t kPanelRows = 256;

}  // namespace

std::int64_t b_panel_count(std::int64_t k, std::int64_t n) {
    return ((n + kPanelCols - 1) / kPanelCols) * ((k + kPanelDepth - 1) / kPanelDepth);
}

template <class T>
void pack_b_panel(std::int64_t k, std::int64_t n, const T* b, std::int64_t ldb, bool trans_b, T* panels,
                  std::int64_t index) {
    const std::int64_t depth_blocks = (k + kPanelDepth - 1) / kPanelDepth;
    const std::int64_t j = (index / depth_blocks) * kPanelCols, l = (index % depth_blocks) * kPanelDepth;
    const std::int64_t cols = std::min(kPanelCols, n - j), depth = std::min(kPanelDepth, k - l);
    T* panel = panels + j * k + l * cols;  // the panels of columns j.. are [k, cols], depth blocks in order
    if (trans_b)
        transpose(cols, depth, b + j * ldb + l, ldb, panel, cols);  // B [n, k]: op(B) = B^T
    else
        for (std::int64_t d = 0; d < depth; ++d) std::copy_n(b + (l + d) * ldb + j, cols, panel + d * cols);
}

template <class T>
void gemm_b_panels(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, bool trans_a,
                   const T* panels, T* c, std::int64_t ldc, bool accumulate) {
    AG_ASSERT(m >= 0 && n > 0 && k > 0, "gemm_b_panels: empty op(B)");
#ifdef ATTOGRAD_LIBXSMM
    const bool xsmm = libxsmm_usable();
#endif
    // Depth blocks outermost within a row block, so that a transposed A's [rows, depth] strip is
    // copied once for every panel of columns; each element of C still adds its depth blocks in
    // order, so the sums are those of any other loop order.
    for (std::int64_t i = 0; i < m; i += kPanelRows) {
        const std::int64_t rows = std::min(kPanelRows, m - i);
        for (std::int64_t l = 0; l < k; l += kPanelDepth) {
            const std::int64_t depth = std::min(kPanelDepth, k - l);
            const bool add = accumulate || l > 0;
            const T* ab = trans_a ? a + l * lda + i : a + i * lda + l;
            std::int64_t ld_ab = lda;
            if (trans_a) {  // see kPanelRows: the strip op(A) [rows, depth], plain, in L2
                T* strip = transpose_buffer<T>(static_cast<std::size_t>(rows * depth));
                transpose(depth, rows, ab, lda, strip);
                ab = strip;
                ld_ab = depth;
            }
            for (std::int64_t j = 0; j < n; j += kPanelCols) {
                const std::int64_t cols = std::min(kPanelCols, n - j);
                const T* panel = panels + j * k + l * cols;
                T* cb = c + i * ldc + j;
#ifdef ATTOGRAD_LIBXSMM
                if (xsmm && xsmm_block(rows, cols, depth, ab, ld_ab, false, panel, cols, cb, ldc, add))
                    continue;
#endif
                eigen_gemm(rows, cols, depth, ab, ld_ab, false, panel, cols, false, cb, ldc, add);
            }
        }
    }
}

bool gemm_reads_b_panels() {
#ifdef ATTOGRAD_LIBXSMM
    return true;
#else
    return false;
#endif
}

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

template <class T>
GemmKernel<T>::GemmKernel(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, bool trans_a,
                          std::int64_t ldb, bool trans_b, std::int64_t ldc, bool accumulate)
    : m_(m),
      n_(n),
      k_(k),
      lda_(lda),
      ldb_(ldb),
      ldc_(ldc),
      trans_a_(trans_a),
      trans_b_(trans_b),
      accumulate_(accumulate) {
#ifdef ATTOGRAD_LIBXSMM
    // exactly the one call xsmm_gemm would make: a single block, B used in place. libxsmm_usable()
    // first: chunk_cols() asks LIBXSMM for the CPU, which would initialise it.
    if (libxsmm_usable() && !trans_b && m > 0 && n > 0 && k > 0 && m <= kXsmmBlockRows &&
        n <= kXsmmBlockCols && k <= kXsmmBlockDepth && n <= chunk_cols<T>() && !splits_dot_products<T>(m, n))
        direct_ = xsmm_kernel<T>(n, m, k, ldb, lda, ldc, trans_a, accumulate);
#endif
}

namespace {

#ifdef ATTOGRAD_LIBXSMM
// transpose() on LIBXSMM (libxsmm_usable() returned true).
template <class T>
void xsmm_transpose(std::int64_t rows, std::int64_t cols, const T* src, std::int64_t ld_src, T* dst,
                    std::int64_t ld_dst) {
    // In 32 x 32 tiles: whole, LIBXSMM's transpose of a [768, 256] weight took 105 us, in tiles
    // 26 us (64 x 64: 68 us); a [256, 2048] one 298 against 95 us. Each tile: column-major
    // [tile cols, tile rows] with ld ld_src in, [tile rows, tile cols] with ld ld_dst out.
    // The tile kernels are looked up once per call (at most four shapes: whole tiles and the
    // edges), not per tile as libxsmm_otrans does (~35 ns a 32 x 32 tile, a fifth of its time).
    constexpr std::int64_t kTile = 32;
    const auto ld_in = static_cast<unsigned>(ld_src), ld_out = static_cast<unsigned>(ld_dst);
    const auto tile_kernel = [&](std::int64_t tile_cols, std::int64_t tile_rows) {
        libxsmm_descriptor_blob blob;
        const libxsmm_trans_descriptor* descriptor = libxsmm_trans_descriptor_init(
            &blob, sizeof(T), static_cast<unsigned>(tile_cols), static_cast<unsigned>(tile_rows), ld_out);
        return descriptor != nullptr ? libxsmm_dispatch_trans(descriptor) : nullptr;
    };
    libxsmm_xtransfunction kernels[2][2] = {};  // [last row tile][last column tile]
    bool looked_up[2][2] = {};
    for (std::int64_t r = 0; r < rows; r += kTile)
        for (std::int64_t c = 0; c < cols; c += kTile) {
            const std::int64_t tile_rows = std::min(kTile, rows - r), tile_cols = std::min(kTile, cols - c);
            const int edge_r = tile_rows < kTile ? 1 : 0, edge_c = tile_cols < kTile ? 1 : 0;
            if (!looked_up[edge_r][edge_c]) {
                kernels[edge_r][edge_c] = tile_kernel(tile_cols, tile_rows);
                looked_up[edge_r][edge_c] = true;
            }
            if (const auto kernel = kernels[edge_r][edge_c])
                kernel(src + r * ld_src + c, &ld_in, dst + c * ld_dst + r, &ld_out);
            else
                libxsmm_otrans(dst + c * ld_dst + r, src + r * ld_src + c, sizeof(T), tile_cols, tile_rows,
                               ld_src, ld_dst);
        }
}
#endif

template <class T>
void eigen_transpose(std::int64_t rows, std::int64_t cols, const T* src, std::int64_t ld_src, T* dst,
                     std::int64_t ld_dst) {
    StridedMap<T>(dst, cols, rows, Eigen::OuterStride<>(ld_dst)).noalias() =
        ConstStridedMap<T>(src, rows, cols, Eigen::OuterStride<>(ld_src)).transpose();
}

}  // namespace

template <class T>
void transpose(std::int64_t rows, std::int64_t cols, const T* src, std::int64_t ld_src, T* dst,
               std::int64_t ld_dst) {
    if (rows == 0 || cols == 0) return;
    if (rows == 1) {  // one column of dst; ld_src may then be below cols, which LIBXSMM would refuse
        for (std::int64_t c = 0; c < cols; ++c) dst[c * ld_dst] = src[c];
        return;
    }
    AG_ASSERT(ld_src >= cols && ld_dst >= rows, "transpose: rows {} / {} elements apart hold {} / {} columns",
              ld_src, ld_dst, cols, rows);
#ifdef ATTOGRAD_LIBXSMM
    if (libxsmm_usable()) return xsmm_transpose(rows, cols, src, ld_src, dst, ld_dst);
#endif
    eigen_transpose(rows, cols, src, ld_src, dst, ld_dst);
}

bool gemm_copies_transposed_b() {
#ifdef ATTOGRAD_LIBXSMM
    return true;
#else
    return false;
#endif
}

bool gemm_packs_operands() {
#ifdef ATTOGRAD_LIBXSMM
    return false;
#else
    return true;
#endif
}

const char* gemm_backend() {
#ifdef ATTOGRAD_LIBXSMM
    if (libxsmm_usable()) return "libxsmm";
#endif
    return "eigen";
}

void force_eigen_gemm(bool on) { eigen_forced.store(on, std::memory_order_relaxed); }

template void gemm<float>(std::int64_t, std::int64_t, std::int64_t, const float*, std::int64_t, bool,
                          const float*, std::int64_t, bool, float*, std::int64_t, bool);
template void transpose<float>(std::int64_t, std::int64_t, const float*, std::int64_t, float*, std::int64_t);
template void transpose<double>(std::int64_t, std::int64_t, const double*, std::int64_t, double*,
                                std::int64_t);
template void pack_b_panel<float>(std::int64_t, std::int64_t, const float*, std::int64_t, bool, float*,
                                  std::int64_t);
template void pack_b_panel<double>(std::int64_t, std::int64_t, const double*, std::int64_t, bool, double*,
                                   std::int64_t);
template void gemm_b_panels<float>(std::int64_t, std::int64_t, std::int64_t, const float*, std::int64_t, bool,
                                   const float*, float*, std::int64_t, bool);
template void gemm_b_panels<double>(std::int64_t, std::int64_t, std::int64_t, const double*, std::int64_t,
                                    bool, const double*, double*, std::int64_t, bool);
template class GemmKernel<float>;
template class GemmKernel<double>;
template void gemm<double>(std::int64_t, std::int64_t, std::int64_t, const double*, std::int64_t, bool,
                           const double*, std::int64_t, bool, double*, std::int64_t, bool);

}  // namespace attograd::detail

namespace attograd {

const char* gemm_library() {
    return std::string_view(detail::gemm_backend()) == "libxsmm" ? "LIBXSMM" : "Eigen";
}

}  // namespace attograd

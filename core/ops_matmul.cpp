// Matrix multiplication: 2-D and batched, with batch-dimension broadcasting.
#include "core/ops_matmul.hpp"

#include "core/autograd.hpp"
#include "core/gemm.hpp"
#include "core/ops_reduce.hpp"
#include "core/ops_shape.hpp"
#include "core/parallel.hpp"

#include <algorithm>

namespace attograd {
namespace {

// Multiply-adds (n * m * k summed over the batch) above which the batch is split over threads.

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// Offset (in matrices) of batch `index` of the output within an operand of `batch` shape.
std::int64_t batch_offset(std::int64_t index, const Shape& out_batch, const Shape& strides) {
    std::int64_t offset = 0;
    for (auto d = static_cast<std::int64_t>(out_batch.size()) - 1; d >= 0; --d) {
        const auto du = static_cast<std::size_t>(d);
        offset += (index % out_batch[du]) * strides[du];
        index /= out_batch[du];
    }
    return offset;
}

}  // namespace

namespace detail {

Tensor matmul_kernel(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                     const Tensor& row_init) {
    const Shape& sa = a.shape();
    const Shape& sb = b.shape();
    const std::int64_t a_rows = sa[sa.size() - 2], a_cols = sa.back();
    const std::int64_t b_rows = sb[sb.size() - 2], b_cols = sb.back();
    const std::int64_t n = transpose_a ? a_cols : a_rows;
    const std::int64_t m = transpose_b ? b_rows : b_cols;
    const std::int64_t inner = transpose_a ? a_rows : a_cols;
    AG_ASSERT(!row_init.defined() ||
                  (sa.size() == 2 && sb.size() == 2 && row_init.numel() == (transpose_b ? b_rows : b_cols)),
              "matmul_kernel: row_init needs 2-D operands and one value per column");
    // Rows [first, first + count) of C = op(A) op(B), or of C = 1 r + op(A) op(B) for a row r:
    // the GEMM adds onto the rows r (beta = 1), which costs no extra pass over C. op(B) is read
    // from pb with its rows ldb apart, transposed when tb.
    const auto product_rows = [&]<class T>(const T* pa, const T* pb, std::int64_t ldb, bool tb, T* po,
                                           std::int64_t first, std::int64_t count) {
        T* c = po + first * m;
        if (row_init.defined())
            for (std::int64_t r = 0; r < count; ++r) std::copy_n(row_init.data<T>(), m, c + r * m);
        // rows of op(A): rows of A, or columns of A when transposed
        const T* a_rows_from = transpose_a ? pa + first : pa + first * a_cols;
        gemm(count, m, inner, a_rows_from, a_cols, transpose_a, pb, ldb, tb, c, m, row_init.defined());
    };
    const auto product = [&]<class T>(const T* pa, const T* pb, T* po) {
        product_rows(pa, pb, b_cols, transpose_b, po, 0, n);
    };
    if (sa.size() == 2 && sb.size() == 2) {
        // One product: large ones are split into row blocks (Eigen's own threading is off, see
        // core/parallel.hpp). The blocks are fixed by the shape alone, not by the thread count,
        // and run the same on one thread: Eigen's GEMM (and LIBXSMM's edge kernels) may round a
        // row differently in another block, so splitting by threads would make the result depend
        // on the thread count (issue 12, point 7). Up to 8 blocks, handed out as threads come
        // free: on a shared machine one core may run slower for a while, and equal static halves
        // would leave the other waiting. Blocks of at least kMinChunkRows rows (or 16 when that
        // leaves fewer than 4) keep the cost of packing op(B) again for every block to about 1 %
        // of the block's GEMM.
        constexpr std::int64_t kMinChunkRows = 96, kMaxChunks = 8;
        Tensor out = empty({n, m}, {.dtype = a.dtype()});
        const std::int64_t work = n * m * inner;
        const std::int64_t chunks =
            work < 2 * detail::kMinParallelGemmWork
                ? 1
                : std::clamp<std::int64_t>(std::max(n / kMinChunkRows, std::min<std::int64_t>(4, n / 16)), 1,
                                           std::min(kMaxChunks, work / detail::kMinParallelGemmWork));
        const int threads = static_cast<int>(std::min<std::int64_t>(detail::available_threads(), chunks));
        // When the GEMM layer would transpose op(B) in every block (LIBXSMM), it is transposed
        // once here instead: the same copy, so the same bits (a [768, 256] weight takes ~0.1 ms).
        const bool pretranspose = transpose_b && chunks > 1 && gemm_copies_transposed_b();
        Tensor bt = pretranspose ? empty({inner, m}, {.dtype = b.dtype()}) : Tensor();
        dispatch_floating(a.dtype(), "matmul", [&]<class T>(T) {
            if (pretranspose) transpose(m, inner, b.data<T>(), b_cols, bt.data<T>());
            const auto chunk = [&](std::int64_t c) {
                const std::int64_t first = n * c / chunks, last = n * (c + 1) / chunks;
                if (pretranspose)
                    product_rows(a.data<T>(), bt.data<T>(), m, false, out.data<T>(), first, last - first);
                else
                    product_rows(a.data<T>(), b.data<T>(), b_cols, transpose_b, out.data<T>(), first,
                                 last - first);
            };
            if (threads <= 1) {
                for (std::int64_t c = 0; c < chunks; ++c) chunk(c);
                return;
            }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
            for (std::int64_t c = 0; c < chunks; ++c) chunk(c);
        });
        return out;
    }
    const Shape out_batch = broadcast_shapes(batch_of(sa), batch_of(sb), "matmul");
    Shape out_shape = out_batch;
    out_shape.push_back(n);
    out_shape.push_back(m);
    Tensor out = empty(std::move(out_shape), {.dtype = a.dtype()});
    const Shape stride_a = broadcast_strides(batch_of(sa), out_batch);
    const Shape stride_b = broadcast_strides(batch_of(sb), out_batch);
    const std::int64_t batches = numel(out_batch);
    dispatch_floating(a.dtype(), "matmul", [&]<class T>(T) {
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        const auto one = [&](std::int64_t i) {
            product(pa + batch_offset(i, out_batch, stride_a) * a_rows * a_cols,
                    pb + batch_offset(i, out_batch, stride_b) * b_rows * b_cols, po + i * n * m);
        };
        // Products split over threads, whole products per thread.
        const bool parallel_batches =
            batches > 1 && detail::worth_parallel(n * m * inner * batches, detail::kMinParallelGemmWork);
        if (parallel_batches) {
#pragma omp parallel for schedule(static)
            for (std::int64_t i = 0; i < batches; ++i) one(i);
        } else {
            // Not an `omp parallel if (false)`: entering even a serial region costs more than a
            // small product.
            for (std::int64_t i = 0; i < batches; ++i) one(i);
        }
    });
    return out;
}

}  // namespace detail

Tensor matmul(const Tensor& a, const Tensor& b) {
    AG_CHECK(a.defined() && b.defined(), ValueError, "matmul: undefined tensor argument");
    AG_CHECK(a.dim() >= 2 && b.dim() >= 2, ShapeError, "matmul: needs tensors of rank >= 2, got {} x {}",
             a.shape(), b.shape());
    AG_CHECK(a.dtype() == b.dtype(), DTypeError, "matmul: dtypes differ: {} {} x {} {}", a.dtype(), a.shape(),
             b.dtype(), b.shape());
    AG_CHECK(a.shape().back() == b.shape()[b.shape().size() - 2], ShapeError,
             "matmul: inner dimensions differ: {} x {}", a.shape(), b.shape());
    // Checked here so the message shows both full shapes, not only the batch parts.
    for (std::int64_t i = 3; i <= std::min(a.dim(), b.dim()); ++i) {
        const std::int64_t da = a.shape()[static_cast<std::size_t>(a.dim() - i)];
        const std::int64_t db = b.shape()[static_cast<std::size_t>(b.dim() - i)];
        AG_CHECK(da == db || da == 1 || db == 1, ShapeError,
                 "matmul: batch dimensions do not broadcast: {} x {}", a.shape(), b.shape());
    }
    if (b.dim() == 2 && a.dim() > 2) {
        // [..., n, k] x [k, m]: fold the batch into the rows, one large GEMM instead of many.
        // Rows spelled out: reshape cannot infer a -1 next to an inner dimension of 0.
        Shape out_shape = a.shape();
        out_shape.back() = b.shape().back();
        const std::int64_t rows = numel(Shape(a.shape().begin(), a.shape().end() - 1));
        return reshape(matmul(reshape(a, {rows, a.shape().back()}), b), out_shape);
    }
    Tensor out = detail::matmul_kernel(a, b, false, false);
    if (autograd::needs_record({&a, &b})) {
        autograd::record("matmul", {a, b}, out, [a, b](const Tensor& dy, autograd::Gradients& g) {
            // da = dy b^T, db = a^T dy, reduced over broadcast batch dimensions
            if (g.needs(0)) g.add(0, sum_to(detail::matmul_kernel(dy, b, false, true), a.shape()));
            if (g.needs(1)) g.add(1, sum_to(detail::matmul_kernel(a, dy, true, false), b.shape()));
        });
    }
    return out;
}

}  // namespace attograd

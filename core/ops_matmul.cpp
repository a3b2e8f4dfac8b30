// Matrix multiplication: 2-D and batched, with batch-dimension broadcasting.
#include "core/ops_matmul.hpp"

#include "core/autograd.hpp"
#include "core/detail/gemm.hpp"
#include "core/detail/matmul_blocks.hpp"
#include "core/detail/parallel.hpp"
#include "core/ops_reduce.hpp"
#include "core/ops_shape.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

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
namespace {

// Rows [first, first + count) of C [n, m] = op(A) op(B), or of C = op(A) op(B) + 1 r for a row
// r, added once the block's product is written, while the block is still in cache: filling C
// with r first for the GEMM to add onto was a separate pass of stores to cold memory (7 % of
// the main thread's time in the small training step; ~2 % of the step, on LIBXSMM; Eigen's GEMM
// zeroes its output first either way). It also rounds as matmul(x, w^T) + b does, on LIBXSMM
// and on Eigen's blocked GEMM path (Eigen's one-row GEMV and tiny coefficient-wise products may
// sum in another order). op(A) has `inner` columns (A's rows are a_cols apart); op(B) is read
// from pb with its rows ldb apart, transposed when tb.
template <class T>
void add_row_init(T* c, std::int64_t count, std::int64_t m, const T* row_init) {
    if (row_init != nullptr)
        Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(c, count, m)
            .rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(row_init, m);
}

template <class T>
void product_rows(const T* pa, std::int64_t a_cols, bool ta, const T* pb, std::int64_t ldb, bool tb, T* po,
                  std::int64_t m, std::int64_t inner, const T* row_init, std::int64_t first,
                  std::int64_t count) {
    T* c = po + first * m;
    // rows of op(A): rows of A, or columns of A when transposed
    const T* a_rows_from = ta ? pa + first : pa + first * a_cols;
    gemm(count, m, inner, a_rows_from, a_cols, ta, pb, ldb, tb, c, m, false);
    add_row_init(c, count, m, row_init);
}

}  // namespace

MatmulBlocks::MatmulBlocks(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                           const Tensor& row_init)
    : a_(a), b_(b), row_init_(row_init), transpose_a_(transpose_a), transpose_b_(transpose_b) {
    AG_ASSERT(a.dim() == 2 && b.dim() == 2, "MatmulBlocks: 2-D operands only");
    a_cols_ = a.size(1);
    b_cols_ = b.size(1);
    n_ = transpose_a ? a.size(1) : a.size(0);
    m_ = transpose_b ? b.size(0) : b.size(1);
    inner_ = transpose_a ? a.size(0) : a.size(1);
    AG_ASSERT(!row_init.defined() || row_init.numel() == m_,
              "MatmulBlocks: row_init needs one value per column");
    // Large products are split into row blocks (Eigen's own threading is off, see
    // core/detail/parallel.hpp). The blocks are fixed by the shape alone, not by the thread count, and
    // run the same on one thread: Eigen's GEMM (and LIBXSMM's edge kernels) may round a row
    // differently in another block, so splitting by threads would make the result depend on the
    // thread count. Up to 32 blocks, handed out as threads come free: on a
    // shared machine one core may run slower for a while, and equal static halves would leave
    // the other waiting; and the last block's wait is shorter the smaller the blocks (8 blocks
    // of 128 rows against 21 of 48 made the small training step ~2.4 % slower, a quiet A/B;
    // the large step was unchanged). Blocks of at least 48 rows (or 16 when that leaves fewer
    // than 4) on LIBXSMM, which packs nothing; on Eigen up to 8 blocks of at least 96 rows, as
    // before, so that packing op(B) again for every block stays about 1 % of the block's GEMM.
    const bool packs = gemm_packs_operands();
    const std::int64_t min_chunk_rows = packs ? 96 : 48, max_chunks = packs ? 8 : 32;
    out_ = empty({n_, m_}, {.dtype = a.dtype()});
    const std::int64_t w = work();
    chunks_ =
        w < 2 * kMinParallelGemmWork
            ? 1
            : std::clamp<std::int64_t>(std::max(n_ / min_chunk_rows, std::min<std::int64_t>(4, n_ / 16)), 1,
                                       std::min(max_chunks, w / kMinParallelGemmWork));
    // On LIBXSMM every block reads op(B) from panels packed here once (core/detail/gemm.hpp: in place,
    // a large B ran at 41-63 % of the peak on Zen 3), on the threads: the large training step's
    // [768, 256] weight took ~80 µs to transpose on one.
    if (chunks_ > 1 && gemm_reads_b_panels()) {
        panels_ = empty({inner_ * m_}, {.dtype = b.dtype()});
        dispatch_floating(b.dtype(), "matmul", [&]<class T>(T) {
            const T* src = b.data<T>();
            T* dst = panels_.data<T>();
            parallel_for(
                b_panel_count(inner_, m_), threads_for(m_ * inner_, kMinParallelWork),
                [&](std::int64_t panel) { pack_b_panel(inner_, m_, src, b_cols_, transpose_b, dst, panel); });
        });
        return;
    }
    // When the GEMM layer would transpose op(B) in every block, it is transposed once here
    // instead: the same copy, so the same bits. In bands of rows over the threads.
    if (transpose_b && chunks_ > 1 && gemm_copies_transposed_b()) {
        bt_ = empty({inner_, m_}, {.dtype = b.dtype()});
        dispatch_floating(b.dtype(), "matmul", [&]<class T>(T) {
            constexpr std::int64_t kBandRows = 64;
            const T* src = b.data<T>();
            T* dst = bt_.data<T>();
            parallel_for((m_ + kBandRows - 1) / kBandRows, threads_for(m_ * inner_, kMinParallelWork),
                         [&](std::int64_t band) {
                             const std::int64_t first = band * kBandRows;
                             transpose(std::min(kBandRows, m_ - first), inner_, src + first * b_cols_,
                                       b_cols_, dst + first, m_);
                         });
        });
    }
}

void MatmulBlocks::run(std::int64_t block) const {
    const std::int64_t first = n_ * block / chunks_, last = n_ * (block + 1) / chunks_;
    dispatch_floating(a_.dtype(), "matmul", [&]<class T>(T) {
        const T* init = row_init_.defined() ? row_init_.data<T>() : nullptr;
        Tensor handle = out_;  // the blocks write into the product's storage
        T* out = handle.data<T>();
        if (panels_.defined()) {
            T* c = out + first * m_;
            // rows of op(A): rows of A, or columns of A when transposed (gemm_b_panels copies
            // those plain a strip at a time)
            const T* a = transpose_a_ ? a_.data<T>() + first : a_.data<T>() + first * a_cols_;
            gemm_b_panels(last - first, m_, inner_, a, a_cols_, transpose_a_, panels_.data<T>(), c, m_,
                          false);
            add_row_init(c, last - first, m_, init);
        } else if (bt_.defined())
            product_rows(a_.data<T>(), a_cols_, transpose_a_, bt_.data<T>(), m_, false, out, m_, inner_, init,
                         first, last - first);
        else
            product_rows(a_.data<T>(), a_cols_, transpose_a_, b_.data<T>(), b_cols_, transpose_b_, out, m_,
                         inner_, init, first, last - first);
    });
}

void run_blocks(const std::vector<const MatmulBlocks*>& products, const std::function<void()>& also) {
    // Longest tasks first, `also` (a pass over memory, e.g. the bias gradient) before them all:
    // taken in the given order, linear's backward left dW's few large blocks (and the bias sum)
    // for last, and one thread waited for the other to finish them. Longest-first: the thread
    // that gets the last task waits at most about one of dX's small blocks. Each block writes its
    // own rows, so the order changes no bits. Measured (two threads, share of the region both
    // threads spent in tasks): the small step's output-layer backward 0.67 -> 0.84, the large
    // step's out_proj backward 0.95 -> 0.99.
    std::vector<const MatmulBlocks*> by_block_work = products;
    std::stable_sort(by_block_work.begin(), by_block_work.end(), [](const auto* x, const auto* y) {
        return x->work() / x->blocks() > y->work() / y->blocks();
    });
    std::vector<std::pair<const MatmulBlocks*, std::int64_t>> tasks;
    std::int64_t work = 0;
    for (const MatmulBlocks* p : by_block_work) {
        for (std::int64_t i = 0; i < p->blocks(); ++i) tasks.emplace_back(p, i);
        work += p->work();
    }
    const std::int64_t also_tasks = also ? 1 : 0;
    const auto task_count = static_cast<std::int64_t>(tasks.size()) + also_tasks;
    const auto run_task = [&](std::int64_t t) {
        if (t < also_tasks) {
            also();
            return;
        }
        const auto& [product, block] = tasks[static_cast<std::size_t>(t - also_tasks)];
        product->run(block);
    };
    parallel_for(task_count, work < 2 * kMinParallelGemmWork ? 1 : available_threads(), run_task,
                 Schedule::Dynamic);
}

Tensor matmul_kernel(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                     const Tensor& row_init) {
    const Shape& sa = a.shape();
    const Shape& sb = b.shape();
    AG_ASSERT(!row_init.defined() || (sa.size() == 2 && sb.size() == 2),
              "matmul_kernel: row_init needs 2-D operands");
    if (sa.size() == 2 && sb.size() == 2) {
        MatmulBlocks product(a, b, transpose_a, transpose_b, row_init);
        run_blocks({&product});
        return product.take_output();
    }
    const std::int64_t a_rows = sa[sa.size() - 2], a_cols = sa.back();
    const std::int64_t b_rows = sb[sb.size() - 2], b_cols = sb.back();
    const std::int64_t n = transpose_a ? a_cols : a_rows;
    const std::int64_t m = transpose_b ? b_rows : b_cols;
    const std::int64_t inner = transpose_a ? a_rows : a_cols;
    const auto product = [&]<class T>(const T* pa, const T* pb, T* po) {
        product_rows<T>(pa, a_cols, transpose_a, pb, b_cols, transpose_b, po, m, inner, nullptr, 0, n);
    };
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
        detail::parallel_for(batches,
                             detail::threads_for(n * m * inner * batches, detail::kMinParallelGemmWork), one);
    });
    return out;
}

}  // namespace detail

namespace {

// out [batch, n, m] += op(a) op(b), for operands whose batch dimensions equal out's (no
// broadcasting): a backward adds its product straight into the input's gradient buffer, so a
// decoder step's [S, A] outer product over the whole memory is one pass, not a product, a
// gradient tensor and an addition.
void add_product_into(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, Tensor& out) {
    const Shape& sa = a.shape();
    const Shape& sb = b.shape();
    const std::int64_t a_rows = sa[sa.size() - 2], a_cols = sa.back();
    const std::int64_t b_rows = sb[sb.size() - 2], b_cols = sb.back();
    const std::int64_t n = transpose_a ? a_cols : a_rows;
    const std::int64_t m = transpose_b ? b_rows : b_cols;
    const std::int64_t inner = transpose_a ? a_rows : a_cols;
    const std::int64_t batches = numel(batch_of(sa));
    dispatch_floating(a.dtype(), "matmul", [&]<class T>(T) {
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        detail::parallel_for(
            batches, detail::threads_for(n * m * inner * batches, detail::kMinParallelGemmWork),
            [&](std::int64_t i) {
                detail::gemm(n, m, inner, pa + i * a_rows * a_cols, a_cols, transpose_a,
                             pb + i * b_rows * b_cols, b_cols, transpose_b, po + i * n * m, m, true);
            });
    });
}

// Adds op(a) op(b), reduced over broadcast batch dimensions, into input i's gradient: in place
// when the input has a gradient already, else as a fresh product the gradient takes over.
void add_product_gradient(autograd::Gradients& g, std::size_t i, const Tensor& a, const Tensor& b,
                          bool transpose_a, bool transpose_b, const Shape& target) {
    if (!g.needs(i)) return;
    if (g.has_gradient(i) && target.size() > 2 && batch_of(a.shape()) == batch_of(target) &&
        batch_of(b.shape()) == batch_of(target)) {
        Tensor grad = g.accumulator(i);
        add_product_into(a, b, transpose_a, transpose_b, grad);
        return;
    }
    g.add(i, sum_to(detail::matmul_kernel(a, b, transpose_a, transpose_b), target));
}

}  // namespace

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
            add_product_gradient(g, 0, dy, b, false, true, a.shape());
            add_product_gradient(g, 1, a, dy, true, false, b.shape());
        });
    }
    return out;
}

}  // namespace attograd
